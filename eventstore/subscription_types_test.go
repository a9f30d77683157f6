package eventstore_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// ignoredEvent is a type the filtered subscriptions below skip.
type ignoredEvent struct {
	N int `json:"n"`
}

func (ignoredEvent) EventType() string { return "eventstore_test.ignored" }

func init() { domain.RegisterEvent[ignoredEvent]() }

var keptType = (testEvent{}).EventType()

// typesSub is a subscription to testEvent only that records what it is
// given, batch by batch.
func typesSub(pool *pgxpool.Pool, name string, batch int, got *[][]string) *eventstore.Subscription {
	return &eventstore.Subscription{Name: name, Pool: pool, BatchSize: batch, Types: []string{keptType},
		Handle: func(_ context.Context, _ pgx.Tx, evs []eventstore.RecordedEvent) error {
			var ids []string
			for _, e := range evs {
				ids = append(ids, e.EventID)
			}
			*got = append(*got, ids)
			return nil
		}}
}

// waitReadable polls until every event in the log is readable: older than
// every transaction running anywhere on the server (other tests' too).
func waitReadable(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		var unreadable int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM events
            WHERE transaction_id >= pg_snapshot_xmin(pg_current_snapshot())`).Scan(&unreadable); err != nil {
			t.Fatal(err)
		}
		if unreadable == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events still not readable after %v", unreadable, waitFor)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Given a log mixing kept and ignored events, when a subscription to the
// kept type steps in batches of 2, then it is given the kept events only,
// in commit order, a full page moves the checkpoint to the page's last
// event, a short page to the last event readable (past trailing ignored
// events), and a step with nothing new neither hands anything over nor
// moves the checkpoint.
func TestSubscriptionTypesSkipsOtherEventsAndStillAdvances(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	var all []eventstore.RecordedEvent
	var kept []string
	for i := range 12 {
		s := stream("types")
		var e domain.Event = ignoredEvent{N: i}
		if i%3 == 1 {
			e = testEvent{Seq: i}
		}
		recs := mustAppend(t, ctx, pool, s, int64(i), e)
		if i%3 == 1 {
			kept = append(kept, recs[0].EventID)
		}
		all = append(all, recs...)
	}
	// kept: events 1, 4, 7, 10; 11 (ignored) is last.
	waitReadable(t, ctx, pool)
	var got [][]string
	sub := typesSub(pool, "types", 2, &got)

	n, err := sub.Step(ctx)
	if err != nil || n != 2 {
		t.Fatalf("first step = %d, %v; want 2", n, err)
	}
	cp, _ := checkpoint(t, ctx, pool, "types")
	if cp.GlobalPosition != all[4].GlobalPosition {
		t.Errorf("after a full page the checkpoint is at %d, want the page's last event %d", cp.GlobalPosition, all[4].GlobalPosition)
	}
	if n, err := sub.Step(ctx); err != nil || n != 2 {
		t.Fatalf("second step = %d, %v; want 2", n, err)
	}
	if n, err := sub.Step(ctx); err != nil || n != 0 {
		t.Fatalf("third step = %d, %v; want 0", n, err)
	}
	cp, _ = checkpoint(t, ctx, pool, "types")
	if cp.GlobalPosition != all[11].GlobalPosition {
		t.Errorf("caught up, the checkpoint is at %d, want the last event %d (past the ignored ones)", cp.GlobalPosition, all[11].GlobalPosition)
	}
	if flat := slices.Concat(got...); !slices.Equal(flat, kept) || len(got) != 2 {
		t.Errorf("handled %v, want the kept events %v in two batches", got, kept)
	}
	var updated1, updated2 string
	if err := pool.QueryRow(ctx, `SELECT updated_at::text FROM subscription_checkpoints WHERE name = 'types'`).Scan(&updated1); err != nil {
		t.Fatal(err)
	}
	if n, err := sub.Step(ctx); err != nil || n != 0 {
		t.Fatalf("idle step = %d, %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT updated_at::text FROM subscription_checkpoints WHERE name = 'types'`).Scan(&updated2); err != nil {
		t.Fatal(err)
	}
	if updated1 != updated2 {
		t.Errorf("an idle step wrote the checkpoint (%s, then %s)", updated1, updated2)
	}

	// Only ignored events arrive: the checkpoint follows, nothing is handled.
	more := mustAppend(t, ctx, pool, stream("types"), 12, ignoredEvent{N: 12}, ignoredEvent{N: 13})
	waitReadable(t, ctx, pool)
	if n, err := sub.Step(ctx); err != nil || n != 0 {
		t.Fatalf("step over ignored events = %d, %v", n, err)
	}
	if cp, _ := checkpoint(t, ctx, pool, "types"); cp.GlobalPosition != more[1].GlobalPosition {
		t.Errorf("checkpoint %d, want %d past the ignored events", cp.GlobalPosition, more[1].GlobalPosition)
	}
	if len(got) != 2 {
		t.Errorf("handled %v", got)
	}
}

// Given a transaction still open holding a kept event, and a younger one
// committed with ignored and kept events, when the filtered subscription
// steps, then it neither hands anything over nor moves its checkpoint past
// the open transaction's event; once that commits, both kept events come,
// in commit order, and the checkpoint reaches the end.
func TestSubscriptionTypesNeverSkipsALateCommit(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	first := mustAppend(t, ctx, pool, stream("late_first"), 0, ignoredEvent{N: 0})

	a, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Rollback(context.Background())
	recA := mustAppend(t, ctx, a, stream("late_a"), 0, testEvent{Note: "A"})
	recB := mustAppend(t, ctx, pool, stream("late_b"), 0, ignoredEvent{N: 1}, testEvent{Note: "B"}, ignoredEvent{N: 2})

	var got [][]string
	sub := typesSub(pool, "late_types", 100, &got)
	if n, err := sub.Step(ctx); err != nil || n != 0 {
		t.Fatalf("step while A is open = %d, %v; want 0", n, err)
	}
	cp, _ := checkpoint(t, ctx, pool, "late_types")
	if cp.GlobalPosition > first[0].GlobalPosition {
		t.Fatalf("while A is open the checkpoint moved to %d, past %d (the last event readable)", cp.GlobalPosition, first[0].GlobalPosition)
	}
	if err := a.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitReadable(t, ctx, pool)
	if n, err := sub.Step(ctx); err != nil || n != 2 {
		t.Fatalf("step after A committed = %d, %v; want 2", n, err)
	}
	if want := []string{recA[0].EventID, recB[1].EventID}; len(got) != 1 || !slices.Equal(got[0], want) {
		t.Errorf("handled %v, want [A B] = %v", got, want)
	}
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := checkpoint(t, ctx, pool, "late_types"); cp != head {
		t.Errorf("checkpoint %+v, want the head %+v", cp, head)
	}
}

// Given a log alternating kept and ignored events, when a filtered
// subscription that reads ahead catches up in batches of 3 on a pool of
// one connection, then it is given the kept events decoded, in the same
// batches as without reading ahead, its checkpoint ends past the trailing
// ignored event, and each full step used the page read ahead instead of
// reading its own.
func TestSubscriptionTypesReadAhead(t *testing.T) {
	ctx := testCtx(t)
	reads := &eventReads{}
	pool := pgtest.TracedPool(t, reads, 1)
	var kept []string
	var last eventstore.RecordedEvent
	for i := range 20 {
		var e domain.Event = ignoredEvent{N: i}
		if i%2 == 0 {
			e = testEvent{Seq: i}
		}
		recs := mustAppend(t, ctx, pool, stream("typed-ahead"), int64(i), e)
		if i%2 == 0 {
			kept = append(kept, recs[0].EventID)
		}
		last = recs[0]
	}
	waitReadable(t, ctx, pool)
	reads.n.Store(0)
	var got [][]string
	sub := typesSub(pool, "typed-ahead", 3, &got)
	sub.ReadAhead, sub.Decode = true, true
	handle := sub.Handle
	sub.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		for i := range evs {
			if evs[i].Event == nil {
				t.Errorf("event %s reached the handler undecoded", evs[i].EventID)
			}
		}
		return handle(ctx, tx, evs)
	}
	if n, err := sub.CatchUp(ctx); n != 10 || err != nil {
		t.Fatalf("catch up = %d, %v; want 10", n, err)
	}
	want := [][]string{kept[0:3], kept[3:6], kept[6:9], kept[9:10]}
	if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
		t.Errorf("batches = %v, want %v", got, want)
	}
	if cp, _ := checkpoint(t, ctx, pool, "typed-ahead"); cp.GlobalPosition != last.GlobalPosition {
		t.Errorf("checkpoint %d, want the last (ignored) event %d", cp.GlobalPosition, last.GlobalPosition)
	}
	// Pages: the first step's own, three read ahead (the third short, so
	// read again by the fourth step), two statements each; then the last
	// step finds the horizon at its checkpoint: 11. Never using what was
	// read ahead would take 15.
	if n := reads.n.Load(); n != 11 {
		t.Errorf("%d reads of the log, want 11", n)
	}

	var plainGot [][]string
	if _, err := typesSub(pool, "typed-plain", 3, &plainGot).CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(plainGot, want, slices.Equal[[]string]) {
		t.Errorf("without reading ahead: batches = %v, want %v", plainGot, want)
	}
}
