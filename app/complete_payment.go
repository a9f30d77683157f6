package app

import (
	"context"

	"github.com/opentreasury/treasury/domain/payment"
)

// CompletePayment settles a payment: its amount and fee post. caller, if
// not nil, must own the payment (the sandbox simulation endpoint).
func (a *App) CompletePayment(ctx context.Context, meta Meta, caller *Caller, id string) error {
	return a.changePayment(ctx, meta, caller, id, func(payment.State) any { return payment.Complete{At: now()} })
}
