package projections

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// AllTables lists every projection table.
func AllTables() []string {
	var tables []string
	for _, p := range Inline() {
		tables = append(tables, p.Tables()...)
	}
	return append(tables, setTables(Async())...)
}

// CreateTables creates schema with an empty copy of every projection
// table: columns, defaults, constraints and fresh identity sequences, so
// projectors run there unchanged with the schema first on the search_path.
// Of the indexes it copies only those a replay reads or writes through:
// the unique ones (ON CONFLICT, lookups by id, the last seq, and the
// primary keys the rebuild compares and copies by) and replayIndexes. The
// others only order the API's lists, and nothing lists a shadow's rows.
func CreateTables(ctx context.Context, db eventstore.DB, schema string) error {
	if _, err := db.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return err
	}
	for _, t := range AllTables() {
		if _, err := db.Exec(ctx, fmt.Sprintf(`CREATE UNLOGGED TABLE %s.%s (LIKE public.%s INCLUDING ALL EXCLUDING INDEXES)`, schema, t, t)); err != nil {
			return err
		}
	}
	return copyReplayIndexes(ctx, db, schema)
}

// AnalyzeSpread refreshes the statistics of schema's projection tables,
// spread over the connections dbs (at least one), which work at once:
// each takes the next table when it is done with one.
func AnalyzeSpread(ctx context.Context, schema string, dbs ...eventstore.DB) error {
	if len(dbs) == 0 {
		return errors.New("projections: AnalyzeSpread needs a connection")
	}
	var analyze []string
	for _, t := range AllTables() {
		analyze = append(analyze, `ANALYZE `+schema+`.`+t)
	}
	return runSpread(ctx, dbs, analyze)
}

// runSpread runs the statements on the connections dbs at once, each
// connection taking the next statement as it finishes one.
func runSpread(ctx context.Context, dbs []eventstore.DB, statements []string) error {
	next := make(chan string, len(statements))
	for _, stmt := range statements {
		next <- stmt
	}
	close(next)
	errs := make(chan error, len(dbs))
	for _, db := range dbs {
		go func() {
			for stmt := range next {
				if _, err := db.Exec(ctx, stmt); err != nil {
					errs <- fmt.Errorf("%s: %w", stmt, err)
					return
				}
			}
			errs <- nil
		}()
	}
	var all []error
	for range dbs {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// Analyze refreshes the statistics of schema's projection tables. A
// replay into new tables needs them as the tables grow: without them the
// planner takes a table for empty, and an UPDATE joined on an index
// scans the whole table instead, batch after batch.
func Analyze(ctx context.Context, db eventstore.DB, schema string) error {
	for _, t := range AllTables() {
		if _, err := db.Exec(ctx, `ANALYZE `+schema+`.`+t); err != nil {
			return err
		}
	}
	return nil
}

// AnalyzeAsTheyGrow runs Analyze on a replay's tables each time the
// events replayed into them have doubled (from 10,000): a handful of
// times over any log.
type AnalyzeAsTheyGrow struct{ next int }

// After is called with the events replayed so far.
func (a *AnalyzeAsTheyGrow) After(ctx context.Context, db eventstore.DB, schema string, events int) error {
	if a.next == 0 {
		a.next = 10_000
	}
	if events < a.next {
		return nil
	}
	for a.next <= events {
		a.next *= 2
	}
	return Analyze(ctx, db, schema)
}

// replayIndexes are the non-unique indexes projectors write through.
var replayIndexes = map[string]bool{
	"ledger_entries_by_journal": true, // posting a pending entry updates its lines
}

// copyReplayIndexes creates in schema the indexes of the public
// projection tables that a replay needs.
func copyReplayIndexes(ctx context.Context, db eventstore.DB, schema string) error {
	rows, err := db.Query(ctx, `SELECT c.relname, x.relname, i.indisunique, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
        WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1)
        ORDER BY c.relname, x.relname`, AllTables())
	if err != nil {
		return err
	}
	type index struct {
		table, name, def string
		unique           bool
	}
	indexes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
		var ix index
		err := r.Scan(&ix.table, &ix.name, &ix.unique, &ix.def)
		return ix, err
	})
	if err != nil {
		return err
	}
	for _, ix := range indexes {
		if !ix.unique && !replayIndexes[ix.name] {
			continue
		}
		on := " ON public." + ix.table + " "
		if !strings.Contains(ix.def, on) {
			return fmt.Errorf("index %s: unexpected definition %q", ix.name, ix.def)
		}
		if _, err := db.Exec(ctx, strings.Replace(ix.def, on, " ON "+schema+"."+ix.table+" ", 1)); err != nil {
			return err
		}
	}
	return nil
}

// Replay folds events into the read models: every inline projector sees
// every event, each asynchronous subscriber's projectors, as one set, the
// events for which applied(subscriber, event) says so. seen is the stream
// cache of a replay from the start of the log.
func Replay(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent, applied func(subscriber string, e *eventstore.RecordedEvent) bool, seen *StreamCache) error {
	b, err := ProjectInline(events)
	if err != nil {
		return err
	}
	if err := b.Send(ctx, tx); err != nil {
		return err
	}
	for _, s := range AsyncSubscribers() {
		var later []eventstore.RecordedEvent
		for i := range events {
			if applied(s.Name, &events[i]) {
				later = append(later, events[i])
			}
		}
		if err := ProjectAsync(ctx, tx, later, seen, s.Projectors); err != nil {
			return err
		}
	}
	return nil
}
