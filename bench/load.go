package main

import (
	"context"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"
)

// worker is one closed-loop client's state.
type worker struct {
	id  int
	rng *rand.Rand
	seq int
	buf []byte
}

// requestFunc sends one request (or runs one transaction) and says how it went.
type requestFunc func(ctx context.Context, w *worker) outcome

// loadStats is one closed-loop measurement: successes per second, their
// latency, and the failures by class (HTTP status and error code, or
// SQLSTATE for the raw baseline).
type loadStats struct {
	Clients        int               `json:"clients"`
	Seconds        float64           `json:"seconds"`
	OK             int               `json:"ok"`
	PerSecond      float64           `json:"per_second"`
	P50ms          float64           `json:"p50_ms"`
	P99ms          float64           `json:"p99_ms"`
	MaxMs          float64           `json:"max_ms"`
	Failed         int               `json:"failed"`
	FailedByClass  map[string]int    `json:"failed_by_status,omitempty"`
	Conflicts      int               `json:"deadlock_or_conflict_errors"`
	FailureSamples map[string]string `json:"failure_samples,omitempty"`
	DB             *dbCost           `json:"db_per_payment,omitempty"` // payments runs only
}

// closedLoop runs clients workers, each sending its next request when the
// previous one has answered, for warmup (not counted) and then duration.
// A request counts when it completes inside the measured window; latency
// percentiles are of the successful requests. conflict says which failure
// classes are deadlock or conflict errors.
func closedLoop(ctx context.Context, clients int, warmup, duration time.Duration, conflict func(class string) bool, fn requestFunc) (loadStats, error) {
	from := time.Now().Add(warmup)
	to := from.Add(duration)
	type result struct {
		lat      []time.Duration
		classes  map[string]int
		examples map[string]string
	}
	results := make([]result, clients)
	seed := uint64(time.Now().UnixNano())
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{id: c, rng: rand.New(rand.NewPCG(seed, uint64(c)))}
			r := result{lat: make([]time.Duration, 0, 4096), classes: map[string]int{}, examples: map[string]string{}}
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(to) {
					break
				}
				o := fn(ctx, w)
				t1 := time.Now()
				if t1.Before(from) {
					continue
				}
				if t1.After(to) {
					break
				}
				if o.ok {
					r.lat = append(r.lat, t1.Sub(t0))
					continue
				}
				r.classes[o.class]++
				if _, ok := r.examples[o.class]; !ok {
					r.examples[o.class] = o.detail
				}
			}
			results[c] = r
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return loadStats{}, context.Cause(ctx)
	}
	st := loadStats{Clients: clients, Seconds: duration.Seconds(), FailedByClass: map[string]int{}, FailureSamples: map[string]string{}}
	var lat []time.Duration
	for _, r := range results {
		lat = append(lat, r.lat...)
		for c, n := range r.classes {
			st.FailedByClass[c] += n
			st.Failed += n
			if conflict != nil && conflict(c) {
				st.Conflicts += n
			}
		}
		for c, e := range r.examples {
			st.FailureSamples[c] = e
		}
	}
	st.OK = len(lat)
	st.PerSecond = float64(st.OK) / duration.Seconds()
	st.P50ms, st.P99ms, st.MaxMs = percentiles(lat)
	return st, nil
}

// percentiles returns p50, p99 and max in milliseconds (nearest rank).
func percentiles(lat []time.Duration) (p50, p99, maxMs float64) {
	if len(lat) == 0 {
		return 0, 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	at := func(p float64) float64 {
		i := int(p*float64(len(lat))+0.999999) - 1
		i = max(0, min(i, len(lat)-1))
		return float64(lat[i].Microseconds()) / 1000
	}
	return at(0.50), at(0.99), float64(lat[len(lat)-1].Microseconds()) / 1000
}

// httpConflict: a 409 or any 5xx (deadlocks and serialization failures
// surface as one of these).
func httpConflict(class string) bool {
	return strings.HasPrefix(class, "409") || strings.HasPrefix(class, "5")
}

// classesString renders failures by class, most frequent first.
func classesString(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	type kv struct {
		k string
		v int
	}
	var l []kv
	for k, v := range m {
		l = append(l, kv{k, v})
	}
	sort.Slice(l, func(i, j int) bool { return l[i].v > l[j].v || (l[i].v == l[j].v && l[i].k < l[j].k) })
	var parts []string
	for _, e := range l {
		parts = append(parts, e.k+": "+itoa(e.v))
	}
	return strings.Join(parts, ", ")
}
