// Package bank is live mode's sponsor-bank connector (API.md §10): it
// turns the log's decisions into the files and messages a bank takes, and
// what the bank sends back into commands.
package bank

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/rails"
)

// EntryDescription is every outbound batch's company entry description.
const EntryDescription = "PAYMENT"

// ACHFile renders a cut file: the same event always gives the same bytes,
// so a file written again after a crash is the file the bank may already
// have (and refuses as a duplicate by its header), never another one.
func ACHFile(f ach.FileCreated) ([]byte, error) {
	file, err := achFile(f)
	if err != nil {
		return nil, err
	}
	return nacha.Marshal(file)
}

func achFile(f ach.FileCreated) (nacha.File, error) {
	o := f.Originator
	odfi, _, err := nacha.SplitRouting(o.RoutingNumber)
	if err != nil {
		return nacha.File{}, fmt.Errorf("the originator: %w", err)
	}
	if len(f.IDModifier) != 1 {
		return nacha.File{}, fmt.Errorf("file id modifier %q", f.IDModifier)
	}
	file := nacha.File{Header: nacha.FileHeader{
		ImmediateDestination: o.RoutingNumber, ImmediateOrigin: o.Origin,
		CreatedAt: f.At.In(rails.Eastern), IDModifier: f.IDModifier[0],
		OriginName: asNACHA(o.CompanyName, 23),
	}}
	// The entries come platform by platform and date by date (ach.Decide's
	// order): a batch for each run.
	var platform, date string // of the batch being filled
	for _, e := range f.Entries {
		n := len(file.Batches)
		if n == 0 || e.PlatformID != platform || e.EffectiveDate != date {
			platform, date = e.PlatformID, e.EffectiveDate
			effective, err := time.Parse(time.DateOnly, e.EffectiveDate)
			if err != nil {
				return nacha.File{}, fmt.Errorf("entry %s: effective date %q", e.Ref(), e.EffectiveDate)
			}
			file.Batches = append(file.Batches, nacha.Batch{Header: nacha.BatchHeader{
				ServiceClass: nacha.CreditsOnly, CompanyName: asNACHA(o.CompanyName, 16),
				CompanyID: o.CompanyID, SEC: "CCD", EntryDescription: EntryDescription,
				EffectiveDate: effective, ODFI: odfi, Number: n + 1,
			}})
			n++
		}
		rdfi, check, err := nacha.SplitRouting(e.RoutingNumber)
		if err != nil {
			return nacha.File{}, fmt.Errorf("entry %s: %w", e.Ref(), err)
		}
		b := &file.Batches[n-1]
		b.Entries = append(b.Entries, nacha.Entry{
			TransactionCode: transactionCode(e.Pending), RDFI: rdfi, CheckDigit: check,
			AccountNumber: e.AccountNumber, Amount: e.Amount,
			IdentificationNumber: IdentificationNumber(e.Ref()),
			Name:                 asNACHA(e.Name, 22), TraceNumber: e.TraceNumber,
		})
	}
	return file, addReturns(&file, f, odfi)
}

// transactionCode is an outbound entry's: a payment is a checking credit
// (22); a prenote is a zero-dollar credit prenote, 23, or 33 to a savings
// account.
func transactionCode(p ach.Pending) int {
	switch {
	case p.Prenote && p.Savings:
		return nacha.SavingsPrenote
	case p.Prenote:
		return nacha.CheckingPrenote
	}
	return nacha.CheckingCredit
}

// addReturns adds the entries f returns (credits and debits the bank
// forwarded): a batch for each run of returns
// of one originating company (its header copied from the credit's, as a
// return's is), each entry back to the credit's bank with the return's
// addenda naming the credit's trace number.
func addReturns(file *nacha.File, f ach.FileCreated, odfi string) error {
	if len(f.Returns) == 0 {
		return nil
	}
	effective, err := time.Parse(time.DateOnly, f.Day)
	if err != nil {
		return fmt.Errorf("file day %q", f.Day)
	}
	var company string // of the batch being filled
	for _, r := range f.Returns {
		c := r.Credit
		key := c.CompanyName + "\x00" + c.CompanyID + "\x00" + c.SEC + "\x00" + c.EntryDescription
		n := len(file.Batches)
		if n == 0 || key != company || file.Batches[n-1].Entries[0].Addenda == nil {
			company = key
			file.Batches = append(file.Batches, nacha.Batch{Header: nacha.BatchHeader{
				ServiceClass: nacha.CreditsOnly, CompanyName: c.CompanyName, CompanyID: c.CompanyID,
				SEC: c.SEC, EntryDescription: c.EntryDescription, EffectiveDate: effective, ODFI: odfi, Number: n + 1,
			}})
			n++
		}
		code := nacha.CheckingReturn
		switch {
		case c.Debit && c.Savings:
			code = nacha.SavingsDebitReturn
		case c.Debit:
			code = nacha.CheckingDebitReturn
		case c.Savings:
			code = nacha.SavingsReturn
		}
		b := &file.Batches[n-1]
		b.Entries = append(b.Entries, nacha.Entry{
			TransactionCode: code, RDFI: c.ODFI, CheckDigit: nacha.CheckDigit(c.ODFI),
			AccountNumber: c.AccountNumber, Amount: c.Amount, IdentificationNumber: c.Identification,
			Name: c.Name, TraceNumber: r.TraceNumber,
			Addenda: &nacha.Addenda{Type: nacha.AddendaReturn, Code: r.Code, OriginalTrace: c.TraceNumber,
				OriginalRDFI: odfi, TraceNumber: r.TraceNumber},
		})
	}
	for i := range file.Batches {
		if b := &file.Batches[i]; b.Entries[0].Addenda != nil {
			b.Header.ServiceClass = nacha.ServiceClassOf(b.Entries)
		}
	}
	return nil
}

// IdentificationNumber is what an entry carries of its payment (or a
// prenote of its counterparty): the last 15 characters of its id (the
// trace number is what returns match on).
func IdentificationNumber(paymentID string) string {
	if len(paymentID) <= 15 {
		return paymentID
	}
	return paymentID[len(paymentID)-15:]
}

// asNACHA is s as a NACHA alphanumeric field of width characters: upper
// case, accents dropped (É → E), any other character that is not
// printable ASCII a space, cut to width.
func asNACHA(s string, width int) string {
	var b strings.Builder
	for _, r := range norm.NFD.String(s) {
		switch {
		case unicode.Is(unicode.Mn, r): // a combining accent
		case r >= 0x20 && r <= 0x7e:
			b.WriteRune(unicode.ToUpper(r))
		default:
			b.WriteByte(' ')
		}
	}
	out := b.String()
	if len(out) > width {
		out = out[:width]
	}
	return strings.TrimRight(out, " ")
}
