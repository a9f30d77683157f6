package rebuild

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// TableDiff is how a rebuilt table differs from the live one.
type TableDiff struct {
	Table       string
	OnlyLive    int64 // rows in the live table the log does not produce
	OnlyRebuilt int64 // rows the log produces that the live table lacks
}

// CompareWithLog rebuilds every projection from the log into a scratch
// schema and compares it with the live tables, row for row, in one
// REPEATABLE READ transaction that is rolled back (nothing is kept, the
// live tables are only read). Inline projections are rebuilt from every
// event; asynchronous ones up to their subscriber's checkpoint, which is
// what the live ones have applied. It returns the tables that differ.
func CompareWithLog(ctx context.Context, pool *pgxpool.Pool) ([]TableDiff, int, error) {
	var diffs []TableDiff
	events := 0
	tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadWrite})
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback(context.Background())

	checkpoints := map[string]eventstore.Position{}
	for _, name := range projections.AsyncNames() {
		if checkpoints[name], err = eventstore.ReadCheckpoint(ctx, tx, name); err != nil {
			return nil, 0, err
		}
	}

	tables := projections.AllTables()
	if err := projections.CreateTables(ctx, tx, "audit_scratch"); err != nil {
		return nil, 0, err
	}
	if _, err := tx.Exec(ctx, `SET LOCAL search_path = audit_scratch, public`); err != nil {
		return nil, 0, err
	}
	applied := func(subscriber string, e *eventstore.RecordedEvent) bool {
		return !checkpoints[subscriber].Less(eventstore.PositionOf(*e))
	}
	var pos eventstore.Position
	seen := projections.NewReplayCache()
	var stats projections.AnalyzeAsTheyGrow
	for {
		batch, err := eventstore.ReadCommitted(ctx, tx, pos, 2000)
		if err != nil {
			return nil, 0, err
		}
		if len(batch) == 0 {
			break
		}
		if err := projections.Replay(ctx, tx, batch, applied, seen); err != nil {
			return nil, 0, err
		}
		events += len(batch)
		pos = eventstore.PositionOf(batch[len(batch)-1])
		if err := stats.After(ctx, tx, "audit_scratch", events); err != nil {
			return nil, 0, err
		}
	}
	for _, t := range tables {
		d := TableDiff{Table: t}
		if err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT
            (SELECT count(*) FROM (SELECT * FROM public.%[1]s EXCEPT ALL SELECT * FROM audit_scratch.%[1]s) a),
            (SELECT count(*) FROM (SELECT * FROM audit_scratch.%[1]s EXCEPT ALL SELECT * FROM public.%[1]s) b)`, t)).
			Scan(&d.OnlyLive, &d.OnlyRebuilt); err != nil {
			return nil, 0, fmt.Errorf("compare %s: %w", t, err)
		}
		if d.OnlyLive > 0 || d.OnlyRebuilt > 0 {
			diffs = append(diffs, d)
		}
	}
	return diffs, events, nil
}

// LedgerImbalance lists the journal entries whose debits and credits differ
// (by status), and the imbalance over the whole ledger.
func LedgerImbalance(ctx context.Context, db eventstore.DB) (entries []string, total int64, err error) {
	rows, err := db.Query(ctx, `SELECT journal_entry_id || ' (' || status || ')' FROM ledger_entries
        GROUP BY journal_entry_id, status
        HAVING sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) <> 0 ORDER BY 1 LIMIT 100`)
	if err != nil {
		return nil, 0, err
	}
	entries, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, 0, err
	}
	err = db.QueryRow(ctx, `SELECT coalesce(sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END), 0) FROM ledger_entries`).Scan(&total)
	return entries, total, err
}
