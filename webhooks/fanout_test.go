package webhooks_test

import (
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/webhooks"
)

// stmtTracer records the statements sent on a pool (queries, execs and
// each query of a batch) and how many were in flight at most at once.
type stmtTracer struct {
	mu          sync.Mutex
	sql         []string
	inFlight    int
	maxInFlight int
}

func (s *stmtTracer) start(sql string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, sql)
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
}

func (s *stmtTracer) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
}

func (s *stmtTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.start(d.SQL)
	return ctx
}

func (s *stmtTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) { s.end() }

func (s *stmtTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	return ctx
}

func (s *stmtTracer) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, d.SQL)
}

func (s *stmtTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) { s.end() }

// fanoutStatements are the statements that read endpoints or write
// deliveries (the feed's own checkpoint and event reads are left out).
func (s *stmtTracer) fanoutStatements() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, q := range s.sql {
		if strings.Contains(q, "webhook_endpoints") || strings.Contains(q, "webhook_deliveries") {
			out = append(out, q)
		}
	}
	return out
}

func (s *stmtTracer) maxParallel() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

func (s *stmtTracer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql, s.maxInFlight = nil, 0
}

// tracedPool is a second pool on e's database whose statements tr sees.
func (e env) tracedPool(t *testing.T, tr pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(e.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

type pubEvent struct {
	platformID string
	env        domain.Environment
	typ        string
}

// insertPublicEvents appends the events to public_events (as the
// projection would, numbered after the last) in one transaction, and
// returns their ids in order and the last seq.
func (e env) insertPublicEvents(t *testing.T, evs []pubEvent) ([]string, int64) {
	t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	var seq int64
	if err := tx.QueryRow(e.ctx, `SELECT coalesce(max(seq), 0) FROM public_events`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(evs))
	for i, ev := range evs {
		seq++
		ids[i] = domain.NewID(domain.PrefixEvent)
		if _, err := tx.Exec(e.ctx, `INSERT INTO public_events (seq, id, type, platform_id, environment, created_at, data)
            VALUES ($1, $2, $3, $4, $5, now(), $6)`, seq, ids[i], ev.typ, ev.platformID, ev.env.String(),
			fmt.Sprintf(`{"n": %d, "note": "<&>"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	return ids, seq
}

func (e env) checkpoint(t *testing.T) int64 {
	t.Helper()
	var cp int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce((SELECT global_position FROM subscription_checkpoints WHERE name = $1), -1)`,
		webhooks.FanoutName).Scan(&cp); err != nil {
		t.Fatal(err)
	}
	return cp
}

// fanOnce runs a router on pool until the feed's checkpoint reaches last,
// then stops it.
func (e env) fanOnce(t *testing.T, pool *pgxpool.Pool, fanout *webhooks.Fanout, last int64) {
	t.Helper()
	if fanout == nil {
		fanout = &webhooks.Fanout{}
	}
	fanout.Pool = pool
	r, err := webhooks.NewRouter([]*webhooks.FeedSubscriber{{Pool: pool, Poll: 20 * time.Millisecond, Log: e.log}}, fanout, e.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("router: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("router did not stop")
		}
	}()
	waitFor(t, 15*time.Second, fmt.Sprintf("the feed to reach seq %d", last), func() bool { return e.checkpoint(t) == last })
}

// deliveryKey is a delivery as the fan-out decides it: endpoint and event.
type deliveryKey struct{ endpoint, event string }

// allDeliveries maps every delivery's (endpoint, event) to its id, failing
// on a pair delivered twice.
func (e env) allDeliveries(t *testing.T) map[deliveryKey]string {
	t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT id, endpoint_id, event_id FROM webhook_deliveries`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[deliveryKey]string{}
	var id string
	var k deliveryKey
	if _, err := pgx.ForEachRow(rows, []any{&id, &k.endpoint, &k.event}, func() error {
		if prev, dup := got[k]; dup {
			t.Errorf("event %s delivered twice to %s (%s and %s)", k.event, k.endpoint, prev, id)
		}
		got[k] = id
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// fanoutScenario: a batch of 2n public events, n of platform A (which has
// endpoints: filtered by type, wildcard, live, disabled, deleted) and n
// of platform B (which has none), fanned out by a router on a traced
// pool, then fanned out again from a rewound checkpoint. It returns the
// fan-out's statements of each pass.
func fanoutScenario(t *testing.T, n int) (first, second []string) {
	e := setup(t)
	a := e.c
	res, err := e.app.RegisterPlatform(e.ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Bolt", ContactEmail: "ops@bolt.example"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.app.ApprovePlatform(e.ctx, app.Meta{}, res.ID); err != nil {
		t.Fatal(err)
	}
	b := app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}
	if _, err := e.app.EnableLive(e.ctx, app.Meta{}, a.PlatformID); err != nil {
		t.Fatal(err)
	}
	aLive := app.Caller{PlatformID: a.PlatformID, Environment: domain.Live}

	const hook = "https://example.com/hook"
	completed := e.createWebhook(t, hook, []string{"payment.completed"}).ID
	twoTypes := e.createWebhook(t, hook, []string{"virtual_account.created", "payment.failed"}).ID
	all := e.createWebhook(t, hook, nil).ID // ["*"]
	disabled := e.createWebhook(t, hook, nil).ID
	off := "disabled"
	if err := e.app.UpdateWebhook(e.ctx, app.Meta{}, a, disabled, app.WebhookInput{Status: &off}); err != nil {
		t.Fatal(err)
	}
	deleted := e.createWebhook(t, hook, nil).ID
	if err := e.app.DeleteWebhook(e.ctx, app.Meta{}, a, deleted); err != nil {
		t.Fatal(err)
	}
	url := hook
	liveRes, err := e.app.CreateWebhook(e.ctx, app.Meta{}, nil, aLive, app.WebhookInput{URL: &url, Events: []string{"payment.completed"}})
	if err != nil {
		t.Fatal(err)
	}
	live := liveRes.ID
	if c := e.count(t, `SELECT count(*) FROM public_events`); c != 0 {
		t.Fatalf("%d public events before the test's own", c)
	}

	kinds := []pubEvent{
		{a.PlatformID, domain.Sandbox, "payment.completed"},
		{a.PlatformID, domain.Sandbox, "virtual_account.created"},
		{a.PlatformID, domain.Sandbox, "kyb.approved"},
		{a.PlatformID, domain.Live, "payment.completed"},
		{a.PlatformID, domain.Live, "payment.failed"},
	}
	var evs []pubEvent
	for i := range n {
		evs = append(evs, kinds[i%len(kinds)])
		evs = append(evs, pubEvent{b.PlatformID, domain.Sandbox, []string{"payment.completed", "virtual_account.created"}[i%2]})
	}
	ids, last := e.insertPublicEvents(t, evs)

	// What the rules say, spelled out: platform, environment, enabled and
	// not deleted, type or "*".
	want := map[deliveryKey]bool{}
	for i, ev := range evs {
		if ev.platformID != a.PlatformID {
			continue
		}
		switch {
		case ev.env == domain.Live:
			if ev.typ == "payment.completed" {
				want[deliveryKey{live, ids[i]}] = true
			}
		default:
			want[deliveryKey{all, ids[i]}] = true
			switch ev.typ {
			case "payment.completed":
				want[deliveryKey{completed, ids[i]}] = true
			case "virtual_account.created", "payment.failed":
				want[deliveryKey{twoTypes, ids[i]}] = true
			}
		}
	}

	tr := &stmtTracer{}
	pool := e.tracedPool(t, tr)
	var delivered atomic.Int32
	e.fanOnce(t, pool, &webhooks.Fanout{Delivered: func() { delivered.Add(1) }}, last)
	first = tr.fanoutStatements()
	if m := tr.maxParallel(); m != 1 {
		t.Errorf("n=%d: %d statements in flight at once on the fan-out's pool, want 1", n, m)
	}
	if delivered.Load() == 0 {
		t.Errorf("n=%d: the sender was never woken", n)
	}
	got := e.allDeliveries(t)
	if !maps.Equal(keysOf(got), want) {
		for k := range want {
			if got[k] == "" {
				t.Errorf("n=%d: missing delivery of %s to %s", n, k.event, k.endpoint)
			}
		}
		for k := range got {
			if !want[k] {
				t.Errorf("n=%d: unwanted delivery of %s to %s", n, k.event, k.endpoint)
			}
		}
	}
	for k, id := range got {
		if !strings.HasPrefix(id, domain.PrefixDelivery) {
			t.Errorf("delivery id %q of %v", id, k)
		}
	}
	if c := e.count(t, `SELECT count(*) FROM webhook_deliveries d JOIN public_events p ON p.id = d.event_id
        WHERE d.status = 'pending' AND d.event_type = p.type AND d.committed_at = p.created_at
          AND d.payload = jsonb_build_object('id', p.id, 'object', 'event', 'type', p.type, 'platform_id', p.platform_id,
                'environment', p.environment, 'created_at', to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'data', p.data::jsonb)`); c != len(want) {
		t.Errorf("n=%d: %d of %d deliveries carry their event's type, time and body", n, c, len(want))
	}

	// The batch again (a rebuild rewound the feed, or a crash came
	// before the checkpoint moved): nothing new, nothing changed.
	if _, err := e.pool.Exec(e.ctx, `UPDATE subscription_checkpoints SET global_position = 0 WHERE name = $1`, webhooks.FanoutName); err != nil {
		t.Fatal(err)
	}
	tr.reset()
	e.fanOnce(t, pool, nil, last)
	second = tr.fanoutStatements()
	if again := e.allDeliveries(t); !maps.Equal(again, got) {
		t.Errorf("n=%d: a second fan-out of the batch changed the deliveries: %d before, %d after", n, len(got), len(again))
	}
	return first, second
}

func keysOf(m map[deliveryKey]string) map[deliveryKey]bool {
	out := make(map[deliveryKey]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// TestFanoutStatementsDoNotGrowWithTheBatch: a batch of public events
// across a platform with endpoints and one without costs the same few
// statements (one endpoint lookup, one insert) whether it holds 16 events
// or 200, one at a time on the pool; it creates exactly the deliveries
// the rules call for, and a second pass over the batch creates none.
func TestFanoutStatementsDoNotGrowWithTheBatch(t *testing.T) {
	small1, small2 := fanoutScenario(t, 8)
	big1, big2 := fanoutScenario(t, 100) // 200 events: one feed batch
	for _, c := range []struct {
		name       string
		small, big []string
	}{{"first pass", small1, big1}, {"second pass", small2, big2}} {
		if len(c.small) != len(c.big) || len(c.big) > 2 {
			t.Errorf("%s: %d fan-out statements for 16 events, %d for 200; want the same, at most 2 (lookup, insert):\n%s",
				c.name, len(c.small), len(c.big), strings.Join(slices.Compact(slices.Sorted(slices.Values(c.big))), "\n---\n"))
		}
	}
}

// TestFanoutSkipsBatchesNobodyWants: events of a platform without
// endpoints cost one lookup for the batch and no insert.
func TestFanoutSkipsBatchesNobodyWants(t *testing.T) {
	e := setup(t)
	evs := make([]pubEvent, 50)
	for i := range evs {
		evs[i] = pubEvent{e.c.PlatformID, domain.Sandbox, "payment.completed"}
	}
	_, last := e.insertPublicEvents(t, evs)
	tr := &stmtTracer{}
	var delivered atomic.Int32
	e.fanOnce(t, e.tracedPool(t, tr), &webhooks.Fanout{Delivered: func() { delivered.Add(1) }}, last)
	stmts := tr.fanoutStatements()
	if len(stmts) != 1 || !strings.Contains(stmts[0], "FROM webhook_endpoints") {
		t.Errorf("%d fan-out statements for 50 events nobody wants, want the one lookup:\n%s", len(stmts), strings.Join(stmts, "\n---\n"))
	}
	if n := e.count(t, `SELECT count(*) FROM webhook_deliveries`); n != 0 {
		t.Errorf("%d deliveries", n)
	}
	if delivered.Load() != 0 {
		t.Error("the sender was woken for no delivery")
	}
}

// TestFanoutKeepsARewindDuringTheBatch: a rebuild that rewinds the feed
// while a batch is being fanned out wins over the batch's checkpoint
// move (compare and set), so the feed goes back and fans the rewound
// range out, each event once per endpoint.
func TestFanoutKeepsARewindDuringTheBatch(t *testing.T) {
	e := setup(t)
	all := e.createWebhook(t, "https://example.com/hook", nil).ID
	evs := make([]pubEvent, 10)
	for i := range evs {
		evs[i] = pubEvent{e.c.PlatformID, domain.Sandbox, "payment.completed"}
	}
	ids, last := e.insertPublicEvents(t, evs)
	// The feed had fanned out the first two already.
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO subscription_checkpoints (name, global_position) VALUES ($1, 2)`, webhooks.FanoutName); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	fanout := &webhooks.Fanout{Delivered: func() {
		if handled.Add(1) == 1 {
			// The rebuild's rewind commits while the batch is in flight.
			if _, err := e.pool.Exec(e.ctx, `UPDATE subscription_checkpoints SET global_position = 0 WHERE name = $1`, webhooks.FanoutName); err != nil {
				t.Error(err)
			}
		}
	}}
	e.fanOnce(t, e.pool, fanout, last)
	if h := handled.Load(); h != 2 {
		t.Errorf("the batch was handled %d times, want 2 (again from the rewound position)", h)
	}
	got := e.allDeliveries(t)
	if len(got) != len(ids) {
		t.Errorf("%d deliveries, want %d", len(got), len(ids))
	}
	for _, id := range ids {
		if got[deliveryKey{all, id}] == "" {
			t.Errorf("event %s not delivered", id)
		}
	}
}

// TestFanoutRereadsABatchARebuildRewoundInPlace: a rebuild that puts back
// or renumbers public events just after the feed's position leaves the
// position where it is but bumps the checkpoint's version; a batch read
// before the swap must not move the feed past those rows, so it is read
// again. (A row corrected in place keeps the delivery made from its old
// content: deliveries are idempotent per endpoint and event id.)
func TestFanoutRereadsABatchARebuildRewoundInPlace(t *testing.T) {
	e := setup(t)
	e.createWebhook(t, "https://example.com/hook", nil)
	evs := make([]pubEvent, 5)
	for i := range evs {
		evs[i] = pubEvent{e.c.PlatformID, domain.Sandbox, "payment.completed"}
	}
	_, last := e.insertPublicEvents(t, evs)
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO subscription_checkpoints (name, global_position) VALUES ($1, 2)`, webhooks.FanoutName); err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int32
	fanout := &webhooks.Fanout{Delivered: func() {
		if handled.Add(1) == 1 {
			// What the rebuild's rewind does when the first changed row is
			// seq 3: the position stays at 2, the version moves.
			if _, err := e.pool.Exec(e.ctx, `UPDATE subscription_checkpoints SET global_position = LEAST(global_position, 2),
                updated_at = clock_timestamp() WHERE name = $1`, webhooks.FanoutName); err != nil {
				t.Error(err)
			}
		}
	}}
	e.fanOnce(t, e.pool, fanout, last)
	if h := handled.Load(); h != 2 {
		t.Errorf("the batch was handled %d times, want 2: the feed moved past rows a rebuild corrected while the batch was in flight", h)
	}
}

// TestFeedPausingAfterAFailureHoldsNothingBack: while the feed waits to
// send a batch the fan-out refused again, it reports itself idle to the
// pacer (a failing fan-out is not short of time, and commands must not
// wait for it); once the batch is taken, it has read the table to its end.
func TestFeedPausingAfterAFailureHoldsNothingBack(t *testing.T) {
	e := setup(t)
	e.createWebhook(t, "https://example.com/hook", nil)
	e.insertPublicEvents(t, []pubEvent{{e.c.PlatformID, domain.Sandbox, "payment.completed"}})
	pacer := eventstore.NewPacer(10*time.Millisecond, time.Hour)
	feed := &webhooks.FeedSubscriber{Pool: e.pool, Poll: time.Hour, Log: e.log, Pacer: pacer}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	msgs, err := feed.Subscribe(ctx, webhooks.Topic)
	if err != nil {
		t.Fatal(err)
	}
	first := <-msgs
	first.Nack()
	waitFor(t, 5*time.Second, "the feed to report itself idle while it pauses", func() bool {
		lag, _ := pacer.Behind(time.Now().Add(time.Hour))
		return lag == 0
	})
	again := <-msgs // the same batch, after the pause
	if again.UUID != first.UUID {
		t.Fatalf("resent message %s, want the batch %s again", again.UUID, first.UUID)
	}
	again.Ack()
	waitFor(t, 5*time.Second, "the feed to have read the public events to their end", func() bool {
		lag, _ := pacer.Behind(time.Now())
		return lag < time.Second
	})
}

// claimTracer counts the sender's claims and the deliveries they took.
type claimTracer struct{ claims, claimed atomic.Int64 }

type claimKey struct{}

func (c *claimTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	claim := strings.Contains(d.SQL, "claimed AS (") // the sender's claim
	if claim {
		c.claims.Add(1)
	}
	return context.WithValue(ctx, claimKey{}, claim)
}

func (c *claimTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if claim, _ := ctx.Value(claimKey{}).(bool); claim && d.Err == nil {
		c.claimed.Add(d.CommandTag.RowsAffected())
	}
}

// Given a running sender with a round free, when the fan-out inserts
// deliveries, then it hands them to the sender, leased at their insert:
// each arrives signed, with its delivery id, and is recorded, and the
// sender's claim took none of them.
func TestFanoutHandsItsDeliveriesToTheSender(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)

	tr := &claimTracer{}
	sender := &webhooks.Sender{Pool: e.tracedPool(t, tr), App: e.app, Log: e.log, AllowPrivate: true, RoundWait: time.Minute}
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); sender.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	// The sender runs once it has claimed (nothing yet): only a running
	// sender is handed deliveries.
	waitFor(t, 15*time.Second, "the sender's first claim", func() bool { return tr.claims.Load() > 0 })

	ids, last := e.insertPublicEvents(t, []pubEvent{
		{e.c.PlatformID, domain.Sandbox, "payment.created"},
		{e.c.PlatformID, domain.Sandbox, "payment.submitted"},
		{e.c.PlatformID, domain.Sandbox, "payment.completed"},
	})
	e.fanOnce(t, e.pool, &webhooks.Fanout{Sender: sender}, last)
	waitFor(t, 15*time.Second, "the three deliveries to be recorded as succeeded", func() bool {
		var n int
		if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM webhook_deliveries WHERE status = 'succeeded'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == len(ids)
	})
	if n := tr.claimed.Load(); n != 0 {
		t.Errorf("the sender's claim took %d deliveries, want none: the fan-out hands them over", n)
	}
	got := rcv.requests()
	if len(got) != len(ids) {
		t.Fatalf("%d requests, want %d", len(got), len(ids))
	}
	for _, r := range got {
		if !verify(t, r, wh.Secret) {
			t.Errorf("signature %q not valid for the endpoint's secret", r.sig)
		}
		// The body a retry would send: the delivery's stored payload.
		var stored string
		if err := e.pool.QueryRow(e.ctx, `SELECT payload::text FROM webhook_deliveries WHERE id = $1`, r.id).Scan(&stored); err != nil {
			t.Fatalf("webhook-id %q is no delivery's id: %v", r.id, err)
		}
		if string(r.body) != stored {
			t.Errorf("delivery %s: first attempt sent %s, a retry would send %s", r.id, r.body, stored)
		}
	}
}
