package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// formLines is how many lines the journal entry form offers; a line left
// without an amount is not sent.
const formLines = 6

type ledgerData struct {
	Accounts queries.List[queries.LedgerAccountView]
	Entries  queries.List[queries.LedgerEntryView]
	Filter   queries.EntryFilter
	Types    []string // the manual entry types
	Lines    []int
}

// ledgerPage shows the ledger accounts with their balances, the entries
// (filtered as GET /v1/ledger/entries filters them) and the form for a
// manual journal entry.
func (c *Console) ledgerPage(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	q := r.URL.Query()
	d := ledgerData{Types: []string{ledger.TypeAdjustment, ledger.TypeFee, ledger.TypeCorrection},
		Filter: queries.EntryFilter{VirtualAccountID: strings.TrimSpace(q.Get("virtual_account_id")), Type: q.Get("type"),
			Direction: q.Get("direction"), Status: q.Get("status")}}
	for i := range formLines {
		d.Lines = append(d.Lines, i)
	}
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	// Read your writes, as the API's ledger reads (on the read replica, if any).
	err = c.cfg.App.ReadList(ctx, app.ListRead{Projected: true}, func(db eventstore.DB) (err error) {
		if d.Accounts, err = queries.ListLedgerAccounts(ctx, db, s.scope(), queries.Page{Limit: 100}); err != nil {
			return err
		}
		d.Entries, err = queries.ListLedgerEntries(ctx, db, s.scope(), d.Filter, p)
		return err
	})
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "ledger", view{Title: "Ledger", Session: s, Nav: "ledger", Data: d})
}

// postJournalEntry posts a manual journal entry from the form's lines, as
// POST /v1/ledger/entries with lines does: the ledger's rules decide
// (balanced, postable accounts, amounts); the browser's check is only a
// help.
func (c *Console) postJournalEntry(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	in := app.PostJournalEntry{Type: r.PostFormValue("type"), Description: strings.TrimSpace(r.PostFormValue("description"))}
	for i := range formLines {
		n := strconv.Itoa(i)
		if strings.TrimSpace(r.PostFormValue("amount_"+n)) == "" {
			continue
		}
		amount, err := cents(r.PostFormValue("amount_" + n))
		if err != nil {
			c.failWith(w, r, s, err)
			return
		}
		in.Lines = append(in.Lines, app.JournalLine{LedgerAccountID: r.PostFormValue("account_" + n),
			Direction: r.PostFormValue("direction_" + n), Amount: &amount})
	}
	if len(in.Lines) == 0 {
		c.fail(w, r, s, http.StatusBadRequest, "A journal entry needs at least two lines with an amount.")
		return
	}
	res, err := c.cfg.App.PostJournalEntry(ctx, meta(r, s), idempotency(r, s, "post_journal_entry"), s.caller(), in)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, s, "/console/ledger", "Journal entry "+res.ID+" posted.")
}
