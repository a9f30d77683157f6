package app

import (
	"context"

	"github.com/jackc/pgx/v5"

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
	return a.runIdempotent(ctx, idem, func(ctx context.Context, tx pgx.Tx) (Result, error) {
		id := domain.NewID(domain.PrefixPlatform)
		err := a.updatePlatform(ctx, tx, meta, id, func(s platform.State) ([]domain.Event, error) {
			return platform.Decide(s, platform.Register{PlatformID: id, Name: in.Name,
				ContactEmail: in.ContactEmail, Metadata: in.Metadata, At: now()})
		})
		return Result{ID: id}, err
	})
}
