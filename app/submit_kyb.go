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
func (a *App) SubmitKYB(ctx context.Context, meta Meta, c Caller, virtualAccountID string, sub kyb.Submission) (Result, error) {
	if err := sub.Validate(now()); err != nil {
		return Result{}, err
	}
	var res Result
	var rejected bool
	err := a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var entityRef string
		err := tx.QueryRow(ctx, `SELECT entity_ref FROM virtual_accounts WHERE id = $1 AND platform_id = $2 AND environment = $3`,
			virtualAccountID, c.PlatformID, c.Environment.String()).Scan(&entityRef)
		if errors.Is(err, pgx.ErrNoRows) {
			return &domain.Error{Code: domain.CodeNotFound, Param: "virtual_account_id", Message: "no such virtual_account: " + virtualAccountID}
		}
		if err != nil {
			return err
		}
		stream := kybStream(c, entityRef)
		s, version, err := loadKYB(ctx, tx, stream.ID)
		if err != nil {
			return err
		}
		id := domain.NewID(domain.PrefixKYB)
		events, err := kyb.DecideCommand(s, kyb.Submit{VerificationID: id, PlatformID: c.PlatformID, Environment: c.Environment,
			EntityRef: entityRef, VirtualAccountID: virtualAccountID, Submission: sub, At: now()})
		if err != nil {
			return err
		}
		rejected = false
		for _, e := range events {
			if _, ok := e.(kyb.Rejected); ok {
				rejected = true
			}
		}
		res = Result{ID: id}
		_, err = a.appendAndProject(ctx, tx, stream, version, meta, events)
		return err
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

func loadKYB(ctx context.Context, db eventstore.DB, streamID string) (kyb.State, int64, error) {
	recs, version, err := eventstore.Load(ctx, db, streamID)
	if err != nil {
		return kyb.State{}, 0, err
	}
	s, err := eventstore.Fold(recs, kyb.State{}, kyb.Evolve)
	return s, version, err
}
