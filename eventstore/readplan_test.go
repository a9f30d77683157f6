package eventstore_test

import (
	"context"
	"encoding/json"
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

// TestLogReadsWalkTheCommitOrderIndex: reading the log in commit order
// walks the (transaction_id, global_position) index instead of sorting
// every event after the position, which made each read of a subscriber
// that had fallen behind cost as much as its whole backlog.
func TestLogReadsWalkTheCommitOrderIndex(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	rec := &sqlRecorder{}
	cfg.ConnConfig.Tracer = rec
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
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
