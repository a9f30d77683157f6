package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// CreateAPIKey issues a key in env for a caller authenticated in callerEnv.
func (a *App) CreateAPIKey(ctx context.Context, meta Meta, platformID string, callerEnv, env domain.Environment, name string) (Result, error) {
	key, secret := mintKey(env, name)
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatformKeys(ctx, tx, meta, platformID, "", func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.CreateKey{CallerEnvironment: callerEnv, Key: key, At: now()})
		})
	})
	return Result{ID: key.ID, Secret: secret}, err
}
