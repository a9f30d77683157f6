package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// dbCost is what a payments run cost the database per successful payment:
// the service's round trips (treasury_db_round_trips_total on /metrics,
// by origin) and the database's commits (pg_stat_database.xact_commit),
// both read at the start and at the end of the measured window.
type dbCost struct {
	Payments                int              `json:"payments"`
	RoundTripsByOrigin      map[string]int64 `json:"round_trips_by_origin"`
	APIRoundTrips           int64            `json:"api_round_trips"`
	AllRoundTrips           int64            `json:"all_round_trips"`
	Commits                 int64            `json:"commits"`
	APIRoundTripsPerPayment float64          `json:"api_round_trips_per_payment"`
	AllRoundTripsPerPayment float64          `json:"all_round_trips_per_payment"`
	CommitsPerPayment       float64          `json:"commits_per_payment"`
	Error                   string           `json:"error,omitempty"`
}

// dbCounters is one reading of the service's and the database's counters.
type dbCounters struct {
	roundTrips map[string]int64
	commits    int64
}

// dbMeter reads the counters at the start and the end of a measured window.
type dbMeter struct {
	done          chan struct{}
	before, after dbCounters
	err           error
}

// meterDB reads the counters at from and at from+duration (the window
// closedLoop counts payments in), in the background.
func (s *service) meterDB(ctx context.Context, from time.Time, duration time.Duration) *dbMeter {
	m := &dbMeter{done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for i, at := range []time.Time{from, from.Add(duration)} {
			select {
			case <-ctx.Done():
				m.err = context.Cause(ctx)
				return
			case <-time.After(time.Until(at)):
			}
			c, err := s.readDBCounters(ctx)
			if err != nil {
				m.err = err
				return
			}
			if i == 0 {
				m.before = c
			} else {
				m.after = c
			}
		}
	}()
	return m
}

// result waits for the end of the window's reading and divides by the
// payments made in it.
func (m *dbMeter) result(payments int) *dbCost {
	<-m.done
	d := &dbCost{Payments: payments, RoundTripsByOrigin: map[string]int64{}}
	if m.err != nil {
		d.Error = m.err.Error()
		return d
	}
	for origin, n := range m.after.roundTrips {
		delta := n - m.before.roundTrips[origin]
		d.RoundTripsByOrigin[origin] = delta
		d.AllRoundTrips += delta
	}
	d.APIRoundTrips = d.RoundTripsByOrigin["api"]
	d.Commits = m.after.commits - m.before.commits
	if payments > 0 {
		p := float64(payments)
		d.APIRoundTripsPerPayment = float64(d.APIRoundTrips) / p
		d.AllRoundTripsPerPayment = float64(d.AllRoundTrips) / p
		d.CommitsPerPayment = float64(d.Commits) / p
	}
	return d
}

func (s *service) readDBCounters(ctx context.Context) (dbCounters, error) {
	rt, err := s.roundTrips(ctx)
	if err != nil {
		return dbCounters{}, err
	}
	c := dbCounters{roundTrips: rt}
	err = s.db.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database WHERE datname = $1`, s.dbName).Scan(&c.commits)
	return c, err
}

var roundTripsMetric = regexp.MustCompile(`(?m)^treasury_db_round_trips_total\{origin="([a-z]+)"\} (\S+)$`)

// roundTrips reads treasury_db_round_trips_total by origin from /metrics.
func (s *service) roundTrips(ctx context.Context) (map[string]int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %d", res.StatusCode)
	}
	m := map[string]int64{}
	for _, l := range roundTripsMetric.FindAllStringSubmatch(string(body), -1) {
		v, err := strconv.ParseFloat(l[2], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %q: %w", l[0], err)
		}
		m[l[1]] = int64(v)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("/metrics has no treasury_db_round_trips_total (a service built before it counted round trips?)")
	}
	return m, nil
}

// byOrigin renders the round trips per payment of each origin that made
// any, most first: "api 6.0, projections 1.2, …".
func (d *dbCost) byOrigin() string {
	type kv struct {
		origin string
		n      int64
	}
	var l []kv
	for o, n := range d.RoundTripsByOrigin {
		if n > 0 {
			l = append(l, kv{o, n})
		}
	}
	sort.Slice(l, func(i, j int) bool { return l[i].n > l[j].n || (l[i].n == l[j].n && l[i].origin < l[j].origin) })
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = fmt.Sprintf("%s %.1f", e.origin, float64(e.n)/float64(max(d.Payments, 1)))
	}
	return strings.Join(parts, ", ")
}
