package main

import (
	"time"

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

var (
	readersBehindDesc = prometheus.NewDesc("treasury_readers_behind_seconds",
		"How far behind the slowest reader of the log (subscription, webhook feed, sandbox settler) is; commands wait while it is over TREASURY_PACE_MAX_LAG.",
		nil, nil)
	pacedDesc = prometheus.NewDesc("treasury_paced_commands_total",
		"API commands that waited for the log's readers before running.", nil, nil)
	pacedSecondsDesc = prometheus.NewDesc("treasury_paced_seconds_total",
		"Time API commands spent waiting for the log's readers, in all.", nil, nil)
)

// pacerCollector exposes the pacer's state at scrape time.
type pacerCollector struct{ p *eventstore.Pacer }

func (c pacerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- readersBehindDesc
	ch <- pacedDesc
	ch <- pacedSecondsDesc
}

func (c pacerCollector) Collect(ch chan<- prometheus.Metric) {
	behind, _ := c.p.Behind(time.Now())
	waits, waited := c.p.Waited()
	ch <- prometheus.MustNewConstMetric(readersBehindDesc, prometheus.GaugeValue, behind.Seconds())
	ch <- prometheus.MustNewConstMetric(pacedDesc, prometheus.CounterValue, float64(waits))
	ch <- prometheus.MustNewConstMetric(pacedSecondsDesc, prometheus.CounterValue, waited.Seconds())
}

// pacerCollectors exposes the pacer's state; none when pacing is off.
func pacerCollectors(p *eventstore.Pacer) []prometheus.Collector {
	if p == nil {
		return nil
	}
	return []prometheus.Collector{pacerCollector{p}}
}

var (
	replicasDesc = prometheus.NewDesc("treasury_replicas_alive",
		"Replicas of serve on this database whose heartbeat was seen within the lease (this one included).", nil, nil)
	leaseHeldDesc = prometheus.NewDesc("treasury_reader_lease_held",
		"1 for each reader of the log (a subscription or one part of one) this replica runs now, 0 for those another runs.",
		[]string{"reader"}, nil)
)

// leasesCollector exposes which readers this replica runs, at scrape time.
type leasesCollector struct{ l *eventstore.Leases }

func (c leasesCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- replicasDesc
	ch <- leaseHeldDesc
}

func (c leasesCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(replicasDesc, prometheus.GaugeValue, float64(c.l.Replicas()))
	for _, name := range c.l.Names {
		held := 0.0
		if c.l.Holds(name) {
			held = 1
		}
		ch <- prometheus.MustNewConstMetric(leaseHeldDesc, prometheus.GaugeValue, held, name)
	}
}
