package ledger_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
)

var (
	t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t0.Add(2 * time.Hour)
)

func debit(va string, amount int64) ledger.Line {
	return ledger.Line{EntryID: "le_d", LedgerAccountID: "la_" + va, VirtualAccountID: va, Direction: ledger.Debit, Amount: amount, Type: ledger.TypeFee}
}

func credit(va string, amount int64) ledger.Line {
	return ledger.Line{EntryID: "le_c", LedgerAccountID: "la_" + va, VirtualAccountID: va, Direction: ledger.Credit, Amount: amount, Type: ledger.TypeFee}
}

// system is a line on a platform or system account (no virtual account).
func system(code string, d ledger.Direction, amount int64) ledger.Line {
	return ledger.Line{EntryID: "le_s", LedgerAccountID: "la_" + code, Direction: d, Amount: amount, Type: ledger.TypeFee}
}

func wantCode(t *testing.T, err error, code domain.Code, param string) *domain.Error {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want %s", err, code)
	}
	if de.Code != code || de.Param != param {
		t.Fatalf("err = %s (param %q): %v; want %s (param %q)", de.Code, de.Param, err, code, param)
	}
	return de
}

func TestValidateLines(t *testing.T) {
	big := ledger.MaxAmount
	cases := []struct {
		name  string
		lines []ledger.Line
		code  domain.Code
		param string
	}{
		{"two balanced", []ledger.Line{debit("a", 100), system("fees", ledger.Credit, 100)}, "", ""},
		{"many balanced", []ledger.Line{debit("a", 100), debit("b", 50), credit("c", 120), system("fees", ledger.Credit, 30)}, "", ""},
		{"max amount", []ledger.Line{debit("a", big), credit("b", big)}, "", ""},
		{"no lines", nil, domain.CodeInvalidRequest, "lines"},
		{"one line", []ledger.Line{debit("a", 100)}, domain.CodeInvalidRequest, "lines"},
		{"zero amount", []ledger.Line{debit("a", 0), credit("b", 0)}, domain.CodeInvalidRequest, "amount"},
		{"negative amount", []ledger.Line{debit("a", -5), credit("b", -5)}, domain.CodeInvalidRequest, "amount"},
		{"over max amount", []ledger.Line{debit("a", big+1), credit("b", big+1)}, domain.CodeInvalidRequest, "amount"},
		{"no direction", []ledger.Line{{Amount: 5}, credit("b", 5)}, domain.CodeInvalidRequest, "direction"},
		{"unbalanced", []ledger.Line{debit("a", 100), credit("b", 99)}, domain.CodeUnbalancedEntry, "lines"},
		{"debits only", []ledger.Line{debit("a", 100), debit("b", 100)}, domain.CodeUnbalancedEntry, "lines"},
		{"credits only", []ledger.Line{credit("a", 100), credit("b", 100)}, domain.CodeUnbalancedEntry, "lines"},
		{"unbalanced by a third line", []ledger.Line{debit("a", 100), credit("b", 100), credit("c", 1)}, domain.CodeUnbalancedEntry, "lines"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ledger.ValidateLines(c.lines)
			if c.code == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			wantCode(t, err, c.code, c.param)
		})
	}
}

func TestMirror(t *testing.T) {
	orig := []ledger.Line{
		{EntryID: "le_1", LedgerAccountID: "la_va", VirtualAccountID: "va_1", Direction: ledger.Debit, Amount: 300, Type: ledger.TypeFee},
		{EntryID: "le_2", LedgerAccountID: "la_fees", Direction: ledger.Credit, Amount: 300, Type: ledger.TypeFee},
	}
	keep := append([]ledger.Line(nil), orig...)
	n := 0
	ids := func() string { n++; return fmt.Sprintf("le_new%d", n) }

	got := ledger.Mirror(orig, ids, ledger.TypeCorrection)
	want := []ledger.Line{
		{EntryID: "le_new1", LedgerAccountID: "la_va", VirtualAccountID: "va_1", Direction: ledger.Credit, Amount: 300, Type: ledger.TypeCorrection},
		{EntryID: "le_new2", LedgerAccountID: "la_fees", Direction: ledger.Debit, Amount: 300, Type: ledger.TypeCorrection},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Mirror:\n got %+v\nwant %+v", got, want)
	}
	if !reflect.DeepEqual(orig, keep) {
		t.Errorf("Mirror changed its input: %+v", orig)
	}
	if err := ledger.ValidateLines(got); err != nil {
		t.Errorf("the mirror of a balanced entry must balance: %v", err)
	}
	// With no type, each line keeps its own.
	got = ledger.Mirror(orig, ids, "")
	for i := range got {
		if got[i].Type != orig[i].Type || got[i].Direction != orig[i].Direction.Opposite() || got[i].EntryID == orig[i].EntryID {
			t.Errorf("line %d: %+v", i, got[i])
		}
	}
	// Mirroring twice gives the original directions back.
	twice := ledger.Mirror(ledger.Mirror(orig, ids, ""), ids, "")
	for i := range twice {
		if twice[i].Direction != orig[i].Direction || twice[i].Amount != orig[i].Amount {
			t.Errorf("mirror of mirror, line %d: %+v", i, twice[i])
		}
	}
}

func TestBalanceArithmetic(t *testing.T) {
	start := ledger.Balance{Posted: 1000, PendingInbound: 200, PendingOutbound: 300}
	c, d := credit("a", 50), debit("a", 70)
	cases := []struct {
		name string
		got  ledger.Balance
		want ledger.Balance
	}{
		{"record posted credit", start.Record(c, ledger.StatusPosted), ledger.Balance{1050, 200, 300}},
		{"record posted debit", start.Record(d, ledger.StatusPosted), ledger.Balance{930, 200, 300}},
		{"record pending credit", start.Record(c, ledger.StatusPending), ledger.Balance{1000, 250, 300}},
		{"record pending debit", start.Record(d, ledger.StatusPending), ledger.Balance{1000, 200, 370}},
		{"record archived changes nothing", start.Record(c, ledger.StatusArchived), start},
		{"post pending credit", start.Record(c, ledger.StatusPending).Post(c), ledger.Balance{1050, 200, 300}},
		{"post pending debit", start.Record(d, ledger.StatusPending).Post(d), ledger.Balance{930, 200, 300}},
		{"archive pending credit", start.Record(c, ledger.StatusPending).Archive(c), start},
		{"archive pending debit", start.Record(d, ledger.StatusPending).Archive(d), start},
		{"post from zero", ledger.Balance{}.Post(c), ledger.Balance{50, -50, 0}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, c.got, c.want)
		}
	}
	// available = posted − pending_outbound: pending inbound funds do not count.
	if got := start.Available(); got != 700 {
		t.Errorf("Available = %d, want 700", got)
	}
	if got := start.Record(c, ledger.StatusPending).Available(); got != 700 {
		t.Errorf("a pending credit changed Available to %d", got)
	}
	if got := start.Record(d, ledger.StatusPending).Available(); got != 630 {
		t.Errorf("a pending debit: Available = %d, want 630", got)
	}
	// Record is by value: the receiver is unchanged.
	if start != (ledger.Balance{1000, 200, 300}) {
		t.Errorf("Record mutated its receiver: %+v", start)
	}
}

func TestCheckFunds(t *testing.T) {
	fees := func(d ledger.Direction, n int64) ledger.Line { return system("fees", d, n) }
	cases := []struct {
		name   string
		before map[string]ledger.Balance
		lines  []ledger.Line
		status string
		refuse string // the virtual account refused, if any
	}{
		{"debit within available", map[string]ledger.Balance{"a": {Posted: 100}},
			[]ledger.Line{debit("a", 100), fees(ledger.Credit, 100)}, ledger.StatusPosted, ""},
		{"debit beyond available", map[string]ledger.Balance{"a": {Posted: 100}},
			[]ledger.Line{debit("a", 101), fees(ledger.Credit, 101)}, ledger.StatusPosted, "a"},
		{"pending inbound does not count", map[string]ledger.Balance{"a": {Posted: 50, PendingInbound: 1000}},
			[]ledger.Line{debit("a", 51), fees(ledger.Credit, 51)}, ledger.StatusPosted, "a"},
		{"pending outbound is held", map[string]ledger.Balance{"a": {Posted: 100, PendingOutbound: 60}},
			[]ledger.Line{debit("a", 41), fees(ledger.Credit, 41)}, ledger.StatusPosted, "a"},
		{"pending outbound held, exact rest", map[string]ledger.Balance{"a": {Posted: 100, PendingOutbound: 60}},
			[]ledger.Line{debit("a", 40), fees(ledger.Credit, 40)}, ledger.StatusPosted, ""},
		{"pending debit (a hold) beyond available", map[string]ledger.Balance{"a": {Posted: 100}},
			[]ledger.Line{debit("a", 101), fees(ledger.Credit, 101)}, ledger.StatusPending, "a"},
		{"pending debit within available", map[string]ledger.Balance{"a": {Posted: 100}},
			[]ledger.Line{debit("a", 100), fees(ledger.Credit, 100)}, ledger.StatusPending, ""},
		{"unknown account counts as empty", map[string]ledger.Balance{},
			[]ledger.Line{debit("a", 1), fees(ledger.Credit, 1)}, ledger.StatusPosted, "a"},

		{"credit to an empty account", map[string]ledger.Balance{"a": {}},
			[]ledger.Line{credit("a", 500), fees(ledger.Debit, 500)}, ledger.StatusPosted, ""},
		{"credit to an overdrawn account is never refused", map[string]ledger.Balance{"a": {Posted: -10}},
			[]ledger.Line{credit("a", 5), fees(ledger.Debit, 5)}, ledger.StatusPosted, ""},
		{"pending credit never refused", map[string]ledger.Balance{"a": {Posted: -10, PendingOutbound: 5}},
			[]ledger.Line{credit("a", 5), fees(ledger.Debit, 5)}, ledger.StatusPending, ""},
		{"system accounts are not checked", map[string]ledger.Balance{},
			[]ledger.Line{fees(ledger.Debit, 1_000_000), system("operating", ledger.Credit, 1_000_000)}, ledger.StatusPosted, ""},

		// Net effect of several lines on one account.
		{"debit and credit on one empty account net to zero", map[string]ledger.Balance{"a": {}},
			[]ledger.Line{debit("a", 100), credit("a", 100)}, ledger.StatusPosted, ""},
		{"credit covers the debit in the same entry", map[string]ledger.Balance{"a": {Posted: 40}},
			[]ledger.Line{debit("a", 100), credit("a", 60), fees(ledger.Credit, 40)}, ledger.StatusPosted, ""},
		{"credit short of covering the debit", map[string]ledger.Balance{"a": {Posted: 39}},
			[]ledger.Line{debit("a", 100), credit("a", 60), fees(ledger.Credit, 40)}, ledger.StatusPosted, "a"},
		{"two debits together beyond available", map[string]ledger.Balance{"a": {Posted: 150}},
			[]ledger.Line{debit("a", 100), debit("a", 100), fees(ledger.Credit, 200)}, ledger.StatusPosted, "a"},
		{"two debits together within available", map[string]ledger.Balance{"a": {Posted: 200}},
			[]ledger.Line{debit("a", 100), debit("a", 100), fees(ledger.Credit, 200)}, ledger.StatusPosted, ""},
		{"pending credit does not cover a pending debit", map[string]ledger.Balance{"a": {}},
			[]ledger.Line{debit("a", 100), credit("a", 100)}, ledger.StatusPending, "a"},

		// Transfers between accounts: only the debited one is checked.
		{"transfer within available", map[string]ledger.Balance{"a": {Posted: 100}, "b": {Posted: -7}},
			[]ledger.Line{debit("a", 100), credit("b", 100)}, ledger.StatusPosted, ""},
		{"transfer beyond available", map[string]ledger.Balance{"a": {Posted: 99}, "b": {Posted: 1000}},
			[]ledger.Line{debit("a", 100), credit("b", 100)}, ledger.StatusPosted, "a"},
		{"second of two debited accounts short", map[string]ledger.Balance{"a": {Posted: 100}, "b": {Posted: 10}},
			[]ledger.Line{debit("a", 50), debit("b", 50), fees(ledger.Credit, 100)}, ledger.StatusPosted, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snapshot := map[string]ledger.Balance{}
			for k, v := range c.before {
				snapshot[k] = v
			}
			err := ledger.CheckFunds(c.before, c.lines, c.status)
			if !reflect.DeepEqual(snapshot, c.before) {
				t.Errorf("CheckFunds changed the balances it was given: %v", c.before)
			}
			if c.refuse == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			de := wantCode(t, err, domain.CodeInsufficientFunds, "")
			if de.ResourceID != c.refuse {
				t.Errorf("refused %q, want %q", de.ResourceID, c.refuse)
			}
		})
	}
}

func recorded(status string) ledger.Recorded {
	return ledger.Recorded{JournalEntryID: "je_1", PlatformID: "plt_x", Environment: domain.Sandbox, Type: ledger.TypeFee,
		Description: "fee", Status: status, Lines: []ledger.Line{debit("a", 5), system("fees", ledger.Credit, 5)},
		Source: ledger.Source{Type: "journal_entry", ID: "je_1"}, EffectiveAt: t0, At: t0}
}

func TestJournalStateAndCanReverse(t *testing.T) {
	cases := []struct {
		name     string
		given    []domain.Event
		status   string
		reversed string
		code     domain.Code // CanReverse's error, if any
	}{
		{"nothing", nil, "", "", domain.CodeInvalidState},
		{"posted", []domain.Event{recorded(ledger.StatusPosted)}, ledger.StatusPosted, "", ""},
		{"pending", []domain.Event{recorded(ledger.StatusPending)}, ledger.StatusPending, "", domain.CodeInvalidState},
		{"pending then posted", []domain.Event{recorded(ledger.StatusPending), ledger.Posted{JournalEntryID: "je_1", At: t1}},
			ledger.StatusPosted, "", ""},
		{"pending then archived", []domain.Event{recorded(ledger.StatusPending), ledger.Archived{JournalEntryID: "je_1", At: t1}},
			ledger.StatusArchived, "", domain.CodeInvalidState},
		{"already reversed", []domain.Event{recorded(ledger.StatusPosted), ledger.Reversed{JournalEntryID: "je_1", ReversedBy: "je_2", At: t1}},
			ledger.StatusPosted, "je_2", domain.CodeInvalidState},
		{"posted later, then reversed", []domain.Event{recorded(ledger.StatusPending), ledger.Posted{JournalEntryID: "je_1", At: t1},
			ledger.Reversed{JournalEntryID: "je_1", ReversedBy: "je_3", At: t2}}, ledger.StatusPosted, "je_3", domain.CodeInvalidState},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s ledger.State
			for _, e := range c.given {
				s = ledger.Evolve(s, e)
			}
			if s.Status != c.status || s.ReversedBy != c.reversed {
				t.Errorf("state: status %q reversed_by %q, want %q %q", s.Status, s.ReversedBy, c.status, c.reversed)
			}
			if len(c.given) > 0 && (s.ID != "je_1" || s.PlatformID != "plt_x" || s.Environment != domain.Sandbox ||
				s.Type != ledger.TypeFee || len(s.Lines) != 2) {
				t.Errorf("state lost the recorded entry: %+v", s)
			}
			err := s.CanReverse()
			if c.code == "" {
				if err != nil {
					t.Fatalf("CanReverse: %v", err)
				}
				return
			}
			de := wantCode(t, err, c.code, "")
			if c.reversed != "" && de.ResourceID != c.reversed {
				t.Errorf("already reversed: resource_id %q, want the reversing entry %q", de.ResourceID, c.reversed)
			}
		})
	}
}

func TestDirectionsCodesAndTypes(t *testing.T) {
	for _, s := range []string{"debit", "credit"} {
		d, ok := ledger.ParseDirection(s)
		if !ok || d.String() != s || d.Opposite().Opposite() != d || d.Opposite() == d {
			t.Errorf("direction %q: %v %v", s, d, ok)
		}
	}
	if _, ok := ledger.ParseDirection("Debit"); ok {
		t.Errorf("ParseDirection accepted Debit")
	}
	var d ledger.Direction
	if err := json.Unmarshal([]byte(`"sideways"`), &d); domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Errorf("bad direction decoded: %v", err)
	}
	normal := map[string]ledger.Direction{
		ledger.CodeVirtualAccount: ledger.Credit, ledger.CodePlatformOperating: ledger.Credit,
		ledger.CodePlatformFees: ledger.Credit, ledger.CodeServiceFeeRevenue: ledger.Credit,
		ledger.RailClearing("rtp"): ledger.Debit, ledger.RailClearing("ach_same_day"): ledger.Debit,
		"rail_clearing_": ledger.Credit,
	}
	for code, want := range normal {
		if got := ledger.NormalBalance(code); got != want {
			t.Errorf("NormalBalance(%q) = %v, want %v", code, got, want)
		}
	}
	for typ, manual := range map[string]bool{
		ledger.TypeAdjustment: true, ledger.TypeFee: true, ledger.TypeCorrection: true,
		ledger.TypeInboundTransfer: false, ledger.TypePayment: false, ledger.TypePaymentFee: false,
		ledger.TypePaymentReversal: false, "": false,
	} {
		if ledger.IsManualType(typ) != manual {
			t.Errorf("IsManualType(%q) = %v", typ, !manual)
		}
	}
}

func TestEventsRoundTrip(t *testing.T) {
	events := []domain.Event{
		recorded(ledger.StatusPending),
		ledger.Posted{JournalEntryID: "je_1", Lines: recorded("").Lines, At: t1},
		ledger.Archived{JournalEntryID: "je_1", Lines: recorded("").Lines, At: t1},
		ledger.Reversed{JournalEntryID: "je_1", ReversedBy: "je_2", At: t2},
		ledger.ChartOpened{PlatformID: "plt_x", Environment: domain.Live, Accounts: map[string]string{"platform_fees": "la_1"}, At: t0},
	}
	for _, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		back, err := domain.DecodeEvent(e.EventType(), b)
		if err != nil {
			t.Fatalf("%s: %v", e.EventType(), err)
		}
		if !reflect.DeepEqual(back, e) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", e.EventType(), back, e)
		}
	}
}

// A reversal is held to every rule of a balanced entry but today's bound
// on a line's amount, which its original may predate; sums that would
// overflow are refused, not wrapped into a false balance.
func TestValidateBalanced(t *testing.T) {
	huge := int64(math.MaxInt64 / 2)
	cases := []struct {
		name  string
		lines []ledger.Line
		code  domain.Code
	}{
		{"over today's bound, balanced", []ledger.Line{debit("a", ledger.MaxAmount*100), credit("b", ledger.MaxAmount*100)}, ""},
		{"one line", []ledger.Line{debit("a", 100)}, domain.CodeInvalidRequest},
		{"zero amount", []ledger.Line{debit("a", 0), credit("b", 0)}, domain.CodeInvalidRequest},
		{"no direction", []ledger.Line{{Amount: 5}, credit("b", 5)}, domain.CodeInvalidRequest},
		{"unbalanced", []ledger.Line{debit("a", 100), credit("b", 99)}, domain.CodeUnbalancedEntry},
		{"debits overflow", []ledger.Line{debit("a", huge), debit("b", huge), debit("c", huge), credit("d", 1)}, domain.CodeInvalidRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ledger.ValidateBalanced(c.lines)
			if got := domain.CodeOf(err); got != c.code {
				t.Fatalf("ValidateBalanced: %v, want code %q", err, c.code)
			}
		})
	}
}
