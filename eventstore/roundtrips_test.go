package eventstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// tracedPool is a pool on a fresh database whose connections count their
// round trips in the returned tracer.
func tracedPool(t *testing.T, conns int32) (*eventstore.RoundTrips, *pgxpool.Pool) {
	t.Helper()
	rt := &eventstore.RoundTrips{}
	return rt, pgtest.TracedPool(t, rt, conns)
}

// counts is every origin's count.
func counts(rt *eventstore.RoundTrips) map[eventstore.Origin]int64 {
	m := map[eventstore.Origin]int64{}
	for _, o := range eventstore.Origins() {
		m[o] = rt.Count(o)
	}
	return m
}

// A round trip counts once, for the origin on its context: a Query, an
// Exec, a whole Batch, a CopyFrom, a statement's first Prepare, and a
// transaction's BEGIN and COMMIT (which pgx sends as Execs) each one;
// a context without an origin counts as other.
func TestRoundTripsCountEachTripOnceByOrigin(t *testing.T) {
	ctx := testCtx(t)
	rt, pool := tracedPool(t, 1) // one connection: its statement cache is the one warmed below
	api := eventstore.WithOrigin(ctx, eventstore.OriginAPI)
	chain := eventstore.WithOrigin(ctx, eventstore.OriginChain)
	var n int
	copyRows := func(ctx context.Context) error {
		_, err := pool.CopyFrom(ctx, pgx.Identifier{"copied"}, []string{"n"}, pgx.CopyFromRows([][]any{{1}, {2}, {3}}))
		return err
	}
	steps := []struct {
		name   string
		ctx    context.Context
		origin eventstore.Origin
		want   int64
		run    func(ctx context.Context) error
	}{
		{"unlabelled Exec without arguments", ctx, eventstore.OriginOther, 1, func(ctx context.Context) error {
			_, err := pool.Exec(ctx, `CREATE TEMP TABLE copied (n int)`)
			return err
		}},
		{"first use of a statement: Prepare, then the query", api, eventstore.OriginAPI, 2, func(ctx context.Context) error {
			return pool.QueryRow(ctx, `SELECT $1::int`, 1).Scan(&n)
		}},
		{"the same statement again: one Query", api, eventstore.OriginAPI, 1, func(ctx context.Context) error {
			return pool.QueryRow(ctx, `SELECT $1::int`, 2).Scan(&n)
		}},
		{"a prepared Exec", chain, eventstore.OriginChain, 1, func(ctx context.Context) error {
			_, err := pool.Exec(ctx, `SELECT $1::int`, 3)
			return err
		}},
		{"a batch of three queries: one trip", api, eventstore.OriginAPI, 1, func(ctx context.Context) error {
			b := &pgx.Batch{}
			for i := range 3 {
				b.Queue(`SELECT $1::int`, i)
			}
			return pool.SendBatch(ctx, b).Close()
		}},
		{"BEGIN, then ROLLBACK", api, eventstore.OriginAPI, 2, func(ctx context.Context) error {
			tx, err := pool.Begin(ctx)
			if err == nil {
				err = tx.Rollback(ctx)
			}
			return err
		}},
		{"a transaction: BEGIN, a query, COMMIT", chain, eventstore.OriginChain, 3, func(ctx context.Context) error {
			return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
				return tx.QueryRow(ctx, `SELECT $1::int`, 4).Scan(&n)
			})
		}},
		{"a first copy: the table's description, then the copy", api, eventstore.OriginAPI, 2, copyRows},
		{"a copy again: one trip", api, eventstore.OriginAPI, 1, copyRows},
	}
	for i, s := range steps {
		before := counts(rt)
		if err := s.run(s.ctx); err != nil {
			t.Fatalf("step %d (%s): %v", i, s.name, err)
		}
		after := counts(rt)
		for _, o := range eventstore.Origins() {
			want := before[o]
			if o == s.origin {
				want += s.want
			}
			if after[o] != want {
				t.Errorf("%s: origin %s counted %d round trips, want %d", s.name, o, after[o]-before[o], want-before[o])
			}
		}
	}
}

// Many goroutines of different origins count at once (run with -race):
// every trip lands once, on its own origin.
func TestRoundTripsConcurrentOrigins(t *testing.T) {
	ctx := testCtx(t)
	rt, pool := tracedPool(t, 4)
	const perGoroutine = 25
	origins := eventstore.Origins()
	var wg sync.WaitGroup
	errs := make(chan error, 2*len(origins))
	for range 2 {
		for _, o := range origins {
			wg.Add(1)
			go func() {
				defer wg.Done()
				octx := eventstore.WithOrigin(ctx, o)
				for range perGoroutine {
					if _, err := pool.Exec(octx, `SELECT 1`); err != nil { // no arguments: one simple-protocol trip
						errs <- fmt.Errorf("%s: %w", o, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, o := range origins {
		if got := rt.Count(o); got != 2*perGoroutine {
			t.Errorf("origin %s: %d round trips, want %d", o, got, 2*perGoroutine)
		}
	}
}

// A subscription's step counts every trip for its caller's origin, the
// ROLLBACK that ends a step with nothing to do included.
func TestRoundTripsOfAnIdleSubscriptionStep(t *testing.T) {
	ctx := testCtx(t)
	rt, pool := tracedPool(t, 1)
	sub := &eventstore.Subscription{Name: "idle", Pool: pool, BatchSize: 10, Log: discard,
		Handle: func(context.Context, pgx.Tx, []eventstore.RecordedEvent) error { return nil }}
	chain := eventstore.WithOrigin(ctx, eventstore.OriginChain)
	for range 3 {
		before := counts(rt)
		if n, err := sub.Step(chain); err != nil || n != 0 {
			t.Fatalf("Step on an empty log: %d, %v", n, err)
		}
		after := counts(rt)
		if after[eventstore.OriginChain] == before[eventstore.OriginChain] {
			t.Error("a step counted no round trips for its origin")
		}
		for _, o := range eventstore.Origins() {
			if o != eventstore.OriginChain && after[o] != before[o] {
				t.Errorf("a chain step counted %d round trips as %s", after[o]-before[o], o)
			}
		}
	}
}

// An origin survives derived contexts; an out-of-range one reads as other.
func TestOriginOfDerivedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(eventstore.WithOrigin(context.Background(), eventstore.OriginSandbox))
	defer cancel()
	if got := eventstore.OriginOf(context.WithoutCancel(ctx)); got != eventstore.OriginSandbox {
		t.Errorf("derived context: origin %s, want sandbox", got)
	}
	if got := eventstore.OriginOf(context.Background()); got != eventstore.OriginOther {
		t.Errorf("unlabelled context: origin %s, want other", got)
	}
	if got := eventstore.Origin(200).String(); got != "other" {
		t.Errorf("Origin(200).String() = %q, want other", got)
	}
}

// Given a subscription with a prelude whose handler reads and writes
// nothing, when it steps over new events, then the step costs two round
// trips (BEGIN, the subscription's lock, the checkpoint, the prelude and the read; the new
// checkpoint and COMMIT), the handler sees the prelude's row scanned in
// the same step, and a step with nothing to read costs its first round
// trip and a ROLLBACK.
func TestSubscriptionStepRoundTrips(t *testing.T) {
	ctx := testCtx(t)
	rt, pool := tracedPool(t, 1)
	var prelude, seen []int64
	sub := &eventstore.Subscription{Name: "trips", Pool: pool, BatchSize: 100, Derived: true, Log: discard,
		Prelude: &eventstore.Prelude{SQL: `SELECT count(*) FROM events`, Scan: func(row pgx.Row) error {
			var n int64
			err := row.Scan(&n)
			prelude = append(prelude, n)
			return err
		}},
		Handle: func(_ context.Context, _ pgx.Tx, evs []eventstore.RecordedEvent) error {
			seen = append(seen, prelude[len(prelude)-1])
			return nil
		}}
	step := func(want int) int64 {
		t.Helper()
		before := rt.Count(eventstore.OriginChain)
		n, err := sub.Step(eventstore.WithOrigin(ctx, eventstore.OriginChain))
		if err != nil || n != want {
			t.Fatalf("step = %d, %v; want %d", n, err, want)
		}
		return rt.Count(eventstore.OriginChain) - before
	}
	appendSome(t, ctx, pool, "trips", 3)
	readN(t, ctx, pool, eventstore.Position{}, 100, 3)
	step(3) // the first step: its statements are prepared, its checkpoint made
	appendSome(t, ctx, pool, "trips-more", 2)
	readN(t, ctx, pool, eventstore.Position{}, 100, 5)
	if got := step(2); got != 2 {
		t.Errorf("a step over new events took %d round trips, want 2", got)
	}
	if got := step(0); got != 2 {
		t.Errorf("a step with nothing to read took %d round trips, want 2 (the first, then ROLLBACK)", got)
	}
	if len(seen) != 2 || seen[0] != 3 || seen[1] != 5 {
		t.Errorf("the handler saw the preludes %v, want [3 5]: each step's own", seen)
	}
}
