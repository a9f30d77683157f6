package booktransfer_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/domain/ledger"
)

// ---- Decide: given the two accounts / when transferring / then events or the first rule broken --

const (
	fromID = "va_01jx00000000000000000000aa"
	toID   = "va_01jx00000000000000000000bb"
)

var at = time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)

// inputs is a transfer every rule accepts: $25.00 out of an active,
// approved account holding $100.00 into an active one; mod changes what a
// case is about.
func inputs(mod func(*booktransfer.Inputs)) booktransfer.Inputs {
	n := 0
	in := booktransfer.Inputs{
		Request:    booktransfer.Request{FromVirtualAccountID: fromID, ToVirtualAccountID: toID, Amount: 2500},
		PlatformID: "plt_x", Environment: domain.Sandbox, IdempotencyKey: "k1",
		From: booktransfer.Party{ID: fromID, Status: "active", LedgerAccountID: "la_from", Balance: ledger.Balance{Posted: 10000}, KYBStatus: "approved"},
		To:   booktransfer.Party{ID: toID, Status: "active", LedgerAccountID: "la_to", KYBStatus: "not_started"},
		Now:  at,
		IDs: booktransfer.NewIDs{BookTransfer: "bt_1", JournalEntry: "je_1",
			LedgerEntry: func() string { n++; return fmt.Sprintf("le_%d", n) }},
	}
	if mod != nil {
		mod(&in)
	}
	return in
}

func TestDecideRefusals(t *testing.T) {
	for _, tc := range []struct {
		given      string
		mod        func(*booktransfer.Inputs)
		code       domain.Code
		param, res string
	}{
		{"the same account twice", func(in *booktransfer.Inputs) { in.Request.ToVirtualAccountID = fromID }, domain.CodeInvalidRequest, "to_virtual_account_id", ""},
		{"no amount", func(in *booktransfer.Inputs) { in.Request.Amount = 0 }, domain.CodeInvalidRequest, "amount", ""},
		{"an amount past the ledger's bound", func(in *booktransfer.Inputs) { in.Request.Amount = ledger.MaxAmount + 1 }, domain.CodeInvalidRequest, "amount", ""},
		{"a sender id of another kind", func(in *booktransfer.Inputs) { in.Request.FromVirtualAccountID = "pay_1" }, domain.CodeInvalidRequest, "from_virtual_account_id", ""},
		{"bad metadata", func(in *booktransfer.Inputs) { in.Request.Metadata = map[string]string{"": "x"} }, domain.CodeInvalidRequest, "metadata", ""},
		{"a frozen sender", func(in *booktransfer.Inputs) { in.From.Status = "frozen" }, domain.CodeAccountNotActive, "", fromID},
		{"a closed sender", func(in *booktransfer.Inputs) { in.From.Status = "closed" }, domain.CodeAccountNotActive, "", fromID},
		{"a sender under KYB review", func(in *booktransfer.Inputs) { in.From.KYBStatus = "pending_review" }, domain.CodeKYBNotApproved, "", fromID},
		{"a frozen sender not approved: status first", func(in *booktransfer.Inputs) { in.From.Status, in.From.KYBStatus = "frozen", "rejected" }, domain.CodeAccountNotActive, "", fromID},
		{"a closed receiver", func(in *booktransfer.Inputs) { in.To.Status = "closed" }, domain.CodeAccountNotActive, "", toID},
		{"a closed receiver and no funds: the receiver first", func(in *booktransfer.Inputs) { in.To.Status, in.Request.Amount = "closed", 20000 }, domain.CodeAccountNotActive, "", toID},
		{"one cent more than available", func(in *booktransfer.Inputs) { in.From.Balance.PendingOutbound = 7501 }, domain.CodeInsufficientFunds, "", fromID},
		{"a receiver at the balance bound", func(in *booktransfer.Inputs) { in.To.Balance.Posted = ledger.MaxBalance }, domain.CodeLimitExceeded, "", toID},
	} {
		t.Run(tc.given, func(t *testing.T) {
			events, err := booktransfer.Decide(inputs(tc.mod))
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != tc.code || (tc.param != "" && de.Param != tc.param) || (tc.res != "" && de.ResourceID != tc.res) {
				t.Fatalf("then %v (events %v), want %s param %q resource %q", err, events, tc.code, tc.param, tc.res)
			}
		})
	}
}

func TestDecideAccepts(t *testing.T) {
	for _, tc := range []struct {
		given string
		mod   func(*booktransfer.Inputs)
		desc  string
	}{
		{"exactly the available balance", func(in *booktransfer.Inputs) { in.Request.Amount = 10000 }, "Book transfer to " + toID},
		{"a frozen receiver (it still receives)", func(in *booktransfer.Inputs) { in.To.Status = "frozen" }, "Book transfer to " + toID},
		{"a description", func(in *booktransfer.Inputs) { in.Request.Description = "Rent" }, "Rent"},
	} {
		t.Run(tc.given, func(t *testing.T) {
			in := inputs(tc.mod)
			events, err := booktransfer.Decide(in)
			if err != nil {
				t.Fatal(err)
			}
			amount := in.Request.Amount
			want := []domain.Event{
				booktransfer.Completed{BookTransferID: "bt_1", PlatformID: "plt_x", Environment: domain.Sandbox,
					FromVirtualAccountID: fromID, ToVirtualAccountID: toID, Amount: amount, Description: in.Request.Description,
					IdempotencyKey: "k1", JournalEntryID: "je_1", At: at},
				ledger.Recorded{JournalEntryID: "je_1", PlatformID: "plt_x", Environment: domain.Sandbox, Type: ledger.TypeBookTransfer,
					Description: tc.desc, Status: ledger.StatusPosted, Source: ledger.Source{Type: "book_transfer", ID: "bt_1"},
					Lines: []ledger.Line{
						{EntryID: "le_1", LedgerAccountID: "la_from", VirtualAccountID: fromID, Direction: ledger.Debit, Amount: amount, Type: ledger.TypeBookTransfer},
						{EntryID: "le_2", LedgerAccountID: "la_to", VirtualAccountID: toID, Direction: ledger.Credit, Amount: amount, Type: ledger.TypeBookTransfer},
					}, EffectiveAt: at, At: at},
			}
			if !reflect.DeepEqual(events, want) {
				t.Fatalf("then\n%#v\nwant\n%#v", events, want)
			}
		})
	}
}
