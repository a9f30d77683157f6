package app

import (
	"context"

	"github.com/opentreasury/treasury/domain/payment"
)

// SubmitPayment records that the rail took the payment.
func (a *App) SubmitPayment(ctx context.Context, meta Meta, id string) error {
	return a.changePayment(ctx, meta, nil, id, func(payment.State) any { return payment.Submit{At: now()} })
}
