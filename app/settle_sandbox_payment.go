package app

import (
	"context"

	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
)

// SettleSandboxPayment does what the sandbox rail does with a payment: the
// magic destination account numbers fail with their network codes, any
// other settles. Running it twice changes nothing.
func (a *App) SettleSandboxPayment(ctx context.Context, meta Meta, id string) error {
	s, _, _, err := loadPayment(ctx, a.Pool, nil, id)
	if err != nil {
		return err
	}
	if s.Status != payment.StatusPending && s.Status != payment.StatusSubmitted {
		return nil // canceled, or already settled: nothing left to do
	}
	r, _ := rails.Parse(s.Rail)
	if code := rails.SandboxOutcome(r, s.Destination.AccountNumber); code != "" {
		return a.FailPayment(ctx, meta, nil, id, code)
	}
	return a.CompletePayment(ctx, meta, nil, id)
}
