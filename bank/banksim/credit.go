package banksim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/domain/rails"
)

// CreditRequest is one credit another bank's customer sends to an account
// at the bank: to a virtual account, when AccountNumber is one.
type CreditRequest struct {
	AccountNumber string // the DFI account number, up to 17 characters
	Amount        int64  // cents, more than 0
	// Name is the receiver's (the entry's individual name). Empty:
	// DefaultReceiverName.
	Name string
	// OriginatorName and CompanyID are the sender's (the batch's company
	// name and identification). Empty: DefaultOriginatorName,
	// DefaultCompanyID.
	OriginatorName string
	CompanyID      string
	// Description is the batch's entry description. Empty: "PAYMENT".
	Description string
}

// Defaults of a CreditRequest's empty fields.
const (
	DefaultReceiverName   = "ACCOUNT HOLDER"
	DefaultOriginatorName = "BANK SIM PAYER"
	DefaultCompanyID      = "9000000001"
	DefaultDescription    = "PAYMENT"
)

// Credit drops a NACHA file of credits into the inbox and returns its
// name: CCD batches of service class 220 (one for each run of requests
// from the same sender), each credit a transaction code 22 entry to the
// bank's routing number. Trace numbers are the originating bank's 8 digits
// and a sequence unique in the file, and across the files of this process.
func (a *ACH) Credit(ctx context.Context, reqs ...CreditRequest) (string, error) {
	if len(reqs) == 0 {
		return "", errors.New("banksim: a credit file needs at least one credit")
	}
	routing, err := a.routing()
	if err != nil {
		return "", err
	}
	origin := a.OriginatorRouting
	if origin == "" {
		origin = DefaultOriginatorRouting
	}
	odfi, _, err := nacha.SplitRouting(origin)
	if err != nil {
		return "", fmt.Errorf("banksim: the originating bank: %w", err)
	}
	now := time.Now
	if a.Now != nil {
		now = a.Now
	}
	at := now().In(rails.Eastern)

	a.mu.Lock()
	defer a.mu.Unlock()
	f := nacha.File{Header: nacha.FileHeader{
		ImmediateDestination: routing, ImmediateOrigin: origin, CreatedAt: at,
		DestinationName: "TREASURY", OriginName: "BANK SIM", ReferenceCode: "CREDITS",
	}}
	seq := a.traceStart(at)
	for i, r := range reqs {
		if r.AccountNumber == "" || len(r.AccountNumber) > 17 {
			return "", fmt.Errorf("banksim: credit %d: account number %q: 1 to 17 characters", i+1, r.AccountNumber)
		}
		if r.Amount <= 0 || r.Amount > 99_999_999_99 {
			return "", fmt.Errorf("banksim: credit %d: amount %d cents: more than 0 and at most 10 digits", i+1, r.Amount)
		}
		company := orDefault(nachaText(r.OriginatorName, 16), DefaultOriginatorName)
		id := orDefault(nachaText(r.CompanyID, 10), DefaultCompanyID)
		desc := orDefault(nachaText(r.Description, 10), DefaultDescription)
		n := len(f.Batches)
		if n == 0 || f.Batches[n-1].Header.CompanyName != company || f.Batches[n-1].Header.CompanyID != id ||
			f.Batches[n-1].Header.EntryDescription != desc {
			f.Batches = append(f.Batches, nacha.Batch{Header: nacha.BatchHeader{
				ServiceClass: nacha.CreditsOnly, CompanyName: company, CompanyID: id, SEC: "CCD",
				EntryDescription: desc, EffectiveDate: at, SettlementDate: julian(at), OriginatorStatus: '1',
				ODFI: odfi, Number: n + 1,
			}})
			n++
		}
		trace := odfi + fmt.Sprintf("%07d", seq%10_000_000)
		f.Batches[n-1].Entries = append(f.Batches[n-1].Entries, nacha.Entry{
			TransactionCode: nacha.CheckingCredit, RDFI: routing[:8], CheckDigit: routing[8],
			AccountNumber: r.AccountNumber, Amount: r.Amount,
			IdentificationNumber: "BANKSIM" + trace[8:], Name: orDefault(nachaText(r.Name, 22), DefaultReceiverName),
			TraceNumber: trace,
		})
		seq++
	}

	existing, err := a.Inbox.List(ctx)
	if err != nil {
		return "", err
	}
	var name string
	for {
		a.creditFiles++
		name = fmt.Sprintf("credit-%s-%d.ach", at.Format("20060102-150405"), a.creditFiles)
		if !slices.Contains(existing, name) { // another run's file of the same second
			break
		}
	}
	f.Header.IDModifier = modifiers[(a.creditFiles-1)%len(modifiers)]
	data, err := nacha.Marshal(f)
	if err != nil {
		return "", fmt.Errorf("banksim: %w", err)
	}
	if err := a.Inbox.Put(ctx, name, data); err != nil {
		return "", err
	}
	a.lastTrace = seq - 1
	a.log().Info("bank-sim: credit file dropped in the inbox", "name", name, "entries", len(reqs),
		"total_credit", f.Control().TotalCredit, "inbox", a.Inbox.String())
	return name, nil
}

const modifiers = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// traceStart is the first trace sequence of a credit file: after this
// process's last, and at least the second of the day × 100, so that the
// files of separate `bank-sim credit` runs rarely share a trace number.
func (a *ACH) traceStart(at time.Time) int {
	bySecond := (at.Hour()*3600+at.Minute()*60+at.Second())*100 + 1
	return max(a.lastTrace+1, bySecond)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
