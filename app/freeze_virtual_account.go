package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
)

// FreezeVirtualAccount stops an account from sending payments.
func (a *App) FreezeVirtualAccount(ctx context.Context, meta Meta, c Caller, id string) error {
	return a.changeAccount(ctx, meta, c, id, func(lockedAccount) any { return account.Freeze{At: now()} })
}

// changeAccount loads an account, decides a command built under the
// account's balance lock, and appends the events.
func (a *App) changeAccount(ctx context.Context, meta Meta, c Caller, id string, build func(lockedAccount) any) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		locked, err := lockAccounts(ctx, tx, c, []string{id})
		if err != nil {
			return Result{}, err
		}
		return Result{}, change(ctx, tx, meta, accounts, c, id, func(s account.State) ([]domain.Event, error) {
			return account.Decide(s, build(locked[id]))
		})
	})
	return err
}
