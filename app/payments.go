package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
)

// changePayment runs a payment command under the account's balance lock,
// and moves the payment's journal entry along with it: post on completion,
// archive on failure or cancel while pending, reverse once posted. build
// makes the command from the payment; it may return nil (nothing to do)
// or an error (refused).
func (a *App) changePayment(ctx context.Context, meta Meta, caller *Caller, id string, build func(payment.State) any) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, a.decidePayment(ctx, tx, meta, caller, id, build)
	})
	return err
}

func (a *App) decidePayment(ctx context.Context, tx *commandTx, meta Meta, caller *Caller, id string, build func(payment.State) any) error {
	pay, err := loadStream(ctx, tx, payments, caller, id)
	if err != nil {
		return err
	}
	s, version, c := pay.State, pay.Version, pay.Owner
	locked, err := lockAccounts(ctx, tx, c, []string{s.VirtualAccountID})
	if err != nil {
		return err
	}
	cmd := build(s)
	if cmd == nil {
		return nil
	}
	if err, ok := cmd.(error); ok {
		return err // the command could not be built (bad input)
	}
	if s.JournalEntryID == "" { // scheduled: nothing held, no entry yet
		events, err := payment.Decide(s, cmd)
		if err != nil || len(events) == 0 {
			return err
		}
		_, err = appendAndProject(ctx, tx, paymentStream(c, id), version, meta, events)
		return err
	}
	entry, err := loadStream(ctx, tx, journalEntries, &c, s.JournalEntryID)
	if err != nil {
		return err
	}
	je, jeVersion := entry.State, entry.Version
	var reversal *ledger.Recorded
	if f, ok := cmd.(payment.Fail); ok && s.Status == payment.StatusCompleted {
		if je.ReversedBy != "" {
			return &domain.Error{Code: domain.CodeInvalidState, ResourceID: je.ReversedBy, Message: "this payment's entry was already reversed"}
		}
		// A closed account rejects inbound funds: a return to it is
		// credited to the platform's operating account instead.
		var operating string
		if locked[s.VirtualAccountID].Status == account.StatusClosed.String() {
			chart, err := a.ensureChart(ctx, tx, meta, c)
			if err != nil {
				return err
			}
			operating = chart[ledger.CodePlatformOperating]
		}
		r := paymentReversal(c, s, je, operating)
		f.ReversalJournalEntryID = r.JournalEntryID
		cmd, reversal = f, &r
	}
	events, err := payment.Decide(s, cmd)
	if err != nil || len(events) == 0 {
		return err
	}
	if _, err := appendAndProject(ctx, tx, paymentStream(c, id), version, meta, events); err != nil {
		return err
	}
	at := now()
	var jeEvents []domain.Event
	for _, e := range events {
		switch e.(type) {
		case payment.Completed:
			jeEvents = append(jeEvents, ledger.Posted{JournalEntryID: je.ID, Lines: je.Lines, At: at})
		case payment.Failed, payment.Canceled, payment.Denied:
			if reversal != nil {
				jeEvents = append(jeEvents, ledger.Reversed{JournalEntryID: je.ID, ReversedBy: reversal.JournalEntryID, At: at})
			} else if je.Status == ledger.StatusPending {
				jeEvents = append(jeEvents, ledger.Archived{JournalEntryID: je.ID, Lines: je.Lines, At: at})
			}
		}
	}
	if len(jeEvents) > 0 {
		if _, err := appendAndProject(ctx, tx, journalStream(c, je.ID), jeVersion, meta, jeEvents); err != nil {
			return err
		}
	}
	if reversal != nil {
		_, err = appendAndProject(ctx, tx, journalStream(c, reversal.JournalEntryID), 0, meta, []domain.Event{*reversal})
	}
	return err
}

// paymentReversal is the mirror image of a posted payment's entry: the
// money (and the fee) come back to the account.
// redirectTo, if not empty, is the ledger account that takes the account's
// lines instead (the account was closed).
func paymentReversal(c Caller, s payment.State, je ledger.State, redirectTo string) ledger.Recorded {
	at := now()
	id := domain.NewID(domain.PrefixJournalEntry)
	lines := ledger.Mirror(je.Lines, func() string { return domain.NewID(domain.PrefixLedgerEntry) }, ledger.TypePaymentReversal)
	if redirectTo != "" {
		for i := range lines {
			if lines[i].VirtualAccountID != "" {
				lines[i].VirtualAccountID, lines[i].LedgerAccountID = "", redirectTo
			}
		}
	}
	return ledger.Recorded{JournalEntryID: id, PlatformID: c.PlatformID, Environment: c.Environment,
		Type: ledger.TypePaymentReversal, Description: "Return of payment " + s.PaymentID, Status: ledger.StatusPosted,
		Lines: lines, Source: ledger.Source{Type: "payment", ID: s.PaymentID}, Reverses: je.ID, EffectiveAt: at, At: at}
}
