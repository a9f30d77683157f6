package ach_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/rails"
)

func et(s string) time.Time {
	t, err := time.ParseInLocation("2006-01-02 15:04", s, rails.Eastern)
	if err != nil {
		panic(err)
	}
	return t
}

var originator = ach.Originator{RoutingNumber: "021000021", Origin: "1234567890", CompanyID: "1234567890", CompanyName: "TREASURY"}

func pending(id, platform, rail string, created string) ach.Pending {
	return ach.Pending{PaymentID: id, PlatformID: platform, Rail: rail, Amount: 1000, AccountNumber: "123456789",
		RoutingNumber: "011000015", Name: "Acme " + id, CreatedAt: et(created)}
}

var (
	sameDayB = pending("pay_2", "plt_b", "ach_same_day", "2026-11-27 09:00")
	sameDayA = pending("pay_3", "plt_a", "ach_same_day", "2026-11-27 09:30")
	standard = pending("pay_1", "plt_a", "ach_standard", "2026-11-27 08:00")
	instant  = pending("pay_4", "plt_a", "rtp", "2026-11-27 08:00")
)

// A Friday (the day after Thanksgiving, a business day), 15 minutes
// before the first window.
var cutAt = et("2026-11-27 10:15")

func fileOf(events ...domain.Event) ach.Day {
	var d ach.Day
	for _, e := range events {
		d = ach.Evolve(d, e)
	}
	return d
}

// entry is p in a file; it settles on effective at the same-day window
// after the cut (same-day) or 08:30 (standard).
func entry(p ach.Pending, seq int, effective string, settles string) ach.Entry {
	return ach.Entry{Pending: p, TraceNumber: fmt.Sprintf("02100002%07d", seq), EffectiveDate: effective,
		SettlesAt: et(effective + " " + settles).UTC()}
}

// A day that already cut one file of three entries.
var oneFile = ach.FileCreated{ACHFileID: "achf_1", Day: "2026-11-27", Name: "ach-20261127-101500-A.ach", IDModifier: "A",
	Originator: originator, At: cutAt,
	Entries: []ach.Entry{entry(sameDayA, 1, "2026-11-27", "10:30"), entry(standard, 2, "2026-11-30", "08:30"), entry(sameDayB, 3, "2026-11-27", "10:30")}}

// sameDayMany are n same-day payments of one platform, oldest first.
func sameDayMany(n int) []ach.Pending {
	out := make([]ach.Pending, n)
	for i := range out {
		out[i] = sameDayA
		out[i].PaymentID = fmt.Sprintf("pay_%06d", i)
		out[i].CreatedAt = sameDayA.CreatedAt.Add(time.Duration(i) * time.Millisecond)
	}
	return out
}

func manyFiles(n int) []domain.Event {
	var out []domain.Event
	for i := range n {
		out = append(out, ach.FileCreated{ACHFileID: fmt.Sprintf("achf_%d", i), Entries: []ach.Entry{{}}})
	}
	return out
}

// owed is a credit we return, from the bank 01100001.
func owed(id, code string) ach.ReturnOwed {
	return ach.ReturnOwed{ID: id, Code: code, Credit: ach.Credit{TraceNumber: "01100001000000" + id[len(id)-1:],
		AccountNumber: "999999999999", Amount: 700, ODFI: "01100001", CompanyName: "PAYROLL CO", SEC: "CCD"}}
}

func returned(r ach.ReturnOwed, seq int) ach.Return {
	return ach.Return{ReturnOwed: r, TraceNumber: fmt.Sprintf("02100002%07d", seq)}
}

func TestDecide(t *testing.T) {
	type outcome struct {
		events []domain.Event
		code   domain.Code
		count  int // when set: one file of this many entries, the first payments given
	}
	cases := []struct {
		name  string
		given []domain.Event
		when  any
		then  outcome
	}{
		{"a window takes the same-day payments, a batch per platform, traces from 1",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{sameDayB, standard, sameDayA}, At: cutAt},
			outcome{events: []domain.Event{ach.FileCreated{ACHFileID: "achf_1", Day: "2026-11-27", Name: "ach-20261127-101500-A.ach",
				IDModifier: "A", Originator: originator, At: cutAt,
				Entries: []ach.Entry{entry(sameDayA, 1, "2026-11-27", "10:30"), entry(sameDayB, 2, "2026-11-27", "10:30")}}}}},
		{"the day's last window (or the operator) takes the standard ones too, settling the next business day, a batch per platform and date",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{sameDayB, standard, sameDayA}, Standard: true, At: cutAt},
			outcome{events: []domain.Event{oneFile}}},
		{"the second file of the day: modifier B, traces after the first file's",
			[]domain.Event{oneFile}, ach.Cut{ACHFileID: "achf_2", Originator: originator,
				Payments: []ach.Pending{pending("pay_5", "plt_a", "ach_same_day", "2026-11-27 12:00")}, At: et("2026-11-27 14:30")},
			outcome{events: []domain.Event{ach.FileCreated{ACHFileID: "achf_2", Day: "2026-11-27", Name: "ach-20261127-143000-B.ach",
				IDModifier: "B", Originator: originator, At: et("2026-11-27 14:30"),
				Entries: []ach.Entry{entry(pending("pay_5", "plt_a", "ach_same_day", "2026-11-27 12:00"), 4, "2026-11-27", "14:45")}}}}},
		{"after the last window a same-day payment settles at the next business day's first",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{sameDayA}, At: et("2026-11-27 17:00")},
			outcome{events: []domain.Event{ach.FileCreated{ACHFileID: "achf_1", Day: "2026-11-27", Name: "ach-20261127-170000-A.ach",
				IDModifier: "A", Originator: originator, At: et("2026-11-27 17:00"),
				Entries: []ach.Entry{entry(sameDayA, 1, "2026-11-30", "10:30")}}}}},
		{"nothing for this window: no file",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{standard}, At: cutAt}, outcome{}},
		{"no payments at all: no file",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, At: cutAt}, outcome{}},
		{"more than a file's worth: the first 10,000, the rest for the next file",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: sameDayMany(ach.MaxEntries + 1), At: cutAt},
			outcome{count: ach.MaxEntries}},
		{"returns owed go in whichever file comes first, traced after its payments",
			[]domain.Event{oneFile}, ach.Cut{ACHFileID: "achf_2", Originator: originator, Payments: []ach.Pending{sameDayA},
				Returns: []ach.ReturnOwed{owed("achr_1", "R03"), owed("achr_2", "R02")}, At: cutAt},
			outcome{events: []domain.Event{ach.FileCreated{ACHFileID: "achf_2", Day: "2026-11-27", Name: "ach-20261127-101500-B.ach",
				IDModifier: "B", Originator: originator, At: cutAt,
				Entries: []ach.Entry{entry(sameDayA, 4, "2026-11-27", "10:30")},
				Returns: []ach.Return{returned(owed("achr_1", "R03"), 5), returned(owed("achr_2", "R02"), 6)}}}}},
		{"returns alone make a file, even at a window that takes no payment",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{standard},
				Returns: []ach.ReturnOwed{owed("achr_1", "R03")}, At: cutAt},
			outcome{events: []domain.Event{ach.FileCreated{ACHFileID: "achf_1", Day: "2026-11-27", Name: "ach-20261127-101500-A.ach",
				IDModifier: "A", Originator: originator, At: cutAt, Returns: []ach.Return{returned(owed("achr_1", "R03"), 1)}}}}},
		{"a full file: the returns first, then as many payments as fit",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: sameDayMany(ach.MaxEntries),
				Returns: []ach.ReturnOwed{owed("achr_1", "R03")}, At: cutAt},
			outcome{count: ach.MaxEntries - 1}},
		{"an instant payment never goes in a file",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{sameDayA, instant}, At: cutAt},
			outcome{code: domain.CodeInternal}},
		{"an originator without a valid routing number",
			nil, ach.Cut{ACHFileID: "achf_1", Originator: ach.Originator{RoutingNumber: "021000022"}, Payments: []ach.Pending{sameDayA}, At: cutAt},
			outcome{code: domain.CodeInternal}},
		{"36 files already: no modifier left",
			manyFiles(36), ach.Cut{ACHFileID: "achf_x", Originator: originator, Payments: []ach.Pending{sameDayA}, At: cutAt},
			outcome{code: domain.CodeInvalidState}},
		{"35 files: the 36th is modifier 9",
			manyFiles(35), ach.Cut{ACHFileID: "achf_x", Originator: originator, Payments: []ach.Pending{sameDayA}, At: cutAt},
			outcome{events: []domain.Event{ach.FileCreated{ACHFileID: "achf_x", Day: "2026-11-27", Name: "ach-20261127-101500-9.ach",
				IDModifier: "9", Originator: originator, At: cutAt, Entries: []ach.Entry{entry(sameDayA, 36, "2026-11-27", "10:30")}}}}},
		{"no trace numbers left",
			[]domain.Event{ach.FileCreated{ACHFileID: "achf_0", Entries: make([]ach.Entry, ach.MaxTrace-1)}},
			ach.Cut{ACHFileID: "achf_1", Originator: originator, Payments: []ach.Pending{sameDayA, sameDayB}, At: cutAt},
			outcome{code: domain.CodeInvalidState}},
		{"transmitting a file of the day",
			[]domain.Event{oneFile}, ach.Transmit{ACHFileID: "achf_1", At: cutAt.Add(time.Second)},
			outcome{events: []domain.Event{ach.FileTransmitted{ACHFileID: "achf_1", At: cutAt.Add(time.Second)}}}},
		{"transmitting it again changes nothing (recovery wrote it twice)",
			[]domain.Event{oneFile, ach.FileTransmitted{ACHFileID: "achf_1", At: cutAt}}, ach.Transmit{ACHFileID: "achf_1", At: cutAt.Add(time.Minute)},
			outcome{}},
		{"transmitting a file the day does not have",
			[]domain.Event{oneFile}, ach.Transmit{ACHFileID: "achf_9", At: cutAt}, outcome{code: domain.CodeNotFound}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ach.Decide(fileOf(c.given...), c.when)
			if c.then.code != "" {
				var de *domain.Error
				if !errors.As(err, &de) || de.Code != c.then.code {
					t.Fatalf("got %v, %v; want error %s", got, err, c.then.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.then.count > 0 {
				cut := c.when.(ach.Cut)
				payments := cut.Payments
				if len(got) != 1 || len(got[0].(ach.FileCreated).Entries) != c.then.count ||
					len(got[0].(ach.FileCreated).Returns) != len(cut.Returns) ||
					got[0].(ach.FileCreated).Entries[c.then.count-1].PaymentID != payments[c.then.count-1].PaymentID {
					t.Fatalf("want one file of the first %d payments", c.then.count)
				}
				return
			}
			if !reflect.DeepEqual(got, c.then.events) {
				t.Fatalf("events:\n got %+v\nwant %+v", got, c.then.events)
			}
		})
	}
}

func TestUntransmittedAreTheFilesToWriteAgain(t *testing.T) {
	second := oneFile
	second.ACHFileID = "achf_2"
	d := fileOf(oneFile, second, ach.FileTransmitted{ACHFileID: "achf_1"})
	got := d.Untransmitted()
	if len(got) != 1 || got[0].ACHFileID != "achf_2" {
		t.Fatalf("Untransmitted = %+v", got)
	}
	if d.LastTrace != 6 {
		t.Errorf("LastTrace = %d, want 6", d.LastTrace)
	}
	// Folding does not change an earlier state (the caller may hold it).
	before := fileOf(oneFile, second)
	_ = ach.Evolve(before, ach.FileTransmitted{ACHFileID: "achf_2"})
	if len(before.Untransmitted()) != 2 {
		t.Error("Evolve changed the state it was given")
	}
}

func TestNextCut(t *testing.T) {
	cases := []struct {
		at       string
		want     string
		standard bool
	}{
		{"2026-11-27 09:00", "2026-11-27 10:15", false},
		{"2026-11-27 10:15", "2026-11-27 10:15", false},
		{"2026-11-27 10:16", "2026-11-27 14:30", false},
		{"2026-11-27 14:31", "2026-11-27 16:30", true},
		{"2026-11-25 16:31", "2026-11-27 10:15", false}, // Thanksgiving in between
		{"2026-11-28 12:00", "2026-11-30 10:15", false}, // a Saturday
		{"2026-12-24 17:00", "2026-12-28 10:15", false}, // Christmas, then a weekend
	}
	for _, c := range cases {
		at, standard := ach.NextCut(et(c.at))
		if !at.Equal(et(c.want)) || standard != c.standard {
			t.Errorf("NextCut(%s) = %s, %v; want %s, %v", c.at, at.In(rails.Eastern).Format("2006-01-02 15:04"), standard, c.want, c.standard)
		}
	}
}

func TestFileCreatedTotal(t *testing.T) {
	if got := oneFile.TotalCredit(); got != 3000 {
		t.Errorf("TotalCredit = %d", got)
	}
	withReturn := oneFile
	withReturn.Returns = []ach.Return{returned(owed("achr_1", "R03"), 4)}
	if got, n := withReturn.TotalCredit(), withReturn.EntryCount(); got != 3700 || n != 4 {
		t.Errorf("with a return: TotalCredit = %d, EntryCount = %d", got, n)
	}
	if d := fileOf(withReturn); d.LastTrace != 4 {
		t.Errorf("a return's trace is the day's too: LastTrace = %d", d.LastTrace)
	}
}

func TestCreditReturn(t *testing.T) {
	credit, debit := ach.Credit{Amount: 100}, ach.Credit{Amount: 100, Debit: true}
	cases := []struct {
		name          string
		entry         ach.Credit
		found, closed bool
		want          string
	}{
		{"an open (or frozen) account takes a credit", credit, true, false, ""},
		{"no account of that number: R03", credit, false, false, "R03"},
		{"a closed account: R02", credit, true, true, "R02"},
		{"a debit to an open account: R20, no debits", debit, true, false, "R20"},
		{"a debit to no account: R03", debit, false, false, "R03"},
		{"a debit to a closed account: R02", debit, true, true, "R02"},
	}
	for _, c := range cases {
		if got := ach.CreditReturn(c.entry, c.found, c.closed); got != c.want {
			t.Errorf("%s: got %q", c.name, got)
		}
	}
}
