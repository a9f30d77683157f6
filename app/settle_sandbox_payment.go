package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
)

// SettleSandboxPayment does what the sandbox rail does with a payment in
// flight: the magic destination account numbers fail with their network
// codes, any other settles. The verdict is decided inside the payment's
// transaction, so it cannot race a simulation that settled it first; a
// payment no longer in flight is left alone. RunSandboxPaymentActions
// does the same for many payments at once.
func (a *App) SettleSandboxPayment(ctx context.Context, meta Meta, id string) error {
	return a.changePayment(ctx, meta, nil, id, func(s payment.State) any {
		if s.Environment != domain.Sandbox {
			return nil // the sandbox rail never touches live payments
		}
		return sandboxVerdict(s)
	})
}
