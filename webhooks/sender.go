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
// statement (a lease, committed at once), or none for the deliveries the
// fan-out hands over, leased at their insert (see handover); the POST
// happens outside any transaction; the attempt is recorded after.
type Sender struct {
	Pool *pgxpool.Pool
	App  *app.App
	Log  *slog.Logger
	Wake <-chan struct{}
	// AllowPrivate lets sandbox endpoints reach private and loopback
	// addresses (TREASURY_WEBHOOK_ALLOW_PRIVATE). Live endpoints never may.
	AllowPrivate bool
	// Concurrency is half a round's deliveries (sent at once); default 32.
	Concurrency int
	// RoundWait bounds how long a round waits for its requests; default
	// DefaultRoundWait.
	RoundWait time.Duration
	// HoldBackAfter: an endpoint with a request unanswered for longer gets
	// no new deliveries until it answers; default DefaultHoldBackAfter.
	HoldBackAfter time.Duration

	once    sync.Once
	live    *http.Client
	sandbox *http.Client

	mu         sync.Mutex
	slow       map[string]int                  // endpoint → its requests outstanding past their round
	inFlight   map[string]map[string]time.Time // endpoint → its requests sent and not yet answered → when claimed
	stragglers sync.WaitGroup                  // those requests

	slots    chan struct{}   // a token per round under way (MaxRounds)
	rounds   sync.WaitGroup  // the rounds under way
	ctx      context.Context // Run's, once it runs: rounds handed over by the fan-out run on it
	stopping bool            // Run waits for its rounds: none may be handed over
}

// Lease is how long a claimed delivery is reserved for its sender.
const Lease = 30 * time.Second

// MaxResponseBody is how much of a response is kept with an attempt.
const MaxResponseBody = 4096

func (s *Sender) init() {
	s.once.Do(func() {
		s.live = NewClient(false)
		s.sandbox = NewClient(s.AllowPrivate)
		s.slow = map[string]int{}
		s.inFlight = map[string]map[string]time.Time{}
		if s.HoldBackAfter <= 0 {
			s.HoldBackAfter = DefaultHoldBackAfter
		}
		if s.RoundWait <= 0 {
			s.RoundWait = DefaultRoundWait
		}
		if s.Concurrency <= 0 {
			s.Concurrency = 32
		}
		if s.Log == nil {
			s.Log = slog.Default()
		}
		s.slots = make(chan struct{}, MaxRounds)
	})
}

// Run sends due deliveries until ctx ends, woken by new deliveries and
// polling every 100 ms for retries that came due.
//
// A round's requests and its record go on beside the next claims, up to
// MaxRounds rounds at once: a delivery that comes due while a round waits
// for its answers is claimed and sent at once, not after them (a round
// took a few milliseconds, and every delivery behind it waited for all of
// them).
func (s *Sender) Run(ctx context.Context) {
	s.init()
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	for ctx.Err() == nil {
		select {
		case s.slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		jobs, err := s.claim(ctx)
		if err == nil && len(jobs) > 0 {
			s.startRound(ctx, jobs)
			continue
		}
		<-s.slots
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("webhook sender", "error", err)
		}
		select {
		case <-ctx.Done():
		case <-s.Wake:
		case <-time.After(100 * time.Millisecond):
		}
	}
	s.mu.Lock()
	s.stopping = true // no round is handed over after this (see takeHandover)
	s.mu.Unlock()
	s.rounds.Wait()
	s.stragglers.Wait()
}

// startRound sends and records jobs in the slot its caller took.
func (s *Sender) startRound(ctx context.Context, jobs []job) {
	s.rounds.Add(1)
	go s.round(ctx, jobs)
}

// round sends and records jobs, then gives back their slot and says it
// is done (rounds.Add was its starter's).
func (s *Sender) round(ctx context.Context, jobs []job) {
	defer s.rounds.Done()
	defer func() { <-s.slots }()
	if err := s.finish(ctx, jobs); err != nil && ctx.Err() == nil {
		s.Log.Warn("webhook sender", "error", err)
	}
}

// handover is a round the fan-out fills with the deliveries it is about to
// insert already leased to this sender, so that they go out as soon as
// they commit: without it, each waited for a wake-up and a claim of their
// own (a round trip planned at every run), about a third of a webhook's
// latency from its event's commit under the bench's webhook load.
type handover struct {
	s        *Sender
	ctx      context.Context
	heldBack map[string]bool
	room     int
	sent     bool
}

// takeHandover reserves a round for the fan-out, or says no (nil) when
// every round is under way, the sender does not run, or s is nil: the
// deliveries are then inserted due, for the claim.
func (s *Sender) takeHandover() *handover {
	if s == nil {
		return nil
	}
	s.init()
	s.mu.Lock()
	ctx := s.ctx
	if ctx == nil || ctx.Err() != nil || s.stopping {
		s.mu.Unlock()
		return nil
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.mu.Unlock()
		return nil
	}
	// Counted while Run cannot be past its check of stopping: Run waits
	// for this round too.
	s.rounds.Add(1)
	s.mu.Unlock()
	held := map[string]bool{}
	for _, id := range s.heldBackEndpoints() {
		held[id] = true
	}
	return &handover{s: s, ctx: ctx, heldBack: held, room: 2 * s.Concurrency}
}

// take says whether the round takes a delivery to endpointID (leased at
// its insert), counting it: not to an endpoint held back, and no more
// than a claim takes.
func (h *handover) take(endpointID string) bool {
	if h == nil || h.room == 0 || h.heldBack[endpointID] {
		return false
	}
	h.room--
	return true
}

// send starts the round with the deliveries the insert committed, once
// (none, or a sender that stopped meanwhile: the round is given back, and
// the deliveries stay leased until the lease ends, when a claim takes them).
func (h *handover) send(jobs []job) {
	if h == nil || h.sent {
		return
	}
	h.sent = true
	if len(jobs) == 0 || h.ctx.Err() != nil {
		<-h.s.slots
		h.s.rounds.Done()
		return
	}
	h.s.track(jobs)
	go h.s.round(h.ctx, jobs)
}

// MaxRounds is how many rounds Run keeps going at once.
const MaxRounds = 4

type job struct {
	id, endpointID, eventType, url, platformID, environment string
	payload                                                 []byte
	attempts                                                int
	policy                                                  platform.RetryPolicy
	secrets                                                 []string
}

// DefaultRoundWait bounds how long a round waits for its requests unless
// Sender.RoundWait says otherwise. A request
// still unanswered then (a slow or hostile endpoint: the client allows
// 10 s) finishes and is recorded on its own, and its endpoint gets no new
// deliveries until it has answered: one slow endpoint never holds the
// other platforms' deliveries longer than RoundWait, nor more than the
// deliveries of one round.
const DefaultRoundWait = time.Second

// SendDue sends the deliveries due now (up to a batch) and returns how many.
// It records them once they are answered, or, for those still unanswered
// after RoundWait, once they have all answered (see DefaultRoundWait).
func (s *Sender) SendDue(ctx context.Context) (int, error) {
	s.init()
	jobs, err := s.claim(ctx)
	if err != nil || len(jobs) == 0 {
		return 0, err
	}
	return len(jobs), s.finish(ctx, jobs)
}

// claim leases the deliveries due now (up to a round's) to this sender.
func (s *Sender) claim(ctx context.Context) ([]job, error) {
	// The due deliveries are taken in the order of the partial index on
	// next_attempt_at, the endpoint checked row by row (a subquery the
	// planner cannot turn into a join), and the statement is planned at
	// each run (QueryExecModeExec), not once: a plan cached while the
	// table was nearly empty, or a join driven from the endpoints, read
	// every delivery of the endpoint at each claim (10,781 sequential
	// scans in a 20 s window right after a load) and put seconds on every
	// webhook.
	//
	// Two lanes, each on its own partial index: the fan-out's deliveries
	// (and retries, and test webhooks) first, then replays' (replay_id
	// set) in what room the round has left (a full round reads and locks
	// none of them), so a replay of 10,000 events
	// never stands in front of a new event; it drains in the sender's
	// spare rounds.
	rows, err := s.Pool.Query(ctx, `WITH fresh AS (
            SELECT d2.id FROM webhook_deliveries d2
            WHERE d2.status = 'pending' AND d2.replay_id IS NULL AND d2.next_attempt_at <= now() AND d2.endpoint_id <> ALL($3)
              AND (SELECT e.status = 'enabled' AND NOT e.deleted FROM webhook_endpoints e WHERE e.id = d2.endpoint_id)
            ORDER BY d2.next_attempt_at LIMIT $2 FOR UPDATE OF d2 SKIP LOCKED),
        replayed AS (
            SELECT d3.id FROM webhook_deliveries d3
            WHERE d3.status = 'pending' AND d3.replay_id IS NOT NULL AND d3.next_attempt_at <= now() AND d3.endpoint_id <> ALL($3)
              AND (SELECT e.status = 'enabled' AND NOT e.deleted FROM webhook_endpoints e WHERE e.id = d3.endpoint_id)
            ORDER BY d3.next_attempt_at LIMIT $2 - (SELECT count(*) FROM fresh) FOR UPDATE OF d3 SKIP LOCKED),
        claimed AS (
            UPDATE webhook_deliveries d SET next_attempt_at = now() + $1::interval
            WHERE d.id IN (SELECT id FROM fresh UNION ALL SELECT id FROM replayed)
            RETURNING d.id, d.endpoint_id, d.event_type, d.payload, d.attempt_count)
        SELECT c.id, c.endpoint_id, c.event_type, c.payload, c.attempt_count, e.url, e.platform_id, e.environment, e.retry_policy,
            ARRAY(SELECT secret FROM webhook_secrets w WHERE w.endpoint_id = c.endpoint_id
                AND (w.expires_at IS NULL OR w.expires_at > now()) ORDER BY w.created_at DESC)
        FROM claimed c JOIN webhook_endpoints e ON e.id = c.endpoint_id`, pgx.QueryExecModeExec,
		Lease.String(), s.Concurrency*2, s.heldBackEndpoints())
	if err != nil {
		return nil, err
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		err := r.Scan(&j.id, &j.endpointID, &j.eventType, &j.payload, &j.attempts, &j.url, &j.platformID, &j.environment,
			&j.policy, &j.secrets)
		return j, err
	})
	s.track(jobs)
	return jobs, err
}

// track counts jobs as sent and not yet answered (see heldBackEndpoints).
func (s *Sender) track(jobs []job) {
	at := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range jobs {
		if s.inFlight[j.endpointID] == nil {
			s.inFlight[j.endpointID] = map[string]time.Time{}
		}
		s.inFlight[j.endpointID][j.id] = at
	}
}

// finish sends a claimed round and records it (see SendDue).
func (s *Sender) finish(ctx context.Context, jobs []job) error {
	// Every request of the round at once (a round is 2×Concurrency): a
	// slot held by a slow endpoint must not keep the others from starting.
	attempts := make([]attempt, len(jobs))
	answered := make([]chan struct{}, len(jobs))
	for i := range jobs {
		answered[i] = make(chan struct{})
		go func() {
			defer close(answered[i])
			attempts[i] = s.post(ctx, jobs[i])
			s.mu.Lock()
			defer s.mu.Unlock()
			ep := jobs[i].endpointID
			if delete(s.inFlight[ep], jobs[i].id); len(s.inFlight[ep]) == 0 {
				delete(s.inFlight, ep)
			}
		}()
	}
	deadline := time.NewTimer(s.RoundWait)
	defer deadline.Stop()
	expired := false
	var doneJobs, lateJobs []job
	var doneAttempts []attempt
	var late []int
	for i := range jobs {
		if !expired {
			select {
			case <-answered[i]:
			case <-deadline.C:
				expired = true
			}
		}
		select {
		case <-answered[i]:
			doneJobs, doneAttempts = append(doneJobs, jobs[i]), append(doneAttempts, attempts[i])
		default:
			late, lateJobs = append(late, i), append(lateJobs, jobs[i])
		}
	}
	if len(late) > 0 {
		s.straggle(ctx, lateJobs, late, answered, attempts)
	}
	if len(doneJobs) == 0 {
		return nil
	}
	// Requests that went out are recorded even when the sender is
	// stopping, or they would be sent again.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	return s.record(rctx, doneJobs, doneAttempts)
}

// straggle records a round's requests that outlived it (jobs, at the
// round's indexes late) together once they have all answered; until then
// their endpoints are left out of the claims.
func (s *Sender) straggle(ctx context.Context, jobs []job, late []int, answered []chan struct{}, all []attempt) {
	s.mu.Lock()
	for _, j := range jobs {
		s.slow[j.endpointID]++
	}
	s.mu.Unlock()
	s.stragglers.Go(func() {
		attempts := make([]attempt, len(late))
		for k, i := range late {
			<-answered[i]
			attempts[k] = all[i]
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := s.record(rctx, jobs, attempts); err != nil {
			s.Log.Warn("webhook sender: recording late answers", "deliveries", len(jobs), "error", err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, j := range jobs {
			if s.slow[j.endpointID]--; s.slow[j.endpointID] == 0 {
				delete(s.slow, j.endpointID)
			}
		}
	})
}

// heldBackEndpoints are the endpoints the next claim leaves out: those
// with a request outstanding past its round, those with a round's worth
// of requests (2×Concurrency) unanswered, and those with a request
// unanswered for longer than HoldBackAfter. So an endpoint that hangs gets
// into at most the rounds claimed in its first HoldBackAfter, with fewer
// than four rounds' worth of requests: rounds going on at once do not all
// end up waiting for it.
func (s *Sender) heldBackEndpoints() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.slow))
	for id := range s.slow {
		ids = append(ids, id)
	}
	now := time.Now()
	for id, requests := range s.inFlight {
		if s.slow[id] > 0 {
			continue
		}
		held := len(requests) >= 2*s.Concurrency
		for _, at := range requests {
			held = held || now.Sub(at) > s.HoldBackAfter
		}
		if held {
			ids = append(ids, id)
		}
	}
	return ids
}

// DefaultHoldBackAfter is how long a request may go unanswered before its
// endpoint gets no new deliveries (Sender.HoldBackAfter): far above what
// an endpoint that keeps up takes, far below the round's wait.
const DefaultHoldBackAfter = 100 * time.Millisecond

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
	// The round commits without waiting for the WAL flush (the next
	// claim, which does, flushes it): a crash that loses it sends the
	// round's deliveries again, with the same ids, as a crash between a
	// request and its record always could.
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	b.Queue(`INSERT INTO webhook_attempts (delivery_id, attempted_at, status_code, duration_ms, error, response_body)
        SELECT * FROM unnest($1::text[], $2::timestamptz[], $3::int[], $4::int[], $5::text[], $6::text[])
        ON CONFLICT DO NOTHING`, ids, ats, codes, durations, errTexts, bodies)
	// Only where no other sender took the delivery over meanwhile (an
	// attempt that outlived its lease): the attempt itself is recorded
	// either way.
	b.Queue(`UPDATE webhook_deliveries d SET status = u.status, attempt_count = u.count, next_attempt_at = u.next
        FROM unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[]) u(id, status, count, next, prior)
        WHERE d.id = u.id AND d.status = 'pending' AND d.attempt_count = u.prior`, ids, statuses, counts, nexts, prior)
	b.Queue(`COMMIT`)
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
