package app

import (
	"context"

	"github.com/opentreasury/treasury/domain/account"
)

// UnfreezeVirtualAccount makes a frozen account active again.
func (a *App) UnfreezeVirtualAccount(ctx context.Context, meta Meta, c Caller, id string) error {
	return a.changeAccount(ctx, meta, c, id, func(lockedAccount) any { return account.Unfreeze{At: now()} })
}
