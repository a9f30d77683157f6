package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/projections/queries"
)

// DecideKYB records a decision on a verification. Manual decisions (the
// operator's, or a sandbox simulation's) need pending_review; automatic
// ones need pending and are no-ops otherwise, so the decider may repeat
// itself after a crash. caller, if not nil, must own the verification.
func (a *App) DecideKYB(ctx context.Context, meta Meta, caller *Caller, d kyb.Decide) error {
	ref, err := queries.FindKYB(ctx, a.Pool, d.VerificationID)
	if err != nil {
		return err
	}
	if caller != nil && (ref.PlatformID != caller.PlatformID || ref.Environment != caller.Environment) {
		return domain.NotFound("kyb_verification", d.VerificationID)
	}
	if d.At.IsZero() {
		d.At = now()
	}
	c := Caller{PlatformID: ref.PlatformID, Environment: ref.Environment}
	_, err = a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, change(ctx, tx, meta, kybs, c, kybStream(c, ref.EntityRef).ID, func(s kyb.State) ([]domain.Event, error) {
			return kyb.DecideCommand(s, d)
		})
	})
	return err
}
