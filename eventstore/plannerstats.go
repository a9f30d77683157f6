package eventstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Planner statistics of growing tables.
//
// PostgreSQL keeps a prepared statement's generic plan, costed with the
// table sizes of the moment it was made, until something invalidates it;
// an ANALYZE of a table the plan reads does. On a young database every
// table is tiny, and a by-key statement planned then (an UPDATE … FROM
// unnest(…) of a batch of payments, the idempotency key's look-up) scans
// the whole table: the cheapest plan for 77 rows. It keeps scanning while
// the table grows a hundredfold, until autovacuum next analyzes it: only
// once more than a tenth of it changed, and at most once a minute (its
// naptime); never, where autovacuum is off. Measured in `make bench`
// (1, 16 then 64 clients on a fresh database): the settler's payments
// UPDATE took a core's worth of PostgreSQL's CPU in sequential scans,
// and 64 clients made 414 payments/s against 619 with statistics kept
// current.
//
// StatisticsKeeper analyzes a table of the service's schema each time it
// holds more than Growth times the rows it held when last analyzed (plus
// MinRows): a table is analyzed a handful of times in its life (four
// times on its way to 300,000 rows), each time while it is still quick to
// sample. Each ANALYZE throws away every connection's plans that read the
// table (they are made again, at a cost), so it is done no more often
// than a plan can go wrong: a by-key plan made over a few thousand rows
// stays right however big the table gets. It goes by the
// live rows, not the rows changed: a small table updated all the time
// (the balances, the checkpoints) keeps its size, and analyzing it every
// second would only throw away every connection's plans that read it. Big
// tables are left to autovacuum, whose plans a tenth more rows do not
// upset. It runs on every replica: SKIP_LOCKED makes one skip a table
// another is analyzing at that moment, and the size at the last ANALYZE,
// whoever ran it, is what all go by (two replicas a moment apart may
// both analyze a table: it is rare, and costs a second replanning).
type StatisticsKeeper struct {
	DB    DB
	Every time.Duration // how often it looks; default 1 s
	Log   *slog.Logger
}

// Growth and MinRows: the keeper analyzes a table once it holds more
// than Growth times its rows at the last ANALYZE, plus MinRows (a table
// of a few pages is read whole as fast as through an index).
const (
	Growth  = 4
	MinRows = 1000
)

// grownTablesSQL lists the tables of the current schema whose live rows
// (as the statistics system counts them, commit by commit) are more than
// $2 times the estimate the last ANALYZE, VACUUM or CREATE INDEX left
// (reltuples, -1 for a table never analyzed), plus $1. Only tables the
// service may analyze (it has its owner's privileges): another's would be
// skipped with a warning, every second.
const grownTablesSQL = `SELECT s.schemaname, s.relname FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
    WHERE s.schemaname = current_schema() AND s.n_live_tup > $1 + $2 * greatest(c.reltuples, 0)
        AND pg_has_role(c.relowner, 'USAGE')
    ORDER BY s.relname`

// Run analyzes grown tables every Every until ctx ends. After a failure
// (the database down, say) it waits twice as long as before, up to a
// minute, so that an outage is not a warning a second.
func (k *StatisticsKeeper) Run(ctx context.Context) {
	every := k.Every
	if every <= 0 {
		every = time.Second
	}
	wait := every
	for {
		if _, err := k.Step(ctx); err != nil && ctx.Err() == nil {
			wait = min(2*wait, max(time.Minute, every))
			if k.Log != nil {
				k.Log.Warn("keeping the planner's statistics", "error", err, "next_try_in", wait)
			}
		} else {
			wait = every
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Step analyzes the tables that have grown past Growth times their rows at
// their last ANALYZE and returns their names. One that another session
// holds locked (another replica's keeper analyzing it) is skipped, not
// waited for, though named: it is still grown at the next step if that
// session did not analyze it.
func (k *StatisticsKeeper) Step(ctx context.Context) ([]string, error) {
	rows, err := k.DB.Query(ctx, grownTablesSQL, MinRows, Growth)
	if err != nil {
		return nil, err
	}
	grown, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pgx.Identifier, error) {
		var schema, table string
		err := r.Scan(&schema, &table)
		return pgx.Identifier{schema, table}, err
	})
	if err != nil || len(grown) == 0 {
		return nil, err
	}
	var tables []string
	for _, t := range grown {
		// One table a statement: a lock held elsewhere skips only it.
		if _, err := k.DB.Exec(ctx, `ANALYZE (SKIP_LOCKED) `+t.Sanitize()); err != nil {
			return nil, err
		}
		tables = append(tables, t[1])
	}
	if k.Log != nil {
		k.Log.Debug("analyzed grown tables", "tables", tables)
	}
	return tables, nil
}
