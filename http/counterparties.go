package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type counterpartyRequest struct {
	Name          string            `json:"name"`
	AccountNumber string            `json:"account_number"`
	RoutingNumber string            `json:"routing_number"`
	AccountType   string            `json:"account_type"`
	Metadata      map[string]string `json:"metadata"`
}

func (r counterpartyRequest) request() counterparty.Request {
	return counterparty.Request{Name: r.Name, AccountNumber: r.AccountNumber, RoutingNumber: r.RoutingNumber,
		AccountType: r.AccountType, Metadata: r.Metadata}
}

func counterpartyID(c echo.Context) (string, error) {
	return pathID(c, "id", domain.PrefixCounterparty, "counterparty")
}

// POST /v1/counterparties
func (s *Server) createCounterparty(c echo.Context) error {
	var req counterpartyRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	idem, err := platformIdempotency(c, "create_counterparty", body)
	if err != nil {
		return err
	}
	res, err := s.app.CreateCounterparty(c.Request().Context(), meta(c), idem, callerOf(c), req.request())
	if err != nil {
		return err
	}
	// A replay of a counterparty deleted since answers 404, as any read of it.
	v, err := queries.GetCounterparty(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}

// GET /v1/counterparties/:id
func (s *Server) getCounterparty(c echo.Context) error {
	id, err := counterpartyID(c)
	if err != nil {
		return err
	}
	v, err := queries.GetCounterparty(c.Request().Context(), s.reads(c), scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// GET /v1/counterparties
func (s *Server) listCounterparties(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.CounterpartyFilter{VerificationStatus: c.QueryParam("verification_status")}
	if f.VerificationStatus != "" && !counterparty.Statuses[f.VerificationStatus] {
		return domain.Invalid("verification_status", "verification_status must be unverified, pending, verified or failed")
	}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	if f.Metadata, err = metadataQuery(c); err != nil {
		return err
	}
	var list queries.List[queries.CounterpartyView]
	err = s.readList(c, inlineList, func(db eventstore.DB) (err error) {
		list, err = queries.ListCounterparties(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// DELETE /v1/counterparties/:id
func (s *Server) deleteCounterparty(c echo.Context) error {
	id, err := counterpartyID(c)
	if err != nil {
		return err
	}
	if err := s.app.DeleteCounterparty(c.Request().Context(), meta(c), callerOf(c), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": id, "object": "counterparty", "deleted": true})
}

type verifyRequest struct {
	Method string `json:"method"`
}

// POST /v1/counterparties/:id/verify
func (s *Server) verifyCounterparty(c echo.Context) error {
	id, err := counterpartyID(c)
	if err != nil {
		return err
	}
	var req verifyRequest
	if _, err := bind(c, &req); err != nil {
		return err
	}
	if err := s.app.VerifyCounterparty(c.Request().Context(), meta(c), callerOf(c), id, req.Method); err != nil {
		return err
	}
	return s.getCounterparty(c)
}
