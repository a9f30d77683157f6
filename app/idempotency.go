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
