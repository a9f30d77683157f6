package eventstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// TestSubscriptionReadAhead: a subscription that reads the next batch
// while it handles one handles the same events in the same batches as one
// that does not, on a pool of a single connection (the read ahead must
// not wait for the step's own connection), and a failed batch throws away
// what was read ahead of it: the retry handles the same batch again and
// nothing after it is skipped or doubled.
func TestSubscriptionReadAhead(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.SizedPool(t, 1)
	createScratch(t, ctx, pool, true)
	want := appendSome(t, ctx, pool, "ahead", 11)
	readN(t, ctx, pool, eventstore.Position{}, 100, len(want))

	boom := errors.New("handler failed")
	failAt := 2 // the third batch fails once
	var batches [][]string
	sub := &eventstore.Subscription{Name: "ahead", Pool: pool, BatchSize: 3, ReadAhead: true, Decode: true, Log: discard}
	sub.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		for i := range evs {
			if evs[i].Event == nil {
				t.Errorf("event %s reached the handler undecoded", evs[i].EventID)
			}
		}
		batches = append(batches, eventIDs(evs))
		if err := insertScratch(ctx, tx, sub.Name, evs); err != nil {
			return err
		}
		if len(batches) == failAt+1 {
			return boom
		}
		return nil
	}
	n, err := sub.CatchUp(ctx)
	if !errors.Is(err, boom) || n != 6 {
		t.Fatalf("catch up with a failing third batch = %d, %v; want 6, %v", n, err, boom)
	}
	n, err = sub.CatchUp(ctx)
	if n != 5 || err != nil {
		t.Fatalf("catch up after the failure = %d, %v; want 5, nil", n, err)
	}
	wantBatches := [][]string{want[0:3], want[3:6], want[6:9], want[6:9], want[9:11]}
	if !slices.EqualFunc(batches, wantBatches, slices.Equal[[]string]) {
		t.Errorf("batches = %v, want %v", batches, wantBatches)
	}
	if got := scratchIDs(scratchRows(t, ctx, pool)); !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}

	// Without reading ahead: the same batches (but the failed one).
	plain := &eventstore.Subscription{Name: "plain", Pool: pool, BatchSize: 3}
	var plainBatches [][]string
	plain.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		plainBatches = append(plainBatches, eventIDs(evs))
		return nil
	}
	if _, err := plain.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if want := slices.Delete(slices.Clone(wantBatches), 2, 3); !slices.EqualFunc(plainBatches, want, slices.Equal[[]string]) {
		t.Errorf("without read ahead: batches = %v, want %v", plainBatches, want)
	}
}

// eventReads is a pgx tracer counting the statements that read the log,
// on their own or in a batch.
type eventReads struct{ n atomic.Int64 }

func (r *eventReads) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *eventReads) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	if strings.Contains(d.SQL, "FROM events") {
		r.n.Add(1)
	}
}

func (r *eventReads) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

func (r *eventReads) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if strings.Contains(d.SQL, "FROM events") {
		r.n.Add(1)
	}
	return ctx
}

func (r *eventReads) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// What a subscription reads ahead is used: a full step sends one read of
// the log (the next batch's), not its own as well.
func TestSubscriptionUsesWhatItReadAhead(t *testing.T) {
	ctx := testCtx(t)
	reads := &eventReads{}
	pool := pgtest.TracedPool(t, reads, 2)
	appendSome(t, ctx, pool, "used", 12)
	readN(t, ctx, pool, eventstore.Position{}, 100, 12) // all readable: every read below sees them
	reads.n.Store(0)
	sub := &eventstore.Subscription{Name: "used", Pool: pool, BatchSize: 3, ReadAhead: true, Log: discard,
		Handle: func(context.Context, pgx.Tx, []eventstore.RecordedEvent) error { return nil }}
	if n, err := sub.CatchUp(ctx); n != 12 || err != nil {
		t.Fatalf("catch up = %d, %v; want 12", n, err)
	}
	// The first step reads its batch (twice: the read in its first round
	// trip finds no checkpoint yet, as only a subscription's first step
	// does); each of the four full steps reads the next one
	// ahead, used by the next step; the last read ahead finds nothing
	// (not full), so the last step reads for itself: 7. Never using what
	// was read ahead would take 2 a full step and 1: 10.
	if got := reads.n.Load(); got != 7 {
		t.Errorf("%d reads of the log for 4 full batches, want 7", got)
	}
}
