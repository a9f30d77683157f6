package projections

import (
	"context"
	"fmt"

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
// table: columns, defaults, constraints, indexes and fresh identity
// sequences, so projectors run there unchanged with the schema first on
// the search_path.
func CreateTables(ctx context.Context, db eventstore.DB, schema string) error {
	if _, err := db.Exec(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`); err != nil {
		return err
	}
	if _, err := db.Exec(ctx, `CREATE SCHEMA `+schema); err != nil {
		return err
	}
	for _, t := range AllTables() {
		if _, err := db.Exec(ctx, fmt.Sprintf(`CREATE UNLOGGED TABLE %s.%s (LIKE public.%s INCLUDING ALL)`, schema, t, t)); err != nil {
			return err
		}
	}
	return nil
}

// Replay folds events into the read models: every inline projector sees
// every event, the asynchronous ones, as one set, those for which async
// says so. seen is the stream cache of a replay from the start of the log.
func Replay(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent, async func(*eventstore.RecordedEvent) bool, seen *StreamCache) error {
	b, err := ProjectInline(events)
	if err != nil {
		return err
	}
	if err := b.Send(ctx, tx); err != nil {
		return err
	}
	var later []eventstore.RecordedEvent
	for i := range events {
		if async(&events[i]) {
			later = append(later, events[i])
		}
	}
	return ProjectAsync(ctx, tx, later, seen)
}
