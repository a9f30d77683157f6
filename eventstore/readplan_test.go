package eventstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// sqlRecorder is a pgx tracer that keeps the last statement sent.
type sqlRecorder struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (r *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sql, r.args = d.SQL, d.Args
	return ctx
}

func (r *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// recordedPool is a pool on the package's database whose last statement
// rec keeps.
func recordedPool(t *testing.T) (*pgxpool.Pool, *sqlRecorder) {
	rec := &sqlRecorder{}
	return pgtest.TracedPool(t, rec, 0), rec
}

// TestLogReadsWalkTheCommitOrderIndex: reading the log in commit order
// walks the (transaction_id, global_position) index instead of sorting
// every event after the position, which made each read of a subscriber
// that had fallen behind cost as much as its whole backlog.
func TestLogReadsWalkTheCommitOrderIndex(t *testing.T) {
	ctx := context.Background()
	pool, rec := recordedPool(t)
	mustAppend(t, ctx, pool, stream("plan-1"), 0, events(1, 1, 5)...)

	for name, read := range map[string]func() error{
		"ReadAll": func() error { _, err := eventstore.ReadAll(ctx, pool, eventstore.Position{}, 100); return err },
		"ReadCommitted": func() error {
			_, err := eventstore.ReadCommitted(ctx, pool, eventstore.Position{}, 100)
			return err
		},
		"Head": func() error { _, err := eventstore.Head(ctx, pool); return err },
	} {
		if err := read(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		rec.mu.Lock()
		sql, args := rec.sql, rec.args
		rec.mu.Unlock()
		// With sorting priced out, only a query the index can order
		// avoids a Sort node.
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_sort = off`); err != nil {
				return err
			}
			var plan json.RawMessage
			if err := tx.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+sql, args...).Scan(&plan); err != nil {
				return err
			}
			if strings.Contains(string(plan), `"Sort"`) {
				t.Errorf("%s sorts the events instead of walking the commit-order index:\n%s\n%s", name, sql, plan)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: explain: %v", name, err)
		}
	}
}

// TestHeldBackCheckStaysOnTheIndex: the check a caught-up subscription
// makes after each wake-up (is anything committed past the checkpoint?)
// keeps to the commit-order index in the generic plan a prepared
// statement ends up with. As EXISTS (…), that plan scanned the whole log
// whenever nothing followed the checkpoint: 20–30 ms at 40,000 events,
// many times a second under load.
func TestHeldBackCheckStaysOnTheIndex(t *testing.T) {
	ctx := context.Background()
	pool, rec := recordedPool(t)
	for i := range 40 {
		mustAppend(t, ctx, pool, stream(fmt.Sprintf("held-%d", i)), 0, events(i, 1, 100)...)
	}
	if _, err := pool.Exec(ctx, `ANALYZE events`); err != nil {
		t.Fatal(err)
	}
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	sub := &eventstore.Subscription{Name: "held-plan", Pool: pool}
	if _, err := pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name, transaction_id, global_position)
        VALUES ($1, $2::text::xid8, $3)`, sub.Name, strconv.FormatUint(head.TransactionID, 10), head.GlobalPosition); err != nil {
		t.Fatal(err)
	}
	if eventstore.HeldBack(ctx, sub) {
		t.Fatal("held back at the head of a quiet log")
	}
	rec.mu.Lock()
	sql, args := rec.sql, rec.args
	rec.mu.Unlock()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL plan_cache_mode = force_generic_plan`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `PREPARE held_back AS `+sql); err != nil {
			return err
		}
		var plan json.RawMessage
		if err := tx.QueryRow(ctx, fmt.Sprintf(`EXPLAIN (FORMAT JSON) EXECUTE held_back('%s', %d)`, args[0], args[1])).Scan(&plan); err != nil {
			return err
		}
		if strings.Contains(string(plan), `"Seq Scan"`) {
			t.Errorf("the held-back check's generic plan scans the log:\n%s\n%s", sql, plan)
		}
		_, err := tx.Exec(ctx, `DEALLOCATE held_back`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
