package http

import (
	"bytes"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

func callerOf(c echo.Context) app.Caller {
	p := principalOf(c)
	caller := app.Caller{PlatformID: p.platformID, Environment: p.env}
	if p.verifyInCommand {
		caller.VerifyKeyID = p.keyID
	}
	return caller
}

func scopeOf(c echo.Context) queries.Scope {
	p := principalOf(c)
	return queries.Scope{PlatformID: p.platformID, Environment: p.env}
}

type openAccountRequest struct {
	PlatformID string            `json:"platform_id"`
	EntityRef  string            `json:"entity_ref"`
	Type       string            `json:"type"`
	Metadata   map[string]string `json:"metadata"`
}

// POST /v1/virtual-accounts
func (s *Server) openVirtualAccount(c echo.Context) error {
	var req openAccountRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	if req.PlatformID == "" {
		return domain.Invalid("platform_id", "platform_id is required")
	}
	idem, err := platformIdempotency(c, "open_virtual_account", body)
	if err != nil {
		return err
	}
	res, err := s.app.OpenVirtualAccount(c.Request().Context(), meta(c), idem, callerOf(c), app.OpenVirtualAccount{
		PlatformID: req.PlatformID, EntityRef: req.EntityRef, Type: req.Type, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	v, err := queries.GetVirtualAccount(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}

// GET /v1/virtual-accounts
func (s *Server) listVirtualAccounts(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.AccountFilter{EntityRef: c.QueryParam("entity_ref"), Status: c.QueryParam("status")}
	if f.Status != "" {
		if _, ok := account.ParseStatus(f.Status); !ok {
			return domain.Invalid("status", "status must be active, frozen or closed")
		}
	}
	if f.Metadata, err = metadataQuery(c); err != nil {
		return err
	}
	var list queries.List[queries.VirtualAccountView]
	err = s.readList(c, inlineList, func(db eventstore.DB) (err error) {
		list, err = queries.ListVirtualAccounts(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

func accountID(c echo.Context) (string, error) {
	return pathID(c, "id", domain.PrefixVirtualAccount, "virtual_account")
}

// GET /v1/virtual-accounts/:id
func (s *Server) getVirtualAccount(c echo.Context) error {
	id, err := accountID(c)
	if err != nil {
		return err
	}
	v, err := queries.GetVirtualAccount(c.Request().Context(), s.reads(c), scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// GET /v1/virtual-accounts/:id/balance
func (s *Server) getBalance(c echo.Context) error {
	id, err := accountID(c)
	if err != nil {
		return err
	}
	asOf := time.Now()
	if q := c.QueryParam("as_of"); q != "" {
		if asOf, err = parseTime("as_of", q); err != nil {
			return err
		}
		s.app.AwaitProjections(c.Request().Context()) // read your writes
		v, err := queries.BalanceAsOf(c.Request().Context(), s.reads(c), scopeOf(c), id, asOf)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, v)
	}
	acc, err := queries.GetVirtualAccount(c.Request().Context(), s.reads(c), scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, queries.BalanceAtView{Object: "balance", VirtualAccountID: id, Currency: "USD",
		AsOf: queries.NewTime(asOf), BalanceView: acc.Balance})
}

// statusChange runs an account command and answers with the account.
func (s *Server) statusChange(c echo.Context, cmd func(app.Meta, app.Caller, string) error) error {
	id, err := accountID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	if err := cmd(meta(c), callerOf(c), id); err != nil {
		return err
	}
	return s.getVirtualAccount(c)
}

// POST /v1/virtual-accounts/:id/freeze
func (s *Server) freezeVirtualAccount(c echo.Context) error {
	return s.statusChange(c, func(m app.Meta, cl app.Caller, id string) error {
		return s.app.FreezeVirtualAccount(c.Request().Context(), m, cl, id)
	})
}

// POST /v1/virtual-accounts/:id/unfreeze
func (s *Server) unfreezeVirtualAccount(c echo.Context) error {
	return s.statusChange(c, func(m app.Meta, cl app.Caller, id string) error {
		return s.app.UnfreezeVirtualAccount(c.Request().Context(), m, cl, id)
	})
}

// POST /v1/virtual-accounts/:id/close
func (s *Server) closeVirtualAccount(c echo.Context) error {
	return s.statusChange(c, func(m app.Meta, cl app.Caller, id string) error {
		return s.app.CloseVirtualAccount(c.Request().Context(), m, cl, id)
	})
}

var transactionTypes = map[string]bool{"inbound_transfer": true, "payment": true, "payment_fee": true,
	"payment_reversal": true, "book_transfer": true, "adjustment": true, "fee": true, "correction": true}

// GET /v1/virtual-accounts/:id/transactions
func (s *Server) listTransactions(c echo.Context) error {
	id, err := accountID(c)
	if err != nil {
		return err
	}
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.TransactionFilter{Status: c.QueryParam("status"), Type: c.QueryParam("type")}
	if f.Status != "" && f.Status != "pending" && f.Status != "posted" && f.Status != "void" {
		return domain.Invalid("status", "status must be pending, posted or void")
	}
	if f.Type != "" && !transactionTypes[f.Type] {
		return domain.Invalid("type", "unknown transaction type %q", f.Type)
	}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	var list queries.List[queries.TransactionView]
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		list, err = queries.ListTransactions(c.Request().Context(), db, scopeOf(c), id, f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// GET /v1/virtual-accounts/:id/statements/:month
func (s *Server) getStatement(c echo.Context) error {
	id, err := accountID(c)
	if err != nil {
		return err
	}
	month, err := time.Parse("2006-01", c.Param("month"))
	if err != nil {
		return domain.Invalid("month", "month must be YYYY-MM")
	}
	var v queries.StatementView
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		v, err = queries.Statement(c.Request().Context(), db, scopeOf(c), id, month)
		return err
	})
	if err != nil {
		return err
	}
	switch c.QueryParam("format") {
	case "", "json":
		return c.JSON(http.StatusOK, v)
	case "csv":
		var buf bytes.Buffer
		if err := queries.WriteStatementCSV(&buf, v); err != nil {
			return err
		}
		c.Response().Header().Set("Content-Disposition", `attachment; filename="statement-`+id+`-`+v.Month+`.csv"`)
		return c.Blob(http.StatusOK, "text/csv; charset=utf-8", buf.Bytes())
	}
	return domain.Invalid("format", "format must be json or csv")
}

// parseTime reads RFC 3339 or a date (midnight UTC).
func parseTime(param, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	return time.Time{}, domain.Invalid(param, "%s must be an RFC 3339 time or a YYYY-MM-DD date", param)
}

// createdRange reads created_after (inclusive) and created_before (exclusive).
func createdRange(c echo.Context) (queries.TimeRange, error) {
	var r queries.TimeRange
	var err error
	if q := c.QueryParam("created_after"); q != "" {
		if r.After, err = parseTime("created_after", q); err != nil {
			return r, err
		}
	}
	if q := c.QueryParam("created_before"); q != "" {
		if r.Before, err = parseTime("created_before", q); err != nil {
			return r, err
		}
	}
	return r, nil
}
