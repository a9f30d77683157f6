package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// EnableLive opens the live environment and provisions the live key.
func (a *App) EnableLive(ctx context.Context, meta Meta, platformID string) (Result, error) {
	key, secret := mintKey(domain.Live, "Default live key")
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatform(ctx, tx, meta, platformID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.EnableLive{LiveKey: key, At: now()})
		})
	})
	return Result{ID: key.ID, Secret: secret}, err
}
