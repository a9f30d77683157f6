package projections

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
)

// ReplayInto replays the whole log into a fresh schema of every
// projection's tables, in batches of the sizes next gives, reading the
// folded streams through cache (nil: from the log alone). Tests compare
// batchings with it.
func ReplayInto(ctx context.Context, pool *pgxpool.Pool, schema string, next func() int, cache *StreamCache) error {
	if err := CreateTables(ctx, pool, schema); err != nil {
		return err
	}
	var pos eventstore.Position
	for {
		n := 0
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL search_path = `+schema+`, public`); err != nil {
				return err
			}
			events, err := eventstore.ReadAll(ctx, tx, pos, next())
			if err != nil || len(events) == 0 {
				return err
			}
			n = len(events)
			pos = eventstore.PositionOf(events[n-1])
			return Replay(ctx, tx, events, func(string, *eventstore.RecordedEvent) bool { return true }, cache)
		})
		if err != nil || n == 0 {
			return err
		}
	}
}
