package app_test

import (
	"testing"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
)

// TestPaymentEntriesCannotBeReversedByHand: a payment's journal entry is
// undone only by the payment's own lifecycle. Reversing it by hand and
// then returning the payment credited the account twice.
func TestPaymentEntriesCannotBeReversedByHand(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 100_000)
	res, err := payCreate(e, c, payRequest(va, 1_000, "ach_same_day"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.CompletePayment(e.ctx, app.Meta{}, nil, res.ID); err != nil {
		t.Fatal(err)
	}
	var je string
	if err := e.pool.QueryRow(e.ctx, `SELECT journal_entry_id FROM payments WHERE id = $1`, res.ID).Scan(&je); err != nil {
		t.Fatal(err)
	}
	_, err = e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Reverses: je})
	if domain.CodeOf(err) != domain.CodeInvalidState {
		t.Fatalf("manual reversal of a payment entry: %v, want invalid_state", err)
	}
	if err := e.a.FailPayment(e.ctx, app.Meta{}, &c, res.ID, "R02"); err != nil {
		t.Fatalf("return: %v", err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 100_000})
	if err := e.a.FailPayment(e.ctx, app.Meta{}, &c, res.ID, "R03"); err != nil {
		t.Fatalf("a second return is a no-op, got %v", err)
	}
	e.wantBalance(va, ledger.Balance{Posted: 100_000})
	payCheckLedger(e)
}

// TestSandboxSettleLeavesSettledPaymentsAlone: the sandbox rail's verdict
// on a payment that was completed by hand meanwhile changes nothing (it
// used to return it, crediting the account back).
func TestSandboxSettleLeavesSettledPaymentsAlone(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 100_000)
	req := payRequest(va, 1_000, "ach_same_day")
	req.Destination.AccountNumber = "4000000002" // the sandbox rail would fail it
	res, err := payCreate(e, c, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.CompletePayment(e.ctx, app.Meta{}, &c, res.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.a.SettleSandboxPayment(e.ctx, app.Meta{}, res.ID); err != nil {
		t.Fatal(err)
	}
	if got := payStatus(e, res.ID); got != "completed" {
		t.Fatalf("status %s after a late sandbox verdict, want completed", got)
	}
	e.wantBalance(va, ledger.Balance{Posted: 100_000 - 1_000 - 100})
}

// TestReturnToClosedAccountGoesToPlatformOperating: a closed account
// rejects inbound funds, so a returned payment credits the platform.
func TestReturnToClosedAccountGoesToPlatformOperating(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 1_100)
	res, err := payCreate(e, c, payRequest(va, 1_000, "ach_same_day"))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.a.CompletePayment(e.ctx, app.Meta{}, nil, res.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, va); err != nil {
		t.Fatal(err)
	}
	if err := e.a.FailPayment(e.ctx, app.Meta{}, &c, res.ID, "R02"); err != nil {
		t.Fatal(err)
	}
	e.wantBalance(va, ledger.Balance{})
	payCheckLedger(e)
	var operating int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount ELSE -l.amount END), 0)
        FROM ledger_entries l WHERE l.ledger_account_id = $1 AND l.status = 'posted'`, e.chart(c)[ledger.CodePlatformOperating]).Scan(&operating); err != nil {
		t.Fatal(err)
	}
	if operating != 1_100 {
		t.Fatalf("platform_operating holds %d, want the returned 1100", operating)
	}
}

// TestSimulatedFailureNeedsTheRailsCode: a code of the other network, or
// none known, is a 400 naming network_code.
func TestSimulatedFailureNeedsTheRailsCode(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 100_000)
	res, err := payCreate(e, c, payRequest(va, 1_000, "rtp"))
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{"R02", "ZZZZ"} {
		err := e.a.FailPayment(e.ctx, app.Meta{}, &c, res.ID, code)
		var de *domain.Error
		if domain.CodeOf(err) != domain.CodeInvalidRequest || !asErr(err, &de) || de.Param != "network_code" {
			t.Fatalf("%s on rtp: %v, want invalid_request on network_code", code, err)
		}
	}
}

// TestManualLinesStayOffServiceAccounts: the lines form may not post to
// the service's clearing and fee revenue accounts.
func TestManualLinesStayOffServiceAccounts(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 10_000)
	chart := e.chart(c)
	for _, code := range []string{ledger.CodeServiceFeeRevenue, ledger.RailClearing("rtp")} {
		one := int64p(100)
		_, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Type: ledger.TypeAdjustment, Description: "x",
			Lines: []app.JournalLine{{LedgerAccountID: chart[code], Direction: "debit", Amount: one}, {VirtualAccountID: va, Direction: "credit", Amount: one}}})
		var de *domain.Error
		if !asErr(err, &de) || de.Param != "lines[0].ledger_account_id" {
			t.Fatalf("lines on %s: %v, want invalid_request on lines[0].ledger_account_id", code, err)
		}
	}
}

func int64p(v int64) *int64 { return &v }

func asErr(err error, target **domain.Error) bool {
	de, ok := err.(*domain.Error)
	if ok {
		*target = de
	}
	return ok
}
