package projections_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
)

// Given a shadow schema made by CreateTables, when CreateListIndexes
// builds the rest of its indexes on two connections at once, then the
// shadow has every index of the live projection tables, each defined the
// same, and its tables have statistics.
func TestCreateListIndexesOnTwoConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	const schema = "shadow_test"
	if err := projections.CreateTables(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	a, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if err := projections.CreateListIndexes(ctx, schema, eventstore.DB(a), eventstore.DB(b)); err != nil {
		t.Fatal(err)
	}
	definitions := func(namespace string) []string {
		rows, err := pool.Query(ctx, `SELECT replace(pg_get_indexdef(i.indexrelid), ' ON '||$1||'.', ' ON ')
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
            WHERE c.relnamespace = $1::regnamespace AND c.relname = ANY($2) ORDER BY 1`, namespace, projections.AllTables())
		if err != nil {
			t.Fatal(err)
		}
		defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return defs
	}
	live, shadow := definitions("public"), definitions(schema)
	if len(live) == 0 || !slices.Equal(live, shadow) {
		t.Fatalf("shadow indexes differ from the live ones:\nlive   %q\nshadow %q", live, shadow)
	}
	var unanalyzed int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_user_tables
        WHERE schemaname = $1 AND relname = ANY($2) AND last_analyze IS NULL`, schema, projections.AllTables()).Scan(&unanalyzed); err != nil {
		t.Fatal(err)
	}
	if unanalyzed != 0 {
		t.Errorf("%d shadow tables have no statistics", unanalyzed)
	}
}

// CreateListIndexes with no connection to build on is an error, not a
// panic.
func TestCreateListIndexesWithoutAConnection(t *testing.T) {
	if err := projections.CreateListIndexes(context.Background(), "shadow_test"); err == nil {
		t.Fatal("CreateListIndexes with no connection succeeded")
	}
}
