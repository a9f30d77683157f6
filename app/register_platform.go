package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// RegisterPlatform is the operator's POST /platforms.
type RegisterPlatform struct {
	Name         string
	ContactEmail string
	Metadata     map[string]string
}

func (a *App) RegisterPlatform(ctx context.Context, meta Meta, idem *Idempotency, in RegisterPlatform) (Result, error) {
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixPlatform)
	return a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		err := a.updatePlatform(ctx, tx, meta, id, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.Register{PlatformID: id, Name: in.Name,
				ContactEmail: in.ContactEmail, Metadata: in.Metadata, At: now()})
		})
		return Result{ID: id}, err
	})
}
