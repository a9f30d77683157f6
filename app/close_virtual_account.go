package app

import (
	"context"

	"github.com/opentreasury/treasury/domain/account"
)

// CloseVirtualAccount closes an account for good; only at zero balance
// with nothing pending, read under the balance lock.
func (a *App) CloseVirtualAccount(ctx context.Context, meta Meta, c Caller, id string) error {
	return a.changeAccount(ctx, meta, c, id, func(locked lockedAccount) any {
		b := locked.Balance
		return account.Close{Posted: b.Posted, PendingInbound: b.PendingInbound, PendingOutbound: b.PendingOutbound, At: now()}
	})
}
