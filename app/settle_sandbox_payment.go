package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
)

// SettleSandboxPayment does what the sandbox rail does with a payment in
// flight: the magic destination account numbers fail with their network
// codes, any other settles. The verdict is decided inside the payment's
// transaction, so it cannot race a simulation that settled it first; a
// payment no longer in flight is left alone.
func (a *App) SettleSandboxPayment(ctx context.Context, meta Meta, id string) error {
	return a.changePayment(ctx, meta, nil, id, func(s payment.State) any {
		if s.Environment != domain.Sandbox {
			return nil // the sandbox rail never touches live payments
		}
		r, _ := rails.Parse(s.Rail)
		cmd := payment.Settle{At: now()}
		if code := rails.SandboxOutcome(r, s.Destination.AccountNumber); code != "" {
			f := rails.FailureFor(r, code)
			cmd.Failure = &f
		}
		return cmd
	})
}
