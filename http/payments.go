package http

import (
	"net/http"
	"regexp"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type paymentRequest struct {
	VirtualAccountID string              `json:"virtual_account_id"`
	Amount           int64               `json:"amount"`
	Rail             string              `json:"rail"`
	Destination      payment.Destination `json:"destination"`
	CounterpartyID   string              `json:"counterparty_id"`
	IdempotencyKey   string              `json:"idempotency_key"`
	Description      string              `json:"description"`
	Metadata         map[string]string   `json:"metadata"`
	ScheduledFor     string              `json:"scheduled_for"`
}

// POST /v1/payments
func (s *Server) createPayment(c echo.Context) error {
	var req paymentRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	if req.VirtualAccountID == "" {
		return domain.Invalid("virtual_account_id", "virtual_account_id is required")
	}
	p := principalOf(c)
	idem, err := idempotency(c, p.platformID, p.env.String(), "create_payment", body, req.IdempotencyKey)
	if err != nil {
		return err
	}
	res, err := s.app.CreatePayment(c.Request().Context(), meta(c), idem, callerOf(c), payment.Request{
		VirtualAccountID: req.VirtualAccountID, Amount: req.Amount, Rail: req.Rail, Destination: req.Destination,
		CounterpartyID: req.CounterpartyID, Description: req.Description, Metadata: req.Metadata, ScheduledFor: req.ScheduledFor})
	if err != nil {
		return err
	}
	if res.Payment != nil {
		return created(c, res, *res.Payment)
	}
	v, err := queries.GetPayment(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}

func paymentID(c echo.Context) (string, error) {
	return pathID(c, "id", domain.PrefixPayment, "payment")
}

// GET /v1/payments/:id
func (s *Server) getPayment(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	v, err := queries.GetPayment(c.Request().Context(), s.reads(c), scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

var paymentStatuses = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range payment.Statuses {
		m[s] = true
	}
	return m
}()

// GET /v1/payments
func (s *Server) listPayments(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.PaymentFilter{VirtualAccountID: c.QueryParam("virtual_account_id"), Status: c.QueryParam("status"),
		Rail: c.QueryParam("rail"), IdempotencyKey: c.QueryParam("idempotency_key")}
	if f.Status != "" && !paymentStatuses[f.Status] {
		return domain.Invalid("status", "status must be scheduled, requires_approval, pending, submitted, completed, failed, canceled or denied")
	}
	if f.Rail != "" {
		if _, ok := rails.Parse(f.Rail); !ok {
			return domain.Invalid("rail", "rail must be one of ach_standard, ach_same_day, rtp, fednow")
		}
	}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	if f.Metadata, err = metadataQuery(c); err != nil {
		return err
	}
	var list queries.List[queries.PaymentView]
	err = s.readList(c, inlineList, func(db eventstore.DB) (err error) {
		list, err = queries.ListPayments(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// POST /v1/payments/:id/cancel
func (s *Server) cancelPayment(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	if err := s.app.CancelPayment(c.Request().Context(), meta(c), callerOf(c), id); err != nil {
		return err
	}
	return s.getPayment(c)
}

// POST /v1/payments/:id/approve
func (s *Server) approvePayment(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	if err := s.app.ApprovePayment(c.Request().Context(), meta(c), callerOf(c), id); err != nil {
		return err
	}
	return s.getPayment(c)
}

type denyRequest struct {
	Reason string `json:"reason"`
}

// MaxDenialReasonLen bounds the reason of a denied approval.
const MaxDenialReasonLen = 500

// POST /v1/payments/:id/deny
func (s *Server) denyPayment(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	var req denyRequest
	if _, err := bind(c, &req); err != nil {
		return err
	}
	if utf8.RuneCountInString(req.Reason) > MaxDenialReasonLen {
		return domain.Invalid("reason", "reason must be at most %d characters", MaxDenialReasonLen)
	}
	if err := s.app.DenyPayment(c.Request().Context(), meta(c), callerOf(c), id, req.Reason); err != nil {
		return err
	}
	return s.getPayment(c)
}

// POST /v1/simulations/payments/:id/complete
func (s *Server) simulatePaymentComplete(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	caller := callerOf(c)
	if err := s.app.CompletePayment(c.Request().Context(), meta(c), &caller, id); err != nil {
		return err
	}
	return s.getPayment(c)
}

// POST /v1/simulations/payments/:id/release
func (s *Server) simulatePaymentRelease(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	caller := callerOf(c)
	if _, err := s.app.ReleasePayment(c.Request().Context(), meta(c), &caller, id); err != nil {
		return err
	}
	return s.getPayment(c)
}

type failRequest struct {
	NetworkCode string `json:"network_code"`
}

var networkCode = regexp.MustCompile(`^[A-Z0-9]{2,8}$`)

// POST /v1/simulations/payments/:id/fail
func (s *Server) simulatePaymentFail(c echo.Context) error {
	id, err := paymentID(c)
	if err != nil {
		return err
	}
	var req failRequest
	if _, err := bind(c, &req); err != nil {
		return err
	}
	if !networkCode.MatchString(req.NetworkCode) {
		return domain.Invalid("network_code", "network_code is a rail's return or reason code, such as R02 or AC04")
	}
	caller := callerOf(c)
	if err := s.app.FailPayment(c.Request().Context(), meta(c), &caller, id, req.NetworkCode); err != nil {
		return err
	}
	return s.getPayment(c)
}
