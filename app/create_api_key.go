package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// CreateAPIKey issues a key in env for a caller authenticated in callerEnv.
// With an idempotency key, a replay answers the key without its secret:
// shown once, it is rolled, not shown again.
func (a *App) CreateAPIKey(ctx context.Context, meta Meta, idem *Idempotency, platformID string, callerEnv, env domain.Environment, name string) (Result, error) {
	key, secret := mintKey(env, name)
	meta = withIdempotencyKey(meta, idem)
	res, err := a.execute(ctx, command{idem: idem, resourceID: key.ID}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{ID: key.ID, Secret: secret}, a.updatePlatformKeys(ctx, tx, meta, platformID, "", func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.CreateKey{CallerEnvironment: callerEnv, Key: key, At: now()})
		})
	})
	return res, err
}
