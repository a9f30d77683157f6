package app

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// ConfigurePlatform is the operator's PATCH of commercial terms.
func (a *App) ConfigurePlatform(ctx context.Context, meta Meta, platformID string, patch platform.ConfigPatch) error {
	return a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		return a.updatePlatform(ctx, tx, meta, platformID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.Configure{Patch: patch, At: now()})
		})
	})
}
