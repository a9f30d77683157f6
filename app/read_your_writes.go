package app

import (
	"context"
	"errors"
	"time"

	"github.com/opentreasury/treasury/eventstore"
)

// Read-your-writes: the ledger, transaction and event lists are projected
// after a command commits, in commit order (their seq orders pages). A
// write made for a caller that asked for it answers only once those
// projections have passed its events, so the same caller's next read
// shows it; the wait also slows writers down when the projections fall
// behind, instead of letting the backlog grow. It is bounded: a committed
// write never fails because a projection was slow.

type readYourWritesKey struct{}

// appended is the last event a command's transaction appended.
type appended struct {
	last eventstore.Position
	any  bool
}

// ReadYourWrites marks ctx so that commands run with it answer only once
// the asynchronous projections show what they appended.
func ReadYourWrites(ctx context.Context) context.Context {
	return context.WithValue(ctx, readYourWritesKey{}, &appended{})
}

// noteAppended remembers the last of recs for run's wait.
func noteAppended(ctx context.Context, recs []eventstore.RecordedEvent) {
	mark, _ := ctx.Value(readYourWritesKey{}).(*appended)
	if mark == nil {
		return
	}
	for _, r := range recs {
		if pos := eventstore.PositionOf(r); !mark.any || mark.last.Less(pos) {
			mark.last, mark.any = pos, true
		}
	}
}

// awaitProjections waits, at most ReadYourWritesWithin, until the
// asynchronous projections have handled pos.
func (a *App) awaitProjections(ctx context.Context, pos eventstore.Position) {
	if a.Projected == nil {
		return
	}
	within := a.ReadYourWritesWithin
	if deadline, ok := ctx.Deadline(); ok {
		// Leave the request time to read and answer after the wait.
		within = min(within, time.Until(deadline)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	err := a.Projected.Wait(wctx, pos)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		a.Log.Warn("a write answers before the projections show it: they are behind",
			"waited", within, "position", pos.GlobalPosition)
	}
}
