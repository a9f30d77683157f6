package main

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opentreasury/treasury/eventstore"
)

// roundTripsDesc is the database round trips the service has made, by who
// made them: the API, or one of the log's readers.
var roundTripsDesc = prometheus.NewDesc("treasury_db_round_trips_total",
	"Database round trips (queries, execs, batches, copies, prepares; BEGIN and COMMIT each one) by origin.",
	[]string{"origin"}, nil)

// roundTripsCollector exposes an eventstore.RoundTrips tracer's counters.
// It reads them at scrape time: nothing is done per query but the tracer's
// atomic add.
type roundTripsCollector struct{ rt *eventstore.RoundTrips }

func (c roundTripsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- roundTripsDesc }

func (c roundTripsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, o := range eventstore.Origins() {
		ch <- prometheus.MustNewConstMetric(roundTripsDesc, prometheus.CounterValue, float64(c.rt.Count(o)), o.String())
	}
}

// roundTripsCollectors exposes the round trips counted by pool's tracer
// (openPool installs one); none for a pool without it.
func roundTripsCollectors(pool *pgxpool.Pool) []prometheus.Collector {
	rt, ok := pool.Config().ConnConfig.Tracer.(*eventstore.RoundTrips)
	if !ok {
		return nil
	}
	return []prometheus.Collector{roundTripsCollector{rt}}
}
