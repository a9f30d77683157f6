package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
)

// FailPayment records the rail's refusal or return of a payment with the
// network's code: the hold is released, or the posted entries reversed.
func (a *App) FailPayment(ctx context.Context, meta Meta, caller *Caller, id, networkCode string) error {
	return a.changePayment(ctx, meta, caller, id, func(s payment.State) any {
		r, _ := rails.Parse(s.Rail)
		if !rails.KnownNetworkCode(r, networkCode) {
			return domain.Invalid("network_code", "%s is not a %s return or reason code", networkCode, s.Rail)
		}
		return payment.Fail{Failure: rails.FailureFor(r, networkCode), At: now()}
	})
}

// RejectPayment records the bank's refusal of a live payment (an instant
// payment's RJCT): it fails with the bank's code through the returns
// table, a code the table does not know being "unknown", never refused —
// the bank has spoken, the money did not leave, the hold must go. A
// payment already failed stays as it is.
func (a *App) RejectPayment(ctx context.Context, meta Meta, id, networkCode string) error {
	return a.changePayment(ctx, meta, nil, id, func(s payment.State) any {
		if s.Status == payment.StatusFailed {
			return nil
		}
		r, _ := rails.Parse(s.Rail)
		return payment.Fail{Failure: rails.FailureFor(r, networkCode), At: now()}
	})
}
