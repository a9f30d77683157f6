package eventstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// testEvent is the event type these tests append.
type testEvent struct {
	Worker int    `json:"worker"`
	Seq    int    `json:"seq"`
	Note   string `json:"note,omitempty"`
}

func (testEvent) EventType() string { return "eventstore_test.happened" }

func init() { domain.RegisterEvent[testEvent]() }

// newPool returns a pool on a fresh migrated database, sized for the
// concurrency tests (every goroutine may hold a transaction at once).
func newPool(t *testing.T, maxConns int32) *pgxpool.Pool {
	return pgtest.SizedPool(t, maxConns)
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func stream(id string) eventstore.Stream {
	return eventstore.Stream{ID: id, Type: "test", PlatformID: "plt_test", Environment: "sandbox"}
}

func events(worker, from, n int) []domain.Event {
	out := make([]domain.Event, n)
	for i := range out {
		out[i] = testEvent{Worker: worker, Seq: from + i}
	}
	return out
}

// mustAppend appends in its own (implicit) transaction.
func mustAppend(t *testing.T, ctx context.Context, db eventstore.DB, s eventstore.Stream, expected int64, evs ...domain.Event) []eventstore.RecordedEvent {
	t.Helper()
	recs, err := eventstore.Append(ctx, db, s, expected, eventstore.Metadata{RequestID: "req_test"}, evs...)
	if err != nil {
		t.Fatalf("append %s at %d: %v", s.ID, expected, err)
	}
	return recs
}

// readAllFrom pages through ReadAll from pos until it returns nothing and
// returns what it read and the position after the last event.
func readAllFrom(t *testing.T, ctx context.Context, db eventstore.DB, pos eventstore.Position, limit int) ([]eventstore.RecordedEvent, eventstore.Position) {
	t.Helper()
	var out []eventstore.RecordedEvent
	for {
		evs, err := eventstore.ReadAll(ctx, db, pos, limit)
		if err != nil {
			t.Fatalf("read all: %v", err)
		}
		if len(evs) > limit {
			t.Fatalf("read all returned %d events, limit %d", len(evs), limit)
		}
		out = append(out, evs...)
		if len(evs) == 0 {
			return out, pos
		}
		pos = eventstore.PositionOf(evs[len(evs)-1])
	}
}

// readN reads from pos until n events have been read (polling: a
// transaction running elsewhere on the server holds readers back for a
// while), then checks that nothing more follows.
func readN(t *testing.T, ctx context.Context, db eventstore.DB, pos eventstore.Position, limit, n int) ([]eventstore.RecordedEvent, eventstore.Position) {
	t.Helper()
	var out []eventstore.RecordedEvent
	deadline := time.Now().Add(20 * time.Second)
	for len(out) < n {
		evs, p := readAllFrom(t, ctx, db, pos, limit)
		out, pos = append(out, evs...), p
		if len(out) < n {
			if time.Now().After(deadline) {
				t.Fatalf("read %d events of %d before the deadline: %v", len(out), n, eventIDs(out))
			}
			time.Sleep(5 * time.Millisecond) // poll interval
		}
	}
	if len(out) != n {
		t.Fatalf("read %d events, want %d: %v", len(out), n, eventIDs(out))
	}
	return out, pos
}

func eventIDs(evs []eventstore.RecordedEvent) []string {
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.EventID
	}
	return ids
}

// assertCommitOrder checks evs are strictly increasing in
// (transaction_id, global_position).
func assertCommitOrder(t *testing.T, evs []eventstore.RecordedEvent) {
	t.Helper()
	for i := 1; i < len(evs); i++ {
		a, b := evs[i-1], evs[i]
		if a.TransactionID > b.TransactionID || (a.TransactionID == b.TransactionID && a.GlobalPosition >= b.GlobalPosition) {
			t.Fatalf("not in commit order at %d: (%d,%d) then (%d,%d)", i,
				a.TransactionID, a.GlobalPosition, b.TransactionID, b.GlobalPosition)
		}
	}
}

func TestAppendAndLoad(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	s := stream("acc_1")

	evs, version, err := eventstore.Load(ctx, pool, s.ID)
	if err != nil || len(evs) != 0 || version != 0 {
		t.Fatalf("load of a missing stream = %d events, version %d, %v; want none, 0, nil", len(evs), version, err)
	}
	if recs, err := eventstore.Append(ctx, pool, s, 0, eventstore.Metadata{}); err != nil || recs != nil {
		t.Fatalf("append of no events = %v, %v; want nil, nil", recs, err)
	}

	meta := eventstore.Metadata{RequestID: "req_1", Actor: "operator", IdempotencyKey: "idem_1", CausationID: "cause_1"}
	first, err := eventstore.Append(ctx, pool, s, 0, meta, events(1, 1, 3)...)
	if err != nil {
		t.Fatalf("append to new stream: %v", err)
	}
	if len(first) != 3 {
		t.Fatalf("append returned %d records, want 3", len(first))
	}
	for i, r := range first {
		if r.StreamVersion != int64(i+1) {
			t.Errorf("appended event %d has version %d, want %d", i, r.StreamVersion, i+1)
		}
		if !domain.HasPrefix(r.EventID, domain.PrefixEvent) {
			t.Errorf("event id %q is not evt_ + ULID", r.EventID)
		}
		if r.GlobalPosition <= 0 || (i > 0 && r.GlobalPosition <= first[i-1].GlobalPosition) {
			t.Errorf("global positions not increasing: %d after %v", r.GlobalPosition, first[:i])
		}
		if r.RecordedAt.IsZero() {
			t.Errorf("event %d has no recorded_at", i)
		}
		if r.Event != (testEvent{Worker: 1, Seq: i + 1}) {
			t.Errorf("appended event %d carries %#v", i, r.Event)
		}
	}
	second := mustAppend(t, ctx, pool, s, 3, events(1, 4, 2)...)
	if second[0].StreamVersion != 4 || second[1].StreamVersion != 5 {
		t.Fatalf("second append versions = %d, %d; want 4, 5", second[0].StreamVersion, second[1].StreamVersion)
	}
	// Another stream in between does not disturb this one.
	mustAppend(t, ctx, pool, stream("acc_other"), 0, events(9, 1, 2)...)
	mustAppend(t, ctx, pool, s, 5, events(1, 6, 1)...)

	loaded, version, err := eventstore.Load(ctx, pool, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if version != 6 || len(loaded) != 6 {
		t.Fatalf("load = %d events, version %d; want 6, 6", len(loaded), version)
	}
	appended := append(append([]eventstore.RecordedEvent{}, first...), second...)
	for i := range loaded {
		r := &loaded[i]
		if r.StreamVersion != int64(i+1) {
			t.Errorf("loaded event %d has version %d", i, r.StreamVersion)
		}
		if r.StreamID != s.ID || r.Type != (testEvent{}).EventType() || r.SchemaVersion != 1 {
			t.Errorf("loaded event %d: stream %q type %q schema %d", i, r.StreamID, r.Type, r.SchemaVersion)
		}
		if r.PlatformID != s.PlatformID || r.Environment != s.Environment {
			t.Errorf("loaded event %d: platform %q environment %q", i, r.PlatformID, r.Environment)
		}
		if r.TransactionID == 0 {
			t.Errorf("loaded event %d has no transaction id", i)
		}
		if i < len(appended) && (r.EventID != appended[i].EventID || r.GlobalPosition != appended[i].GlobalPosition) {
			t.Errorf("loaded event %d = %s@%d, appended %s@%d", i, r.EventID, r.GlobalPosition, appended[i].EventID, appended[i].GlobalPosition)
		}
		e, err := r.Decode()
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if e != (testEvent{Worker: 1, Seq: i + 1}) {
			t.Errorf("loaded event %d decodes to %#v", i, e)
		}
		var m eventstore.Metadata
		if err := json.Unmarshal(r.Metadata, &m); err != nil {
			t.Fatalf("metadata %s: %v", r.Metadata, err)
		}
		if i < 3 && m != meta {
			t.Errorf("loaded event %d metadata = %+v, want %+v", i, m, meta)
		}
	}
	// Events of one append share a transaction id.
	if loaded[0].TransactionID != loaded[2].TransactionID || loaded[2].TransactionID == loaded[3].TransactionID {
		t.Errorf("transaction ids %d %d %d: want the first three equal and the fourth different",
			loaded[0].TransactionID, loaded[2].TransactionID, loaded[3].TransactionID)
	}

	var typ, platform, env string
	var sv int64
	if err := pool.QueryRow(ctx, `SELECT stream_type, platform_id, environment, version FROM streams WHERE stream_id = $1`, s.ID).
		Scan(&typ, &platform, &env, &sv); err != nil {
		t.Fatal(err)
	}
	if typ != "test" || platform != "plt_test" || env != "sandbox" || sv != 6 {
		t.Errorf("streams row = %q %q %q %d", typ, platform, env, sv)
	}
}

func TestAppendVersionConflict(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)

	t.Run("new stream with expected > 0", func(t *testing.T) {
		s := stream("new_stream")
		for _, expected := range []int64{1, 5} {
			_, err := eventstore.Append(ctx, pool, s, expected, eventstore.Metadata{}, events(1, 1, 1)...)
			if !errors.Is(err, eventstore.ErrVersionConflict) {
				t.Fatalf("append at %d to a missing stream: err = %v, want ErrVersionConflict", expected, err)
			}
		}
		evs, version, err := eventstore.Load(ctx, pool, s.ID)
		if err != nil || len(evs) != 0 || version != 0 {
			t.Fatalf("after conflicts: %d events, version %d, %v", len(evs), version, err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM streams WHERE stream_id = $1`, s.ID).Scan(&n); err != nil || n != 0 {
			t.Fatalf("streams rows = %d, %v; want 0", n, err)
		}
	})

	t.Run("existing stream", func(t *testing.T) {
		s := stream("existing")
		mustAppend(t, ctx, pool, s, 0, events(1, 1, 3)...)
		mustAppend(t, ctx, pool, s, 3, events(1, 4, 2)...)
		for _, expected := range []int64{0, 1, 3, 4, 6, 10} {
			_, err := eventstore.Append(ctx, pool, s, expected, eventstore.Metadata{}, events(2, 1, 2)...)
			if !errors.Is(err, eventstore.ErrVersionConflict) {
				t.Errorf("append at %d to a stream at 5: err = %v, want ErrVersionConflict", expected, err)
			}
		}
		evs, version, err := eventstore.Load(ctx, pool, s.ID)
		if err != nil || len(evs) != 5 || version != 5 {
			t.Fatalf("after conflicts: %d events, version %d, %v; want 5, 5", len(evs), version, err)
		}
		for i, e := range evs {
			if ev, _ := e.Decode(); ev.(testEvent).Worker != 1 {
				t.Errorf("event %d was written by a conflicting append: %#v", i, ev)
			}
		}
		var total int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&total); err != nil || total != 5 {
			t.Fatalf("events rows = %d, %v; want 5", total, err)
		}
		// The right version still works after the conflicts.
		recs := mustAppend(t, ctx, pool, s, 5, events(1, 6, 1)...)
		if recs[0].StreamVersion != 6 {
			t.Fatalf("version after conflicts = %d, want 6", recs[0].StreamVersion)
		}
	})

	t.Run("conflict leaves the transaction usable", func(t *testing.T) {
		s := stream("in_tx")
		mustAppend(t, ctx, pool, s, 0, events(1, 1, 1)...)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := eventstore.Append(ctx, tx, s, 0, eventstore.Metadata{}, events(1, 2, 1)...); !errors.Is(err, eventstore.ErrVersionConflict) {
			t.Fatalf("err = %v, want ErrVersionConflict", err)
		}
		if _, err := eventstore.Append(ctx, tx, s, 1, eventstore.Metadata{}, events(1, 2, 1)...); err != nil {
			t.Fatalf("append after a conflict in the same transaction: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if _, v, _ := eventstore.Load(ctx, pool, s.ID); v != 2 {
			t.Fatalf("version = %d, want 2", v)
		}
	})

	t.Run("rolled back append leaves no trace", func(t *testing.T) {
		s := stream("rolled_back")
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, ctx, tx, s, 0, events(1, 1, 2)...)
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if evs, v, err := eventstore.Load(ctx, pool, s.ID); err != nil || len(evs) != 0 || v != 0 {
			t.Fatalf("after rollback: %d events, version %d, %v", len(evs), v, err)
		}
		mustAppend(t, ctx, pool, s, 0, events(1, 1, 1)...)
	})
}

// TestConcurrentAppendOneWinnerPerVersion: every goroutine loads the same
// version, then all append at it at once; exactly one wins.
func TestConcurrentAppendOneWinnerPerVersion(t *testing.T) {
	const workers = 32
	ctx := testCtx(t)
	pool := newPool(t, workers+4)
	s := stream("contended")

	for round := range 4 {
		expected := int64(round) // round 0 creates the stream
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		results := make([]error, workers)
		ready.Add(workers)
		done.Add(workers)
		for w := range workers {
			go func() {
				defer done.Done()
				tx, err := pool.Begin(ctx)
				if err != nil {
					ready.Done()
					results[w] = err
					return
				}
				defer tx.Rollback(context.Background())
				_, version, err := eventstore.Load(ctx, tx, s.ID)
				ready.Done()
				if err != nil {
					results[w] = err
					return
				}
				if version != expected {
					results[w] = fmt.Errorf("loaded version %d, want %d", version, expected)
					return
				}
				<-start
				if _, err := eventstore.Append(ctx, tx, s, version, eventstore.Metadata{}, testEvent{Worker: w, Seq: round}); err != nil {
					results[w] = err
					return
				}
				results[w] = tx.Commit(ctx)
			}()
		}
		ready.Wait()
		close(start)
		done.Wait()
		wins := 0
		for w, err := range results {
			switch {
			case err == nil:
				wins++
			case errors.Is(err, eventstore.ErrVersionConflict):
			default:
				t.Fatalf("round %d worker %d: %v", round, w, err)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d (expected %d): %d appends won, want exactly 1", round, expected, wins)
		}
	}
	evs, version, err := eventstore.Load(ctx, pool, s.ID)
	if err != nil || version != 4 || len(evs) != 4 {
		t.Fatalf("load = %d events, version %d, %v; want 4, 4", len(evs), version, err)
	}
}

// TestConcurrentAppendRetryLoops: goroutines append with a load / append /
// commit loop that retries on conflict; the stream ends gapless with each
// event exactly once.
func TestConcurrentAppendRetryLoops(t *testing.T) {
	const workers, perWorker = 32, 5
	ctx := testCtx(t)
	pool := newPool(t, workers+4)
	s := stream("hot")

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var mu sync.Mutex
	conflicts := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 1; seq <= perWorker; seq++ {
				for attempt := 0; ; attempt++ {
					if attempt > 10*workers {
						errs <- fmt.Errorf("worker %d: no success after %d attempts", w, attempt)
						return
					}
					err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
						_, version, err := eventstore.Load(ctx, tx, s.ID)
						if err != nil {
							return err
						}
						_, err = eventstore.Append(ctx, tx, s, version, eventstore.Metadata{Actor: fmt.Sprint(w)}, testEvent{Worker: w, Seq: seq})
						return err
					})
					if errors.Is(err, eventstore.ErrVersionConflict) {
						mu.Lock()
						conflicts++
						mu.Unlock()
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("worker %d seq %d: %w", w, seq, err)
						return
					}
					break
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("%d version conflicts retried", conflicts)

	evs, version, err := eventstore.Load(ctx, pool, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	const n = workers * perWorker
	if version != n || len(evs) != n {
		t.Fatalf("load = %d events, version %d; want %d, %d", len(evs), version, n, n)
	}
	seen := map[testEvent]bool{}
	ids := map[string]bool{}
	lastSeq := map[int]int{}
	for i := range evs {
		if evs[i].StreamVersion != int64(i+1) {
			t.Fatalf("event %d has version %d: not gapless", i, evs[i].StreamVersion)
		}
		e, err := evs[i].Decode()
		if err != nil {
			t.Fatal(err)
		}
		te := e.(testEvent)
		if seen[te] || ids[evs[i].EventID] {
			t.Fatalf("duplicate event %+v (%s)", te, evs[i].EventID)
		}
		seen[te], ids[evs[i].EventID] = true, true
		if te.Seq != lastSeq[te.Worker]+1 {
			t.Fatalf("worker %d: seq %d after %d", te.Worker, te.Seq, lastSeq[te.Worker])
		}
		lastSeq[te.Worker] = te.Seq
	}
	var rows, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT stream_version) FROM events WHERE stream_id = $1`, s.ID).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != n || distinct != n {
		t.Fatalf("events rows = %d (%d distinct versions), want %d", rows, distinct, n)
	}
	// The whole log reads back in commit order, each event once.
	all, _ := readN(t, ctx, pool, eventstore.Position{}, 7, n)
	assertCommitOrder(t, all)
}

func TestReadAllPagesInCommitOrder(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	var want []string
	for i := range 5 {
		recs := mustAppend(t, ctx, pool, stream(fmt.Sprintf("s%d", i%2)), int64(i/2*3), events(i, 1, 3)...)
		want = append(want, eventIDs(recs)...)
	}
	readN(t, ctx, pool, eventstore.Position{}, 100, len(want)) // wait until all are readable
	for _, limit := range []int{1, 2, 4, 15, 100} {
		got, end := readAllFrom(t, ctx, pool, eventstore.Position{}, limit)
		if !slices.Equal(eventIDs(got), want) {
			t.Fatalf("limit %d: read %v, want %v", limit, eventIDs(got), want)
		}
		assertCommitOrder(t, got)
		if end != eventstore.PositionOf(got[len(got)-1]) {
			t.Fatalf("end position %+v", end)
		}
		if more, err := eventstore.ReadAll(ctx, pool, end, limit); err != nil || len(more) != 0 {
			t.Fatalf("read past the end = %d events, %v", len(more), err)
		}
	}
}

// TestReadAllLateCommit is the classic bug: a transaction that appended
// first commits last. A reader must neither skip it nor read it twice.
func TestReadAllLateCommit(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)

	begin := func(t *testing.T) pgx.Tx {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		return tx
	}
	commit := func(t *testing.T, tx pgx.Tx) {
		t.Helper()
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// end is the position after everything committed so far.
	end := func(t *testing.T) eventstore.Position {
		t.Helper()
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		_, p := readN(t, ctx, pool, eventstore.Position{}, 100, n)
		return p
	}

	t.Run("A appends first, B commits first", func(t *testing.T) {
		recC := mustAppend(t, ctx, pool, stream("late_c"), 0, testEvent{Note: "C"})
		before, start := readN(t, ctx, pool, eventstore.Position{}, 100, 1)
		if before[0].EventID != recC[0].EventID {
			t.Fatalf("read before = %v, want [C]", eventIDs(before))
		}

		a := begin(t)
		recA := mustAppend(t, ctx, a, stream("late_a"), 0, testEvent{Note: "A"})
		b := begin(t)
		recB := mustAppend(t, ctx, b, stream("late_b"), 0, testEvent{Note: "B"})
		commit(t, b)

		// Read what is available while A is open: not B, whose
		// transaction is younger than A's.
		first, p := readAllFrom(t, ctx, pool, start, 100)
		if len(first) != 0 {
			t.Fatalf("read %v while A (the oldest running transaction) is open; want nothing past A", eventIDs(first))
		}
		commit(t, a)
		second, _ := readN(t, ctx, pool, p, 100, 2)

		got := append(first, second...)
		if want := []string{recA[0].EventID, recB[0].EventID}; !slices.Equal(eventIDs(got), want) {
			t.Fatalf("read %v then %v; want exactly [A B] = %v", eventIDs(first), eventIDs(second), want)
		}
		assertCommitOrder(t, got)
	})

	t.Run("B has the older transaction but the higher position", func(t *testing.T) {
		start := end(t)

		b := begin(t)
		if _, err := b.Exec(ctx, `SELECT pg_current_xact_id()`); err != nil { // B takes its xid first
			t.Fatal(err)
		}
		a := begin(t)
		recA := mustAppend(t, ctx, a, stream("late2_a"), 0, testEvent{Note: "A"})
		recB := mustAppend(t, ctx, b, stream("late2_b"), 0, testEvent{Note: "B"})
		if recA[0].GlobalPosition >= recB[0].GlobalPosition {
			t.Fatalf("setup: positions A=%d B=%d", recA[0].GlobalPosition, recB[0].GlobalPosition)
		}
		commit(t, b)

		// B's transaction is older than every running one: it becomes
		// readable although A holds a lower global position.
		first, p := readN(t, ctx, pool, start, 100, 1)
		if first[0].EventID != recB[0].EventID {
			t.Fatalf("read while A is open = %v, want [B]", eventIDs(first))
		}
		commit(t, a)
		second, _ := readN(t, ctx, pool, p, 100, 1)
		if second[0].EventID != recA[0].EventID {
			t.Fatalf("read after A committed = %v, want [A] (a global_position cursor would skip it)", eventIDs(second))
		}
		assertCommitOrder(t, append(first, second...))
	})

	t.Run("rolled back transaction never appears", func(t *testing.T) {
		start := end(t)
		a := begin(t)
		mustAppend(t, ctx, a, stream("late3_a"), 0, testEvent{Note: "A"})
		b := begin(t)
		recB := mustAppend(t, ctx, b, stream("late3_b"), 0, testEvent{Note: "B"})
		commit(t, b)
		first, p := readAllFrom(t, ctx, pool, start, 100)
		if len(first) != 0 {
			t.Fatalf("read %v while A is open", eventIDs(first))
		}
		if err := a.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		second, _ := readN(t, ctx, pool, p, 100, 1)
		if got := eventIDs(append(first, second...)); !slices.Equal(got, []string{recB[0].EventID}) {
			t.Fatalf("read %v, want only B", got)
		}
	})
}

// TestReadAllConcurrentWriters: a reader polling while many writers commit
// out of order ends with every event exactly once, in commit order.
func TestReadAllConcurrentWriters(t *testing.T) {
	const writers, perWriter = 16, 20
	ctx := testCtx(t)
	pool := newPool(t, writers+4)

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stream(fmt.Sprintf("w%d", w))
			for i := range perWriter {
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					if _, err := eventstore.Append(ctx, tx, s, int64(i), eventstore.Metadata{}, testEvent{Worker: w, Seq: i + 1}); err != nil {
						return err
					}
					// Hold some transactions open a little so that commit
					// order differs from insertion order.
					if (w+i)%3 == 0 {
						_, err := tx.Exec(ctx, `SELECT pg_sleep(0.002)`)
						return err
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	var got []eventstore.RecordedEvent
	var pos eventstore.Position
	deadline := time.Now().Add(30 * time.Second)
	for len(got) < writers*perWriter {
		evs, err := eventstore.ReadAll(ctx, pool, pos, 13)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, evs...)
		if len(evs) > 0 {
			pos = eventstore.PositionOf(evs[len(evs)-1])
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %d events of %d before the deadline", len(got), writers*perWriter)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	<-finished
	if more, err := eventstore.ReadAll(ctx, pool, pos, 13); err != nil || len(more) != 0 {
		t.Fatalf("read %d more events after all were read: %v", len(more), err)
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(got) != writers*perWriter {
		t.Fatalf("read %d events, want %d", len(got), writers*perWriter)
	}
	assertCommitOrder(t, got)
	seen := map[string]bool{}
	next := map[string]int64{}
	for _, e := range got {
		if seen[e.EventID] {
			t.Fatalf("event %s read twice", e.EventID)
		}
		seen[e.EventID] = true
		if e.StreamVersion != next[e.StreamID]+1 {
			t.Fatalf("stream %s: version %d read after %d", e.StreamID, e.StreamVersion, next[e.StreamID])
		}
		next[e.StreamID] = e.StreamVersion
	}
}

func TestEventsAreImmutable(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	recs := mustAppend(t, ctx, pool, stream("immutable"), 0, events(1, 1, 2)...)

	for _, stmt := range []string{
		`UPDATE events SET data = '{"worker": 666}'`,
		`UPDATE events SET stream_version = stream_version + 10 WHERE stream_id = 'immutable'`,
		`DELETE FROM events`,
		`DELETE FROM events WHERE global_position = ` + fmt.Sprint(recs[0].GlobalPosition),
		`TRUNCATE events`,
		`TRUNCATE events CASCADE`,
	} {
		_, err := pool.Exec(ctx, stmt)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Errorf("%s: err = %v, want a PostgreSQL error", stmt, err)
			continue
		}
		if pgErr.Code != "23001" || !strings.Contains(pgErr.Message, "immutable") {
			t.Errorf("%s: error %s %q, want 23001 from the immutability trigger", stmt, pgErr.Code, pgErr.Message)
		}
	}
	evs, version, err := eventstore.Load(ctx, pool, "immutable")
	if err != nil || version != 2 || len(evs) != 2 {
		t.Fatalf("after refused changes: %d events, version %d, %v", len(evs), version, err)
	}
	for i := range evs {
		if ev, err := evs[i].Decode(); err != nil || evs[i].EventID != recs[i].EventID || ev != recs[i].Event {
			t.Errorf("event %d changed: %s %s (%v)", i, evs[i].EventID, evs[i].Data, err)
		}
	}
}
