package bank

import (
	"bytes"
	"testing"
	"time"

	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/rails"
)

func TestACHFileRendersTheCutAsTheBankReadsIt(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 15, 0, 0, rails.Eastern)
	originator := ach.Originator{RoutingNumber: "021000021", Origin: "1234567890", CompanyID: "9876543210", CompanyName: "Treasury Inc"}
	pending := func(id, platform, rail, name string, amount int64) ach.Pending {
		return ach.Pending{PaymentID: id, PlatformID: platform, Rail: rail, Amount: amount, AccountNumber: "000123456789",
			RoutingNumber: "011000015", Name: name, CreatedAt: at.Add(-time.Hour)}
	}
	events, err := ach.Decide(ach.Day{}, ach.Cut{ACHFileID: "achf_01", Originator: originator, Standard: true, At: at,
		Payments: []ach.Pending{
			pending("pay_01JX0000000000000000000001", "plt_b", "ach_same_day", "Zoë's Café, a very long business name", 1250),
			pending("pay_01JX0000000000000000000002", "plt_a", "ach_standard", "acme", 99),
			pending("pay_01JX0000000000000000000003", "plt_a", "ach_same_day", "Beta\tLLC", 5),
		}})
	if err != nil || len(events) != 1 {
		t.Fatalf("Decide = %v, %v", events, err)
	}
	cut := events[0].(ach.FileCreated)
	data, err := ACHFile(cut)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := ACHFile(cut)
	if !bytes.Equal(data, again) {
		t.Fatal("two renders of one cut differ")
	}
	f, err := nacha.Parse(data)
	if err != nil {
		t.Fatalf("the file does not read back: %v\n%s", err, data)
	}
	h := f.Header
	if h.ImmediateDestination != "021000021" || h.ImmediateOrigin != "1234567890" || h.IDModifier != 'A' ||
		h.OriginName != "TREASURY INC" || h.CreatedAt.Format("0601021504") != "2611271015" {
		t.Errorf("file header %+v", h)
	}
	type row struct{ date, name, trace string }
	var got [][]row
	for _, b := range f.Batches {
		bh := b.Header
		if bh.ServiceClass != 220 || bh.SEC != "CCD" || bh.EntryDescription != "PAYMENT" || bh.CompanyID != "9876543210" ||
			bh.CompanyName != "TREASURY INC" || bh.ODFI != "02100002" {
			t.Errorf("batch header %+v", bh)
		}
		var rows []row
		for _, e := range b.Entries {
			if e.TransactionCode != nacha.CheckingCredit || e.RDFI != "01100001" || e.CheckDigit != '5' || e.AccountNumber != "000123456789" {
				t.Errorf("entry %+v", e)
			}
			var paid *ach.Entry
			for i := range cut.Entries {
				if cut.Entries[i].TraceNumber == e.TraceNumber {
					paid = &cut.Entries[i]
				}
			}
			if paid == nil || e.Amount != paid.Amount || e.IdentificationNumber != paid.PaymentID[len(paid.PaymentID)-15:] {
				t.Errorf("entry %+v is not the cut's %+v", e, paid)
			}
			rows = append(rows, row{bh.EffectiveDate.Format(time.DateOnly), e.Name, e.TraceNumber})
		}
		got = append(got, rows)
	}
	want := [][]row{
		{{"2026-11-27", "BETA LLC", "021000020000001"}},
		{{"2026-11-30", "ACME", "021000020000002"}},
		{{"2026-11-27", "ZOE'S CAFE, A VERY LON", "021000020000003"}},
	}
	if len(got) != len(want) {
		t.Fatalf("batches %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != 1 || got[i][0] != want[i][0] {
			t.Errorf("batch %d: %v, want %v", i+1, got[i], want[i])
		}
	}
	if c := f.Control(); c.TotalCredit != 1250+99+5 || c.EntryAddendaCount != 3 {
		t.Errorf("file control %+v", c)
	}
	if cut.Name != "ach-20261127-101500-A.ach" {
		t.Errorf("name %s", cut.Name)
	}
}

// A counterparty's prenote is a zero-dollar prenote entry, 23 (33 to a
// savings account), that carries the counterparty's id; it adds nothing to
// the file's total.
func TestACHFileWritesPrenotes(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 15, 0, 0, rails.Eastern)
	originator := ach.Originator{RoutingNumber: "021000021", Origin: "1234567890", CompanyID: "9876543210", CompanyName: "Treasury Inc"}
	prenote := func(id string, savings bool) ach.Pending {
		return ach.Pending{CounterpartyID: id, Prenote: true, Savings: savings, PlatformID: "plt_a", Rail: "ach_same_day",
			AccountNumber: "000123456789", RoutingNumber: "011000015", Name: "Initech", CreatedAt: at.Add(-time.Minute)}
	}
	events, err := ach.Decide(ach.Day{}, ach.Cut{ACHFileID: "achf_01", Originator: originator, At: at,
		Payments: []ach.Pending{
			{PaymentID: "pay_01JX0000000000000000000001", PlatformID: "plt_a", Rail: "ach_same_day", Amount: 1250,
				AccountNumber: "000123456789", RoutingNumber: "011000015", Name: "Initech", CreatedAt: at.Add(-time.Hour)},
			prenote("cp_01JX00000000000000000000C1", false),
			prenote("cp_01JX00000000000000000000S2", true),
		}})
	if err != nil || len(events) != 1 {
		t.Fatalf("Decide = %v, %v", events, err)
	}
	data, err := ACHFile(events[0].(ach.FileCreated))
	if err != nil {
		t.Fatal(err)
	}
	f, err := nacha.Parse(data)
	if err != nil {
		t.Fatalf("the file does not read back: %v\n%s", err, data)
	}
	type row struct {
		code   int
		amount int64
		id     string
	}
	var got []row
	for _, b := range f.Batches {
		for _, e := range b.Entries {
			got = append(got, row{e.TransactionCode, e.Amount, e.IdentificationNumber})
		}
	}
	want := []row{{22, 1250, "000000000000001"}, {23, 0, "0000000000000C1"}, {33, 0, "0000000000000S2"}}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if c := f.Control(); c.TotalCredit != 1250 || c.EntryAddendaCount != 3 {
		t.Errorf("file control %+v", c)
	}
}

func TestACHFileRefusesWhatABankCouldNotTake(t *testing.T) {
	good := ach.FileCreated{ACHFileID: "achf_1", IDModifier: "A", At: time.Now(),
		Originator: ach.Originator{RoutingNumber: "021000021", Origin: "1234567890", CompanyID: "1", CompanyName: "T"},
		Entries: []ach.Entry{{Pending: ach.Pending{PaymentID: "pay_1", PlatformID: "plt_a", Amount: 1, AccountNumber: "1234",
			RoutingNumber: "011000015", Name: "A"}, TraceNumber: "021000020000001", EffectiveDate: "2026-11-27"}}}
	if _, err := ACHFile(good); err != nil {
		t.Fatalf("the good file: %v", err)
	}
	for name, change := range map[string]func(f *ach.FileCreated){
		"no originator routing number": func(f *ach.FileCreated) { f.Originator.RoutingNumber = "" },
		"a bad destination routing":    func(f *ach.FileCreated) { f.Entries[0].RoutingNumber = "01100001" },
		"a bad effective date":         func(f *ach.FileCreated) { f.Entries[0].EffectiveDate = "27/11/2026" },
		"an origin of 11 characters":   func(f *ach.FileCreated) { f.Originator.Origin = "12345678901" },
		"no modifier":                  func(f *ach.FileCreated) { f.IDModifier = "" },
	} {
		f := good
		f.Entries = append([]ach.Entry(nil), good.Entries...)
		change(&f)
		if _, err := ACHFile(f); err == nil {
			t.Errorf("%s: rendered", name)
		}
	}
}

func TestAsNACHA(t *testing.T) {
	for in, want := range map[string]string{
		"Zoë":                  "ZOE",
		"a\nb":                 "A B",
		"日本":                   "",
		"  padded  ":           "  PADDED",
		"exactly twenty-two c": "EXACTLY TWENTY-TWO C",
	} {
		if got := asNACHA(in, 22); got != want {
			t.Errorf("asNACHA(%q) = %q, want %q", in, got, want)
		}
	}
}
