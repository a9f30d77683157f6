package projections

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
//
// It runs at READ COMMITTED on purpose: each read sees every event
// committed before it, including those of commands that committed while
// the rebuild waited for its locks (a snapshot fixed earlier would miss
// them, and TRUNCATE would erase their inline rows).
//
// Commands take the projection tables' rows in various orders, so waiting
// for the table locks can deadlock with one of them; PostgreSQL then
// aborts one side and whichever it was retries.
func Rebuild(ctx context.Context, pool *pgxpool.Pool) (RebuildStats, error) {
	start := time.Now()
	var stats RebuildStats
	var err error
	for attempt := 1; attempt <= maxRebuildAttempts; attempt++ {
		stats, err = rebuildOnce(ctx, pool)
		if !lostLockRace(err) {
			break
		}
	}
	stats.Duration = time.Since(start)
	return stats, err
}

const maxRebuildAttempts = 20

func lostLockRace(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40P01" || pgErr.Code == "55P03")
}

func rebuildOnce(ctx context.Context, pool *pgxpool.Pool) (RebuildStats, error) {
	var stats RebuildStats
	err := pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		// Give way quickly rather than queue every command behind us.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '3s'`); err != nil {
			return err
		}
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
	return stats, err
}
