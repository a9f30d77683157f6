package console

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type accountsData struct {
	List      queries.List[queries.VirtualAccountView]
	EntityRef string
	Status    string
	Statuses  []string
}

func (c *Console) accounts(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	d := accountsData{EntityRef: strings.TrimSpace(q.Get("entity_ref")), Status: q.Get("status"),
		Statuses: []string{account.StatusActive.String(), account.StatusFrozen.String(), account.StatusClosed.String()}}
	if _, ok := account.ParseStatus(d.Status); d.Status != "" && !ok {
		c.fail(w, r, s, http.StatusBadRequest, "There is no account status "+d.Status+".")
		return
	}
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if d.List, err = queries.ListVirtualAccounts(ctx, c.pool, s.scope(), queries.AccountFilter{EntityRef: d.EntityRef, Status: d.Status}, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "accounts", view{Title: "Accounts", Session: s, Nav: "accounts", Data: d})
}

type accountData struct {
	Sandbox      bool
	Chart        chart
	Months       []string // the statements offered: this month and the two before
	Account      queries.VirtualAccountView
	Transactions queries.List[queries.TransactionView]
	Payments     queries.List[queries.PaymentView]
}

func (c *Console) account(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	d := accountData{Sandbox: s.env == domain.Sandbox}
	var err error
	if d.Account, err = queries.GetVirtualAccount(ctx, c.pool, s.scope(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	// Read your writes: the transactions are projected after the command.
	err = c.cfg.App.ReadList(ctx, app.ListRead{Projected: true}, func(db eventstore.DB) (err error) {
		d.Transactions, err = queries.ListTransactions(ctx, db, s.scope(), id, queries.TransactionFilter{}, queries.Page{Limit: pageSize})
		return err
	})
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	points, err := queries.PostedBalanceSeries(ctx, c.pool, s.scope(), id, chartPoints)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	now := time.Now()
	d.Chart = balanceChart(points, now)
	for i := range 3 {
		d.Months = append(d.Months, now.UTC().AddDate(0, -i, -now.UTC().Day()+1).Format("2006-01"))
	}
	if d.Payments, err = queries.ListPayments(ctx, c.pool, s.scope(), queries.PaymentFilter{VirtualAccountID: id}, queries.Page{Limit: 10}); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "account", view{Title: "Account " + d.Account.EntityRef, Session: s, Nav: "accounts", Data: d})
}

func (c *Console) freeze(w http.ResponseWriter, r *http.Request, s *session) {
	c.accountAction(w, r, s, "frozen", c.cfg.App.FreezeVirtualAccount)
}

func (c *Console) unfreeze(w http.ResponseWriter, r *http.Request, s *session) {
	c.accountAction(w, r, s, "unfrozen", c.cfg.App.UnfreezeVirtualAccount)
}

func (c *Console) accountAction(w http.ResponseWriter, r *http.Request, s *session, done string,
	act func(context.Context, app.Meta, app.Caller, string) error) {
	ctx := r.Context()
	id := r.PathValue("id")
	c.answer(w, r, s, act(ctx, meta(r, s), s.caller(), id), "/console/accounts/"+id, "Account "+done+".")
}

// simulateInbound credits a sandbox account, as POST
// /v1/simulations/inbound-transfers does.
func (c *Console) simulateInbound(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	amount, err := cents(r.PostFormValue("amount"))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	_, err = c.cfg.App.SimulateInboundTransfer(ctx, meta(r, s), idempotency(r, s, "simulate_inbound_transfer"), s.caller(),
		app.SimulateInboundTransfer{VirtualAccountID: id, Amount: amount, Rail: r.PostFormValue("rail"),
			Originator:  inbound.Originator{Name: strings.TrimSpace(r.PostFormValue("originator")), AccountNumber: "987654321", RoutingNumber: "021000021"},
			Description: "Simulated in the console"})
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, s, "/console/accounts/"+id, "Inbound transfer of "+money(amount)+" simulated.")
}

// statement downloads an account's monthly statement as CSV, the file GET
// /v1/virtual-accounts/:id/statements/:month?format=csv gives.
func (c *Console) statement(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	month, err := time.Parse("2006-01", strings.TrimSuffix(r.PathValue("month"), ".csv"))
	if err != nil {
		c.fail(w, r, s, http.StatusBadRequest, "A statement's month is YYYY-MM.")
		return
	}
	v, err := queries.Statement(ctx, c.pool, s.scope(), id, month)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	var buf bytes.Buffer
	if err := queries.WriteStatementCSV(&buf, v); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="statement-`+id+`-`+v.Month+`.csv"`)
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}
