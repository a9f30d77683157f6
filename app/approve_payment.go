package app

import (
	"context"
	"time"

	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/projections/queries"
)

// ApprovePayment releases a payment waiting for its approval to the rails
// (API.md §12): it becomes pending, and settles from now on. The approving
// key (meta.Actor) must not be the one that created it.
func (a *App) ApprovePayment(ctx context.Context, meta Meta, c Caller, id string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		settings, err := queries.GetSettings(ctx, tx, c.PlatformID, c.Environment)
		if err != nil {
			return Result{}, err
		}
		return Result{}, a.decidePayment(ctx, tx, meta, &c, id, func(s payment.State) any {
			at := now()
			rail, _ := rails.Parse(s.Rail)
			return payment.Approve{By: meta.Actor, At: at,
				ExpectedSettlementAt: payment.ExpectedSettlement(c.Environment, settings.Settings, rail, at)}
		})
	})
	return err
}

// DenyPayment refuses a payment waiting for its approval; its hold is
// released. Any of the platform's keys may deny, its creator's included.
func (a *App) DenyPayment(ctx context.Context, meta Meta, c Caller, id, reason string) error {
	return a.changePayment(ctx, meta, &c, id, func(payment.State) any {
		return payment.Deny{By: meta.Actor, Reason: reason, At: now()}
	})
}

// ExpireApprovals cancels the payments still waiting for their approval
// whose window ended at or before at, one command each (so that one
// payment's trouble leaves the others to go), and says how many it
// canceled. It finds them by the approval's expiry, not the creation: a
// scheduled payment waits from its release. An approval racing it wins or
// loses on the payment's stream version.
func (a *App) ExpireApprovals(ctx context.Context, at time.Time) (int, error) {
	ids, err := a.dueIDs(ctx, `SELECT id FROM payments WHERE status = 'requires_approval'
        AND (approval->>'expires_at')::timestamptz <= $1 ORDER BY created_at LIMIT 500`, at)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		var canceled bool
		err := a.changePayment(ctx, Meta{Actor: "approval_expiry"}, nil, id, func(s payment.State) any {
			canceled = s.Status == payment.StatusRequiresApproval && !at.Before(s.Approval.ExpiresAt)
			return payment.Expire{At: at}
		})
		if err != nil {
			return n, err
		}
		if canceled {
			n++
		}
	}
	return n, nil
}
