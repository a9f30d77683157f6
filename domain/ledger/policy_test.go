package ledger_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
)

// counter names lines le_1, le_2, … in the order they are made.
func counter() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("le_%d", n) }
}

var chart = map[string]string{
	ledger.RailClearing("rtp"): "la_clearing_rtp", ledger.CodeServiceFeeRevenue: "la_revenue",
	ledger.CodePlatformOperating: "la_operating", ledger.CodePlatformFees: "la_fees",
}

func TestPaymentLines(t *testing.T) {
	from := ledger.Holder{VirtualAccountID: "va_1", LedgerAccountID: "la_va_1"}
	amount := func(id, la string, d ledger.Direction, n int64, typ string) ledger.Line {
		l := ledger.Line{EntryID: id, LedgerAccountID: la, Direction: d, Amount: n, Type: typ}
		if la == "la_va_1" {
			l.VirtualAccountID = "va_1"
		}
		return l
	}
	cases := []struct {
		name  string
		fee   int64
		chart map[string]string
		want  []ledger.Line
		code  domain.Code
	}{
		{"amount and fee", 50, chart, []ledger.Line{
			amount("le_1", "la_va_1", ledger.Debit, 1000, ledger.TypePayment),
			amount("le_2", "la_clearing_rtp", ledger.Credit, 1000, ledger.TypePayment),
			amount("le_3", "la_va_1", ledger.Debit, 50, ledger.TypePaymentFee),
			amount("le_4", "la_revenue", ledger.Credit, 50, ledger.TypePaymentFee),
		}, ""},
		{"no fee: two lines", 0, chart, []ledger.Line{
			amount("le_1", "la_va_1", ledger.Debit, 1000, ledger.TypePayment),
			amount("le_2", "la_clearing_rtp", ledger.Credit, 1000, ledger.TypePayment),
		}, ""},
		{"no clearing account for the rail", 50, map[string]string{ledger.CodeServiceFeeRevenue: "la_revenue"}, nil, domain.CodeInternal},
		{"no fee revenue account", 50, map[string]string{ledger.RailClearing("rtp"): "la_clearing_rtp"}, nil, domain.CodeInternal},
		{"no fee, no fee revenue account needed", 0, map[string]string{ledger.RailClearing("rtp"): "la_clearing_rtp"}, []ledger.Line{
			amount("le_1", "la_va_1", ledger.Debit, 1000, ledger.TypePayment),
			amount("le_2", "la_clearing_rtp", ledger.Credit, 1000, ledger.TypePayment),
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ledger.PaymentLines(from, c.chart, "rtp", 1000, c.fee, counter())
			if c.code != "" {
				wantCode(t, err, c.code, "")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("lines:\n got %+v\nwant %+v", got, c.want)
			}
			if err := ledger.ValidateLines(got); err != nil {
				t.Errorf("unbalanced: %v", err)
			}
		})
	}
}

func cents(n int64) *int64 { return &n }

func TestValidateManualLines(t *testing.T) {
	va := func(dir string, n *int64) ledger.ManualLine {
		return ledger.ManualLine{VirtualAccountID: "va_1", Direction: dir, Amount: n}
	}
	many := make([]ledger.ManualLine, ledger.MaxLines+1)
	for i := range many {
		many[i] = va("debit", cents(1))
	}
	cases := []struct {
		name  string
		lines []ledger.ManualLine
		param string // "" = valid
	}{
		{"valid", []ledger.ManualLine{va("debit", cents(1)), {LedgerAccountID: "la_x", Direction: "credit", Amount: cents(ledger.MaxAmount)}}, ""},
		{"at most MaxLines", many[:ledger.MaxLines], ""},
		{"one line too many", many, "lines"},
		{"no account", []ledger.ManualLine{va("debit", cents(1)), {Direction: "debit", Amount: cents(1)}}, "lines[1]"},
		{"both accounts", []ledger.ManualLine{{LedgerAccountID: "la_x", VirtualAccountID: "va_1", Direction: "debit", Amount: cents(1)}}, "lines[0]"},
		{"bad direction", []ledger.ManualLine{va("Debit", cents(1))}, "lines[0].direction"},
		{"no amount", []ledger.ManualLine{va("debit", nil)}, "lines[0].amount"},
		{"amount 0", []ledger.ManualLine{va("debit", cents(0))}, "lines[0].amount"},
		{"amount over MaxAmount", []ledger.ManualLine{va("debit", cents(ledger.MaxAmount+1))}, "lines[0].amount"},
		// The first bad field of the first bad line is reported.
		{"account before direction", []ledger.ManualLine{{Direction: "up", Amount: nil}}, "lines[0]"},
		{"direction before amount", []ledger.ManualLine{va("up", nil)}, "lines[0].direction"},
	}
	for _, c := range cases {
		err := ledger.ValidateManualLines(c.lines)
		if c.param == "" {
			if err != nil {
				t.Errorf("%s: unexpected %v", c.name, err)
			}
			continue
		}
		wantCode(t, err, domain.CodeInvalidRequest, c.param)
	}
}

func TestManualLines(t *testing.T) {
	known := map[string]ledger.KnownAccount{
		"la_va_2":     {Code: ledger.CodeVirtualAccount, VirtualAccountID: "va_2"},
		"la_fees":     {Code: ledger.CodePlatformFees},
		"la_operates": {Code: ledger.CodePlatformOperating},
		"la_clearing": {Code: ledger.RailClearing("rtp")},
		"la_revenue":  {Code: ledger.CodeServiceFeeRevenue},
	}
	line := func(la, va, dir string) ledger.ManualLine {
		return ledger.ManualLine{LedgerAccountID: la, VirtualAccountID: va, Direction: dir, Amount: cents(7)}
	}
	t.Run("accounts resolved", func(t *testing.T) {
		got, err := ledger.ManualLines([]ledger.ManualLine{
			line("", "va_1", "debit"), line("la_va_2", "", "credit"), line("la_fees", "", "credit"), line("la_operates", "", "debit"),
		}, known, ledger.TypeAdjustment, counter())
		if err != nil {
			t.Fatal(err)
		}
		want := []ledger.Line{
			{EntryID: "le_1", VirtualAccountID: "va_1", Direction: ledger.Debit, Amount: 7, Type: ledger.TypeAdjustment},
			// A virtual account's ledger account counts as the virtual account.
			{EntryID: "le_2", LedgerAccountID: "la_va_2", VirtualAccountID: "va_2", Direction: ledger.Credit, Amount: 7, Type: ledger.TypeAdjustment},
			{EntryID: "le_3", LedgerAccountID: "la_fees", Direction: ledger.Credit, Amount: 7, Type: ledger.TypeAdjustment},
			{EntryID: "le_4", LedgerAccountID: "la_operates", Direction: ledger.Debit, Amount: 7, Type: ledger.TypeAdjustment},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("lines:\n got %+v\nwant %+v", got, want)
		}
	})
	refused := []struct {
		name  string
		lines []ledger.ManualLine
		code  domain.Code
		param string
	}{
		{"unknown ledger account", []ledger.ManualLine{line("", "va_1", "debit"), line("la_other", "", "credit")}, domain.CodeNotFound, "lines[1].ledger_account_id"},
		{"rail clearing is the service's", []ledger.ManualLine{line("la_clearing", "", "debit")}, domain.CodeInvalidRequest, "lines[0].ledger_account_id"},
		{"fee revenue is the service's", []ledger.ManualLine{line("la_revenue", "", "debit")}, domain.CodeInvalidRequest, "lines[0].ledger_account_id"},
		{"the first bad line is reported", []ledger.ManualLine{line("la_revenue", "", "debit"), line("la_other", "", "credit")}, domain.CodeInvalidRequest, "lines[0].ledger_account_id"},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			got, err := ledger.ManualLines(c.lines, known, ledger.TypeAdjustment, counter())
			wantCode(t, err, c.code, c.param)
			if got != nil {
				t.Errorf("lines with an error: %v", got)
			}
		})
	}
}

func TestPostableByHand(t *testing.T) {
	for code, want := range map[string]bool{
		ledger.CodeVirtualAccount: true, ledger.CodePlatformOperating: true, ledger.CodePlatformFees: true,
		ledger.CodeServiceFeeRevenue: false, ledger.RailClearing("ach_standard"): false, ledger.CodeOperatorFunding: false,
	} {
		if got := ledger.PostableByHand(code); got != want {
			t.Errorf("PostableByHand(%s) = %v, want %v", code, got, want)
		}
	}
}

func TestShorthandLines(t *testing.T) {
	cases := []struct {
		typ    string
		dir    ledger.Direction
		offset string
	}{
		{ledger.TypeAdjustment, ledger.Credit, "la_operating"},
		{ledger.TypeCorrection, ledger.Debit, "la_operating"},
		{ledger.TypeFee, ledger.Debit, "la_fees"}, // a fee goes to platform_fees
	}
	for _, c := range cases {
		got, err := ledger.ShorthandLines("va_1", c.dir, 300, c.typ, chart, counter())
		if err != nil {
			t.Fatal(err)
		}
		want := []ledger.Line{
			{EntryID: "le_1", VirtualAccountID: "va_1", Direction: c.dir, Amount: 300, Type: c.typ},
			{EntryID: "le_2", LedgerAccountID: c.offset, Direction: c.dir.Opposite(), Amount: 300, Type: c.typ},
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s %s:\n got %+v\nwant %+v", c.typ, c.dir, got, want)
		}
	}
	_, err := ledger.ShorthandLines("va_1", ledger.Debit, 300, ledger.TypeFee, map[string]string{}, counter())
	wantCode(t, err, domain.CodeInternal, "")
}
