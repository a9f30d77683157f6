package app

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
)

// SubmitKYB files a verification of the business behind a virtual account.
// A screening hit is recorded as a rejected verification and answered with
// 422 compliance_rejected naming it; the decision otherwise comes from the
// KYB decider, a subscriber of the log, not from this request.
func (a *App) SubmitKYB(ctx context.Context, meta Meta, idem *Idempotency, c Caller, virtualAccountID string, sub kyb.Submission) (Result, error) {
	if err := sub.Validate(now()); err != nil {
		return Result{}, err
	}
	var rejected bool
	id := domain.NewID(domain.PrefixKYB)
	meta = withIdempotencyKey(meta, idem)
	res, err := a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		var entityRef string
		err := tx.QueryRow(ctx, `SELECT entity_ref FROM virtual_accounts WHERE id = $1 AND platform_id = $2 AND environment = $3`,
			virtualAccountID, c.PlatformID, c.Environment.String()).Scan(&entityRef)
		if errors.Is(err, pgx.ErrNoRows) {
			return Result{}, &domain.Error{Code: domain.CodeNotFound, Param: "virtual_account_id", Message: "no such virtual_account: " + virtualAccountID}
		}
		if err != nil {
			return Result{}, err
		}
		rejected = false
		err = change(ctx, tx, meta, kybs, c, kybStream(c, entityRef).ID, func(s kyb.State) ([]domain.Event, error) {
			events, err := kyb.DecideCommand(s, kyb.Submit{VerificationID: id, PlatformID: c.PlatformID, Environment: c.Environment,
				EntityRef: entityRef, VirtualAccountID: virtualAccountID, Submission: sub, At: now()})
			for _, e := range events {
				if _, ok := e.(kyb.Rejected); ok {
					rejected = true
				}
			}
			return events, err
		})
		return Result{ID: id}, err
	})
	if err == nil && rejected {
		return res, &domain.Error{Code: domain.CodeComplianceRejected, ResourceID: res.ID,
			Message: "a name in the submission is on the screening list; the verification is recorded as rejected"}
	}
	return res, err
}

func kybStream(c Caller, entityRef string) eventstore.Stream {
	return eventstore.Stream{ID: kyb.StreamID(c.PlatformID, c.Environment, entityRef), Type: kyb.StreamType,
		PlatformID: c.PlatformID, Environment: c.Environment.String()}
}
