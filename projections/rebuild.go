package projections

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
)

// RebuildStats says what a rebuild did.
type RebuildStats struct {
	Events   int
	Duration time.Duration
}

// Rebuild empties every projection and replays the whole log into it, in
// one transaction. The tables are locked while it runs (commands and
// reads wait); the asynchronous subscription is paused and resumes from
// where the rebuild stopped, so no event is applied twice or skipped.
//
// Inline projections get every committed event (commands that would add
// more are blocked on the locks). Asynchronous ones get the events below
// the oldest running transaction, like any subscriber, and their
// checkpoint is set there.
func Rebuild(ctx context.Context, pool *pgxpool.Pool) (RebuildStats, error) {
	start := time.Now()
	var stats RebuildStats
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO subscription_checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING`, SubscriptionName); err != nil {
			return err
		}
		// Pause the asynchronous subscriber (it holds this row while it works).
		if _, err := tx.Exec(ctx, `SELECT 1 FROM subscription_checkpoints WHERE name = $1 FOR UPDATE`, SubscriptionName); err != nil {
			return err
		}
		var tables []string
		for _, p := range All() {
			tables = append(tables, p.Tables()...)
		}
		list := strings.Join(tables, ", ")
		if _, err := tx.Exec(ctx, `LOCK TABLE `+list+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `TRUNCATE `+list+` RESTART IDENTITY`); err != nil {
			return err
		}
		var xmin int64
		if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
			return err
		}
		inline, async := Inline(), Async()
		var pos, asyncPos eventstore.Position
		for {
			events, err := eventstore.ReadCommitted(ctx, tx, pos, 2000)
			if err != nil {
				return err
			}
			if len(events) == 0 {
				break
			}
			for i := range events {
				e := &events[i]
				for _, p := range inline {
					if err := p.Apply(ctx, tx, e); err != nil {
						return fmt.Errorf("%s on event %s: %w", p.Name(), e.EventID, err)
					}
				}
				if e.TransactionID < uint64(xmin) {
					for _, p := range async {
						if err := p.Apply(ctx, tx, e); err != nil {
							return fmt.Errorf("%s on event %s: %w", p.Name(), e.EventID, err)
						}
					}
					asyncPos = eventstore.PositionOf(*e)
				}
			}
			pos = eventstore.PositionOf(events[len(events)-1])
			stats.Events += len(events)
		}
		_, err := tx.Exec(ctx, `UPDATE subscription_checkpoints SET transaction_id = $2::text::xid8, global_position = $3,
            updated_at = now() WHERE name = $1`, SubscriptionName, fmt.Sprint(asyncPos.TransactionID), asyncPos.GlobalPosition)
		return err
	})
	stats.Duration = time.Since(start)
	return stats, err
}
