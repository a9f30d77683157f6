package queries

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
)

// DecisionView is how a verification was decided.
type DecisionView struct {
	Outcome   string       `json:"outcome"`
	Method    string       `json:"method"`
	Reasons   []kyb.Reason `json:"reasons"`
	DecidedAt Time         `json:"decided_at"`
}

// ReviewView is a verification's place in the manual review queue.
type ReviewView struct {
	ETA Time `json:"eta"`
}

// KYBView is a verification as the API shows it (masked).
type KYBView struct {
	ID               string             `json:"id"`
	Object           string             `json:"object"`
	VirtualAccountID string             `json:"virtual_account_id"`
	EntityRef        string             `json:"entity_ref"`
	Status           string             `json:"status"`
	Business         kyb.MaskedBusiness `json:"business"`
	BeneficialOwners []kyb.MaskedOwner  `json:"beneficial_owners"`
	Decision         *DecisionView      `json:"decision"`
	Review           *ReviewView        `json:"review"`
	Environment      string             `json:"environment"`
	CreatedAt        Time               `json:"created_at"`
	UpdatedAt        Time               `json:"updated_at"`
}

// NewKYBView shows a verification folded from the log.
func NewKYBView(v *kyb.Verification) KYBView {
	out := KYBView{ID: v.VerificationID, Object: "kyb_verification", VirtualAccountID: v.VirtualAccountID,
		EntityRef: v.EntityRef, Status: v.Status, Business: v.Business, BeneficialOwners: v.BeneficialOwners,
		Environment: v.Environment.String(), CreatedAt: NewTime(v.At), UpdatedAt: NewTime(v.UpdatedAt)}
	if d := v.Decision; d != nil {
		out.Decision = &DecisionView{Outcome: d.Outcome, Method: d.Method, Reasons: d.Reasons, DecidedAt: NewTime(d.DecidedAt)}
	}
	if v.ReviewETA != nil {
		out.Review = &ReviewView{ETA: NewTime(*v.ReviewETA)}
	}
	return out
}

const kybColumns = `id, virtual_account_id, entity_ref, status, business, beneficial_owners, decision, review_eta,
    environment, created_at, updated_at`

// scanKYB scans kybColumns, after the columns of before (a query that
// selects more than the view).
func scanKYB(row pgx.Row, before ...any) (KYBView, error) {
	var v KYBView
	var eta *time.Time
	var created, updated time.Time
	err := row.Scan(append(before, &v.ID, &v.VirtualAccountID, &v.EntityRef, &v.Status, &v.Business, &v.BeneficialOwners,
		&v.Decision, &eta, &v.Environment, &created, &updated)...)
	v.Object, v.CreatedAt, v.UpdatedAt = "kyb_verification", NewTime(created), NewTime(updated)
	if eta != nil {
		v.Review = &ReviewView{ETA: NewTime(*eta)}
	}
	return v, err
}

// GetKYB returns one of the scope's verifications.
func GetKYB(ctx context.Context, db eventstore.DB, s Scope, id string) (KYBView, error) {
	v, err := scanKYB(db.QueryRow(ctx, `SELECT `+kybColumns+` FROM kyb_verifications
        WHERE id = $1 AND platform_id = $2 AND environment = $3`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("kyb_verification", id)
	}
	return v, err
}

// KYBRef locates a verification's business, for commands on it.
type KYBRef struct {
	PlatformID  string
	Environment domain.Environment
	EntityRef   string
}

// FindKYB locates any verification (the operator's view); platformID, if
// not empty, must own it.
func FindKYB(ctx context.Context, db eventstore.DB, id string) (KYBRef, error) {
	var ref KYBRef
	var env string
	err := db.QueryRow(ctx, `SELECT platform_id, environment, entity_ref FROM kyb_verifications WHERE id = $1`, id).
		Scan(&ref.PlatformID, &env, &ref.EntityRef)
	if errors.Is(err, pgx.ErrNoRows) {
		return ref, domain.NotFound("kyb_verification", id)
	}
	ref.Environment, _ = domain.ParseEnvironment(env)
	return ref, err
}

// KYBFilter narrows ListKYB.
type KYBFilter struct {
	VirtualAccountID string
	Status           string
}

// ListKYB lists the scope's verifications, newest first.
func ListKYB(ctx context.Context, db eventstore.DB, s Scope, f KYBFilter, page Page) (List[KYBView], error) {
	rows, err := db.Query(ctx, `SELECT `+kybColumns+` FROM kyb_verifications
        WHERE platform_id = $1 AND environment = $2 AND ($3 = '' OR virtual_account_id = $3)
          AND ($4 = '' OR status = $4) AND ($5 = '' OR id < $5)
        ORDER BY id DESC LIMIT $6`, s.PlatformID, s.Environment.String(), f.VirtualAccountID, f.Status, page.After, page.Limit+1)
	if err != nil {
		return List[KYBView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (KYBView, error) { return scanKYB(r) })
	if err != nil {
		return List[KYBView]{}, err
	}
	return NewList(items, page, func(v KYBView) string { return v.ID }), nil
}

// KYBReviewView is a verification in the operator's review queue: the
// verification and the platform it is of.
type KYBReviewView struct {
	KYBView
	PlatformID string `json:"platform_id"`
}

// ListKYBReviews lists the verifications waiting for a person's review,
// every platform's and both environments' (the operator's queue), oldest
// first: the longest waiting on top.
func ListKYBReviews(ctx context.Context, db eventstore.DB, page Page) (List[KYBReviewView], error) {
	rows, err := db.Query(ctx, `SELECT platform_id, `+kybColumns+` FROM kyb_verifications
        WHERE status = 'pending_review' AND ($1 = '' OR id > $1) ORDER BY id LIMIT $2`, page.After, page.Limit+1)
	if err != nil {
		return List[KYBReviewView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (KYBReviewView, error) {
		var v KYBReviewView
		var err error
		v.KYBView, err = scanKYB(r, &v.PlatformID)
		return v, err
	})
	if err != nil {
		return List[KYBReviewView]{}, err
	}
	return NewList(items, page, func(v KYBReviewView) string { return v.ID }), nil
}
