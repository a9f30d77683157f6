package bank

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/ach"
)

// The inbox's subfolders: files applied, and files set aside unread.
const (
	Processed = "processed"
	Rejected  = "rejected"
)

// ACHInbound applies the files the bank drops in the inbox (API.md §10).
// Each file is applied once: its SHA-256 names a stream in the log, written
// after its entries are applied, so the same bytes again change nothing.
// Applying an entry twice is harmless too (a payment already failed stays
// failed), so a crash between the entries and the record only repeats
// what was done. A file that does not read as NACHA is moved to rejected/
// with a log line and changes nothing — once it has read the same bytes
// on two polls, so that a file the bank is still writing is not taken for
// a broken one.
//
// Returns (addenda 99) fail the payment they name by its trace number,
// account number and amount (a zero-dollar one, the counterparty whose
// prenote it was); notifications of change (addenda 98) are
// kept on it. Credits (and their prenotes) to our account numbers are
// applied with the file's record, in one transaction
// (app.ApplyACHInbound): an unknown or closed account's are owed back in
// our next file, and so are debits (R20: virtual accounts take none). A
// file that holds any other entry (a code we do not take) is left in the
// inbox, unapplied, with an error log line at each poll, so that nothing
// the bank sent is acknowledged and lost.
type ACHInbound struct {
	App   *app.App
	Inbox transport.Folder
	Log   *slog.Logger
	// Every is how often Run reads the inbox; default a minute.
	Every time.Duration

	mu sync.Mutex
	// unreadable holds, by name, the SHA-256 of a file that did not read
	// as NACHA: the same bytes on the next poll are set aside.
	unreadable map[string]string
}

// Poll applies every file in the inbox, oldest name first, and says how
// many it applied (files applied before and moved now, and rejected ones,
// are not counted).
func (in *ACHInbound) Poll(ctx context.Context) (int, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	names, err := in.Inbox.List(ctx)
	if err != nil {
		return 0, err
	}
	applied := 0
	for _, name := range names {
		data, err := in.Inbox.Get(ctx, name)
		if errors.Is(err, transport.ErrTooLarge) {
			in.Log.Error("ACH inbound file too large: set aside unread", "name", name, "err", err)
			if err := in.Inbox.Move(ctx, name, Rejected); err != nil {
				return applied, err
			}
			continue
		}
		if err != nil {
			return applied, err
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		done, err := in.App.ACHInboundApplied(ctx, hash)
		if err != nil {
			return applied, err
		}
		if done {
			in.Log.Info("ACH inbound file applied before: set aside", "name", name, "sha256", hash)
			if err := in.Inbox.Move(ctx, name, Processed); err != nil {
				return applied, err
			}
			continue
		}
		file, err := nacha.Parse(data)
		if err != nil {
			if in.unreadable[name] != hash { // perhaps still being written: look again next time
				if in.unreadable == nil {
					in.unreadable = map[string]string{}
				}
				in.unreadable[name] = hash
				in.Log.Warn("ACH inbound file does not read (yet): will look again", "name", name, "err", err)
				continue
			}
			delete(in.unreadable, name)
			in.Log.Error("ACH inbound file malformed: set aside unread", "name", name, "sha256", hash, "err", err)
			if err := in.Inbox.Move(ctx, name, Rejected); err != nil {
				return applied, err
			}
			continue
		}
		delete(in.unreadable, name)
		if n := untaken(file); n > 0 {
			// Recorded as applied, the file would be skipped for good: what
			// the bank sent must not be acknowledged and dropped. It waits,
			// untouched, for the operator.
			in.Log.Error("ACH inbound file holds entries of codes not taken (neither credits, debits, returns nor notifications of change): left in the inbox, unapplied",
				"name", name, "sha256", hash, "entries", n)
			continue
		}
		if err := in.apply(ctx, name, hash, file); err != nil {
			return applied, err
		}
		if err := in.Inbox.Move(ctx, name, Processed); err != nil {
			return applied, err
		}
		applied++
	}
	return applied, nil
}

// An entry of an inbound file is one of these.
const (
	entryReturn = iota
	entryChange
	entryCredit
	entryPrenote
	entryDebit   // returned: virtual accounts take no ACH debits
	entryUntaken // a code we do not take (general ledger, loan, …)
)

func kindOf(e nacha.Entry) int {
	if a := e.Addenda; a != nil && a.Type == nacha.AddendaReturn {
		return entryReturn
	} else if a != nil && a.Type == nacha.AddendaNOC {
		return entryChange
	}
	switch e.TransactionCode {
	case nacha.CheckingCredit, nacha.SavingsCredit:
		return entryCredit
	case nacha.CheckingPrenote, nacha.SavingsPrenote:
		return entryPrenote
	case nacha.CheckingDebit, nacha.SavingsDebit, checkingDebitPrenote, savingsDebitPrenote:
		return entryDebit
	}
	return entryUntaken
}

// The prenotes of debits (nacha names the codes the connector writes).
const (
	checkingDebitPrenote = 28
	savingsDebitPrenote  = 38
)

// untaken counts the entries of f with codes we do not take.
func untaken(f nacha.File) int {
	n := 0
	for _, b := range f.Batches {
		for _, e := range b.Entries {
			if kindOf(e) == entryUntaken {
				n++
			}
		}
	}
	return n
}

// apply applies a file's returns and notifications of change, then its
// credits with the file's record.
func (in *ACHInbound) apply(ctx context.Context, name, hash string, f nacha.File) error {
	rec := ach.InboundApplied{SHA256: hash, Name: name}
	var credits []ach.Credit
	for _, b := range f.Batches {
		for _, e := range b.Entries {
			a := e.Addenda
			var id string
			var err error
			switch kindOf(e) {
			case entryReturn:
				if e.Amount == 0 { // a prenote's: a payment carries money
					id, err = in.App.ReturnACHPrenote(ctx, meta, entryRef(e), a.Code)
				} else {
					id, err = in.App.ReturnACHPayment(ctx, meta, entryRef(e), a.Code)
				}
			case entryChange:
				id, err = in.App.NoteACHChange(ctx, meta, entryRef(e), a.Code, a.CorrectedData)
			case entryCredit, entryPrenote, entryDebit:
				credits = append(credits, creditOf(b.Header, e))
				continue
			default: // untaken kept such files out
				return fmt.Errorf("ACH inbound file %s: entry %s has transaction code %d, which is not taken", name, e.TraceNumber, e.TransactionCode)
			}
			if errors.Is(err, app.ErrChangeOfPrenote) {
				in.Log.Warn("ACH notification of change of a prenote: not applied", "name", name, "counterparty_id", id,
					"original_trace", a.OriginalTrace, "code", a.Code, "corrected_data", a.CorrectedData)
				rec.Unmatched++
				continue
			}
			if errors.Is(err, app.ErrNoSuchTrace) {
				in.Log.Warn("ACH return or change of no payment or prenote of ours", "name", name, "original_trace", a.OriginalTrace, "code", a.Code)
				rec.Unmatched++
				continue
			}
			if err != nil {
				return err
			}
			in.Log.Info("ACH return or change applied", "id", id, "addenda", a.Type, "code", a.Code, "original_trace", a.OriginalTrace)
			if a.Type == nacha.AddendaNOC {
				rec.Changes++
			} else {
				rec.Returns++
			}
		}
	}
	if err := in.App.ApplyACHInbound(ctx, meta, rec, credits); err != nil {
		return err
	}
	if len(credits) > 0 {
		in.Log.Info("ACH credits applied", "name", name, "credits", len(credits))
	}
	return nil
}

// entryRef is the entry of ours a return or notification of change is
// about: its addenda's original trace number, and the account number and
// amount the bank's entry repeats.
func entryRef(e nacha.Entry) app.ACHEntryRef {
	return app.ACHEntryRef{TraceNumber: e.Addenda.OriginalTrace, AccountNumber: e.AccountNumber, Amount: e.Amount,
		RDFI: e.Addenda.OriginalRDFI}
}

// creditOf is a credit (or debit) entry of a batch, as the application and a return
// of it need it.
func creditOf(h nacha.BatchHeader, e nacha.Entry) ach.Credit {
	return ach.Credit{TraceNumber: e.TraceNumber, AccountNumber: e.AccountNumber, Amount: e.Amount, Name: e.Name,
		Identification: e.IdentificationNumber, ODFI: h.ODFI, OriginatorRouting: h.ODFI + string(nacha.CheckDigit(h.ODFI)),
		CompanyName: h.CompanyName, CompanyID: h.CompanyID, SEC: h.SEC, EntryDescription: h.EntryDescription,
		EffectiveDate: h.EffectiveDate.Format(time.DateOnly),
		Prenote:       slices.Contains([]int{nacha.CheckingPrenote, nacha.SavingsPrenote, checkingDebitPrenote, savingsDebitPrenote}, e.TransactionCode),
		Savings:       slices.Contains([]int{nacha.SavingsCredit, nacha.SavingsPrenote, nacha.SavingsDebit, savingsDebitPrenote}, e.TransactionCode),
		Debit:         kindOf(e) == entryDebit}
}

// Run polls the inbox (every minute unless Every says) until ctx ends.
func (in *ACHInbound) Run(ctx context.Context) {
	every := in.Every
	if every <= 0 {
		every = time.Minute
	}
	for {
		if _, err := in.Poll(ctx); err != nil && ctx.Err() == nil {
			in.Log.Error("ACH inbox: will try again", "err", err, "in", every)
		}
		if !sleep(ctx, every) {
			return
		}
	}
}
