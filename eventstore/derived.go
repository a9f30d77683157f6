package eventstore

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ExecDerived runs one statement that writes only what can be derived
// again (a reader's position, rows made from the log), in a transaction
// of its own that commits without waiting for the WAL flush
// (synchronous_commit = off), in one round trip. It is for what the
// Subscription's Derived flag is for, outside a subscription: a crash
// loses at most the last such writes, which are made again. Everything
// that commits synchronously after it (a command, a webhook's claim)
// flushes it too: the WAL is flushed in order.
//
// It takes a pool, not a connection or a transaction: its COMMIT would end
// a caller's transaction, and a connection it left in a failed one would
// not be reset (a pool does not reuse such a connection).
func ExecDerived(ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	var tag pgconn.CommandTag
	b.Queue(sql, args...).Exec(func(ct pgconn.CommandTag) error {
		tag = ct
		return nil
	})
	b.Queue(`COMMIT`)
	err := pool.SendBatch(ctx, b).Close()
	return tag, err
}
