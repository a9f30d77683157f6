package app

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain/account"
)

// FreezeVirtualAccount stops an account from sending payments.
func (a *App) FreezeVirtualAccount(ctx context.Context, meta Meta, c Caller, id string) error {
	return a.changeAccount(ctx, meta, c, id, func(lockedAccount) any { return account.Freeze{At: now()} })
}

// changeAccount loads an account, decides a command built under the
// account's balance lock, and appends the events.
func (a *App) changeAccount(ctx context.Context, meta Meta, c Caller, id string, command func(lockedAccount) any) error {
	return a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		locked, err := lockAccounts(ctx, tx, c, []string{id})
		if err != nil {
			return err
		}
		s, version, err := loadAccount(ctx, tx, c, id)
		if err != nil {
			return err
		}
		events, err := account.Decide(s, command(locked[id]))
		if err != nil {
			return err
		}
		_, err = a.appendAndProject(ctx, tx, accountStream(c, id), version, meta, events)
		return err
	})
}
