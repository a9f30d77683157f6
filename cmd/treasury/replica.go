package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/readreplica"
)

// replicaURL reads DATABASE_REPLICA_URL: empty (no replica), or a
// connection string pgx takes; anything else stops serve at its start.
func replicaURL() (string, error) {
	raw := strings.TrimSpace(os.Getenv("DATABASE_REPLICA_URL"))
	if raw == "" {
		return "", nil
	}
	if _, err := pgxpool.ParseConfig(raw); err != nil {
		return "", fmt.Errorf("DATABASE_REPLICA_URL must be a PostgreSQL connection string (postgres://…) of a streaming replica of DATABASE_URL: %w", err)
	}
	if raw == strings.TrimSpace(os.Getenv("DATABASE_URL")) {
		return "", fmt.Errorf("DATABASE_REPLICA_URL is DATABASE_URL: name a streaming replica of it, or leave it unset")
	}
	return raw, nil
}

// useReplica opens the read replica's pool and has a's lists and exports
// read there. It connects lazily: a replica down at the start costs
// nothing but reads on the primary until it answers. The returned function
// closes the pool.
func useReplica(ctx context.Context, url string, a *app.App) (func(), error) {
	if url == "" {
		return func() {}, nil
	}
	pool, err := openPool(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_REPLICA_URL: %w", err)
	}
	a.Replica = readreplica.New(pool)
	a.Log.Info("lists and exports are read from the read replica (DATABASE_REPLICA_URL) once it has replayed the writes before them")
	return pool.Close, nil
}

var replicaReadsDesc = prometheus.NewDesc("treasury_replica_reads_total",
	"Reads of lists and exports with a read replica configured, by outcome: served by the replica, or by the primary because the replica was lagging, unavailable or failed the read.",
	[]string{"outcome"}, nil)

// replicaCollector exposes the read replica's outcome counters.
type replicaCollector struct{ r *readreplica.Replica }

func (c replicaCollector) Describe(ch chan<- *prometheus.Desc) { ch <- replicaReadsDesc }

func (c replicaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, o := range readreplica.Outcomes() {
		ch <- prometheus.MustNewConstMetric(replicaReadsDesc, prometheus.CounterValue, float64(c.r.Counted(o)), o.String())
	}
}

// replicaCollectors exposes the replica's counters; none without one.
func replicaCollectors(r *readreplica.Replica) []prometheus.Collector {
	if r == nil {
		return nil
	}
	return []prometheus.Collector{replicaCollector{r}}
}
