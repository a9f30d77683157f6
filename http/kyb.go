package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type kybRequest struct {
	VirtualAccountID string       `json:"virtual_account_id"`
	Business         kyb.Business `json:"business"`
	BeneficialOwners []kyb.Owner  `json:"beneficial_owners"`
}

// POST /v1/kyb
func (s *Server) submitKYB(c echo.Context) error {
	var req kybRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	if req.VirtualAccountID == "" {
		return domain.Invalid("virtual_account_id", "virtual_account_id is required")
	}
	idem, err := platformIdempotency(c, "submit_kyb", body)
	if err != nil {
		return err
	}
	res, err := s.app.SubmitKYB(c.Request().Context(), meta(c), idem, callerOf(c), req.VirtualAccountID,
		kyb.Submission{Business: req.Business, BeneficialOwner: req.BeneficialOwners})
	if err != nil {
		return err
	}
	v, err := queries.GetKYB(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	if res.Replayed && screenedOut(v) { // the same answer as the first request's
		return &domain.Error{Code: domain.CodeComplianceRejected, ResourceID: v.ID,
			Message: "a name in the submission is on the screening list; the verification is recorded as rejected"}
	}
	return created(c, res, v)
}

// screenedOut says whether a verification was rejected at submission by
// screening (its decision's reasons are screening matches).
func screenedOut(v queries.KYBView) bool {
	if v.Decision == nil || v.Decision.Outcome != "rejected" || v.Decision.Method != kyb.MethodAutomatic || len(v.Decision.Reasons) == 0 {
		return false
	}
	for _, r := range v.Decision.Reasons {
		if r.Code != "screening_match" {
			return false
		}
	}
	return true
}

// GET /v1/kyb/:id
func (s *Server) getKYB(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixKYB, "kyb_verification")
	if err != nil {
		return err
	}
	v, err := queries.GetKYB(c.Request().Context(), s.pool, scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

var kybStatuses = map[string]bool{kyb.StatusPending: true, kyb.StatusPendingReview: true, kyb.StatusApproved: true, kyb.StatusRejected: true}

// GET /v1/kyb
func (s *Server) listKYB(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.KYBFilter{VirtualAccountID: c.QueryParam("virtual_account_id"), Status: c.QueryParam("status")}
	if f.Status != "" && !kybStatuses[f.Status] {
		return domain.Invalid("status", "status must be pending, pending_review, approved or rejected")
	}
	var list queries.List[queries.KYBView]
	err = s.readList(c, inlineList, func(db eventstore.DB) (err error) {
		list, err = queries.ListKYB(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

type kybDecisionRequest struct {
	Outcome string       `json:"outcome"`
	Reasons []kyb.Reason `json:"reasons"`
}

func (r kybDecisionRequest) decide(id string) (kyb.Decide, error) {
	return kyb.ManualDecision(id, r.Outcome, r.Reasons)
}

// readDecision reads a manual decision on the verification in the path.
func readDecision(c echo.Context) (string, kyb.Decide, error) {
	id, err := pathID(c, "id", domain.PrefixKYB, "kyb_verification")
	if err != nil {
		return "", kyb.Decide{}, err
	}
	var req kybDecisionRequest
	if _, err := bind(c, &req); err != nil {
		return "", kyb.Decide{}, err
	}
	d, err := req.decide(id)
	return id, d, err
}

// POST /v1/operator/kyb/:id/decision
func (s *Server) operatorDecideKYB(c echo.Context) error {
	id, d, err := readDecision(c)
	if err != nil {
		return err
	}
	if err := s.app.DecideKYB(c.Request().Context(), meta(c), nil, d); err != nil {
		return err
	}
	ref, err := queries.FindKYB(c.Request().Context(), s.pool, id)
	if err != nil {
		return err
	}
	v, err := queries.GetKYB(c.Request().Context(), s.pool, queries.Scope{PlatformID: ref.PlatformID, Environment: ref.Environment}, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// POST /v1/simulations/kyb/:id/decision
func (s *Server) simulateKYBDecision(c echo.Context) error {
	_, d, err := readDecision(c)
	if err != nil {
		return err
	}
	caller := callerOf(c)
	if err := s.app.DecideKYB(c.Request().Context(), meta(c), &caller, d); err != nil {
		return err
	}
	return s.getKYB(c)
}
