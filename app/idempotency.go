package app

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
)

// Idempotency identifies a request that may be repeated safely. Scope is
// the platform (or "operator"); RequestHash is the hash of the canonical
// request, so that the same key with another request is a conflict.
type Idempotency struct {
	Scope       string
	Environment string
	Key         string
	Operation   string
	RequestHash string
}

// MaxIdempotencyKeyLen bounds client keys.
const MaxIdempotencyKeyLen = 255

// runIdempotent runs a command at most once per idempotency key. The key
// is claimed first, in the command's transaction: a concurrent duplicate
// blocks on the key's primary key until the first commits (then it replays
// its result) or rolls back (then it runs itself). A request that fails
// rolls its claim back with it, so nothing is stored for it.
func (a *App) runIdempotent(ctx context.Context, idem *Idempotency, fn func(ctx context.Context, tx pgx.Tx) (Result, error)) (Result, error) {
	var res Result
	if idem == nil {
		err := a.run(ctx, func(ctx context.Context, tx pgx.Tx) (err error) {
			res, err = fn(ctx, tx)
			return err
		})
		return res, err
	}
	err := a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (scope, environment, key, operation, request_hash, resource_id, status_code)
            VALUES ($1, $2, $3, $4, $5, '', 201) ON CONFLICT DO NOTHING`,
			idem.Scope, idem.Environment, idem.Key, idem.Operation, idem.RequestHash)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			prior, _, err := lookupIdempotency(ctx, tx, idem)
			res = prior
			return err
		}
		r, err := fn(ctx, tx)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET resource_id = $4 WHERE scope = $1 AND environment = $2 AND key = $3`,
			idem.Scope, idem.Environment, idem.Key, r.ID); err != nil {
			return err
		}
		res = r
		return nil
	})
	return res, err
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func lookupIdempotency(ctx context.Context, db queryRower, idem *Idempotency) (Result, bool, error) {
	var op, hash, resourceID string
	err := db.QueryRow(ctx, `SELECT operation, request_hash, resource_id FROM idempotency_keys
        WHERE scope = $1 AND environment = $2 AND key = $3`, idem.Scope, idem.Environment, idem.Key).Scan(&op, &hash, &resourceID)
	if errors.Is(err, pgx.ErrNoRows) {
		return Result{}, false, nil
	}
	if err != nil {
		return Result{}, false, err
	}
	if op != idem.Operation || hash != idem.RequestHash {
		return Result{}, true, &domain.Error{Code: domain.CodeIdempotencyConflict, ResourceID: resourceID,
			Message: "this idempotency key was already used with a different request"}
	}
	return Result{ID: resourceID, Replayed: true}, true, nil
}

// withIdempotencyKey records the request's key in the events' metadata.
func withIdempotencyKey(meta Meta, idem *Idempotency) Meta {
	if idem != nil {
		meta.IdempotencyKey = idem.Key
	}
	return meta
}
