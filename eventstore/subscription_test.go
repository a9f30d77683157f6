package eventstore_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

const waitFor = 5 * time.Second

var discard = slog.New(slog.DiscardHandler)

// createScratch makes the table a test handler writes to; seq records the
// order in which events were handled.
func createScratch(t *testing.T, ctx context.Context, pool *pgxpool.Pool, unique bool) {
	t.Helper()
	constraint := ""
	if unique {
		constraint = "UNIQUE"
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE scratch (
        seq            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        event_id       text NOT NULL `+constraint+`,
        stream_id      text NOT NULL,
        stream_version bigint NOT NULL,
        handled_by     text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

// insertScratch is the body of the test handlers: one row per event.
func insertScratch(ctx context.Context, tx pgx.Tx, by string, evs []eventstore.RecordedEvent) error {
	b := &pgx.Batch{}
	for i := range evs {
		if _, err := evs[i].Decode(); err != nil {
			return err
		}
		b.Queue(`INSERT INTO scratch (event_id, stream_id, stream_version, handled_by) VALUES ($1, $2, $3, $4)`,
			evs[i].EventID, evs[i].StreamID, evs[i].StreamVersion, by)
	}
	return tx.SendBatch(ctx, b).Close()
}

type scratchRow struct {
	EventID       string
	StreamID      string
	StreamVersion int64
	HandledBy     string
}

func scratchRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []scratchRow {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT event_id, stream_id, stream_version, handled_by FROM scratch ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[scratchRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func scratchCount(t *testing.T, ctx context.Context, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM scratch`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitScratch polls until the scratch table holds n rows.
func waitScratch(t *testing.T, ctx context.Context, pool *pgxpool.Pool, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := scratchCount(t, ctx, pool)
		if got == n {
			return
		}
		if got > n {
			t.Fatalf("scratch has %d rows, want %d", got, n)
		}
		if time.Now().After(deadline) {
			t.Fatalf("scratch has %d rows after %v, want %d", got, timeout, n)
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}

func checkpoint(t *testing.T, ctx context.Context, pool *pgxpool.Pool, name string) (eventstore.Position, bool) {
	t.Helper()
	var p eventstore.Position
	var txid int64
	err := pool.QueryRow(ctx, `SELECT transaction_id::text::bigint, global_position FROM subscription_checkpoints WHERE name = $1`, name).
		Scan(&txid, &p.GlobalPosition)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, false
	}
	if err != nil {
		t.Fatal(err)
	}
	p.TransactionID = uint64(txid)
	return p, true
}

// appendSome appends n events (one per transaction) across a few streams
// and returns their ids in commit order.
func appendSome(t *testing.T, ctx context.Context, pool *pgxpool.Pool, prefix string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		s := stream(fmt.Sprintf("%s_%d", prefix, i%3))
		_, v, err := eventstore.Load(ctx, pool, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		recs := mustAppend(t, ctx, pool, s, v, testEvent{Worker: i % 3, Seq: int(v) + 1})
		ids = append(ids, recs[0].EventID)
	}
	return ids
}

func scratchIDs(rows []scratchRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.EventID
	}
	return out
}

func TestSubscriptionStepAndCatchUp(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	createScratch(t, ctx, pool, true)

	sub := &eventstore.Subscription{Name: "projector", Pool: pool, BatchSize: 3, Log: discard}
	var batches []int
	sub.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		batches = append(batches, len(evs))
		return insertScratch(ctx, tx, sub.Name, evs)
	}

	if n, err := sub.Step(ctx); n != 0 || err != nil {
		t.Fatalf("step on an empty log = %d, %v; want 0, nil", n, err)
	}
	if n, err := sub.CatchUp(ctx); n != 0 || err != nil {
		t.Fatalf("catch up on an empty log = %d, %v; want 0, nil", n, err)
	}

	want := appendSome(t, ctx, pool, "sub", 10)
	readN(t, ctx, pool, eventstore.Position{}, 100, len(want)) // all readable now

	n, err := sub.Step(ctx)
	if n != 3 || err != nil {
		t.Fatalf("step = %d, %v; want 3, nil", n, err)
	}
	if got := scratchIDs(scratchRows(t, ctx, pool)); !slices.Equal(got, want[:3]) {
		t.Fatalf("after one step handled %v, want %v", got, want[:3])
	}
	log, _ := readAllFrom(t, ctx, pool, eventstore.Position{}, 100)
	if cp, ok := checkpoint(t, ctx, pool, sub.Name); !ok || cp != eventstore.PositionOf(log[2]) {
		t.Fatalf("checkpoint after one step = %+v (%v), want %+v", cp, ok, eventstore.PositionOf(log[2]))
	}

	n, err = sub.CatchUp(ctx)
	if n != 7 || err != nil {
		t.Fatalf("catch up = %d, %v; want 7, nil", n, err)
	}
	if !slices.Equal(batches, []int{3, 3, 3, 1}) {
		t.Errorf("batches = %v, want [3 3 3 1]", batches)
	}
	if got := scratchIDs(scratchRows(t, ctx, pool)); !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	if cp, _ := checkpoint(t, ctx, pool, sub.Name); cp != eventstore.PositionOf(log[9]) {
		t.Fatalf("checkpoint = %+v, want %+v", cp, eventstore.PositionOf(log[9]))
	}
	if n, err := sub.Step(ctx); n != 0 || err != nil {
		t.Fatalf("step when caught up = %d, %v; want 0, nil", n, err)
	}

	more := appendSome(t, ctx, pool, "sub", 2)
	readN(t, ctx, pool, eventstore.PositionOf(log[9]), 100, 2)
	if n, err := sub.CatchUp(ctx); n != 2 || err != nil {
		t.Fatalf("catch up after two more = %d, %v; want 2, nil", n, err)
	}
	if got := scratchIDs(scratchRows(t, ctx, pool)); !slices.Equal(got, append(want, more...)) {
		t.Fatalf("handled %v", got)
	}

	// Another subscription has its own checkpoint and sees everything.
	other := &eventstore.Subscription{Name: "other", Pool: pool}
	var otherSeen int
	other.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		otherSeen += len(evs)
		return nil
	}
	if n, err := other.CatchUp(ctx); n != 12 || err != nil || otherSeen != 12 {
		t.Fatalf("other subscription caught up %d (handled %d), %v; want 12", n, otherSeen, err)
	}
}

func TestSubscriptionHandlerErrorRollsBack(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	createScratch(t, ctx, pool, false) // no UNIQUE: a doubled row would show

	boom := errors.New("handler failed")
	fail := true
	var calls int
	var lastBatch []string
	sub := &eventstore.Subscription{Name: "flaky", Pool: pool, BatchSize: 100}
	sub.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		calls++
		lastBatch = eventIDs(evs)
		if err := insertScratch(ctx, tx, "flaky", evs); err != nil {
			return err
		}
		if fail {
			return boom // after writing: the writes must roll back
		}
		return nil
	}
	distinct := func() (rows, ids int) {
		if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT event_id) FROM scratch`).Scan(&rows, &ids); err != nil {
			t.Fatal(err)
		}
		return rows, ids
	}

	first := appendSome(t, ctx, pool, "flaky", 5)
	readN(t, ctx, pool, eventstore.Position{}, 100, 5)

	// First step ever: the checkpoint row does not exist yet.
	if n, err := sub.Step(ctx); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("failing step = %d, %v; want 0, %v", n, err, boom)
	}
	if rows, _ := distinct(); rows != 0 {
		t.Fatalf("scratch has %d rows after a failed step, want 0", rows)
	}
	if cp, ok := checkpoint(t, ctx, pool, sub.Name); ok && cp != (eventstore.Position{}) {
		t.Fatalf("checkpoint moved to %+v after a failed step", cp)
	}
	if _, err := sub.CatchUp(ctx); !errors.Is(err, boom) {
		t.Fatalf("failing catch up: %v, want %v", err, boom)
	}
	if !slices.Equal(lastBatch, first) {
		t.Fatalf("retried batch = %v, want %v", lastBatch, first)
	}

	fail = false
	if n, err := sub.CatchUp(ctx); n != 5 || err != nil {
		t.Fatalf("catch up = %d, %v; want 5, nil", n, err)
	}
	if rows, ids := distinct(); rows != 5 || ids != 5 {
		t.Fatalf("scratch has %d rows (%d distinct), want 5", rows, ids)
	}
	cp, ok := checkpoint(t, ctx, pool, sub.Name)
	if !ok {
		t.Fatal("no checkpoint after a successful step")
	}

	// With a checkpoint row in place.
	second := appendSome(t, ctx, pool, "flaky", 3)
	readN(t, ctx, pool, cp, 100, 3)
	fail = true
	for range 2 {
		if n, err := sub.Step(ctx); !errors.Is(err, boom) || n != 0 {
			t.Fatalf("failing step = %d, %v", n, err)
		}
		if !slices.Equal(lastBatch, second) {
			t.Fatalf("failing step saw %v, want %v", lastBatch, second)
		}
	}
	if rows, _ := distinct(); rows != 5 {
		t.Fatalf("scratch has %d rows after failed steps, want 5", rows)
	}
	if got, _ := checkpoint(t, ctx, pool, sub.Name); got != cp {
		t.Fatalf("checkpoint moved from %+v to %+v on failure", cp, got)
	}
	fail = false
	if n, err := sub.Step(ctx); n != 3 || err != nil {
		t.Fatalf("step after recovery = %d, %v; want 3, nil", n, err)
	}
	if rows, ids := distinct(); rows != 8 || ids != 8 {
		t.Fatalf("scratch has %d rows (%d distinct), want 8", rows, ids)
	}
	if got := scratchIDs(scratchRows(t, ctx, pool)); !slices.Equal(got, append(first, second...)) {
		t.Fatalf("handled %v", got)
	}
	if calls != 6 {
		t.Errorf("handler called %d times, want 6", calls)
	}
}

// TestSubscriptionNotOwner: while another transaction holds the
// checkpoint, Step does not wait and does not process anything.
func TestSubscriptionNotOwner(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	createScratch(t, ctx, pool, true)
	sub := &eventstore.Subscription{Name: "owned", Pool: pool,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			return insertScratch(ctx, tx, "owned", evs)
		}}
	appendSome(t, ctx, pool, "owned", 2)
	waitCatchUp(t, ctx, sub, 2)
	appendSome(t, ctx, pool, "owned", 1)

	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(context.Background())
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.SubscriptionLock("owned")); err != nil {
		t.Fatal(err)
	}
	stepCtx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	if n, err := sub.Step(stepCtx); !errors.Is(err, eventstore.ErrNotOwner) || n != 0 {
		t.Fatalf("step while another owns the checkpoint = %d, %v; want 0, ErrNotOwner", n, err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	waitCatchUp(t, ctx, sub, 1)
	if got := scratchCount(t, ctx, pool); got != 3 {
		t.Fatalf("scratch = %d, want 3", got)
	}
}

// waitCatchUp runs CatchUp until it has handled want events in total (a
// transaction elsewhere on the server may hold events back a while).
func waitCatchUp(t *testing.T, ctx context.Context, sub *eventstore.Subscription, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	total := 0
	for {
		n, err := sub.CatchUp(ctx)
		if err != nil {
			t.Fatalf("catch up: %v", err)
		}
		total += n
		if total >= want {
			if total > want {
				t.Fatalf("caught up %d events, want %d", total, want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("caught up %d of %d events before the deadline", total, want)
		}
		time.Sleep(5 * time.Millisecond) // poll interval
	}
}

// TestSubscriptionCompetingConsumers: several Subscription values with one
// name (replicas) race; every event is handled exactly once in total, in
// commit order.
func TestSubscriptionCompetingConsumers(t *testing.T) {
	for _, tc := range []struct {
		name              string
		consumers         int
		preload           int
		writers, perWrite int
	}{
		{name: "two consumers, log written before", consumers: 2, preload: 60},
		{name: "four consumers while writers append", consumers: 4, preload: 10, writers: 8, perWrite: 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testCtx(t)
			pool := newPool(t, int32(tc.consumers+tc.writers+4))
			createScratch(t, ctx, pool, true) // a second handling of an event fails the handler
			total := tc.preload + tc.writers*tc.perWrite
			appendSome(t, ctx, pool, "pre", tc.preload)

			var handled atomic.Int64
			errs := make(chan error, 100)
			report := func(err error) {
				select {
				case errs <- err:
				default:
				}
			}
			var notOwner atomic.Int64
			start := make(chan struct{})
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for c := range tc.consumers {
				sub := &eventstore.Subscription{Name: "shared", Pool: pool, BatchSize: 7, Log: discard}
				by := fmt.Sprintf("consumer%d", c)
				sub.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
					return insertScratch(ctx, tx, by, evs)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for {
						select {
						case <-stop:
							return
						default:
						}
						n, err := sub.CatchUp(ctx)
						handled.Add(int64(n))
						if errors.Is(err, eventstore.ErrNotOwner) {
							notOwner.Add(1)
						} else if err != nil {
							report(fmt.Errorf("%s: %w", by, err))
							return
						}
						if n == 0 {
							time.Sleep(time.Millisecond) // poll interval
						}
					}
				}()
			}
			for w := range tc.writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					s := stream(fmt.Sprintf("live_%d", w))
					for i := range tc.perWrite {
						if _, err := eventstore.Append(ctx, pool, s, int64(i), eventstore.Metadata{}, testEvent{Worker: w, Seq: i + 1}); err != nil {
							report(fmt.Errorf("writer %d: %w", w, err))
							return
						}
					}
				}()
			}
			close(start)
			deadline := time.Now().Add(30 * time.Second)
			for handled.Load() < int64(total) && len(errs) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond) // poll interval
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			t.Logf("%d ErrNotOwner", notOwner.Load())
			if got := handled.Load(); got != int64(total) {
				t.Fatalf("consumers handled %d events in total, want %d", got, total)
			}

			rows := scratchRows(t, ctx, pool)
			if len(rows) != total {
				t.Fatalf("scratch has %d rows, want %d", len(rows), total)
			}
			log, _ := readAllFrom(t, ctx, pool, eventstore.Position{}, 1000)
			if got, want := scratchIDs(rows), eventIDs(log); !slices.Equal(got, want) {
				t.Fatalf("handled order differs from the log's commit order:\n got  %v\n want %v", got, want)
			}
			next := map[string]int64{}
			for _, r := range rows {
				if r.StreamVersion != next[r.StreamID]+1 {
					t.Fatalf("stream %s: version %d handled after %d", r.StreamID, r.StreamVersion, next[r.StreamID])
				}
				next[r.StreamID] = r.StreamVersion
			}
		})
	}
}

func recv(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitFor):
		t.Fatalf("no wake-up within %v: %s", waitFor, what)
	}
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// runNotifier runs n until the test ends.
func runNotifier(t *testing.T, n *eventstore.Notifier) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Errorf("Notifier.Run did not return within %v of cancel", waitFor)
		}
	})
}

func TestNotifierLocalWake(t *testing.T) {
	pool := pgtest.Pool(t)
	n := eventstore.NewNotifier(pool, discard)
	a, b := n.Subscribe(), n.Subscribe()
	n.Notify() // no Run: the in-process signal does not need it
	recv(t, a, "first subscriber")
	recv(t, b, "second subscriber")

	n.Notify()
	n.Notify()
	n.Notify() // coalesced, never blocks
	if len(a) != 1 {
		t.Fatalf("%d pending wake-ups, want 1 (coalesced)", len(a))
	}
	drain(a)
	drain(b)

	var nilNotifier *eventstore.Notifier
	nilNotifier.Notify() // a nil notifier is a no-op
	nilNotifier.NotifyOf(eventstore.TopicDeliveries)
}

// Here, a wake-up reaches only its topic's subscribers; a NOTIFY from
// another replica, which does not say what it committed, reaches all.
func TestNotifierTopics(t *testing.T) {
	pool := pgtest.Pool(t)
	n := eventstore.NewNotifier(pool, discard)
	log := n.Subscribe()
	feed := n.SubscribeTo(eventstore.TopicPublicEvents)
	sender := n.SubscribeTo(eventstore.TopicDeliveries)
	quiet := func(ch <-chan struct{}, what string) {
		t.Helper()
		if len(ch) != 0 {
			t.Errorf("%s woken by another topic", what)
		}
	}
	n.Notify()
	recv(t, log, "log reader on an append")
	quiet(feed, "feed")
	quiet(sender, "sender")
	n.NotifyOf(eventstore.TopicPublicEvents)
	recv(t, feed, "feed on public events")
	quiet(log, "log reader")
	quiet(sender, "sender")
	n.NotifyOf(eventstore.TopicDeliveries)
	recv(t, sender, "sender on deliveries")
	quiet(log, "log reader")
	quiet(feed, "feed")

	runNotifier(t, n)
	for _, ch := range []<-chan struct{}{log, feed, sender} {
		recv(t, ch, "every subscriber once listening")
	}
	// Running, its own NOTIFY comes back to its LISTEN: that must not
	// wake the other topics. Another notifier's NOTIFY wakes them once;
	// a second wake-up of the feed, whichever came back first, is the
	// echo of the append's.
	probe := eventstore.NewNotifier(pool, discard)
	runNotifier(t, probe)
	n.Notify()
	recv(t, log, "log reader on an append, running")
	probe.Notify()
	recv(t, feed, "feed on the other notifier's NOTIFY")
	recv(t, sender, "sender on the other notifier's NOTIFY")
	for range 3 {
		select {
		case <-feed:
			t.Error("the feed was woken by its own process's NOTIFY of an append")
		case <-time.After(50 * time.Millisecond):
		}
	}
	replica := eventstore.NewNotifier(pool, discard)
	runNotifier(t, replica)
	for _, ch := range []<-chan struct{}{log, feed, sender} {
		drain(ch)
	}
	replica.NotifyOf(eventstore.TopicDeliveries)
	for _, ch := range []<-chan struct{}{log, feed, sender} {
		recv(t, ch, "every subscriber on another replica's NOTIFY")
	}
}

func TestNotifierSendsNotify(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	listener, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, `LISTEN treasury_events`); err != nil {
		t.Fatal(err)
	}

	n := eventstore.NewNotifier(pool, discard)
	runNotifier(t, n)
	n.Notify()
	waitCtx, cancel := context.WithTimeout(ctx, waitFor)
	defer cancel()
	msg, err := listener.WaitForNotification(waitCtx)
	if err != nil {
		t.Fatalf("no NOTIFY reached another connection: %v", err)
	}
	if msg.Channel != eventstore.Channel {
		t.Fatalf("notification on %q, want %q", msg.Channel, eventstore.Channel)
	}
}

func TestNotifierReceivesNotify(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	n := eventstore.NewNotifier(pool, discard)
	ch := n.Subscribe()
	runNotifier(t, n)
	// Once listening, the notifier wakes its subscribers for anything
	// committed while it was not: that wake-up tells the test it listens.
	recv(t, ch, "after LISTEN")

	for i := range 3 {
		drain(ch)
		if _, err := pool.Exec(ctx, `SELECT pg_notify('treasury_events', '')`); err != nil {
			t.Fatal(err)
		}
		recv(t, ch, fmt.Sprintf("NOTIFY %d from another connection", i))
	}

	// Another replica's Notify reaches this one through PostgreSQL.
	replica := eventstore.NewNotifier(pool, discard)
	runNotifier(t, replica)
	drain(ch)
	replica.Notify()
	recv(t, ch, "Notify of another notifier")

	// The listeners reconnect when their connections are killed.
	var killed bool
	if err := pool.QueryRow(ctx, `SELECT bool_or(pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE 'LISTEN %' AND pid <> pg_backend_pid()`).Scan(&killed); err != nil || !killed {
		t.Fatalf("terminate listener: %v, %v", killed, err)
	}
	recv(t, ch, "after reconnecting") // only this notifier's own listener wakes ch
	drain(ch)
	if _, err := pool.Exec(ctx, `SELECT pg_notify('treasury_events', '')`); err != nil {
		t.Fatal(err)
	}
	recv(t, ch, "NOTIFY after the listener reconnected")
}

// runSub runs sub until the test ends.
func runSub(t *testing.T, sub *eventstore.Subscription) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); sub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(waitFor):
			t.Errorf("Subscription.Run did not return within %v of cancel", waitFor)
		}
	})
}

func TestSubscriptionRun(t *testing.T) {
	handler := func(name string) eventstore.Handler {
		return func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			return insertScratch(ctx, tx, name, evs)
		}
	}

	t.Run("wakes on Notify", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		n := eventstore.NewNotifier(pool, discard)
		runNotifier(t, n)
		// The fallback poll is far away: only wake-ups make progress.
		sub := &eventstore.Subscription{Name: "woken", Pool: pool, Handle: handler("woken"),
			PollInterval: time.Hour, Wake: n.Subscribe(), Log: discard}
		runSub(t, sub)
		var pos eventstore.Position
		for i := range 5 {
			appendSome(t, ctx, pool, "woken", 1)
			// A transaction running elsewhere on the server may keep the
			// event unreadable a while; the wake-up is for a readable one.
			_, pos = readN(t, ctx, pool, pos, 100, 1)
			n.Notify() // after commit
			waitScratch(t, ctx, pool, i+1, waitFor)
		}
	})

	t.Run("wakes on another replica's NOTIFY", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		here, writer := eventstore.NewNotifier(pool, discard), eventstore.NewNotifier(pool, discard)
		sub := &eventstore.Subscription{Name: "remote", Pool: pool, Handle: handler("remote"),
			PollInterval: time.Hour, Wake: here.Subscribe(), Log: discard}
		runSub(t, sub)
		runNotifier(t, here)
		runNotifier(t, writer)
		// Round 0 may also be woken by here's first LISTEN; later rounds
		// only by the NOTIFY that writer sends.
		var pos eventstore.Position
		for i := range 3 {
			appendSome(t, ctx, pool, "remote", 1)
			_, pos = readN(t, ctx, pool, pos, 100, 1)
			writer.Notify()
			waitScratch(t, ctx, pool, i+1, waitFor)
		}
	})

	t.Run("falls back to polling", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		sub := &eventstore.Subscription{Name: "polling", Pool: pool, Handle: handler("polling"),
			PollInterval: 10 * time.Millisecond}
		runSub(t, sub)
		appendSome(t, ctx, pool, "polling", 3)
		waitScratch(t, ctx, pool, 3, waitFor)
	})

	t.Run("holds the paced commands back while it is behind", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		pacer := eventstore.NewPacer(20*time.Millisecond, time.Hour)
		entered, release := make(chan struct{}), make(chan struct{})
		var first atomic.Bool
		sub := &eventstore.Subscription{Name: "paced", Pool: pool, PollInterval: 10 * time.Millisecond, Log: discard, Pacer: pacer,
			Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
				if first.CompareAndSwap(false, true) {
					close(entered)
					<-release // a slow batch
				}
				return insertScratch(ctx, tx, "paced", evs)
			}}
		var once sync.Once
		unblock := func() { once.Do(func() { close(release) }) }
		runSub(t, sub)
		t.Cleanup(unblock) // runs before runSub's stop: a failed test must not leave the batch stuck
		appendSome(t, ctx, pool, "paced", 1)
		<-entered
		// Stuck in its batch, it falls behind by the time alone.
		for lag, _ := pacer.Behind(time.Now()); lag <= pacer.MaxLag; lag, _ = pacer.Behind(time.Now()) {
			time.Sleep(5 * time.Millisecond)
		}
		waited := make(chan error, 1)
		go func() { waited <- pacer.Wait(ctx) }()
		select {
		case err := <-waited:
			t.Fatalf("a command went ahead (%v) while the subscription was stuck in a batch", err)
		case <-time.After(200 * time.Millisecond):
		}
		unblock()
		select {
		case err := <-waited:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(waitFor):
			t.Fatal("the command still waits after the batch committed")
		}
		waitScratch(t, ctx, pool, 1, waitFor)
		// Caught up, it waits for news: it holds nothing back, however long.
		deadline := time.Now().Add(waitFor)
		for lag, _ := pacer.Behind(time.Now().Add(time.Hour)); lag != 0; lag, _ = pacer.Behind(time.Now().Add(time.Hour)) {
			if time.Now().After(deadline) {
				t.Fatalf("idle subscription still %v behind", lag)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	t.Run("retries a failing handler", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		var calls atomic.Int64
		sub := &eventstore.Subscription{Name: "retry", Pool: pool, PollInterval: time.Hour, Log: discard,
			Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
				if err := insertScratch(ctx, tx, "retry", evs); err != nil {
					return err
				}
				if calls.Add(1) <= 2 {
					return errors.New("transient")
				}
				return nil
			}}
		appendSome(t, ctx, pool, "retry", 2)
		readN(t, ctx, pool, eventstore.Position{}, 100, 2)
		runSub(t, sub)
		waitScratch(t, ctx, pool, 2, waitFor)
		if c := calls.Load(); c != 3 {
			t.Fatalf("handler called %d times, want 3", c)
		}
	})
}

// TestDerivedSubscriptionsCommitWithoutWaitingForTheFlush: only a
// subscription that writes derived data skips the WAL flush at commit;
// any other keeps the server's synchronous_commit.
func TestDerivedSubscriptionsCommitWithoutWaitingForTheFlush(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	appendSome(t, ctx, pool, "sync", 2)
	for _, derived := range []bool{true, false} {
		var setting string
		sub := &eventstore.Subscription{Name: fmt.Sprintf("derived-%t", derived), Pool: pool, Derived: derived,
			Handle: func(ctx context.Context, tx pgx.Tx, _ []eventstore.RecordedEvent) error {
				return tx.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&setting)
			}}
		// Poll (bounded): a transaction elsewhere on the server may hold
		// the horizon below the appended events for a moment.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			n, err := sub.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the subscription read nothing for 20 s")
			}
		}
		if want := map[bool]string{true: "off", false: "on"}[derived]; setting != want {
			t.Errorf("Derived %t: synchronous_commit is %q in the batch, want %q", derived, setting, want)
		}
	}
}

// Given a burst of commits notified for 200 ms, the notifier sends at most
// one NOTIFY per NotifyEvery (plus the first); and a commit notified right
// after a NOTIFY went out still gets one of its own, once the interval is
// over.
func TestNotifierSpacesItsNotifies(t *testing.T) {
	ctx := testCtx(t)
	notifies := &statementCount{contains: "pg_notify"}
	pool := pgtest.TracedPool(t, notifies, 4)
	n := eventstore.NewNotifier(pool, discard)
	nctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go n.Run(nctx)
	sent := func() int64 { return notifies.n.Load() }
	waitSent := func(want int64, what string) {
		t.Helper()
		deadline := time.Now().Add(waitFor)
		for sent() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d NOTIFYs sent, want %d", what, sent(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}

	start := time.Now()
	for time.Since(start) < 200*time.Millisecond {
		n.Notify()
		time.Sleep(time.Millisecond) // a commit a millisecond
	}
	elapsed := time.Since(start)
	waitSent(1, "the burst")
	time.Sleep(2 * eventstore.NotifyEvery) // the last of the burst's is out
	if got, most := sent(), int64(elapsed/eventstore.NotifyEvery)+2; got > most {
		t.Errorf("%d NOTIFYs for a %v burst of commits, want at most %d (one per %v)", got, elapsed, most, eventstore.NotifyEvery)
	}

	before := sent()
	n.Notify()
	waitSent(before+1, "a lone commit")
	n.Notify() // within the interval after that NOTIFY
	waitSent(before+2, "a commit right after a NOTIFY")
}

// statementCount is a pgx tracer counting the statements whose SQL
// contains a string (executions, not their first Prepare).
type statementCount struct {
	contains string
	n        atomic.Int64
}

func (c *statementCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, c.contains) {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCount) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// Given a handler whose writes break a deferred constraint, which only
// COMMIT finds, when the subscription steps, then the step fails, its
// checkpoint and writes stay as they were, and on a pool of one
// connection the next step (the handler mended) handles the same events
// and commits: the failed COMMIT left the connection usable.
func TestSubscriptionCommitFailureMovesNothing(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.SizedPool(t, 1)
	if _, err := pool.Exec(ctx, `CREATE TABLE deferred_scratch (event_id text NOT NULL,
        CONSTRAINT one_row_per_event UNIQUE (event_id) DEFERRABLE INITIALLY DEFERRED)`); err != nil {
		t.Fatal(err)
	}
	want := appendSome(t, ctx, pool, "commit-fails", 3)
	readN(t, ctx, pool, eventstore.Position{}, 100, len(want))
	twice := true
	var handled [][]string
	sub := &eventstore.Subscription{Name: "commit-fails", Pool: pool, BatchSize: 10, Derived: true, Log: discard,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			handled = append(handled, eventIDs(evs))
			b := &pgx.Batch{}
			for _, e := range evs {
				b.Queue(`INSERT INTO deferred_scratch VALUES ($1)`, e.EventID)
				if twice {
					b.Queue(`INSERT INTO deferred_scratch VALUES ($1)`, e.EventID)
				}
			}
			return tx.SendBatch(ctx, b).Close()
		}}
	if n, err := sub.Step(ctx); err == nil || !eventstore.ViolatesConstraint(err, "one_row_per_event") {
		t.Fatalf("step = %d, %v; want the deferred constraint's violation at COMMIT", n, err)
	}
	if cp, _ := checkpoint(t, ctx, pool, "commit-fails"); cp != (eventstore.Position{}) {
		t.Errorf("the checkpoint moved to %+v with a failed COMMIT", cp)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM deferred_scratch`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows (%v) left by the failed COMMIT, want 0", rows, err)
	}
	twice = false
	if n, err := sub.Step(ctx); n != 3 || err != nil {
		t.Fatalf("step after the failure = %d, %v; want 3", n, err)
	}
	if !slices.EqualFunc(handled, [][]string{want, want}, slices.Equal[[]string]) {
		t.Errorf("handled %v, want the same batch twice", handled)
	}
	if cp, _ := checkpoint(t, ctx, pool, "commit-fails"); cp.GlobalPosition == 0 {
		t.Error("the checkpoint did not move after the step committed")
	}
}

// A reader in the middle of its step — its batch read, its handler folding
// it, nothing written yet — holds no transaction id, so it does not hold
// back the other readers of the log (each reads only below the oldest
// transaction still running). It used to: its checkpoint's row lock took
// one at the start of the step.
func TestAStepUnderWayDoesNotHoldBackOtherReaders(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	createScratch(t, ctx, pool, false)
	appendSome(t, ctx, pool, "before", 1)
	// A subscription that has run before (its first step inserts its row).
	if _, err := pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name) VALUES ('slow')`); err != nil {
		t.Fatal(err)
	}

	folding, release := make(chan bool, 1), make(chan struct{})
	slow := &eventstore.Subscription{Name: "slow", Pool: pool,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			var noXID bool
			if err := tx.QueryRow(ctx, `SELECT pg_current_xact_id_if_assigned() IS NULL`).Scan(&noXID); err != nil {
				return err
			}
			folding <- noXID
			<-release
			return insertScratch(ctx, tx, "slow", evs)
		}}
	// Steps until one handles the event: any transaction of the server
	// (another test package's) may hold it back for a moment.
	stepped := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(waitFor)
		for {
			n, err := slow.Step(ctx)
			if err != nil || n > 0 || time.Now().After(deadline) {
				stepped <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	select {
	case noXID := <-folding:
		if !noXID {
			t.Error("the step held a transaction id before its handler wrote anything")
		}
	case err := <-stepped:
		t.Fatalf("the step never handled the event: %v", err)
	}

	appendSome(t, ctx, pool, "during", 1) // committed while the slow step is under way
	fast := &eventstore.Subscription{Name: "fast", Pool: pool,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			return insertScratch(ctx, tx, "fast", evs)
		}}
	// Bounded poll, as another package's transaction may hold both
	// events back for a moment; the step under way used to hold the
	// second back until it committed.
	n, deadline := 0, time.Now().Add(waitFor)
	var err error
	for n < 2 && err == nil && time.Now().Before(deadline) {
		var more int
		more, err = fast.CatchUp(ctx)
		n += more
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if err != nil || n != 2 {
		t.Errorf("another reader, while a step is under way, read %d events (%v); want both committed", n, err)
	}
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
}

// Given an event held back by an older transaction, and a reader that
// found it so and pauses before looking again (an hour here), when that
// transaction ends and a commit of this process wakes the reader, then it
// reads the event at once: a pause ends at a wake-up (one that slept it
// out kept events 30-odd ms from their readers under load).
func TestAHeldBackReaderReadsAtTheNextWakeUp(t *testing.T) {
	ctx := testCtx(t)
	checks := &statementCount{contains: "count(*) > 0 FROM (SELECT 1 FROM events"}
	pool := pgtest.TracedPool(t, checks, 4)
	createScratch(t, ctx, pool, true)
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil {
		t.Fatal(err)
	}
	appendSome(t, ctx, pool, "held", 1) // committed after the blocker began

	wake := make(chan struct{}, 1)
	sub := &eventstore.Subscription{Name: "held", Pool: pool, PollInterval: time.Hour, HeldBackPoll: time.Hour, LatencyBound: true,
		Wake: wake, Log: discard,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			return insertScratch(ctx, tx, "held", evs)
		}}
	runSub(t, sub)
	deadline := time.Now().Add(waitFor)
	for checks.n.Load() == 0 { // the reader found its event held back
		if time.Now().After(deadline) {
			t.Fatal("the reader never found its event held back")
		}
		time.Sleep(time.Millisecond)
	}
	if got := scratchCount(t, ctx, pool); got != 0 {
		t.Fatalf("the reader handled %d events past a running older transaction", got)
	}
	if err := blocker.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// Woken (again and again: another package's transaction may hold the
	// event back a moment longer, and send it back to its pause).
	for scratchCount(t, ctx, pool) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reader slept through the wake-ups that followed its blocker's end")
		}
		select {
		case wake <- struct{}{}:
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Given a reader that has read everything readable, when commits follow
// one another within its step gap, each waking it, then it reads them
// together in one step at the gap's end, not in a step per commit; and a
// full batch is followed by the next step at once, gap or not.
func TestAReaderReadsTheCommitsOfItsStepGapTogether(t *testing.T) {
	t.Run("commits within the gap", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		var batches atomic.Int32
		wake := make(chan struct{}, 1)
		sub := &eventstore.Subscription{Name: "gap", Pool: pool, PollInterval: time.Hour, StepGap: 3 * time.Second, LatencyBound: true,
			Wake: wake, Log: discard,
			Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
				batches.Add(1)
				return insertScratch(ctx, tx, "gap", evs)
			}}
		appendSome(t, ctx, pool, "first", 1)
		_, pos := readN(t, ctx, pool, eventstore.Position{}, 100, 1)
		runSub(t, sub)
		waitScratch(t, ctx, pool, 1, waitFor) // its first step: no gap before it
		for i := range 5 {
			appendSome(t, ctx, pool, fmt.Sprintf("then%d", i), 1)
			_, pos = readN(t, ctx, pool, pos, 100, 1) // readable before the wake-up, as after a commit
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		waitScratch(t, ctx, pool, 6, 2*3*time.Second+waitFor) // a gap, or two if held back
		// Another package's transaction may hold some of the five back
		// past the first step after the gap: one more batch, no more.
		if b := batches.Load(); b > 3 {
			t.Errorf("the five commits made within the gap were handled in %d batches after the first, want them together", b-1)
		}
	})

	t.Run("a full batch", func(t *testing.T) {
		ctx := testCtx(t)
		pool := pgtest.Pool(t)
		createScratch(t, ctx, pool, true)
		appendSome(t, ctx, pool, "full", 5)
		readN(t, ctx, pool, eventstore.Position{}, 100, 5) // all readable before the reader starts
		sub := &eventstore.Subscription{Name: "full", Pool: pool, PollInterval: time.Hour, StepGap: time.Hour, LatencyBound: true,
			BatchSize: 2, Log: discard,
			Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
				return insertScratch(ctx, tx, "full", evs)
			}}
		runSub(t, sub)
		// 2, 2, then 1: no gap after a full batch.
		waitScratch(t, ctx, pool, 5, waitFor)
	})
}

// A step whose checkpoint moved while it ran (a process that does not take
// the subscription's lock: one of an earlier release, which locked the row)
// commits none of its writes and says it is not the owner; the next step
// starts from where the checkpoint now is.
func TestAStepWhoseCheckpointMovedCommitsNothing(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	createScratch(t, ctx, pool, false)
	appendSome(t, ctx, pool, "cas", 3)

	moveOnce := true
	moved := 0 // the events the checkpoint was moved past: the first step's batch
	sub := &eventstore.Subscription{Name: "cas", Pool: pool,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			if err := insertScratch(ctx, tx, "cas", evs); err != nil {
				return err
			}
			if moveOnce { // another writer of the checkpoint, committed meanwhile
				moveOnce, moved = false, len(evs)
				last := evs[len(evs)-1]
				_, err := pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name, transaction_id, global_position)
                    VALUES ('cas', $1::text::xid8, $2) ON CONFLICT (name) DO UPDATE
                    SET transaction_id = excluded.transaction_id, global_position = excluded.global_position`,
					fmt.Sprint(last.TransactionID), last.GlobalPosition)
				return err
			}
			return nil
		}}
	// The first step ever inserts the checkpoint row, committed at once by
	// the writer above; take a row in place first so the move is a move.
	if _, err := pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name) VALUES ('cas')`); err != nil {
		t.Fatal(err)
	}
	// Steps until one reads the events (another package's transaction may
	// hold them back for a moment).
	var n int
	var err error
	for deadline := time.Now().Add(waitFor); moveOnce && time.Now().Before(deadline); {
		if n, err = sub.Step(ctx); err != nil || n != 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !errors.Is(err, eventstore.ErrNotOwner) || n != 0 {
		t.Fatalf("step whose checkpoint moved = %d, %v; want 0, ErrNotOwner", n, err)
	}
	if got := scratchCount(t, ctx, pool); got != 0 {
		t.Fatalf("the step's writes committed: scratch holds %d rows, want 0", got)
	}
	appendSome(t, ctx, pool, "cas", 1)
	// Only the events after the moved checkpoint: the new one, and those of
	// the three the first step did not read (another package's transaction
	// may have held some back from it).
	after := 3 - moved + 1
	waitCatchUp(t, ctx, sub, after)
	if got := scratchCount(t, ctx, pool); got != after {
		t.Fatalf("scratch = %d rows, want %d", got, after)
	}
}
