package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// RevokeAPIKey stops a key at once; the next request with it is 401.
func (a *App) RevokeAPIKey(ctx context.Context, meta Meta, platformID string, callerEnv domain.Environment, keyID string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatformKeys(ctx, tx, meta, platformID, keyID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.RevokeKey{CallerEnvironment: callerEnv, KeyID: keyID, At: now()})
		})
	})
	return err
}
