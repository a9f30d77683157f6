package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/eventstore"
)

// OpenVirtualAccount is POST /virtual-accounts.
type OpenVirtualAccount struct {
	PlatformID string
	EntityRef  string
	Type       string
	Metadata   map[string]string
}

// maxNumberDraws bounds the redraws of a colliding account number.
const maxNumberDraws = 5

func (a *App) OpenVirtualAccount(ctx context.Context, meta Meta, idem *Idempotency, c Caller, in OpenVirtualAccount) (Result, error) {
	if in.PlatformID != c.PlatformID {
		return Result{}, domain.NotFound("platform", in.PlatformID)
	}
	meta = withIdempotencyKey(meta, idem)
	for draw := 1; ; draw++ {
		res, err := a.execute(ctx, command{idem: idem}, func(ctx context.Context, tx *commandTx) (Result, error) {
			// The platform's chart exists from its first account on, so that
			// its system accounts can be named in journal entries at once.
			if _, err := a.ensureChart(ctx, tx, meta, c); err != nil {
				return Result{}, err
			}
			id := domain.NewID(domain.PrefixVirtualAccount)
			events, err := account.Decide(account.State{ID: id}, account.Open{
				VirtualAccountID: id, PlatformID: c.PlatformID, Environment: c.Environment,
				EntityRef: in.EntityRef, Type: in.Type, AccountNumber: newAccountNumber(),
				RoutingNumber: a.RoutingNumber, LedgerAccountID: domain.NewID(domain.PrefixLedgerAccount),
				Metadata: in.Metadata, At: now(),
			})
			if err != nil {
				return Result{}, err
			}
			_, err = appendAndProject(ctx, tx, accountStream(c, id), 0, meta, events)
			return Result{ID: id}, err
		})
		// Not the runner's retry: a taken number is no lost race but a
		// redraw, with its own bound.
		if eventstore.ViolatesConstraint(err, "virtual_accounts_number") && draw < maxNumberDraws {
			continue // the number was taken: draw another
		}
		return res, err
	}
}
