package app

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// UpdateSettings is the platform's PATCH of its settings in one environment.
func (a *App) UpdateSettings(ctx context.Context, meta Meta, platformID string, env domain.Environment, patch platform.SettingsPatch) error {
	return a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return a.updatePlatform(ctx, tx, meta, platformID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.UpdateSettings{Environment: env, Patch: patch, At: now()})
		})
	})
}
