package eventstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// Many goroutines wait for a subscription to pass different positions
// (read-your-writes): each returns once the subscription has handled its
// position, not before, whether the subscription runs in this process
// (its commits kick the Progress) or elsewhere (the Progress polls while
// anyone waits); a wait past its context ends with the context's error.
func TestProgressWaitersReturnOncePassed(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	const name = "followed"
	p := eventstore.NewProgress(pool, name)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go p.Run(runCtx)

	appendSome(t, ctx, pool, "progress", 40)
	// A transaction of another test package on the server may keep them
	// unreadable a moment: wait until all 40 are.
	log, _ := readN(t, ctx, pool, eventstore.Position{}, 100, 40)
	sub := &eventstore.Subscription{Name: name, Pool: pool, BatchSize: 10, Log: discard,
		Handle: func(context.Context, pgx.Tx, []eventstore.RecordedEvent) error { return nil }}
	sub.OnCommit = p.Kick

	var wg sync.WaitGroup
	early := make(chan string, 40)
	for i := range log {
		pos := eventstore.PositionOf(log[i])
		wg.Go(func() {
			if err := p.Wait(ctx, pos); err != nil {
				early <- err.Error()
				return
			}
			cp, err := sub.Checkpoint(ctx)
			if err != nil || cp.Less(pos) {
				early <- "returned before the subscription passed its position"
			}
		})
	}
	// In this process: each step commits a batch and kicks.
	for range 3 {
		if _, err := sub.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Elsewhere: the last batch is handled by another subscriber with no
	// kick, so only the Progress's poll sees it.
	other := &eventstore.Subscription{Name: name, Pool: pool, BatchSize: 10, Log: discard, Handle: sub.Handle}
	if _, err := other.Step(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(early)
	for msg := range early {
		t.Error(msg)
	}

	// Nothing passes a position beyond the log: the wait ends with ctx.
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	beyond := eventstore.PositionOf(log[len(log)-1])
	beyond.GlobalPosition++
	if err := p.Wait(short, beyond); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a wait for a position nobody passes ended with %v, want the deadline", err)
	}
	var nilProgress *eventstore.Progress
	nilProgress.Kick() // must not panic: serve without read-your-writes has none
}

// A Progress over several subscriptions waits for the slowest: a write is
// readable only once every read model has it.
func TestProgressFollowsTheSlowestSubscription(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	names := []string{"progress_fast", "progress_slow"}
	p := eventstore.NewProgress(pool, names...)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go p.Run(runCtx)

	appendSome(t, ctx, pool, "slowest", 6)
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	nop := func(context.Context, pgx.Tx, []eventstore.RecordedEvent) error { return nil }
	fast := &eventstore.Subscription{Name: names[0], Pool: pool, BatchSize: 100, Log: discard, Handle: nop, OnCommit: p.Kick}
	slow := &eventstore.Subscription{Name: names[1], Pool: pool, BatchSize: 1, Log: discard, Handle: nop, OnCommit: p.Kick}
	if err := fast.CatchUpTo(ctx, head); err != nil {
		t.Fatal(err)
	}
	waitFor := func(d time.Duration) error {
		c, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return p.Wait(c, head)
	}
	if cp, err := eventstore.ReadSlowestCheckpoint(ctx, pool, names); err != nil || cp != (eventstore.Position{}) {
		t.Errorf("slowest checkpoint with one subscription not started: %+v, %v; want the start of the log", cp, err)
	}
	if err := waitFor(100 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the wait ended with %v while one subscription had not started", err)
	}
	if _, err := slow.Step(ctx); err != nil {
		t.Fatal(err)
	}
	slowAt, err := slow.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cp, err := eventstore.ReadSlowestCheckpoint(ctx, pool, names); err != nil || cp != slowAt || !cp.Less(head) {
		t.Errorf("slowest checkpoint %+v, %v; want the slow one's %+v, below the head %+v", cp, err, slowAt, head)
	}
	if err := waitFor(100 * time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the wait ended with %v while one subscription was behind", err)
	}
	slow.BatchSize = 1000
	if err := slow.CatchUpTo(ctx, head); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(10 * time.Second); err != nil {
		t.Fatalf("the wait did not end once both passed the position: %v", err)
	}
}

// Given a Progress nobody waits on, when the subscription commits and
// kicks it many times, then it reads nothing; when a reader then waits
// for a position the subscription has passed since, the Progress reads at
// once and the wait returns: its poll is set to an hour, so only the
// waiter's own kick can end the wait (the subscription's kicks are over).
func TestProgressReadsOnlyForWaiters(t *testing.T) {
	ctx := testCtx(t)
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	rt := &eventstore.RoundTrips{}
	cfg.ConnConfig.Tracer = rt
	traced, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer traced.Close()

	const name = "followed_lazily"
	p := eventstore.NewProgress(traced, name)
	eventstore.SetPollEvery(p, time.Hour)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go p.Run(eventstore.WithOrigin(runCtx, eventstore.OriginProgress))

	appendSome(t, ctx, pool, "lazy", 30)
	log, _ := readN(t, ctx, pool, eventstore.Position{}, 100, 30)
	sub := &eventstore.Subscription{Name: name, Pool: pool, BatchSize: 10, Log: discard, OnCommit: p.Kick,
		Handle: func(context.Context, pgx.Tx, []eventstore.RecordedEvent) error { return nil }}
	for range 3 {
		if _, err := sub.Step(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // time for a kicked read, were it made
	}
	if n := rt.Count(eventstore.OriginProgress); n != 0 {
		t.Fatalf("the Progress made %d round trips with nobody waiting; want 0", n)
	}

	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.Wait(wctx, eventstore.PositionOf(log[len(log)-1])); err != nil {
		t.Fatalf("a wait for a passed position: %v", err)
	}
	if n := rt.Count(eventstore.OriginProgress); n == 0 {
		t.Fatal("the wait returned with no read of the checkpoint")
	}
}
