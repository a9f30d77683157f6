package eventstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
