package app

import (
	"context"

	"github.com/opentreasury/treasury/domain/payment"
)

// CancelPayment cancels a pending payment and releases its hold.
func (a *App) CancelPayment(ctx context.Context, meta Meta, c Caller, id string) error {
	return a.changePayment(ctx, meta, &c, id, func(payment.State) any { return payment.Cancel{At: now()} })
}
