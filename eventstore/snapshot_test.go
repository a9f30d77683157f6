package eventstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// seqState is a test aggregate: the sequence numbers it has seen.
type seqState struct {
	Seen []int `json:"seen"`
}

func evolveSeq(s seqState, e domain.Event) seqState {
	s.Seen = append(slices.Clone(s.Seen), e.(testEvent).Seq)
	return s
}

// loadFromSnapshot reads a stream through its snapshot in one batch.
func loadFromSnapshot(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string, schema int, where string, args ...any) (eventstore.SnapshotLoad[seqState], seqState) {
	t.Helper()
	var l eventstore.SnapshotLoad[seqState]
	b := &pgx.Batch{}
	eventstore.QueueLoadFromSnapshot(b, id, schema, where, args, &l)
	if err := pool.SendBatch(ctx, b).Close(); err != nil {
		t.Fatal(err)
	}
	s, err := l.Fold(evolveSeq)
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

func seqs(from, to int) []int {
	var out []int
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

func TestSnapshotLoadReadsOnlyTheTail(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 4)
	s := stream("snap-tail")
	mustAppend(t, ctx, pool, s, 0, events(1, 1, 10)...)

	l, st := loadFromSnapshot(t, ctx, pool, s.ID, 1, "")
	if l.Version != 0 || len(l.Events) != 10 || !slices.Equal(st.Seen, seqs(1, 10)) {
		t.Fatalf("without a snapshot: version %d, %d events, state %v", l.Version, len(l.Events), st.Seen)
	}
	if err := eventstore.SaveSnapshot(ctx, pool, s.ID, 1, 10, st); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, ctx, pool, s, 10, events(1, 11, 3)...)

	l, st = loadFromSnapshot(t, ctx, pool, s.ID, 1, "")
	if l.Version != 10 || len(l.Events) != 3 || !slices.Equal(st.Seen, seqs(1, 13)) {
		t.Fatalf("from the snapshot: version %d, %d events, state %v", l.Version, len(l.Events), st.Seen)
	}
	// The extra condition filters the tail ($3 is its first placeholder).
	l, _ = loadFromSnapshot(t, ctx, pool, s.ID, 1, "stream_version <> $3", int64(12))
	if len(l.Events) != 2 {
		t.Fatalf("filtered tail: %d events, want 2", len(l.Events))
	}
}

func TestSnapshotOfAnotherSchemaIsIgnoredAndReplaced(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 4)
	s := stream("snap-schema")
	mustAppend(t, ctx, pool, s, 0, events(1, 1, 5)...)
	// A snapshot of schema 1 whose state would be wrong under schema 2.
	if err := eventstore.SaveSnapshot(ctx, pool, s.ID, 1, 5, seqState{Seen: []int{99}}); err != nil {
		t.Fatal(err)
	}
	l, st := loadFromSnapshot(t, ctx, pool, s.ID, 2, "")
	if l.Version != 0 || len(l.Events) != 5 || !slices.Equal(st.Seen, seqs(1, 5)) {
		t.Fatalf("schema 2 read: version %d, %d events, state %v", l.Version, len(l.Events), st.Seen)
	}
	// Schema 2's snapshot replaces schema 1's even at an older version.
	if err := eventstore.SaveSnapshot(ctx, pool, s.ID, 2, 3, seqState{Seen: seqs(1, 3)}); err != nil {
		t.Fatal(err)
	}
	l, st = loadFromSnapshot(t, ctx, pool, s.ID, 2, "")
	if l.Version != 3 || len(l.Events) != 2 || !slices.Equal(st.Seen, seqs(1, 5)) {
		t.Fatalf("after schema 2's snapshot: version %d, %d events, state %v", l.Version, len(l.Events), st.Seen)
	}
}

func TestSnapshotNeverGoesBack(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 4)
	s := stream("snap-back")
	mustAppend(t, ctx, pool, s, 0, events(1, 1, 8)...)
	if err := eventstore.SaveSnapshot(ctx, pool, s.ID, 1, 8, seqState{Seen: seqs(1, 8)}); err != nil {
		t.Fatal(err)
	}
	if err := eventstore.SaveSnapshot(ctx, pool, s.ID, 1, 4, seqState{Seen: seqs(1, 4)}); err != nil {
		t.Fatal(err)
	}
	l, st := loadFromSnapshot(t, ctx, pool, s.ID, 1, "")
	if l.Version != 8 || len(l.Events) != 0 || !slices.Equal(st.Seen, seqs(1, 8)) {
		t.Fatalf("after an older save: version %d, %d events, state %v", l.Version, len(l.Events), st.Seen)
	}
}

// The snapshot is read after the events: when a newer one commits in
// between, the events it already holds must not fold twice.
func TestSnapshotFoldSkipsEventsTheSnapshotHolds(t *testing.T) {
	var recs []eventstore.RecordedEvent
	for i := 3; i <= 7; i++ {
		recs = append(recs, eventstore.RecordedEvent{StreamVersion: int64(i), Event: testEvent{Seq: i}})
	}
	l := eventstore.SnapshotLoad[seqState]{Version: 5, State: seqState{Seen: seqs(1, 5)}, Events: recs}
	st, err := l.Fold(evolveSeq)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Seen, seqs(1, 7)) {
		t.Fatalf("state %v, want 1..7", st.Seen)
	}
}
