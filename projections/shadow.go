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
// Of the indexes it copies those a replay reads or writes through: the
// unique ones (ON CONFLICT, lookups by id, the last seq) and replayIndexes.
// The others only order the API's lists: built once over a whole table
// (CreateListIndexes) they cost a fraction of keeping them row by row.
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
	return copyIndexes(ctx, db, schema, true)
}

// CreateListIndexes adds to schema's tables the indexes CreateTables left
// out, and refreshes their statistics, spread over the connections dbs
// (at least one), which work at once: building an index keeps one backend
// busy, so a second connection puts the other core to work. Each
// connection takes the next statement when it is done with one, the
// biggest tables' first; the statistics come after every index.
func CreateListIndexes(ctx context.Context, schema string, dbs ...eventstore.DB) error {
	if len(dbs) == 0 {
		return errors.New("projections: CreateListIndexes needs a connection")
	}
	builds, err := indexDefinitions(ctx, dbs[0], schema, false)
	if err != nil {
		return err
	}
	if err := runSpread(ctx, dbs, builds); err != nil {
		return err
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

// copyIndexes creates in schema the indexes of the public projection
// tables that a replay needs (forReplay) or the others.
func copyIndexes(ctx context.Context, db eventstore.DB, schema string, forReplay bool) error {
	defs, err := indexDefinitions(ctx, db, schema, forReplay)
	if err != nil {
		return err
	}
	for _, def := range defs {
		if _, err := db.Exec(ctx, def); err != nil {
			return err
		}
	}
	return nil
}

// indexDefinitions are the statements that create in schema the indexes
// of the public projection tables that a replay needs (forReplay) or the
// others, those of the biggest tables (in schema) first.
func indexDefinitions(ctx context.Context, db eventstore.DB, schema string, forReplay bool) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT c.relname, x.relname, i.indisunique, pg_get_indexdef(i.indexrelid)
        FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_class x ON x.oid = i.indexrelid
        LEFT JOIN pg_class s ON s.relname = c.relname AND s.relnamespace = to_regnamespace($2)
        WHERE c.relnamespace = 'public'::regnamespace AND c.relname = ANY($1)
        ORDER BY pg_relation_size(s.oid) DESC NULLS LAST, c.relname, x.relname`, AllTables(), schema)
	if err != nil {
		return nil, err
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
		return nil, err
	}
	var defs []string
	for _, ix := range indexes {
		if (ix.unique || replayIndexes[ix.name]) != forReplay {
			continue
		}
		on := " ON public." + ix.table + " "
		if !strings.Contains(ix.def, on) {
			return nil, fmt.Errorf("index %s: unexpected definition %q", ix.name, ix.def)
		}
		defs = append(defs, strings.Replace(ix.def, on, " ON "+schema+"."+ix.table+" ", 1))
	}
	return defs, nil
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
