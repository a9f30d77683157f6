package projections

import (
	"time"

	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// KYB projects business streams into kyb_verifications and kyb_entities.
type KYB struct{}

func (KYB) Name() string     { return "kyb" }
func (KYB) Tables() []string { return []string{"kyb_verifications", "kyb_entities"} }

func (p KYB) Project(b *Batch) error { return eachEvent(b, p.apply) }

func (KYB) apply(b *Batch, r *eventstore.RecordedEvent) error {
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	var id, status string
	var at time.Time
	var decision *queries.DecisionView
	var eta *time.Time
	switch e := ev.(type) {
	case kyb.Submitted:
		b.Queue(`INSERT INTO kyb_verifications (id, platform_id, environment, entity_ref, virtual_account_id, status,
            business, beneficial_owners, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8, $8)`,
			e.VerificationID, e.PlatformID, e.Environment.String(), e.EntityRef, e.VirtualAccountID, e.Business,
			e.BeneficialOwners, e.At)
		b.Queue(`INSERT INTO kyb_entities (platform_id, environment, entity_ref, status, verification_id, updated_at)
            VALUES ($1, $2, $3, 'pending', $4, $5) ON CONFLICT (platform_id, environment, entity_ref)
            DO UPDATE SET status = 'pending', verification_id = $4, updated_at = $5`,
			e.PlatformID, e.Environment.String(), e.EntityRef, e.VerificationID, e.At)
		return nil
	case kyb.ReviewRequested:
		id, status, at = e.VerificationID, kyb.StatusPendingReview, e.At
		t := e.ETA
		eta = &t
	case kyb.Approved:
		id, status, at = e.VerificationID, kyb.StatusApproved, e.At
		decision = &queries.DecisionView{Outcome: status, Method: e.Method, Reasons: e.Reasons, DecidedAt: queries.NewTime(e.At)}
	case kyb.Rejected:
		id, status, at = e.VerificationID, kyb.StatusRejected, e.At
		decision = &queries.DecisionView{Outcome: status, Method: e.Method, Reasons: e.Reasons, DecidedAt: queries.NewTime(e.At)}
	default:
		return nil
	}
	b.Queue(`UPDATE kyb_verifications SET status = $2, updated_at = $3,
        review_eta = coalesce($4, review_eta), decision = coalesce($5, decision) WHERE id = $1`, id, status, at, eta, decision)
	b.Queue(`UPDATE kyb_entities SET status = $2, updated_at = $3 WHERE verification_id = $1`, id, status, at)
	return nil
}
