package app

import (
	"context"

	"github.com/jackc/pgx/v5"

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
	return a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		stream := kybStream(c, ref.EntityRef)
		s, version, err := loadKYB(ctx, tx, stream.ID)
		if err != nil {
			return err
		}
		events, err := kyb.DecideCommand(s, d)
		if err != nil || len(events) == 0 {
			return err
		}
		_, err = a.appendAndProject(ctx, tx, stream, version, meta, events)
		return err
	})
}
