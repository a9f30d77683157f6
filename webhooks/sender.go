package webhooks

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// Sender claims due deliveries and sends them. Claiming is one short
// statement (a lease, committed at once); the POST happens outside any
// transaction; the attempt is recorded after.
type Sender struct {
	Pool *pgxpool.Pool
	App  *app.App
	Log  *slog.Logger
	Wake <-chan struct{}
	// AllowPrivate lets sandbox endpoints reach private and loopback
	// addresses (TREASURY_WEBHOOK_ALLOW_PRIVATE). Live endpoints never may.
	AllowPrivate bool
	// Concurrency bounds the requests in flight; default 32.
	Concurrency int
	// PerEndpoint bounds the requests in flight to one endpoint, so that
	// a slow one cannot take every slot; default a quarter of Concurrency.
	PerEndpoint int

	once    sync.Once
	live    *http.Client
	sandbox *http.Client
}

// Lease is how long a claimed delivery is reserved for its sender.
const Lease = 30 * time.Second

// MaxResponseBody is how much of a response is kept with an attempt.
const MaxResponseBody = 4096

func (s *Sender) init() {
	s.once.Do(func() {
		s.live = NewClient(false)
		s.sandbox = NewClient(s.AllowPrivate)
		if s.Concurrency <= 0 {
			s.Concurrency = 32
		}
		if s.PerEndpoint <= 0 {
			s.PerEndpoint = max(1, s.Concurrency/4)
		}
		if s.Log == nil {
			s.Log = slog.Default()
		}
	})
}

// Run sends due deliveries until ctx ends. Up to Concurrency requests are
// in flight at once, at most PerEndpoint of them to one endpoint, and a
// slot is filled again as soon as its request ends: a slow endpoint holds
// its own few slots, never a round that every other platform's deliveries
// wait for (a round waited for its slowest request: one endpoint answering
// in 10 s held every delivery that long). Outcomes are recorded in batches
// as they come (record). A new delivery wakes it; retries that came due
// are found by a poll every 100 ms.
func (s *Sender) Run(ctx context.Context) {
	s.init()
	f := newFlight()
	outcomes := make(chan outcome, s.Concurrency)
	recorded := make(chan struct{})
	go func() {
		defer close(recorded)
		s.recordAsTheyCome(ctx, outcomes)
	}()
	var requests sync.WaitGroup
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		room, busy := f.room(s.Concurrency, s.PerEndpoint)
		if room == 0 {
			f.waitFreed(ctx)
			continue
		}
		jobs, err := s.claim(ctx, room, busy)
		if err != nil {
			if ctx.Err() == nil {
				s.Log.Warn("webhook sender", "error", err)
			}
			sleep(ctx, backoff)
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 50 * time.Millisecond
		for _, j := range jobs {
			f.start(j.endpointID)
			requests.Go(func() {
				a := s.post(ctx, j)
				outcomes <- outcome{j, a} // before the slot frees: records keep up with sends
				f.end(j.endpointID)
			})
		}
		if len(jobs) == room {
			continue // more may be due
		}
		select {
		case <-ctx.Done():
		case <-s.Wake:
		case <-f.freedWhileFull(busy):
		case <-time.After(100 * time.Millisecond):
		}
	}
	requests.Wait()
	close(outcomes)
	<-recorded
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// outcome is a sent delivery and its attempt, on its way to be recorded.
type outcome struct {
	job     job
	attempt attempt
}

// recordAsTheyCome records outcomes until the channel closes, each batch
// being what has arrived by the time the previous one is recorded.
// Requests that went out are recorded even when the sender is stopping,
// or they would be sent again.
func (s *Sender) recordAsTheyCome(ctx context.Context, outcomes <-chan outcome) {
	for o := range outcomes {
		jobs, attempts := []job{o.job}, []attempt{o.attempt}
	more:
		for len(jobs) < 4*s.Concurrency {
			select {
			case o, ok := <-outcomes:
				if !ok {
					break more
				}
				jobs, attempts = append(jobs, o.job), append(attempts, o.attempt)
			default:
				break more
			}
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if err := s.record(rctx, jobs, attempts); err != nil {
			s.Log.Warn("webhook sender: recording attempts", "deliveries", len(jobs), "error", err)
		}
		cancel()
	}
}

// flight counts the requests in flight, in all and per endpoint.
type flight struct {
	mu    sync.Mutex
	total int
	per   map[string]int
	freed chan struct{} // closed, and replaced, whenever a request ends
}

func newFlight() *flight { return &flight{per: map[string]int{}, freed: make(chan struct{})} }

// room says how many more requests may start, and how many more each
// endpoint with requests in flight may take (its room; 0 when full).
func (f *flight) room(total, perEndpoint int) (int, map[string]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	busy := make(map[string]int, len(f.per))
	for id, n := range f.per {
		busy[id] = max(0, perEndpoint-n)
	}
	return max(0, total-f.total), busy
}

func (f *flight) start(endpointID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total++
	f.per[endpointID]++
}

func (f *flight) end(endpointID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if f.per[endpointID]--; f.per[endpointID] == 0 {
		delete(f.per, endpointID)
	}
	close(f.freed)
	f.freed = make(chan struct{})
}

// waitFreed waits for a request to end.
func (f *flight) waitFreed(ctx context.Context) {
	f.mu.Lock()
	freed := f.freed
	f.mu.Unlock()
	select {
	case <-ctx.Done():
	case <-freed:
	}
}

// freedWhileFull is closed when a request ends if some endpoint was full
// at the last claim (its due deliveries were left for then); otherwise
// it never is: a freed slot alone brings nothing new due.
func (f *flight) freedWhileFull(busy map[string]int) <-chan struct{} {
	for _, room := range busy {
		if room == 0 {
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.freed
		}
	}
	return nil
}

type job struct {
	id, endpointID, eventType, url, platformID, environment string
	payload                                                 []byte
	attempts                                                int
	policy                                                  platform.RetryPolicy
	secrets                                                 []string
}

// SendDue sends the deliveries due now (up to a batch), waits for every
// request and records them, and returns how many it sent: one round of
// what Run does continuously.
func (s *Sender) SendDue(ctx context.Context) (int, error) {
	s.init()
	jobs, err := s.claim(ctx, 2*s.Concurrency, nil)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, s.Concurrency)
	attempts := make([]attempt, len(jobs))
	for i := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			attempts[i] = s.post(ctx, jobs[i])
		}()
	}
	wg.Wait()
	// Requests that went out are recorded even when the sender is
	// stopping, or they would be sent again.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return len(jobs), s.record(rctx, jobs, attempts)
}

// claim leases up to limit due deliveries, oldest first, with at most
// room[e] more to an endpoint e listed in room (an endpoint not listed
// has PerEndpoint).
func (s *Sender) claim(ctx context.Context, limit int, room map[string]int) ([]job, error) {
	ids, rooms := make([]string, 0, len(room)), make([]int32, 0, len(room))
	for id, r := range room {
		ids, rooms = append(ids, id), append(rooms, int32(r))
	}
	// Candidates are locked (SKIP LOCKED: another sender takes others);
	// a window then keeps each endpoint within its room. FOR UPDATE
	// cannot share a level with the window, hence two.
	rows, err := s.Pool.Query(ctx, `WITH candidates AS (
            SELECT d2.id, d2.endpoint_id, d2.next_attempt_at FROM webhook_deliveries d2
            JOIN webhook_endpoints e ON e.id = d2.endpoint_id
            WHERE d2.status = 'pending' AND d2.next_attempt_at <= now() AND e.status = 'enabled' AND NOT e.deleted
            ORDER BY d2.next_attempt_at LIMIT $2 * 4 FOR UPDATE OF d2 SKIP LOCKED),
        picked AS (
            SELECT id FROM (SELECT c.id, c.next_attempt_at,
                    row_number() OVER (PARTITION BY c.endpoint_id ORDER BY c.next_attempt_at) AS n,
                    coalesce(r.room, $5) AS room
                FROM candidates c LEFT JOIN unnest($3::text[], $4::int[]) r(endpoint_id, room) ON r.endpoint_id = c.endpoint_id) x
            WHERE n <= room ORDER BY next_attempt_at LIMIT $2),
        claimed AS (
            UPDATE webhook_deliveries d SET next_attempt_at = now() + $1::interval
            WHERE d.id IN (SELECT id FROM picked)
            RETURNING d.id, d.endpoint_id, d.event_type, d.payload, d.attempt_count)
        SELECT c.id, c.endpoint_id, c.event_type, c.payload, c.attempt_count, e.url, e.platform_id, e.environment, e.retry_policy,
            ARRAY(SELECT secret FROM webhook_secrets w WHERE w.endpoint_id = c.endpoint_id
                AND (w.expires_at IS NULL OR w.expires_at > now()) ORDER BY w.created_at DESC)
        FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id`, Lease.String(), limit, ids, rooms, s.PerEndpoint)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		err := r.Scan(&j.id, &j.endpointID, &j.eventType, &j.payload, &j.attempts, &j.url, &j.platformID, &j.environment,
			&j.policy, &j.secrets)
		return j, err
	})
}

// attempt is the outcome of one POST.
type attempt struct {
	at       time.Time
	status   int
	duration time.Duration
	err      string
	body     string
}

func (s *Sender) post(ctx context.Context, j job) attempt {
	a := attempt{at: time.Now()}
	ts := a.at.Unix()
	sig, err := SignAll(j.secrets, j.id, ts, j.payload)
	if err != nil {
		a.err = err.Error()
		return a
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, j.url, bytes.NewReader(j.payload))
	if err != nil {
		a.err = err.Error()
		return a
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Treasury-Webhooks/1")
	req.Header.Set("webhook-id", j.id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sig)
	client := s.sandbox
	if j.environment == domain.Live.String() {
		client = s.live
	}
	res, err := client.Do(req)
	a.duration = time.Since(a.at)
	if err != nil {
		a.err = err.Error()
		return a
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, MaxResponseBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 1<<20)) // let the connection be reused
	a.status = res.StatusCode
	if utf8.Valid(body) {
		a.body = string(bytes.ReplaceAll(body, []byte{0}, nil))
	}
	return a
}

// record stores a round's attempts and moves each delivery on, with one
// statement per table for the whole round (a commit per delivery was most
// of what a delivery cost), then disables the endpoints that answered 410.
func (s *Sender) record(ctx context.Context, jobs []job, attempts []attempt) error {
	n := len(jobs)
	ids, statuses := make([]string, n), make([]string, n)
	ats, nexts := make([]time.Time, n), make([]*time.Time, n)
	codes, counts, prior := make([]*int32, n), make([]int32, n), make([]int32, n)
	durations := make([]int32, n)
	errTexts, bodies := make([]*string, n), make([]*string, n)
	for i, j := range jobs {
		a := attempts[i]
		count := j.attempts + 1
		status := "pending"
		switch {
		case a.status >= 200 && a.status < 300:
			status = "succeeded"
		case a.status == http.StatusGone || count >= j.policy.MaxAttempts:
			status = "failed"
		default:
			next := a.at.Add(Backoff(j.policy, count))
			nexts[i] = &next
		}
		ids[i], statuses[i], ats[i] = j.id, status, a.at
		counts[i], prior[i] = int32(count), int32(j.attempts)
		durations[i] = int32(min(a.duration.Milliseconds(), math.MaxInt32))
		if a.status != 0 {
			code := int32(a.status)
			codes[i] = &code
		}
		if a.err != "" {
			e := a.err
			errTexts[i] = &e
		}
		if a.body != "" {
			body := a.body
			bodies[i] = &body
		}
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, error, response_body)
        SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::int[], $5::text[], $6::text[])
        ON CONFLICT DO NOTHING`, ids, ats, codes, durations, errTexts, bodies)
	// Only where no other sender took the delivery over meanwhile (an
	// attempt that outlived its lease): the attempt itself is recorded
	// either way.
	b.Queue(`UPDATE webhook_deliveries d SET status = u.status, attempt_count = u.count, next_attempt_at = u.next
        FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[]) u(id, status, count, next, prior)
        WHERE d.id = u.id AND d.status = 'pending' AND d.attempt_count = u.prior`, ids, statuses, counts, nexts, prior)
	if err := s.Pool.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	var errs []error
	for i, j := range jobs {
		if attempts[i].status != http.StatusGone {
			continue
		}
		env, _ := domain.ParseEnvironment(j.environment)
		errs = append(errs, s.App.DisableWebhook(ctx, app.Meta{Actor: "webhook_sender"}, app.Caller{PlatformID: j.platformID, Environment: env},
			j.endpointID, "the endpoint answered 410 Gone"))
	}
	return errors.Join(errs...)
}

// Backoff is the wait before attempt n+1 after n failed attempts:
// initial × 2^(n−1) with ±20 % jitter, capped at the maximum.
func Backoff(p platform.RetryPolicy, n int) time.Duration {
	base := float64(p.InitialDelaySeconds) * math.Pow(2, float64(n-1))
	d := math.Min(base*(0.8+0.4*rand.Float64()), float64(p.MaxDelaySeconds))
	return time.Duration(d * float64(time.Second))
}
