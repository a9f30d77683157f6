package app

import (
	"context"
	"errors"
	"time"

	"github.com/opentreasury/treasury/eventstore"
)

// Read-your-writes: the ledger, transaction and event lists are projected
// after a command commits, in commit order (their seq orders pages). A
// read of them first waits until the projections have passed every event
// committed before the read began (the log's head as the read sees it), so
// a client's list shows what its 2xx writes wrote, whichever replica
// served them. Writes answer at once: waiting there would add the
// projections' latency to every write. The wait is bounded: past it the
// read answers with what is projected, and a warning is logged.

// AwaitProjections waits, at most ReadYourWritesWithin (and half of what
// is left of ctx), until the asynchronous projections have handled every
// event committed before it was called. It never fails the read: an error
// reading the head is left for the read itself to meet.
func (a *App) AwaitProjections(ctx context.Context) {
	if a.Projected == nil {
		return
	}
	head, err := eventstore.Head(ctx, a.Pool)
	if err != nil {
		return
	}
	a.awaitHead(ctx, head)
}

// awaitHead waits, at most ReadYourWritesWithin (and half of what is left
// of ctx), until the asynchronous projections have passed head; false
// when they had not.
func (a *App) awaitHead(ctx context.Context, head eventstore.Position) bool {
	within := a.ReadYourWritesWithin
	if deadline, ok := ctx.Deadline(); ok {
		// Leave the request time to read and answer after the wait.
		within = min(within, time.Until(deadline)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	err := a.Projected.Wait(wctx, head)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		a.Log.Warn("a read answers before the projections show every earlier write: they are behind",
			"waited", within, "position", head.GlobalPosition)
	}
	return err == nil
}
