package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type bookTransferRequest struct {
	FromVirtualAccountID string            `json:"from_virtual_account_id"`
	ToVirtualAccountID   string            `json:"to_virtual_account_id"`
	Amount               int64             `json:"amount"`
	Description          string            `json:"description"`
	Metadata             map[string]string `json:"metadata"`
	IdempotencyKey       string            `json:"idempotency_key"`
}

// POST /v1/book-transfers
func (s *Server) createBookTransfer(c echo.Context) error {
	var req bookTransferRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	p := principalOf(c)
	idem, err := idempotency(c, p.platformID, p.env.String(), "create_book_transfer", body, req.IdempotencyKey)
	if err != nil {
		return err
	}
	res, err := s.app.CreateBookTransfer(c.Request().Context(), meta(c), idem, callerOf(c), booktransfer.Request{
		FromVirtualAccountID: req.FromVirtualAccountID, ToVirtualAccountID: req.ToVirtualAccountID, Amount: req.Amount,
		Description: req.Description, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	v, err := queries.GetBookTransfer(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}

// GET /v1/book-transfers/:id
func (s *Server) getBookTransfer(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixBookTransfer, "book_transfer")
	if err != nil {
		return err
	}
	v, err := queries.GetBookTransfer(c.Request().Context(), s.reads(c), scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// GET /v1/book-transfers
func (s *Server) listBookTransfers(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.BookTransferFilter{VirtualAccountID: c.QueryParam("virtual_account_id")}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	if f.Metadata, err = metadataQuery(c); err != nil {
		return err
	}
	var list queries.List[queries.BookTransferView]
	err = s.readList(c, inlineList, func(db eventstore.DB) (err error) {
		list, err = queries.ListBookTransfers(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}
