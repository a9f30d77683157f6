package main

import (
	"context"
	"fmt"

	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// The log's subscribers (their checkpoint names in subscription_checkpoints)
// and the webhook fan-out, which follows public_events by seq instead.
// Each is reported under this name; a reader that serve splits
// (TREASURY_READER_PARTITIONS=P > 1: splitSubscribers) keeps a checkpoint
// per part, NAME#i/P, and its lag is that of its part furthest behind.
var (
	logSubscribers = []string{"ledger", "public_events", "hash_chain", "sandbox", "kyb_decider"}
	fanoutName     = "webhook_fanout" // projections.PublicEventsFeed
	allSubscribers = append(append([]string{}, logSubscribers...), fanoutName)

	splitSubscribers = map[string]bool{"sandbox": true, "kyb_decider": true, fanoutName: true}
)

// checkpointNames are the checkpoints of subscriber base when serve runs
// with TREASURY_READER_PARTITIONS=parts.
func checkpointNames(base string, parts int) []string {
	if !splitSubscribers[base] {
		return []string{base}
	}
	return eventstore.PartitionNames(base, parts)
}

// logCheckpoints are the checkpoints of the log's subscribers.
func logCheckpoints(parts int) []string {
	var names []string
	for _, n := range logSubscribers {
		names = append(names, checkpointNames(n, parts)...)
	}
	return names
}

// fanoutPlatforms is an SQL array of the platforms whose public events
// fall in a part of the fan-out (serve splits the feed by platform_id):
// the bench finds a part's events by the platforms of its part, so that a
// part with no platform costs nothing to sample (matching the part's hash
// against every public event after its checkpoint would walk the whole
// table for a part that never moves).
func fanoutPlatforms(p eventstore.Partition) string {
	return "(SELECT coalesce(array_agg(id), '{}') FROM platforms WHERE " + p.SQL("id") + ")"
}

// lagCountCap bounds the events each sample counts one by one per
// subscriber: beyond it, the lag in events is estimated from global
// positions (the head's minus the checkpoint's), so that a subscriber far
// behind does not make the sampling itself a load.
const (
	lagCountCap    = 200
	lagCountCapSQL = "200"
)

// lagQuery gives, for every subscriber, the events committed after its
// checkpoint (counted up to lagCountCap), the global positions between
// its checkpoint and the head, and the recorded time of the oldest event
// it has not handled (NULL at the head), with the server's clock. Each is
// a walk of at most lagCountCap entries or one probe of an index
// (events_commit_order, the events' primary key, public_events_seq). The
// count's ORDER BY is what makes it walk the index: without it the
// planner chose a sequential scan of the log, ~130 ms a subscriber at
// 200,000 events. The fan-out's public events are numbered densely: its
// count is exact. $1 are the log's checkpoints, $2 the fan-out's (whole).
const lagQuery = `WITH h AS (SELECT coalesce(max(global_position), 0) AS gp FROM events)
SELECT c.name,
    (SELECT count(*) FROM (SELECT 1 FROM events e
        WHERE (e.transaction_id, e.global_position) > (c.transaction_id, c.global_position)
        ORDER BY e.transaction_id, e.global_position LIMIT ` + lagCountCapSQL + `) x),
    h.gp - c.global_position,
    (SELECT e.recorded_at FROM events e WHERE (e.transaction_id, e.global_position) > (c.transaction_id, c.global_position)
        ORDER BY e.transaction_id, e.global_position LIMIT 1),
    clock_timestamp()
FROM subscription_checkpoints c, h WHERE c.name = ANY($1)
UNION ALL
SELECT c.name, 0, coalesce((SELECT max(seq) FROM public_events), 0) - c.global_position,
    (SELECT p.created_at FROM public_events p WHERE p.seq > c.global_position ORDER BY p.seq LIMIT 1),
    clock_timestamp()
FROM subscription_checkpoints c WHERE c.name = $2`

// lagQueryParts is lagQuery for serve split in parts > 1: the fan-out's
// parts' public events are those of their platforms, not numbered
// densely: counted up to lagCountCap like the log's, the seq numbers
// between the checkpoint and the last public event beyond that. Each
// part's walk goes from its checkpoint along public_events_seq to its
// first events (the other parts' events after its checkpoint are
// skipped on the way); a part without platforms is not walked.
func lagQueryParts(parts int) string {
	q := strings.TrimSuffix(lagQuery, `
UNION ALL
SELECT c.name, 0, coalesce((SELECT max(seq) FROM public_events), 0) - c.global_position,
    (SELECT p.created_at FROM public_events p WHERE p.seq > c.global_position ORDER BY p.seq LIMIT 1),
    clock_timestamp()
FROM subscription_checkpoints c WHERE c.name = $2`)
	for _, p := range eventstore.Partitions(parts) {
		q += `
UNION ALL
SELECT c.name,
    (SELECT count(*) FROM (SELECT 1 FROM public_events p WHERE cardinality(pl.ids) > 0 AND p.seq > c.global_position
        AND p.platform_id = ANY(pl.ids) ORDER BY p.seq LIMIT ` + lagCountCapSQL + `) x),
    coalesce((SELECT max(seq) FROM public_events), 0) - c.global_position,
    (SELECT p.created_at FROM public_events p WHERE cardinality(pl.ids) > 0 AND p.seq > c.global_position
        AND p.platform_id = ANY(pl.ids) ORDER BY p.seq LIMIT 1),
    clock_timestamp()
FROM subscription_checkpoints c, (SELECT ` + fanoutPlatforms(p) + ` AS ids) pl WHERE c.name = '` + p.Name(fanoutName) + `'`
	}
	return q
}

// lagSample is one subscriber's lag at one moment.
type lagSample struct {
	events    int64
	estimated bool // beyond lagCountCap: from global positions
	ms        float64
}

// sampleLag runs the lag query once on db (lagQuery, or lagQueryParts
// when serve splits its readers into parts), and gives each subscriber's
// lag under its own name: for a split one, the lag of its part furthest
// behind, in events and in ms each.
func sampleLag(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, parts int) (map[string]lagSample, error) {
	var rows pgx.Rows
	var err error
	if parts <= 1 {
		rows, err = db.Query(ctx, lagQuery, logSubscribers, fanoutName)
	} else {
		rows, err = db.Query(ctx, lagQueryParts(parts), logCheckpoints(parts))
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]lagSample{}
	for rows.Next() {
		var name string
		var counted, span int64
		var oldest *time.Time
		var now time.Time
		if err := rows.Scan(&name, &counted, &span, &oldest, &now); err != nil {
			return nil, err
		}
		ls := lagSample{events: counted}
		if name == fanoutName {
			ls.events = max(0, span)
		} else if counted >= lagCountCap {
			ls.events, ls.estimated = max(counted, span), true
		}
		if oldest != nil {
			ls.ms = max(0, float64(now.Sub(*oldest).Microseconds())/1000)
		}
		base := eventstore.BaseName(name)
		if prev, ok := out[base]; ok {
			ls.events, ls.ms, ls.estimated = max(ls.events, prev.events), max(ls.ms, prev.ms), ls.estimated || prev.estimated
		}
		out[base] = ls
	}
	return out, rows.Err()
}

// subscriberLag is one subscriber's lag over the measured window.
type subscriberLag struct {
	Samples        int     `json:"samples"`
	EventsP50      float64 `json:"events_p50"`
	EventsP99      float64 `json:"events_p99"`
	EventsMax      float64 `json:"events_max"`
	MsP50          float64 `json:"ms_p50"`
	MsP99          float64 `json:"ms_p99"`
	MsMax          float64 `json:"ms_max"`
	Estimated      int     `json:"samples_estimated_from_positions,omitempty"`
	HeadAfterLoadS float64 `json:"seconds_to_head_after_load"` // -1: not within catch_up_bound_seconds
}

// lagResult is every subscriber's lag during the 64-client payments and
// how long each took to reach the head after them.
type lagResult struct {
	Clients           int                       `json:"clients"`
	IntervalMs        int                       `json:"interval_ms"`
	Subscribers       map[string]*subscriberLag `json:"subscribers"`
	Slowest           string                    `json:"slowest_by_ms_p99"`
	SlowestToHead     string                    `json:"slowest_to_head"`
	CatchUpBoundS     float64                   `json:"catch_up_bound_seconds"`
	SamplerFailures   int                       `json:"sampler_failures,omitempty"`
	SampleQueryP50ms  float64                   `json:"sample_query_p50_ms"`
	SampleQueryP99ms  float64                   `json:"sample_query_p99_ms"`
	SampleQueryShare  float64                   `json:"sample_query_busy_fraction"`
	SamplerCPUSeconds float64                   `json:"sampler_backend_cpu_seconds"` // -1: unknown (PostgreSQL not local)
	SamplerCPUShare   float64                   `json:"sampler_backend_cpu_fraction_of_one_core"`
	HeadEventsAtEnd   int64                     `json:"head_global_position_at_end"`
	HeadPublicAtEnd   int64                     `json:"head_public_event_seq_at_end"`
	Note              string                    `json:"note"`
	samples           map[string][]lagSample
	queryTimes        []time.Duration
	windowFrom, until time.Time
}

// lagSampler samples every subscriber's lag every interval from `from`
// until stop is called.
type lagSampler struct {
	res  *lagResult
	done chan struct{}
	stop context.CancelFunc
}

func (s *service) startLagSampler(from time.Time, clients int) *lagSampler {
	const interval = 100 * time.Millisecond
	res := &lagResult{Clients: clients, IntervalMs: int(interval / time.Millisecond), Subscribers: map[string]*subscriberLag{},
		samples: map[string][]lagSample{}, windowFrom: from,
		Note: "sampled every 100 ms during the measured window by one query (lag in events = events committed after the checkpoint, counted up to " +
			"200, beyond that the head's global position − the checkpoint's, which is within the appends in flight of the count; in ms = server clock − recorded_at of the oldest event not handled, 0 at the head; the fan-out against public_events by seq). " +
			"seconds_to_head_after_load: from the end of the run until the checkpoint passes the head as it was at the end of the run, polled every 100 ms."}
	ctx, stop := context.WithCancel(s.ctx)
	l := &lagSampler{res: res, done: make(chan struct{}), stop: stop}
	res.SamplerCPUSeconds = -1
	go func() {
		defer close(l.done)
		// One connection for the whole window: its backend's CPU time
		// (/proc/PID/stat, when PostgreSQL runs on this machine) is the
		// sampling's cost to the server.
		conn, err := s.db.Acquire(ctx)
		if err != nil {
			res.SamplerFailures++
			return
		}
		defer conn.Release()
		pid := int(conn.Conn().PgConn().PID())
		sleepUntil(ctx, from)
		_, ticks0, cpuErr := procTicks(pid)
		defer func() {
			if _, ticks1, err := procTicks(pid); err == nil && cpuErr == nil {
				res.SamplerCPUSeconds = float64(ticks1-ticks0) / clockTicks
				if w := time.Since(from).Seconds(); w > 0 {
					res.SamplerCPUShare = res.SamplerCPUSeconds / w
				}
			}
		}()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for ctx.Err() == nil {
			t := time.Now()
			m, err := sampleLag(ctx, conn, s.partitions)
			if err != nil {
				if ctx.Err() == nil {
					res.SamplerFailures++
				}
			} else {
				res.queryTimes = append(res.queryTimes, time.Since(t))
				for name, v := range m {
					res.samples[name] = append(res.samples[name], v)
				}
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	return l
}

// finish stops the sampling and summarizes it.
func (l *lagSampler) finish() *lagResult {
	l.stop()
	<-l.done
	res := l.res
	res.until = time.Now()
	var busy time.Duration
	for _, d := range res.queryTimes {
		busy += d
	}
	res.SampleQueryP50ms, res.SampleQueryP99ms, _ = percentiles(append([]time.Duration(nil), res.queryTimes...))
	if w := res.until.Sub(res.windowFrom); w > 0 {
		res.SampleQueryShare = busy.Seconds() / w.Seconds()
	}
	worst := -1.0
	for _, name := range allSubscribers {
		ss := res.samples[name]
		sl := &subscriberLag{Samples: len(ss)}
		var ev, ms []float64
		for _, x := range ss {
			ev = append(ev, float64(x.events))
			ms = append(ms, x.ms)
			if x.estimated {
				sl.Estimated++
			}
		}
		sl.EventsP50, sl.EventsP99, sl.EventsMax = pct(ev)
		sl.MsP50, sl.MsP99, sl.MsMax = pct(ms)
		res.Subscribers[name] = sl
		if len(ss) > 0 && sl.MsP99 > worst {
			worst, res.Slowest = sl.MsP99, name
		}
	}
	return res
}

// pct is p50, p99 and max of xs (nearest rank).
func pct(xs []float64) (p50, p99, mx float64) {
	if len(xs) == 0 {
		return 0, 0, 0
	}
	sort.Float64s(xs)
	at := func(p float64) float64 {
		i := int(p*float64(len(xs))+0.999999) - 1
		return xs[max(0, min(i, len(xs)-1))]
	}
	return at(0.5), at(0.99), xs[len(xs)-1]
}

// catchUp measures, from end (the end of the run), how long each
// subscriber takes to pass the head as it was at the end, polling every
// 100 ms, at most bound.
func (s *service) catchUp(res *lagResult, end time.Time, bound time.Duration) error {
	ctx := s.ctx
	var txid, gp, seq int64
	if err := s.db.QueryRow(ctx, `SELECT coalesce((SELECT transaction_id::text::bigint FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1), 0),
            coalesce((SELECT global_position FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1), 0),
            coalesce((SELECT max(seq) FROM public_events), 0)`).Scan(&txid, &gp, &seq); err != nil {
		return err
	}
	res.HeadEventsAtEnd, res.HeadPublicAtEnd, res.CatchUpBoundS = gp, seq, bound.Seconds()
	wholeFanout := fanoutName
	if s.partitions > 1 {
		wholeFanout = "" // its parts are asked instead (a checkpoint of the whole feed would be an old split's)
	}
	left := map[string]bool{}
	for _, n := range allSubscribers {
		left[n] = true
		res.Subscribers[n].HeadAfterLoadS = -1
	}
	for len(left) > 0 && time.Since(end) <= bound {
		rows, err := s.db.Query(ctx, atHeadQuery(s.partitions), logCheckpoints(s.partitions), fmt.Sprint(txid), gp, wholeFanout, seq)
		if err != nil {
			return err
		}
		at := time.Since(end).Seconds()
		partsAtHead := map[string]int{}
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				rows.Close()
				return err
			}
			// A split subscriber is at the head once all its parts are.
			base := eventstore.BaseName(n)
			partsAtHead[base]++
			if left[base] && partsAtHead[base] == len(checkpointNames(base, s.partitions)) {
				delete(left, base)
				res.Subscribers[base].HeadAfterLoadS = at
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(100 * time.Millisecond):
		}
	}
	worst := -2.0
	for _, n := range allSubscribers {
		v := res.Subscribers[n].HeadAfterLoadS
		if v < 0 {
			res.SlowestToHead = n
			break
		}
		if v > worst {
			worst, res.SlowestToHead = v, n
		}
	}
	var behind []string
	for _, n := range allSubscribers {
		if left[n] {
			behind = append(behind, n)
		}
	}
	if len(behind) > 0 {
		logf("lag: %s not at the head within %s of the end of the run", strings.Join(behind, ", "), bound)
	}
	return nil
}

// atHeadQuery gives the checkpoints at or past the head as it was at the
// end of the run: $1 the log's checkpoints, $2 and $3 the head's
// position in the log, $4 the fan-out's checkpoint (whole) and $5 the
// last public event's seq. A part of the fan-out is at the head when no
// public event of its platforms lies between its checkpoint and $5 (its
// checkpoint stops at its own last event).
func atHeadQuery(parts int) string {
	q := `SELECT name FROM subscription_checkpoints
            WHERE (name = ANY($1) AND (transaction_id, global_position) >= ($2::text::xid8, $3))
               OR (name = $4 AND global_position >= $5)`
	for _, p := range eventstore.Partitions(parts) {
		if p.Whole() {
			break
		}
		q += `
               OR (name = '` + p.Name(fanoutName) + `' AND NOT EXISTS (SELECT 1 FROM public_events p,
                   (SELECT ` + fanoutPlatforms(p) + ` AS ids) pl
                   WHERE cardinality(pl.ids) > 0 AND p.seq > subscription_checkpoints.global_position AND p.seq <= $5
                     AND p.platform_id = ANY(pl.ids)))`
	}
	return q
}

// rtpTracker keeps the ids of a sample of the payments created during a
// measured window, to read when they completed.
type rtpTracker struct {
	from, to time.Time
	every    int
	mu       sync.Mutex
	ids      []string
	failed   int // sampled requests whose answer gave no id
}

func (t *rtpTracker) wants(w *worker) bool {
	now := time.Now()
	return t != nil && w.seq%t.every == 0 && !now.Before(t.from) && now.Before(t.to)
}

func (t *rtpTracker) add(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if id == "" {
		t.failed++
		return
	}
	t.ids = append(t.ids, id)
}

// rtpResult is created → completed of the sampled rtp payments.
type rtpResult struct {
	Clients      int            `json:"clients"`
	Sampled      int            `json:"sampled"`
	SampleEvery  int            `json:"sample_every_nth_request_per_client"`
	Completed    int            `json:"completed"`
	Unfinished   int            `json:"unfinished"`
	Statuses     map[string]int `json:"unfinished_statuses,omitempty"`
	P50ms        float64        `json:"p50_ms"`
	P99ms        float64        `json:"p99_ms"`
	MaxMs        float64        `json:"max_ms"`
	WaitedS      float64        `json:"seconds_waited_after_run"`
	ReadFailures int            `json:"read_failures,omitempty"`
	Note         string         `json:"note"`
}

// rtpCompletion reads each tracked payment (GET /v1/payments/:id) until it
// completed or bound has passed since end, and reports completed_at −
// created_at.
func (b *bench) rtpCompletion(t *rtpTracker, clients int, end time.Time, bound time.Duration) (*rtpResult, error) {
	t.mu.Lock()
	ids := append([]string(nil), t.ids...)
	res := &rtpResult{Clients: clients, Sampled: len(ids), SampleEvery: t.every, ReadFailures: t.failed,
		Note: "payment completed_at − created_at (the completion event's time − the creation's, millisecond precision) of every " +
			"n-th payment each client created during the measured window, read with GET /v1/payments/:id; unfinished: not completed " +
			"within the bound after the run"}
	t.mu.Unlock()
	rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	var lat []time.Duration
	pending := ids
	for {
		var still []string
		statuses := map[string]int{}
		var mu sync.Mutex
		jobs := make(chan string)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for id := range jobs {
					p, err := b.svc.callRetry("GET", "/v1/payments/"+id, nil, nil)
					mu.Lock()
					if err != nil {
						res.ReadFailures++
						still = append(still, id)
						statuses["unreadable"]++
						mu.Unlock()
						continue
					}
					st, _ := p["status"].(string)
					created, e1 := time.Parse(time.RFC3339Nano, str(p["created_at"]))
					completed, e2 := time.Parse(time.RFC3339Nano, str(p["completed_at"]))
					if st == "completed" && e1 == nil && e2 == nil {
						lat = append(lat, completed.Sub(created))
					} else {
						still = append(still, id)
						statuses[st]++
					}
					mu.Unlock()
				}
			}()
		}
		for _, id := range pending {
			jobs <- id
		}
		close(jobs)
		wg.Wait()
		pending = still
		if len(pending) == 0 || time.Since(end) > bound || !b.svc.alive() {
			if len(pending) > 0 {
				res.Statuses = statuses
			}
			break
		}
		time.Sleep(time.Second)
	}
	res.WaitedS = time.Since(end).Seconds()
	res.Completed, res.Unfinished = len(lat), len(pending)
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	logf("rtp created → completed at %s: %d of %d sampled completed, p50 %.0f ms, p99 %.0f ms, max %.0f ms; unfinished %d %v",
		nClients(res.Clients), res.Completed, res.Sampled, res.P50ms, res.P99ms, res.MaxMs, res.Unfinished, res.Statuses)
	return res, context.Cause(b.svc.ctx)
}

func str(v any) string { s, _ := v.(string); return s }
