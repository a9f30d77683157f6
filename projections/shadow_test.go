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

// Given a shadow schema made by CreateTables, then it has the live
// tables' unique indexes and those a replay writes through, each defined
// the same, and none of the indexes that only order the API's lists; when
// AnalyzeSpread runs on two connections at once, then every shadow table
// has statistics.
func TestShadowIndexesAndStatistics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	const schema = "shadow_test"
	if err := projections.CreateTables(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	definitions := func(namespace, which string) []string {
		rows, err := pool.Query(ctx, `SELECT replace(pg_get_indexdef(i.indexrelid), ' ON '||$1||'.', ' ON ')
            FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
            WHERE c.relnamespace = $1::regnamespace AND c.relname = ANY($2) AND `+which+` ORDER BY 1`,
			namespace, projections.AllTables())
		if err != nil {
			t.Fatal(err)
		}
		defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return defs
	}
	const forReplay = `(i.indisunique OR x.relname = 'ledger_entries_by_journal')`
	live, shadow := definitions("public", forReplay), definitions(schema, "true")
	if len(live) == 0 || !slices.Equal(live, shadow) {
		t.Fatalf("shadow indexes differ from the live ones a replay needs:\nlive   %q\nshadow %q", live, shadow)
	}
	if lists := definitions("public", "NOT "+forReplay); len(lists) == 0 {
		t.Fatal("the live tables have no list index: this test would prove nothing")
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
	if err := projections.AnalyzeSpread(ctx, schema, eventstore.DB(a), eventstore.DB(b)); err != nil {
		t.Fatal(err)
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

// AnalyzeSpread with no connection is an error, not a panic.
func TestAnalyzeSpreadWithoutAConnection(t *testing.T) {
	if err := projections.AnalyzeSpread(context.Background(), "shadow_test"); err == nil {
		t.Fatal("AnalyzeSpread with no connection succeeded")
	}
}
