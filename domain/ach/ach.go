// Package ach decides live mode's outbound ACH files (API.md §10): when a
// file is cut, which payments it carries, their trace numbers, the file's
// name and identity for the day. The decision is an event that holds
// everything the file's bytes are made from, so that the file can be
// written again, identically, after a crash: recovery is decided from the
// log, never from what happens to be in a folder.
//
// The ACH day is the aggregate: one stream per Eastern calendar day, whose
// version orders the day's files. Cutting appends to it with an expected
// version, so two cuts that race cannot hand out one file id modifier or
// one trace number twice; the payments' own streams, appended in the same
// transaction (payment.Submitted), keep a payment out of a second file.
package ach

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// StreamType names the ACH days' streams.
const StreamType = "ach_day"

// StreamID is the stream of the ACH day (YYYY-MM-DD, Eastern).
func StreamID(day string) string { return "achday-" + day }

// DayOf is the ACH day of t: its date in New York.
func DayOf(t time.Time) string { return t.In(rails.Eastern).Format(time.DateOnly) }

// Originator is who sends the files, from the configuration
// (TREASURY_ROUTING_NUMBER, TREASURY_ACH_ORIGIN, TREASURY_ACH_COMPANY_ID,
// TREASURY_ACH_COMPANY_NAME), kept in each file's event so that a file
// written again after a restart with another configuration is still the
// same file.
type Originator struct {
	RoutingNumber string `json:"routing_number"` // the sponsor bank's, 9 digits
	Origin        string `json:"origin"`         // immediate origin, 10 characters
	CompanyID     string `json:"company_id"`
	CompanyName   string `json:"company_name"`
}

// Pending is a live ACH payment waiting for a file, or a counterparty's
// prenote (API.md §12): a zero-dollar entry (code 23, 33 to a savings
// account) that names a counterparty instead of a payment and goes as a
// same-day entry in whichever file comes next.
type Pending struct {
	PaymentID      string    `json:"payment_id,omitempty"`
	CounterpartyID string    `json:"counterparty_id,omitempty"` // a prenote's
	Prenote        bool      `json:"prenote,omitempty"`
	Savings        bool      `json:"savings,omitempty"` // to a savings account
	PlatformID     string    `json:"platform_id"`
	Rail           string    `json:"rail"`
	Amount         int64     `json:"amount"`
	AccountNumber  string    `json:"account_number"`
	RoutingNumber  string    `json:"routing_number"`
	Name           string    `json:"name"`
	CreatedAt      time.Time `json:"created_at"`
}

// Ref is what the entry is of: its payment's id, or its counterparty's.
func (p Pending) Ref() string {
	if p.Prenote {
		return p.CounterpartyID
	}
	return p.PaymentID
}

// Entry is a payment (or a prenote) in a file.
type Entry struct {
	Pending
	// TraceNumber is the originator's routing number's first 8 digits and
	// the day's 7-digit sequence.
	TraceNumber string `json:"trace_number"`
	// EffectiveDate (YYYY-MM-DD) is the date the entry settles: the
	// window's for same-day, the next business day for standard.
	EffectiveDate string `json:"effective_date"`
	// SettlesAt is when on that date it settles (the same-day window,
	// 08:30 ET for standard): the payment completes then, unless
	// returned first.
	SettlesAt time.Time `json:"settles_at"`
}

// Credit is an entry the bank forwarded for one of our account numbers, as
// its file gave it: a credit (funds), or a debit, which is returned.
type Credit struct {
	TraceNumber    string `json:"trace_number"`
	AccountNumber  string `json:"account_number"` // the DFI account number: ours
	Amount         int64  `json:"amount"`
	Name           string `json:"name"`                  // the receiver's name, as the originator wrote it
	Identification string `json:"identification_number"` // the originator's reference
	// ODFI is the first 8 digits of the originating bank's routing number:
	// where a return goes.
	ODFI string `json:"odfi"`
	// OriginatorRouting is that routing number whole (with its check
	// digit): the inbound transfer's originator.
	OriginatorRouting string `json:"originator_routing"`
	CompanyName       string `json:"company_name"`
	CompanyID         string `json:"company_id"`
	SEC               string `json:"sec"`
	EntryDescription  string `json:"entry_description"`
	EffectiveDate     string `json:"effective_date"`    // YYYY-MM-DD
	Prenote           bool   `json:"prenote,omitempty"` // a zero-dollar test entry: nothing to credit
	Savings           bool   `json:"savings,omitempty"` // to a savings account number: its return's code is 31
	// Debit: the originator takes money (code 27 or 37, prenotes 28, 38):
	// never applied, returned.
	Debit bool `json:"debit,omitempty"`
}

// Return codes of the entries we cannot apply (API.md §10).
const (
	ReturnAccountClosed = "R02"
	ReturnNoAccount     = "R03"
	// ReturnNoDebits answers a debit: a virtual account takes no ACH
	// debits (R20, non-transaction account).
	ReturnNoDebits = "R20"
)

// CreditReturn says whether an entry the bank forwarded is returned, and
// why: "" when it is applied. found and closed describe the live virtual
// account its account number names.
func CreditReturn(c Credit, found, closed bool) string {
	switch {
	case !found:
		return ReturnNoAccount
	case closed:
		return ReturnAccountClosed
	case c.Debit:
		return ReturnNoDebits
	}
	return ""
}

// ReturnOwed is a credit we return to its originator in our next file.
type ReturnOwed struct {
	ID     string `json:"id"`
	Credit Credit `json:"credit"`
	Code   string `json:"code"` // R02, R03
}

// Return is a returned credit in a file.
type Return struct {
	ReturnOwed
	TraceNumber string `json:"trace_number"` // ours: the return's own entry
}

// FileCreated: a file was cut. Its payments are submitted with their trace
// numbers in the same transaction; the file is written to the outbox
// after the commit. Returns are the credits returned in it.
type FileCreated struct {
	ACHFileID  string     `json:"ach_file_id"`
	Day        string     `json:"day"`
	Name       string     `json:"name"`
	IDModifier string     `json:"id_modifier"`
	Originator Originator `json:"originator"`
	Entries    []Entry    `json:"entries"`
	Returns    []Return   `json:"returns,omitempty"`
	At         time.Time  `json:"at"`
}

// FileTransmitted: the file is in the outbox, whole.
type FileTransmitted struct {
	ACHFileID string    `json:"ach_file_id"`
	At        time.Time `json:"at"`
}

// InboundApplied: a file the bank sent was applied (API.md §10). Its
// stream is named by the file's SHA-256, so a file is applied once: the
// same bytes again find the stream there and change nothing.
type InboundApplied struct {
	SHA256 string `json:"sha256"`
	Name   string `json:"name"`
	// Returns and Changes count the returns and notifications of change
	// applied; Unmatched those that named no payment or prenote of ours,
	// and the changes of prenotes (logged, left alone).
	Returns   int `json:"returns"`
	Changes   int `json:"changes"` // notifications of change
	Unmatched int `json:"unmatched"`
	// Credited counts the credits applied to live virtual accounts (each an
	// inbound transfer, appended with this event); ReturnsOwed are those
	// returned in the next outbound file.
	Credited int `json:"credited,omitempty"`
	// Duplicates counts the credits applied before, from another file.
	Duplicates  int          `json:"duplicates,omitempty"`
	ReturnsOwed []ReturnOwed `json:"returns_owed,omitempty"`
	At          time.Time    `json:"at"`
}

func (FileCreated) EventType() string     { return "ach.file_created" }
func (FileTransmitted) EventType() string { return "ach.file_transmitted" }
func (InboundApplied) EventType() string  { return "ach.inbound_file_applied" }

func init() {
	domain.RegisterEvent[FileCreated]()
	domain.RegisterEvent[FileTransmitted]()
	domain.RegisterEvent[InboundApplied]()
}

// InboundStreamType names the streams of the files the bank sent.
const InboundStreamType = "ach_inbound_file"

// InboundStreamID is the stream of an inbound file, by its SHA-256 (hex).
func InboundStreamID(sha256 string) string { return "achin-" + sha256 }

// TotalCredit is the sum of the file's credit entries (payments and
// returned credits), in cents: its file control's total credit.
func (f FileCreated) TotalCredit() int64 {
	var total int64
	for _, e := range f.Entries {
		total += e.Amount
	}
	for _, r := range f.Returns {
		if !r.Credit.Debit { // a debit's return is a debit
			total += r.Credit.Amount
		}
	}
	return total
}

// EntryCount is the number of the file's entries.
func (f FileCreated) EntryCount() int { return len(f.Entries) + len(f.Returns) }

// File is what the day knows of one of its files.
type File struct {
	FileCreated
	Transmitted bool
}

// Day is the ACH day folded from its stream.
type Day struct {
	Files []File
	// LastTrace is the last trace sequence handed out today.
	LastTrace int
}

// Evolve folds one event.
func Evolve(d Day, e domain.Event) Day {
	switch ev := e.(type) {
	case FileCreated:
		d.Files = append(slices.Clip(d.Files), File{FileCreated: ev})
		d.LastTrace += ev.EntryCount()
	case FileTransmitted:
		d.Files = slices.Clone(d.Files)
		for i := range d.Files {
			if d.Files[i].ACHFileID == ev.ACHFileID {
				d.Files[i].Transmitted = true
			}
		}
	}
	return d
}

// Untransmitted are the day's files cut but not yet known to be in the
// outbox: the ones to write (again) before anything else.
func (d Day) Untransmitted() []File {
	var out []File
	for _, f := range d.Files {
		if !f.Transmitted {
			out = append(out, f)
		}
	}
	return out
}

// Modifiers are the file id modifiers, in the order a day uses them.
const Modifiers = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

// MaxTrace is the largest 7-digit trace sequence.
const MaxTrace = 9_999_999

// MaxEntries bounds a file's entries: a cut takes the first MaxEntries
// payments it is given (the oldest), and a cut that fills a file is
// followed by another.
const MaxEntries = 10_000

// Commands on the ACH day.
type (
	// Cut makes a file of the payments given, those the window takes:
	// same-day payments (and prenotes, which are same-day) at every
	// window, standard ones at the last window of the day or when the
	// operator cuts (Standard); and of the returns owed, which go in
	// whichever file comes first.
	Cut struct {
		ACHFileID  string
		Originator Originator
		Payments   []Pending
		Returns    []ReturnOwed
		Standard   bool // standard payments go too
		At         time.Time
	}
	// Transmit records that a file is in the outbox.
	Transmit struct {
		ACHFileID string
		At        time.Time
	}
)

// Decide returns the events of a command on the day d, or why not. A cut
// with no payment or return for it makes no file (no events, no error).
func Decide(d Day, cmd any) ([]domain.Event, error) {
	switch c := cmd.(type) {
	case Cut:
		return decideCut(d, c)
	case Transmit:
		for _, f := range d.Files {
			if f.ACHFileID == c.ACHFileID {
				if f.Transmitted {
					return nil, nil
				}
				return []domain.Event{FileTransmitted{ACHFileID: c.ACHFileID, At: c.At}}, nil
			}
		}
		return nil, domain.NotFound("ach_file", c.ACHFileID)
	}
	return nil, domain.Errorf(domain.CodeInternal, "unknown ACH day command %T", cmd)
}

func decideCut(d Day, c Cut) ([]domain.Event, error) {
	o := c.Originator
	if len(o.RoutingNumber) != 9 || !rails.ValidABA(o.RoutingNumber) {
		return nil, domain.Errorf(domain.CodeInternal, "the originator's routing number %q is not a valid ABA number", o.RoutingNumber)
	}
	var take []Pending
	for _, p := range c.Payments {
		switch p.Rail {
		case rails.ACHSameDay.String():
			take = append(take, p)
		case rails.ACHStandard.String():
			if c.Standard {
				take = append(take, p)
			}
		default:
			return nil, domain.Errorf(domain.CodeInternal, "entry %s on rail %s cannot go in an ACH file", p.Ref(), p.Rail)
		}
	}
	returns := c.Returns
	if len(take) == 0 && len(returns) == 0 {
		return nil, nil
	}
	// Returns first (they have a deadline), then the oldest payments; the
	// rest go in the next file.
	if len(returns) > MaxEntries {
		returns = returns[:MaxEntries]
	}
	if len(take) > MaxEntries-len(returns) {
		take = take[:MaxEntries-len(returns)]
	}
	if len(d.Files) >= len(Modifiers) {
		return nil, domain.Errorf(domain.CodeInvalidState, "the ACH day %s already has %d files, the most its file id modifiers allow", DayOf(c.At), len(d.Files))
	}
	if d.LastTrace+len(take)+len(returns) > MaxTrace {
		return nil, domain.Errorf(domain.CodeInvalidState, "the ACH day %s has no trace numbers left for %d entries", DayOf(c.At), len(take)+len(returns))
	}
	modifier := Modifiers[len(d.Files) : len(d.Files)+1]
	f := FileCreated{ACHFileID: c.ACHFileID, Day: DayOf(c.At), IDModifier: modifier, Originator: o, At: c.At,
		Name: fmt.Sprintf("ach-%s-%s.ach", c.At.In(rails.Eastern).Format("20060102-150405"), modifier)}
	for _, p := range take {
		rail, _ := rails.Parse(p.Rail)
		settles := rails.ExpectedSettlement(rail, c.At)
		f.Entries = append(f.Entries, Entry{Pending: p, SettlesAt: settles,
			EffectiveDate: settles.In(rails.Eastern).Format(time.DateOnly)})
	}
	// A batch per platform and effective date (a batch header carries one
	// date), each in the order its payments were made.
	slices.SortStableFunc(f.Entries, func(a, b Entry) int {
		return cmp.Or(strings.Compare(a.PlatformID, b.PlatformID), strings.Compare(a.EffectiveDate, b.EffectiveDate),
			a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.Ref(), b.Ref()))
	})
	for i := range f.Entries {
		f.Entries[i].TraceNumber = fmt.Sprintf("%s%07d", o.RoutingNumber[:8], d.LastTrace+i+1)
	}
	for i, r := range returns {
		f.Returns = append(f.Returns, Return{ReturnOwed: r,
			TraceNumber: fmt.Sprintf("%s%07d", o.RoutingNumber[:8], d.LastTrace+len(f.Entries)+i+1)})
	}
	return []domain.Event{f}, nil
}

// cutLead is how long before a same-day window its file is cut.
const cutLead = 15 * time.Minute

// NextCut is the first cut at or after t: 15 minutes before each same-day
// window (10:30, 14:45, 16:45 ET) of a business day; standard payments
// go at the day's last.
func NextCut(t time.Time) (at time.Time, standard bool) {
	et := t.In(rails.Eastern)
	for day := et; ; day = time.Date(day.Year(), day.Month(), day.Day()+1, 0, 0, 0, 0, rails.Eastern) {
		if !rails.IsBusinessDay(day) {
			continue
		}
		windows := rails.SameDayWindows(day)
		for i, w := range windows {
			if cut := w.Add(-cutLead); !cut.Before(et) {
				return cut.UTC(), i == len(windows)-1
			}
		}
	}
}
