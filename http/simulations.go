package http

import (
	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/projections/queries"
)

// sandboxOnly guards /simulations/*: live keys get 403.
func sandboxOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := principalOf(c); p == nil || p.env != domain.Sandbox {
			return domain.Errorf(domain.CodeForbidden, "simulations exist in the sandbox only: use a sandbox key")
		}
		return next(c)
	}
}

type inboundTransferRequest struct {
	VirtualAccountID string             `json:"virtual_account_id"`
	Amount           int64              `json:"amount"`
	Rail             string             `json:"rail"`
	Originator       inbound.Originator `json:"originator"`
	Description      string             `json:"description"`
}

// POST /v1/simulations/inbound-transfers
func (s *Server) simulateInboundTransfer(c echo.Context) error {
	var req inboundTransferRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	if req.VirtualAccountID == "" {
		return domain.Invalid("virtual_account_id", "virtual_account_id is required")
	}
	idem, err := platformIdempotency(c, "simulate_inbound_transfer", body)
	if err != nil {
		return err
	}
	res, err := s.app.SimulateInboundTransfer(c.Request().Context(), meta(c), idem, callerOf(c), app.SimulateInboundTransfer{
		VirtualAccountID: req.VirtualAccountID, Amount: req.Amount, Rail: req.Rail, Originator: req.Originator,
		Description: req.Description})
	if err != nil {
		return err
	}
	v, err := queries.GetInboundTransfer(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}
