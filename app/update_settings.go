package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// UpdateSettings is the platform's PATCH of its settings in one environment.
func (a *App) UpdateSettings(ctx context.Context, meta Meta, platformID string, env domain.Environment, patch platform.SettingsPatch) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatform(ctx, tx, meta, platformID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.UpdateSettings{Environment: env, Patch: patch, At: now()})
		})
	})
	return err
}
