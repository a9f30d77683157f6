package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// ---- helpers shared by the app tests ----------------------------------------

// env is an App over a fresh database.
type env struct {
	t    testing.TB
	ctx  context.Context
	pool *pgxpool.Pool
	a    *app.App
}

func newEnv(t testing.TB) *env {
	t.Helper()
	pool := pgtest.Pool(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, pool: pool, a: app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

// platform registers and approves a platform and returns its sandbox caller.
func (e *env) platform(name string) app.Caller {
	e.t.Helper()
	res, err := e.a.RegisterPlatform(e.ctx, app.Meta{}, nil, app.RegisterPlatform{Name: name, ContactEmail: "ops@example.com"})
	if err != nil {
		e.t.Fatalf("register platform: %v", err)
	}
	if _, err := e.a.ApprovePlatform(e.ctx, app.Meta{}, res.ID); err != nil {
		e.t.Fatalf("approve platform: %v", err)
	}
	return app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}
}

func (e *env) openVA(c app.Caller) string {
	e.t.Helper()
	res, err := e.a.OpenVirtualAccount(e.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: "biz_1", Type: "checking"})
	if err != nil {
		e.t.Fatalf("open virtual account: %v", err)
	}
	if !domain.HasPrefix(res.ID, domain.PrefixVirtualAccount) {
		e.t.Fatalf("virtual account id %q", res.ID)
	}
	return res.ID
}

var originator = inbound.Originator{Name: "Payer Inc", AccountNumber: "000123456789", RoutingNumber: "021000021"}

func (e *env) inbound(c app.Caller, va string, amount int64, rail string) (string, error) {
	res, err := e.a.SimulateInboundTransfer(e.ctx, app.Meta{}, nil, c, app.SimulateInboundTransfer{
		VirtualAccountID: va, Amount: amount, Rail: rail, Originator: originator})
	return res.ID, err
}

// fund credits a virtual account at once (RTP).
func (e *env) fund(c app.Caller, va string, amount int64) {
	e.t.Helper()
	if _, err := e.inbound(c, va, amount, "rtp"); err != nil {
		e.t.Fatalf("fund %s with %d: %v", va, amount, err)
	}
}

// balance reads a virtual account's balance row.
func (e *env) balance(va string) ledger.Balance {
	e.t.Helper()
	var b ledger.Balance
	if err := e.pool.QueryRow(e.ctx, `SELECT posted, pending_inbound, pending_outbound FROM account_balances
        WHERE virtual_account_id = $1`, va).Scan(&b.Posted, &b.PendingInbound, &b.PendingOutbound); err != nil {
		e.t.Fatalf("balance of %s: %v", va, err)
	}
	return b
}

func (e *env) wantBalance(va string, want ledger.Balance) {
	e.t.Helper()
	if got := e.balance(va); got != want {
		e.t.Fatalf("balance of %s = %+v, want %+v", va, got, want)
	}
}

// chart returns the platform's system ledger accounts by code.
func (e *env) chart(c app.Caller) map[string]string {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT code, id FROM ledger_accounts
        WHERE platform_id = $1 AND environment = $2 AND virtual_account_id IS NULL`, c.PlatformID, c.Environment.String())
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	m := map[string]string{}
	for rows.Next() {
		var code, id string
		if err := rows.Scan(&code, &id); err != nil {
			e.t.Fatal(err)
		}
		m[code] = id
	}
	if len(m) == 0 {
		e.t.Fatalf("platform %s has no chart", c.PlatformID)
	}
	return m
}

// ledgerAccount is a virtual account's ledger account id.
func (e *env) ledgerAccount(va string) string {
	e.t.Helper()
	var id string
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM ledger_accounts WHERE virtual_account_id = $1`, va).Scan(&id); err != nil {
		e.t.Fatalf("ledger account of %s: %v", va, err)
	}
	return id
}

func amt(n int64) *int64 { return &n }

// manual posts a shorthand manual entry.
func (e *env) manual(c app.Caller, typ, va, dir string, amount int64) (app.Result, error) {
	return e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{
		Type: typ, Description: typ + " " + dir, VirtualAccountID: va, Direction: dir, Amount: amt(amount)})
}

func (e *env) lines(c app.Caller, typ string, ls ...app.JournalLine) (app.Result, error) {
	return e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Type: typ, Description: "lines", Lines: ls})
}

func (e *env) reverse(c app.Caller, je string) (app.Result, error) {
	return e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Reverses: je})
}

func vaLine(va, dir string, n int64) app.JournalLine {
	return app.JournalLine{VirtualAccountID: va, Direction: dir, Amount: amt(n)}
}

func laLine(la, dir string, n int64) app.JournalLine {
	return app.JournalLine{LedgerAccountID: la, Direction: dir, Amount: amt(n)}
}

// journal reads a journal entry from the log.
func (e *env) journal(c app.Caller, id string) queries.JournalEntryView {
	e.t.Helper()
	v, err := queries.JournalEntryFromLog(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, id)
	if err != nil {
		e.t.Fatalf("journal entry %s: %v", id, err)
	}
	return v
}

// countEvents counts the events of a type in the log.
func (e *env) countEvents(eventType string) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM events WHERE event_type = $1`, eventType).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// sync brings the asynchronous projections up to the head of the log.
func (e *env) sync() {
	e.t.Helper()
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	if err := projections.CatchUp(ctx, e.pool, head, nil); err != nil {
		e.t.Fatalf("catch up projections: %v", err)
	}
}

func wantCode(t testing.TB, err error, code domain.Code) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	return de
}

type entryShape struct {
	la, va, dir string
	amount      int64
	typ         string
}

func shapes(v queries.JournalEntryView) map[string]entryShape {
	m := map[string]entryShape{}
	for _, le := range v.Entries {
		va := ""
		if le.VirtualAccountID != nil {
			va = *le.VirtualAccountID
		}
		m[le.LedgerAccountID] = entryShape{la: le.LedgerAccountID, va: va, dir: le.Direction, amount: le.Amount, typ: le.Type}
	}
	return m
}

func wantEntries(t testing.TB, v queries.JournalEntryView, want ...entryShape) {
	t.Helper()
	if len(v.Entries) != len(want) {
		t.Fatalf("journal entry %s has %d entries, want %d: %+v", v.ID, len(v.Entries), len(want), v.Entries)
	}
	got := shapes(v)
	for _, w := range want {
		if g, ok := got[w.la]; !ok || g != w {
			t.Errorf("journal entry %s: entry on %s = %+v, want %+v", v.ID, w.la, g, w)
		}
	}
	for _, le := range v.Entries {
		if !domain.HasPrefix(le.ID, domain.PrefixLedgerEntry) || le.Status != ledger.StatusPosted {
			t.Errorf("entry %+v", le)
		}
	}
}

// ---- shorthand form -----------------------------------------------------------

func TestShorthandFeeDebitsAccountAndCreditsPlatformFees(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	chart := e.chart(c)
	la := e.ledgerAccount(va)

	res, err := e.manual(c, ledger.TypeFee, va, "debit", 300)
	if err != nil {
		t.Fatal(err)
	}
	if !domain.HasPrefix(res.ID, domain.PrefixJournalEntry) || res.Replayed {
		t.Fatalf("result %+v", res)
	}
	e.wantBalance(va, ledger.Balance{Posted: 700})
	v := e.journal(c, res.ID)
	if v.Type != ledger.TypeFee || v.Status != ledger.StatusPosted || v.Description != "fee debit" || v.Reverses != nil {
		t.Errorf("journal entry %+v", v)
	}
	wantEntries(t, v,
		entryShape{la: la, va: va, dir: "debit", amount: 300, typ: ledger.TypeFee},
		entryShape{la: chart[ledger.CodePlatformFees], dir: "credit", amount: 300, typ: ledger.TypeFee})

	// A fee credit (a refund of a fee) goes the other way, still against platform_fees.
	res, err = e.manual(c, ledger.TypeFee, va, "credit", 50)
	if err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 750})
	wantEntries(t, e.journal(c, res.ID),
		entryShape{la: la, va: va, dir: "credit", amount: 50, typ: ledger.TypeFee},
		entryShape{la: chart[ledger.CodePlatformFees], dir: "debit", amount: 50, typ: ledger.TypeFee})

	// Beyond the available balance: refused, nothing written.
	before := e.countEvents("ledger.journal_entry.recorded")
	_, err = e.manual(c, ledger.TypeFee, va, "debit", 751)
	if de := wantCode(t, err, domain.CodeInsufficientFunds); de.ResourceID != va {
		t.Errorf("insufficient_funds names %q, want %s", de.ResourceID, va)
	}
	e.wantBalance(va, ledger.Balance{Posted: 750})
	if after := e.countEvents("ledger.journal_entry.recorded"); after != before {
		t.Errorf("a refused entry recorded %d events", after-before)
	}
	// The exact available balance is allowed.
	if _, err := e.manual(c, ledger.TypeFee, va, "debit", 750); err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{})

	// The projections agree once caught up.
	e.sync()
	var fees int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0)
        FROM ledger_entries WHERE ledger_account_id = $1 AND status = 'posted'`, chart[ledger.CodePlatformFees]).Scan(&fees); err != nil {
		t.Fatal(err)
	}
	if fees != 300-50+750 {
		t.Errorf("platform_fees posted balance %d, want %d", fees, 300-50+750)
	}
}

func TestShorthandAdjustmentAndCorrectionOffsetToPlatformOperating(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	la := e.ledgerAccount(va)

	// An adjustment may credit an empty account (the chart opens on first use).
	res, err := e.manual(c, ledger.TypeAdjustment, va, "credit", 500)
	if err != nil {
		t.Fatal(err)
	}
	chart := e.chart(c)
	for _, code := range []string{ledger.CodePlatformOperating, ledger.CodePlatformFees, ledger.CodeServiceFeeRevenue,
		ledger.RailClearing("ach_standard"), ledger.RailClearing("ach_same_day"), ledger.RailClearing("rtp"), ledger.RailClearing("fednow")} {
		if !domain.HasPrefix(chart[code], domain.PrefixLedgerAccount) {
			t.Errorf("chart lacks %s: %v", code, chart)
		}
	}
	wantEntries(t, e.journal(c, res.ID),
		entryShape{la: la, va: va, dir: "credit", amount: 500, typ: ledger.TypeAdjustment},
		entryShape{la: chart[ledger.CodePlatformOperating], dir: "debit", amount: 500, typ: ledger.TypeAdjustment})
	e.wantBalance(va, ledger.Balance{Posted: 500})

	res, err = e.manual(c, ledger.TypeAdjustment, va, "debit", 120)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, e.journal(c, res.ID),
		entryShape{la: la, va: va, dir: "debit", amount: 120, typ: ledger.TypeAdjustment},
		entryShape{la: chart[ledger.CodePlatformOperating], dir: "credit", amount: 120, typ: ledger.TypeAdjustment})

	res, err = e.manual(c, ledger.TypeCorrection, va, "debit", 80)
	if err != nil {
		t.Fatal(err)
	}
	wantEntries(t, e.journal(c, res.ID),
		entryShape{la: la, va: va, dir: "debit", amount: 80, typ: ledger.TypeCorrection},
		entryShape{la: chart[ledger.CodePlatformOperating], dir: "credit", amount: 80, typ: ledger.TypeCorrection})
	e.wantBalance(va, ledger.Balance{Posted: 300})

	_, err = e.manual(c, ledger.TypeCorrection, va, "debit", 301)
	wantCode(t, err, domain.CodeInsufficientFunds)

	// One chart per platform and environment, however many entries.
	if n := e.countEvents("ledger.chart_opened"); n != 1 {
		t.Errorf("%d charts opened, want 1", n)
	}
}

func TestPostJournalEntryValidation(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	cases := []struct {
		name  string
		in    app.PostJournalEntry
		code  domain.Code
		param string
	}{
		{"type payment", app.PostJournalEntry{Type: "payment", Description: "x", VirtualAccountID: va, Direction: "debit", Amount: amt(1)}, domain.CodeInvalidRequest, "type"},
		{"type missing", app.PostJournalEntry{Description: "x", VirtualAccountID: va, Direction: "debit", Amount: amt(1)}, domain.CodeInvalidRequest, "type"},
		{"no description", app.PostJournalEntry{Type: "fee", VirtualAccountID: va, Direction: "debit", Amount: amt(1)}, domain.CodeInvalidRequest, "description"},
		{"description too long", app.PostJournalEntry{Type: "fee", Description: strings.Repeat("d", app.MaxDescriptionLen+1), VirtualAccountID: va, Direction: "debit", Amount: amt(1)}, domain.CodeInvalidRequest, "description"},
		{"no form", app.PostJournalEntry{Type: "fee", Description: "x"}, domain.CodeInvalidRequest, "lines"},
		{"two forms", app.PostJournalEntry{Type: "fee", Description: "x", VirtualAccountID: va, Direction: "debit", Amount: amt(1),
			Lines: []app.JournalLine{vaLine(va, "debit", 1), vaLine(va, "credit", 1)}}, domain.CodeInvalidRequest, "lines"},
		{"bad direction", app.PostJournalEntry{Type: "fee", Description: "x", VirtualAccountID: va, Direction: "up", Amount: amt(1)}, domain.CodeInvalidRequest, "direction"},
		{"zero amount", app.PostJournalEntry{Type: "fee", Description: "x", VirtualAccountID: va, Direction: "debit", Amount: amt(0)}, domain.CodeInvalidRequest, "amount"},
		{"no amount", app.PostJournalEntry{Type: "fee", Description: "x", VirtualAccountID: va, Direction: "debit"}, domain.CodeInvalidRequest, "amount"},
		{"not a va id", app.PostJournalEntry{Type: "fee", Description: "x", VirtualAccountID: "acct_1", Direction: "debit", Amount: amt(1)}, domain.CodeInvalidRequest, "virtual_account_id"},
		{"unknown va", app.PostJournalEntry{Type: "fee", Description: "x", VirtualAccountID: domain.NewID("va_"), Direction: "credit", Amount: amt(1)}, domain.CodeNotFound, ""},
		{"line with both ids", app.PostJournalEntry{Type: "fee", Description: "x", Lines: []app.JournalLine{
			{VirtualAccountID: va, LedgerAccountID: e.ledgerAccount(va), Direction: "debit", Amount: amt(1)}, vaLine(va, "credit", 1)}}, domain.CodeInvalidRequest, "lines[0]"},
		{"line with neither id", app.PostJournalEntry{Type: "fee", Description: "x", Lines: []app.JournalLine{
			vaLine(va, "debit", 1), {Direction: "credit", Amount: amt(1)}}}, domain.CodeInvalidRequest, "lines[1]"},
		{"line amount", app.PostJournalEntry{Type: "fee", Description: "x", Lines: []app.JournalLine{
			vaLine(va, "debit", 1), vaLine(va, "credit", -1)}}, domain.CodeInvalidRequest, "lines[1].amount"},
		{"one line", app.PostJournalEntry{Type: "fee", Description: "x", Lines: []app.JournalLine{vaLine(va, "debit", 1)}}, domain.CodeInvalidRequest, "lines"},
		{"reverses not a je id", app.PostJournalEntry{Reverses: "pay_1"}, domain.CodeNotFound, ""},
		{"reverses unknown je", app.PostJournalEntry{Reverses: domain.NewID("je_")}, domain.CodeNotFound, ""},
	}
	before := e.countEvents("ledger.journal_entry.recorded")
	for _, c2 := range cases {
		t.Run(c2.name, func(t *testing.T) {
			_, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, c2.in)
			de := wantCode(t, err, c2.code)
			if c2.param != "" && de.Param != c2.param {
				t.Errorf("param %q, want %q", de.Param, c2.param)
			}
		})
	}
	if after := e.countEvents("ledger.journal_entry.recorded"); after != before {
		t.Errorf("refused requests recorded %d journal entries", after-before)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})
}

// ---- lines form ---------------------------------------------------------------

func TestLinesForm(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	a, b := e.openVA(c), e.openVA(c)
	e.fund(c, a, 1000)
	chart := e.chart(c)
	laA, laB := e.ledgerAccount(a), e.ledgerAccount(b)

	t.Run("balanced transfer between two accounts", func(t *testing.T) {
		res, err := e.lines(c, ledger.TypeAdjustment, vaLine(a, "debit", 400), vaLine(b, "credit", 400))
		if err != nil {
			t.Fatal(err)
		}
		e.wantBalance(a, ledger.Balance{Posted: 600})
		e.wantBalance(b, ledger.Balance{Posted: 400})
		// Lines named by virtual account carry their ledger account.
		wantEntries(t, e.journal(c, res.ID),
			entryShape{la: laA, va: a, dir: "debit", amount: 400, typ: ledger.TypeAdjustment},
			entryShape{la: laB, va: b, dir: "credit", amount: 400, typ: ledger.TypeAdjustment})
	})

	t.Run("several lines with system accounts", func(t *testing.T) {
		res, err := e.lines(c, ledger.TypeFee,
			vaLine(a, "debit", 100), laLine(chart[ledger.CodePlatformFees], "credit", 70),
			laLine(chart[ledger.CodePlatformOperating], "credit", 30))
		if err != nil {
			t.Fatal(err)
		}
		e.wantBalance(a, ledger.Balance{Posted: 500})
		if n := len(e.journal(c, res.ID).Entries); n != 3 {
			t.Errorf("%d entries, want 3", n)
		}
		// Only system accounts: no virtual account is touched.
		if _, err := e.lines(c, ledger.TypeAdjustment, laLine(chart[ledger.CodePlatformOperating], "debit", 5),
			laLine(chart[ledger.CodePlatformFees], "credit", 5)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("unbalanced", func(t *testing.T) {
		before := e.countEvents("ledger.journal_entry.recorded")
		_, err := e.lines(c, ledger.TypeAdjustment, vaLine(a, "debit", 100), vaLine(b, "credit", 99))
		if de := wantCode(t, err, domain.CodeUnbalancedEntry); de.Param != "lines" {
			t.Errorf("param %q", de.Param)
		}
		_, err = e.lines(c, ledger.TypeAdjustment, vaLine(a, "credit", 100), vaLine(b, "credit", 100))
		wantCode(t, err, domain.CodeUnbalancedEntry)
		if after := e.countEvents("ledger.journal_entry.recorded"); after != before {
			t.Errorf("unbalanced entries recorded %d events", after-before)
		}
		e.wantBalance(a, ledger.Balance{Posted: 500})
		e.wantBalance(b, ledger.Balance{Posted: 400})
	})

	t.Run("transfer beyond available", func(t *testing.T) {
		_, err := e.lines(c, ledger.TypeAdjustment, vaLine(b, "debit", 401), vaLine(a, "credit", 401))
		if de := wantCode(t, err, domain.CodeInsufficientFunds); de.ResourceID != b {
			t.Errorf("refused %q, want %s", de.ResourceID, b)
		}
	})

	t.Run("net effect on one account", func(t *testing.T) {
		// b has 400: a debit of 600 with a credit of 200 to the same account nets to −400.
		if _, err := e.lines(c, ledger.TypeAdjustment, vaLine(b, "debit", 600), vaLine(b, "credit", 200),
			laLine(chart[ledger.CodePlatformOperating], "credit", 400)); err != nil {
			t.Fatalf("a debit covered by a credit in the same entry was refused: %v", err)
		}
		e.wantBalance(b, ledger.Balance{})
		_, err := e.lines(c, ledger.TypeAdjustment, vaLine(b, "debit", 201), vaLine(b, "credit", 200),
			laLine(chart[ledger.CodePlatformOperating], "credit", 1))
		wantCode(t, err, domain.CodeInsufficientFunds)
	})
}

// A line naming a virtual account's ledger account (la_) is the virtual
// account: funds-checked, closed-checked, and its balance row moves.
func TestLineNamingVirtualAccountLedgerAccount(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	chart := e.chart(c)
	la := e.ledgerAccount(va)

	_, err := e.lines(c, ledger.TypeFee, laLine(la, "debit", 1001), laLine(chart[ledger.CodePlatformFees], "credit", 1001))
	if de := wantCode(t, err, domain.CodeInsufficientFunds); de.ResourceID != va {
		t.Errorf("refused %q, want %s", de.ResourceID, va)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})

	res, err := e.lines(c, ledger.TypeFee, laLine(la, "debit", 250), laLine(chart[ledger.CodePlatformFees], "credit", 250))
	if err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 750})
	wantEntries(t, e.journal(c, res.ID),
		entryShape{la: la, va: va, dir: "debit", amount: 250, typ: ledger.TypeFee},
		entryShape{la: chart[ledger.CodePlatformFees], dir: "credit", amount: 250, typ: ledger.TypeFee})

	// Mixed: once by va_ id, once by la_ id, on the same account: they add up.
	_, err = e.lines(c, ledger.TypeFee, laLine(la, "debit", 400), vaLine(va, "debit", 400),
		laLine(chart[ledger.CodePlatformFees], "credit", 800))
	wantCode(t, err, domain.CodeInsufficientFunds)
	if _, err := e.lines(c, ledger.TypeFee, laLine(la, "debit", 375), vaLine(va, "debit", 375),
		laLine(chart[ledger.CodePlatformFees], "credit", 750)); err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{})

	e.sync()
	var entries int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0)
        FROM ledger_entries WHERE ledger_account_id = $1 AND virtual_account_id = $2 AND status = 'posted'`, la, va).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != 0 {
		t.Errorf("entries of %s sum to %d, balance row says 0", va, entries)
	}
}

// Another platform's (or environment's) accounts and entries do not exist.
func TestOtherPlatformIsNotFound(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	other := e.platform("Other")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	theirs := e.openVA(other)
	e.fund(other, theirs, 1000)
	theirChart := e.chart(other)
	theirLA := e.ledgerAccount(theirs)
	myChart := e.chart(c)
	theirEntry, err := e.manual(other, ledger.TypeFee, theirs, "debit", 10)
	if err != nil {
		t.Fatal(err)
	}
	live := app.Caller{PlatformID: c.PlatformID, Environment: domain.Live}

	cases := []struct {
		name string
		do   func() error
	}{
		{"shorthand on their account", func() error { _, err := e.manual(c, ledger.TypeFee, theirs, "debit", 1); return err }},
		{"shorthand credit on their account", func() error {
			_, err := e.manual(c, ledger.TypeAdjustment, theirs, "credit", 1)
			return err
		}},
		{"line naming their virtual account", func() error {
			_, err := e.lines(c, ledger.TypeAdjustment, vaLine(va, "debit", 1), vaLine(theirs, "credit", 1))
			return err
		}},
		{"line naming their virtual account's ledger account", func() error {
			_, err := e.lines(c, ledger.TypeAdjustment, vaLine(va, "debit", 1), laLine(theirLA, "credit", 1))
			return err
		}},
		{"line naming their platform_fees", func() error {
			_, err := e.lines(c, ledger.TypeAdjustment, vaLine(va, "debit", 1), laLine(theirChart[ledger.CodePlatformFees], "credit", 1))
			return err
		}},
		{"line naming an unknown ledger account", func() error {
			_, err := e.lines(c, ledger.TypeAdjustment, vaLine(va, "debit", 1), laLine(domain.NewID("la_"), "credit", 1))
			return err
		}},
		{"reversing their entry", func() error { _, err := e.reverse(c, theirEntry.ID); return err }},
		{"my account from the live environment", func() error {
			_, err := e.manual(live, ledger.TypeAdjustment, va, "credit", 1)
			return err
		}},
		{"my sandbox ledger account from the live environment", func() error {
			_, err := e.lines(live, ledger.TypeAdjustment, laLine(myChart[ledger.CodePlatformOperating], "debit", 1),
				laLine(myChart[ledger.CodePlatformFees], "credit", 1))
			return err
		}},
		{"freezing their account", func() error { return e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, theirs) }},
		{"closing their account", func() error { return e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, theirs) }},
		{"funding their account", func() error { _, err := e.inbound(c, theirs, 1, "rtp"); return err }},
		{"opening an account on their platform", func() error {
			_, err := e.a.OpenVirtualAccount(e.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: other.PlatformID, EntityRef: "x", Type: "checking"})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { wantCode(t, tc.do(), domain.CodeNotFound) })
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})
	e.wantBalance(theirs, ledger.Balance{Posted: 990})
	var status string
	if err := e.pool.QueryRow(e.ctx, `SELECT status FROM virtual_accounts WHERE id = $1`, theirs).Scan(&status); err != nil || status != "active" {
		t.Errorf("their account: status %q, %v", status, err)
	}
}

// ---- account states -------------------------------------------------------------

func TestClosedAccountIsNotActive(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	funded := e.openVA(c)
	e.fund(c, funded, 500)
	la := e.ledgerAccount(va)
	if err := e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va); err != nil {
		t.Fatal(err)
	}
	chart := e.chart(c)
	cases := []struct {
		name string
		do   func() error
	}{
		{"shorthand credit", func() error { _, err := e.manual(c, ledger.TypeAdjustment, va, "credit", 1); return err }},
		{"shorthand debit", func() error { _, err := e.manual(c, ledger.TypeFee, va, "debit", 1); return err }},
		{"line by virtual account", func() error {
			_, err := e.lines(c, ledger.TypeAdjustment, vaLine(funded, "debit", 1), vaLine(va, "credit", 1))
			return err
		}},
		{"line by ledger account", func() error {
			_, err := e.lines(c, ledger.TypeAdjustment, laLine(chart[ledger.CodePlatformOperating], "debit", 1), laLine(la, "credit", 1))
			return err
		}},
		{"inbound transfer", func() error { _, err := e.inbound(c, va, 1, "rtp"); return err }},
		{"inbound ACH", func() error { _, err := e.inbound(c, va, 1, "ach_same_day"); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if de := wantCode(t, tc.do(), domain.CodeAccountNotActive); de.ResourceID != va {
				t.Errorf("resource_id %q, want %s", de.ResourceID, va)
			}
		})
	}
	e.wantBalance(va, ledger.Balance{})
	e.wantBalance(funded, ledger.Balance{Posted: 500})
}

// Manual entries may touch frozen accounts (README: corrections are how
// frozen accounts get fixed).
func TestFrozenAccountTakesManualEntries(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 100)
	if err := e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, va); err != nil {
		t.Fatal(err)
	}
	if _, err := e.manual(c, ledger.TypeCorrection, va, "debit", 40); err != nil {
		t.Fatalf("correction on a frozen account: %v", err)
	}
	_, err := e.manual(c, ledger.TypeCorrection, va, "debit", 61)
	wantCode(t, err, domain.CodeInsufficientFunds)
	e.wantBalance(va, ledger.Balance{Posted: 60})
}

func TestVirtualAccountLifecycle(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	status := func() string {
		var s string
		if err := e.pool.QueryRow(e.ctx, `SELECT status FROM virtual_accounts WHERE id = $1`, va).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	wantCode(t, e.a.UnfreezeVirtualAccount(e.ctx, app.Meta{}, c, va), domain.CodeInvalidState)
	if err := e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, va); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != "frozen" {
		t.Fatalf("status %s after freeze", s)
	}
	wantCode(t, e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, va), domain.CodeInvalidState)
	wantCode(t, e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va), domain.CodeInvalidState)
	if err := e.a.UnfreezeVirtualAccount(e.ctx, app.Meta{}, c, va); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != "active" {
		t.Fatalf("status %s after unfreeze", s)
	}

	// Not at zero: posted, then pending inbound.
	e.fund(c, va, 10)
	wantCode(t, e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va), domain.CodeInvalidState)
	if _, err := e.manual(c, ledger.TypeFee, va, "debit", 10); err != nil {
		t.Fatal(err)
	}
	itx, err := e.inbound(c, va, 20, "ach_same_day") // pending: the default sandbox delay is 5 s
	if err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{PendingInbound: 20})
	wantCode(t, e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va), domain.CodeInvalidState)
	if err := e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, itx); err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 20})
	if _, err := e.manual(c, ledger.TypeFee, va, "debit", 20); err != nil {
		t.Fatal(err)
	}
	if err := e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va); err != nil {
		t.Fatalf("close at zero: %v", err)
	}
	if s := status(); s != "closed" {
		t.Fatalf("status %s after close", s)
	}
	for name, err := range map[string]error{
		"close":    e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va),
		"freeze":   e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, va),
		"unfreeze": e.a.UnfreezeVirtualAccount(e.ctx, app.Meta{}, c, va),
	} {
		if domain.CodeOf(err) != domain.CodeInvalidState {
			t.Errorf("%s a closed account: %v, want invalid_state", name, err)
		}
	}
	wantCode(t, e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, domain.NewID("va_")), domain.CodeNotFound)

	// Open validation reaches the caller as invalid_request.
	_, err = e.a.OpenVirtualAccount(e.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: strings.Repeat("x", 129), Type: "checking"})
	if de := wantCode(t, err, domain.CodeInvalidRequest); de.Param != "entity_ref" {
		t.Errorf("param %q", de.Param)
	}
}

// ---- reversals --------------------------------------------------------------------

func TestReversePostsMirrorImageOnce(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	chart := e.chart(c)
	la := e.ledgerAccount(va)

	fee, err := e.manual(c, ledger.TypeFee, va, "debit", 300)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := e.reverse(c, fee.ID)
	if err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})
	v := e.journal(c, rev.ID)
	if v.Reverses == nil || *v.Reverses != fee.ID || v.Type != ledger.TypeCorrection || v.Description != "Reversal of "+fee.ID {
		t.Errorf("reversal %+v", v)
	}
	wantEntries(t, v,
		entryShape{la: la, va: va, dir: "credit", amount: 300, typ: ledger.TypeCorrection},
		entryShape{la: chart[ledger.CodePlatformFees], dir: "debit", amount: 300, typ: ledger.TypeCorrection})
	orig := e.journal(c, fee.ID)
	if orig.ReversedBy == nil || *orig.ReversedBy != rev.ID {
		t.Errorf("original entry: reversed_by %v, want %s", orig.ReversedBy, rev.ID)
	}
	for i, le := range v.Entries {
		for _, o := range orig.Entries {
			if le.ID == o.ID {
				t.Errorf("reversal entry %d reuses ledger entry id %s", i, le.ID)
			}
		}
	}

	// A second reversal: invalid_state naming the first.
	_, err = e.reverse(c, fee.ID)
	if de := wantCode(t, err, domain.CodeInvalidState); de.ResourceID != rev.ID {
		t.Errorf("resource_id %q, want %s", de.ResourceID, rev.ID)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})

	// With a type and description of its own.
	adj, err := e.manual(c, ledger.TypeAdjustment, va, "credit", 200)
	if err != nil {
		t.Fatal(err)
	}
	rev2, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Type: ledger.TypeAdjustment, Description: "oops", Reverses: adj.ID})
	if err != nil {
		t.Fatal(err)
	}
	if v := e.journal(c, rev2.ID); v.Type != ledger.TypeAdjustment || v.Description != "oops" {
		t.Errorf("reversal with type and description: %+v", v)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})

	// Reversing a credit the account has since spent is funds-checked.
	adj2, err := e.manual(c, ledger.TypeAdjustment, va, "credit", 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.manual(c, ledger.TypeFee, va, "debit", 1200); err != nil {
		t.Fatal(err)
	}
	_, err = e.reverse(c, adj2.ID)
	wantCode(t, err, domain.CodeInsufficientFunds)
	e.wantBalance(va, ledger.Balance{Posted: 300})
	if v := e.journal(c, adj2.ID); v.ReversedBy != nil {
		t.Errorf("a refused reversal marked the entry reversed by %s", *v.ReversedBy)
	}

	// A pending entry cannot be reversed.
	itx, err := e.inbound(c, va, 700, "ach_same_day")
	if err != nil {
		t.Fatal(err)
	}
	it, err := queries.GetInboundTransfer(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, itx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.reverse(c, it.JournalEntryID)
	wantCode(t, err, domain.CodeInvalidState)

	// Reversals show in the projections: the reversed entry knows its reversal.
	e.sync()
	var reversedBy, reverses *string
	if err := e.pool.QueryRow(e.ctx, `SELECT reversed_by FROM journal_entries WHERE id = $1`, fee.ID).Scan(&reversedBy); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.QueryRow(e.ctx, `SELECT reverses FROM journal_entries WHERE id = $1`, rev.ID).Scan(&reverses); err != nil {
		t.Fatal(err)
	}
	if reversedBy == nil || *reversedBy != rev.ID || reverses == nil || *reverses != fee.ID {
		t.Errorf("journal_entries: reversed_by %v, reverses %v", reversedBy, reverses)
	}
}

// Two concurrent reversals of one entry: exactly one wins.
func TestConcurrentReversalsOnlyOneWins(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	fee, err := e.manual(c, ledger.TypeFee, va, "debit", 100)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.reverse(c, fee.ID)
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case domain.CodeOf(err) != domain.CodeInvalidState:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Errorf("%d reversals succeeded, want 1", wins)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1000})
}

// ---- idempotency ---------------------------------------------------------------

func TestPostJournalEntryIdempotency(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	e.fund(c, va, 1000)
	idem := func(key, hash string) *app.Idempotency {
		return &app.Idempotency{Scope: c.PlatformID, Environment: c.Environment.String(), Key: key, Operation: "post_journal_entry", RequestHash: hash}
	}
	in := app.PostJournalEntry{Type: ledger.TypeFee, Description: "monthly", VirtualAccountID: va, Direction: "debit", Amount: amt(100)}

	first, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, idem("k1", "h1"), c, in)
	if err != nil || first.Replayed {
		t.Fatalf("first: %+v, %v", first, err)
	}
	again, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, idem("k1", "h1"), c, in)
	if err != nil || !again.Replayed || again.ID != first.ID {
		t.Fatalf("replay: %+v, %v; want %s replayed", again, err, first.ID)
	}
	e.wantBalance(va, ledger.Balance{Posted: 900})

	_, err = e.a.PostJournalEntry(e.ctx, app.Meta{}, idem("k1", "h2"), c, in)
	if de := wantCode(t, err, domain.CodeIdempotencyConflict); de.ResourceID != first.ID {
		t.Errorf("conflict names %q, want %s", de.ResourceID, first.ID)
	}
	e.wantBalance(va, ledger.Balance{Posted: 900})

	// A failed request stores nothing: the key can be used again once it is fixed.
	big := in
	big.Amount = amt(5000)
	_, err = e.a.PostJournalEntry(e.ctx, app.Meta{}, idem("k2", "h-big"), c, big)
	wantCode(t, err, domain.CodeInsufficientFunds)
	fixed, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, idem("k2", "h-fixed"), c, in)
	if err != nil || fixed.Replayed || fixed.ID == first.ID {
		t.Fatalf("after a failure the key is free: %+v, %v", fixed, err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 800})

	// Keys are scoped by platform and environment.
	other := e.platform("Other")
	ova := e.openVA(other)
	e.fund(other, ova, 100)
	oin := in
	oin.VirtualAccountID = ova
	oidem := &app.Idempotency{Scope: other.PlatformID, Environment: "sandbox", Key: "k1", Operation: "post_journal_entry", RequestHash: "h1"}
	ores, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, oidem, other, oin)
	if err != nil || ores.Replayed || ores.ID == first.ID {
		t.Fatalf("another platform's same key: %+v, %v", ores, err)
	}

	// Concurrent duplicates: one entry, one debit, every caller gets its id
	// (or, at worst, in-progress; never a second entry).
	const n = 16
	results := make([]app.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.a.PostJournalEntry(e.ctx, app.Meta{}, idem("k3", "h1"), c, in)
		}()
	}
	wg.Wait()
	ids := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			if domain.CodeOf(errs[i]) != domain.CodeIdempotencyInProgress {
				t.Errorf("duplicate %d: %v", i, errs[i])
			}
			continue
		}
		ids[results[i].ID] = true
	}
	if len(ids) != 1 {
		t.Errorf("concurrent duplicates created %d entries: %v", len(ids), ids)
	}
	e.wantBalance(va, ledger.Balance{Posted: 700})
	var keys int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM idempotency_keys WHERE scope = $1 AND key = 'k3'`, c.PlatformID).Scan(&keys); err != nil || keys != 1 {
		t.Errorf("idempotency rows for k3: %d, %v", keys, err)
	}
}

// ---- inbound transfers -------------------------------------------------------------

func TestInboundTransfers(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	scope := queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}

	rtp, err := e.inbound(c, va, 1500, "rtp")
	if err != nil {
		t.Fatal(err)
	}
	it, err := queries.GetInboundTransfer(e.ctx, e.pool, scope, rtp)
	if err != nil || it.Status != inbound.StatusCompleted || it.CompletedAt == nil {
		t.Fatalf("rtp transfer %+v, %v", it, err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1500})
	if v := e.journal(c, it.JournalEntryID); v.Status != ledger.StatusPosted || v.Type != ledger.TypeInboundTransfer {
		t.Errorf("rtp journal entry %+v", v)
	}

	ach, err := e.inbound(c, va, 700, "ach_standard")
	if err != nil {
		t.Fatal(err)
	}
	it, err = queries.GetInboundTransfer(e.ctx, e.pool, scope, ach)
	if err != nil || it.Status != inbound.StatusPending || it.CompletedAt != nil {
		t.Fatalf("ach transfer %+v, %v", it, err)
	}
	// Pending inbound funds are not available.
	e.wantBalance(va, ledger.Balance{Posted: 1500, PendingInbound: 700})
	_, err = e.manual(c, ledger.TypeFee, va, "debit", 1501)
	wantCode(t, err, domain.CodeInsufficientFunds)

	full := e.chart(c)
	je := e.journal(c, it.JournalEntryID)
	if je.Status != ledger.StatusPending {
		t.Errorf("ach journal entry status %s", je.Status)
	}
	for _, le := range je.Entries {
		if le.VirtualAccountID == nil && le.LedgerAccountID != full[ledger.RailClearing("ach_standard")] {
			t.Errorf("ach offset on %s, want rail_clearing_ach_standard", le.LedgerAccountID)
		}
	}

	if err := e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, ach); err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 2200})
	// Completing again changes nothing.
	n := e.countEvents("ledger.journal_entry.posted")
	if err := e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, ach); err != nil {
		t.Fatal(err)
	}
	if e.countEvents("ledger.journal_entry.posted") != n {
		t.Errorf("completing twice posted twice")
	}
	e.wantBalance(va, ledger.Balance{Posted: 2200})
	if v := e.journal(c, it.JournalEntryID); v.Status != ledger.StatusPosted {
		t.Errorf("journal entry %s after completion", v.Status)
	}
	wantCode(t, e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, domain.NewID("itx_")), domain.CodeNotFound)

	for _, bad := range []app.SimulateInboundTransfer{
		{VirtualAccountID: va, Amount: 0, Rail: "rtp", Originator: originator},
		{VirtualAccountID: va, Amount: 1, Rail: "swift", Originator: originator},
		{VirtualAccountID: va, Amount: 1_000_000_01, Rail: "ach_same_day", Originator: originator},
		{VirtualAccountID: va, Amount: 1, Rail: "rtp", Originator: inbound.Originator{Name: "x", AccountNumber: "1", RoutingNumber: "021000021"}},
	} {
		if _, err := e.a.SimulateInboundTransfer(e.ctx, app.Meta{}, nil, c, bad); err == nil {
			t.Errorf("accepted %+v", bad)
		}
	}
	e.wantBalance(va, ledger.Balance{Posted: 2200})
}
