package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

type pipelinedEvent struct {
	N int `json:"n"`
}

func (pipelinedEvent) EventType() string { return "app_test.pipelined" }

// unencodable cannot be marshaled: its append fails before it sends.
type unencodable struct{ F func() }

func (unencodable) EventType() string { return "app_test.unencodable" }

func init() { domain.RegisterEvent[pipelinedEvent]() }

// batchCounter counts the batches a pool sends.
type batchCounter struct{ n atomic.Int64 }

func (c *batchCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *batchCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *batchCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}
func (c *batchCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *batchCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func pipelinePool(t *testing.T) (*pgxpool.Pool, *batchCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := &batchCounter{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool, c
}

func pipelineStream(i int) eventstore.Stream {
	return eventstore.Stream{ID: fmt.Sprintf("pipe-%d", i), Type: "test", PlatformID: "plt_test", Environment: "sandbox"}
}

// inTx runs fn in a transaction, rolled back unless commit.
func inTx(t *testing.T, ctx context.Context, pool *pgxpool.Pool, commit bool, fn func(pgx.Tx) error) error {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if err := fn(tx); err != nil {
		return err
	}
	if commit {
		return tx.Commit(ctx)
	}
	return nil
}

// Given 30 groups, each with its own metadata, some appending to two
// streams and one appending twice to the same stream in two groups, when
// they are appended pipelined, then it takes one batch, each group gets its
// events back with its own metadata and versions, and the log holds them
// in group order.
func TestAppendPipelinedIsAppendAllInOneRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, batches := pipelinePool(t)
	var groups []appendGroup
	for i := range 30 {
		reqs := []eventstore.AppendRequest{{Stream: pipelineStream(i), Events: []domain.Event{pipelinedEvent{N: i}, pipelinedEvent{N: -i}}}}
		if i%3 == 0 {
			reqs = append(reqs, eventstore.AppendRequest{Stream: pipelineStream(1000 + i), Events: []domain.Event{pipelinedEvent{N: i}}})
		}
		groups = append(groups, appendGroup{Meta: Meta{CausationID: fmt.Sprintf("cause-%d", i)}, Reqs: reqs})
	}
	// The same stream again, after the first group's two events.
	groups = append(groups, appendGroup{Meta: Meta{CausationID: "again"},
		Reqs: []eventstore.AppendRequest{{Stream: pipelineStream(0), Expected: 2, Events: []domain.Event{pipelinedEvent{N: 99}}}}})

	var out [][][]eventstore.RecordedEvent
	before := batches.n.Load()
	if err := inTx(t, ctx, pool, true, func(tx pgx.Tx) error {
		var err error
		out, err = appendPipelined(ctx, tx, groups)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := batches.n.Load() - before; n != 1 {
		t.Errorf("%d batches sent, want 1", n)
	}
	var last int64
	for i, g := range groups {
		if len(out[i]) != len(g.Reqs) {
			t.Fatalf("group %d: %d streams back, want %d", i, len(out[i]), len(g.Reqs))
		}
		for k, recs := range out[i] {
			if len(recs) != len(g.Reqs[k].Events) {
				t.Fatalf("group %d stream %d: %d events back", i, k, len(recs))
			}
			for j, r := range recs {
				if r.StreamID != g.Reqs[k].Stream.ID || r.StreamVersion != g.Reqs[k].Expected+int64(j)+1 {
					t.Errorf("group %d: %s v%d, want %s v%d", i, r.StreamID, r.StreamVersion, g.Reqs[k].Stream.ID, g.Reqs[k].Expected+int64(j)+1)
				}
				if r.GlobalPosition <= last {
					t.Errorf("group %d: position %d after %d: not in group order", i, r.GlobalPosition, last)
				}
				last = r.GlobalPosition
				var cause string
				if err := pool.QueryRow(ctx, `SELECT metadata->>'causation_id' FROM events WHERE event_id = $1`, r.EventID).Scan(&cause); err != nil {
					t.Fatal(err)
				}
				if cause != g.Meta.CausationID {
					t.Errorf("group %d: event %s caused by %q, want %q", i, r.EventID, cause, g.Meta.CausationID)
				}
			}
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type = 'app_test.pipelined'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 30*2+10+1 {
		t.Errorf("%d events in the log, want %d", n, 30*2+10+1)
	}
}

// Given groups of which one conflicts (a stale version) or cannot even be
// encoded, when they are appended pipelined, then the error comes back,
// nothing hangs, and the rolled-back transaction leaves nothing.
func TestAppendPipelinedFailsWithoutHanging(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, _ := pipelinePool(t)
	ok := func(i int) appendGroup {
		return appendGroup{Reqs: []eventstore.AppendRequest{{Stream: pipelineStream(i), Events: []domain.Event{pipelinedEvent{N: i}}}}}
	}
	for _, c := range []struct {
		name string
		bad  appendGroup
		want func(error) bool
	}{
		{"stale version", appendGroup{Reqs: []eventstore.AppendRequest{{Stream: pipelineStream(500), Expected: 3,
			Events: []domain.Event{pipelinedEvent{}}}}}, func(err error) bool { return errors.Is(err, eventstore.ErrVersionConflict) }},
		{"unencodable", appendGroup{Reqs: []eventstore.AppendRequest{{Stream: pipelineStream(501),
			Events: []domain.Event{unencodable{}}}}}, func(err error) bool { return err != nil && !errors.Is(err, eventstore.ErrVersionConflict) }},
	} {
		for _, at := range []int{0, 3, 6} {
			groups := []appendGroup{ok(1), ok(2), ok(3), ok(4), ok(5), ok(6)}
			groups = append(groups[:at], append([]appendGroup{c.bad}, groups[at:]...)...)
			done := make(chan error, 1)
			go func() {
				done <- inTx(t, ctx, pool, false, func(tx pgx.Tx) error {
					_, err := appendPipelined(ctx, tx, groups)
					return err
				})
			}()
			select {
			case err := <-done:
				if !c.want(err) {
					t.Errorf("%s at %d: error %v", c.name, at, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s at %d: appendPipelined hangs", c.name, at)
			}
		}
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d events left by rolled-back transactions", n)
	}
}
