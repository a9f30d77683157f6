package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// ApprovePlatform is the pilot approval: it provisions the sandbox key.
// The Result carries the new key's id and secret.
func (a *App) ApprovePlatform(ctx context.Context, meta Meta, platformID string) (Result, error) {
	key, secret := mintKey(domain.Sandbox, "Default sandbox key")
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.updatePlatform(ctx, tx, meta, platformID, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.Approve{SandboxKey: key, At: now()})
		})
	})
	return Result{ID: key.ID, Secret: secret}, err
}
