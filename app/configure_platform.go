package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// ConfigurePlatform is the operator's PATCH of commercial terms.
func (a *App) ConfigurePlatform(ctx context.Context, meta Meta, platformID string, patch platform.ConfigPatch) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatform(ctx, tx, meta, platformID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.Configure{Patch: patch, At: now()})
		})
	})
	return err
}
