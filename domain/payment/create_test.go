package payment_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/rails"
)

// ---- DecideCreate: given inputs / when creating / then events or the first rule broken --

const (
	vaID      = "va_01jx0000000000000000000000"
	vaLedger  = "la_va"
	clearing  = "la_clearing_ach_standard"
	feeIncome = "la_fee_revenue"
)

// A Monday, 14:00 UTC (09:00 ET): next-day ACH settles Tuesday 08:30 ET.
var createdAt = time.Date(2026, 1, 12, 14, 0, 0, 0, time.UTC)

func limit(n int64) *int64 { return &n }

// createInputs is a payment every rule accepts: $10.00 over next-day ACH
// (default fee 25) out of an active, approved account holding $100.00, in
// live, with no daily limit. mod changes what a case is about.
func createInputs(mod func(*payment.CreateInputs)) payment.CreateInputs {
	n := 0
	in := payment.CreateInputs{
		Request:        request(nil),
		PlatformID:     "plt_x",
		Environment:    domain.Live,
		IdempotencyKey: "key-1",
		Account:        payment.Sender{ID: vaID, Status: "active", LedgerAccountID: vaLedger, Balance: ledger.Balance{Posted: 10000}},
		KYBStatus:      "approved",
		Settings:       platform.DefaultSettings(domain.Live),
		Chart: map[string]string{
			ledger.RailClearing("ach_standard"): clearing, ledger.RailClearing("ach_same_day"): "la_clearing_ach_same_day",
			ledger.RailClearing("rtp"): "la_clearing_rtp", ledger.RailClearing("fednow"): "la_clearing_fednow",
			ledger.CodeServiceFeeRevenue: feeIncome, ledger.CodePlatformOperating: "la_operating", ledger.CodePlatformFees: "la_fees",
		},
		Now: createdAt,
		IDs: payment.NewIDs{Payment: payID, JournalEntry: "je_hold",
			LedgerEntry: func() string { n++; return fmt.Sprintf("le_%d", n) }},
	}
	if mod != nil {
		mod(&in)
	}
	return in
}

// The accepted payment of createInputs(nil) with amount and fee.
func wantCreated(amount, fee int64) payment.Created {
	r := request(nil)
	return payment.Created{PaymentID: payID, PlatformID: "plt_x", Environment: domain.Live, VirtualAccountID: vaID,
		Amount: amount, Fee: fee, Rail: "ach_standard", Destination: r.Destination, IdempotencyKey: "key-1",
		Description: r.Description, Metadata: r.Metadata, JournalEntryID: "je_hold",
		ExpectedSettlementAt: time.Date(2026, 1, 13, 13, 30, 0, 0, time.UTC), At: createdAt}
}

// wantHold is the pending entry of createInputs(nil) with amount and fee:
// amount to the rail's clearing account, fee (when there is one) to fee
// revenue, both out of the virtual account.
func wantHold(amount, fee int64) ledger.Recorded {
	lines := []ledger.Line{
		{EntryID: "le_1", LedgerAccountID: vaLedger, VirtualAccountID: vaID, Direction: ledger.Debit, Amount: amount, Type: ledger.TypePayment},
		{EntryID: "le_2", LedgerAccountID: clearing, Direction: ledger.Credit, Amount: amount, Type: ledger.TypePayment},
	}
	if fee > 0 {
		lines = append(lines,
			ledger.Line{EntryID: "le_3", LedgerAccountID: vaLedger, VirtualAccountID: vaID, Direction: ledger.Debit, Amount: fee, Type: ledger.TypePaymentFee},
			ledger.Line{EntryID: "le_4", LedgerAccountID: feeIncome, Direction: ledger.Credit, Amount: fee, Type: ledger.TypePaymentFee})
	}
	return ledger.Recorded{JournalEntryID: "je_hold", PlatformID: "plt_x", Environment: domain.Live, Type: ledger.TypePayment,
		Description: "Invoice 42", Status: ledger.StatusPending, Lines: lines,
		Source: ledger.Source{Type: "payment", ID: payID}, EffectiveAt: createdAt, At: createdAt}
}

func accepted(amount, fee int64) []domain.Event {
	return []domain.Event{wantCreated(amount, fee), wantHold(amount, fee)}
}

// refusal is the error a case expects; message "" checks only that there is one.
type refusal struct {
	code       domain.Code
	resourceID string
	param      string
	message    string
}

var (
	notActive = func(status string) *refusal {
		return &refusal{domain.CodeAccountNotActive, vaID, "", "the virtual account is " + status + "; only active accounts send payments"}
	}
	notApproved = func(status string) *refusal {
		return &refusal{domain.CodeKYBNotApproved, vaID, "", "the business behind this account is not KYB approved (kyb_status " + status + ")"}
	}
	screened   = &refusal{domain.CodeComplianceRejected, "", "destination.name", "the destination name is on the screening list"}
	overLimit  = &refusal{domain.CodeLimitExceeded, vaID, "", "this payment would take the account past its daily payment limit"}
	noFunds    = &refusal{domain.CodeInsufficientFunds, vaID, "", "the virtual account's available balance is too low for this debit"}
	invalid    = func(param string) *refusal { return &refusal{domain.CodeInvalidRequest, "", param, ""} }
	brokenRule = &refusal{domain.CodeInternal, "", "", ""}
)

type createCase struct {
	name   string
	given  func(*payment.CreateInputs)
	events []domain.Event // when accepted
	err    *refusal       // when refused
}

// Givens, combined by the order cases.
var (
	closed       = func(in *payment.CreateInputs) { in.Account.Status = "closed" }
	frozen       = func(in *payment.CreateInputs) { in.Account.Status = "frozen" }
	kybPending   = func(in *payment.CreateInputs) { in.KYBStatus = "pending_review" }
	ofacName     = func(in *payment.CreateInputs) { in.Request.Destination.Name = "ofac test Holdings" }
	spentToLimit = func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit, in.SpentToday = limit(50000), 49001 }
	poor         = func(in *payment.CreateInputs) { in.Account.Balance = ledger.Balance{Posted: 1024} }
	badRail      = func(in *payment.CreateInputs) { in.Request.Rail = "wire" }
)

func all(mods ...func(*payment.CreateInputs)) func(*payment.CreateInputs) {
	return func(in *payment.CreateInputs) {
		for _, m := range mods {
			m(in)
		}
	}
}

func TestDecideCreate(t *testing.T) {
	cases := []createCase{
		{"every rule passes", nil, accepted(1000, 25), nil},

		// The request is valid.
		{"unknown rail", badRail, nil, invalid("rail")},
		{"amount over the rail's limit", func(in *payment.CreateInputs) { in.Request.Amount = 10_000_000_000 }, nil,
			&refusal{domain.CodeAmountExceedsRailLimit, "", "amount", ""}},

		// The account is active.
		{"closed account", closed, nil, notActive("closed")},
		{"frozen account", frozen, nil, notActive("frozen")},

		// Its business is KYB approved.
		{"KYB not started", func(in *payment.CreateInputs) { in.KYBStatus = "not_started" }, nil, notApproved("not_started")},
		{"KYB pending review", kybPending, nil, notApproved("pending_review")},
		{"KYB rejected", func(in *payment.CreateInputs) { in.KYBStatus = "rejected" }, nil, notApproved("rejected")},

		// The destination passes screening (in any case).
		{"screening hit", ofacName, nil, screened},
		{"screening hit in upper case", func(in *payment.CreateInputs) { in.Request.Destination.Name = "OFAC TEST" }, nil, screened},

		// The day's payments stay within the limit: at it passes, a cent over fails.
		{"no limit: what was spent does not count", func(in *payment.CreateInputs) { in.SpentToday = 1 << 40 }, accepted(1000, 25), nil},
		{"nothing spent, amount at the limit", func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit = limit(1000) }, accepted(1000, 25), nil},
		{"nothing spent, amount a cent over", func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit = limit(999) }, nil, overLimit},
		{"spent + amount at the limit", func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit, in.SpentToday = limit(50000), 49000 }, accepted(1000, 25), nil},
		{"spent + amount a cent over", spentToLimit, nil, overLimit},
		{"limit 0", func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit = limit(0) }, nil, overLimit},
		{"the fee does not count toward the limit", func(in *payment.CreateInputs) {
			in.Settings.DailyPaymentLimit, in.FeeSchedule = limit(1000), map[string]int64{"ach_standard": 500}
		}, accepted(1000, 500), nil},

		// The fee: the platform's schedule, else the rail's default.
		{"fee from the schedule", func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 7} }, accepted(1000, 7), nil},
		{"schedule names other rails only: default fee", func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"rtp": 7} }, accepted(1000, 25), nil},
		{"fee 0: no fee lines", func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 0} }, accepted(1000, 0), nil},

		// available ≥ amount + fee.
		{"available = amount + fee", func(in *payment.CreateInputs) { in.Account.Balance = ledger.Balance{Posted: 1025} }, accepted(1000, 25), nil},
		{"available a cent short", poor, nil, noFunds},
		{"pending outbound is not available", func(in *payment.CreateInputs) {
			in.Account.Balance = ledger.Balance{Posted: 2025, PendingOutbound: 1001}
		}, nil, noFunds},
		{"pending inbound is not available", func(in *payment.CreateInputs) {
			in.Account.Balance = ledger.Balance{Posted: 1024, PendingInbound: 5000}
		}, nil, noFunds},
		{"fee 0: available = amount", func(in *payment.CreateInputs) {
			in.Account.Balance, in.FeeSchedule = ledger.Balance{Posted: 1000}, map[string]int64{"ach_standard": 0}
		}, accepted(1000, 0), nil},
		{"the fee is held too", func(in *payment.CreateInputs) {
			in.Account.Balance, in.FeeSchedule = ledger.Balance{Posted: 1000}, map[string]int64{"ach_standard": 1}
		}, nil, noFunds},

		// A chart without the accounts the entry needs is a broken invariant, not a line to no account.
		{"no clearing account", func(in *payment.CreateInputs) { delete(in.Chart, ledger.RailClearing("ach_standard")) }, nil, brokenRule},
		{"no fee revenue account", func(in *payment.CreateInputs) { delete(in.Chart, ledger.CodeServiceFeeRevenue) }, nil, brokenRule},
		{"fee 0 needs no fee revenue account", func(in *payment.CreateInputs) {
			delete(in.Chart, ledger.CodeServiceFeeRevenue)
			in.FeeSchedule = map[string]int64{"ach_standard": 0}
		}, accepted(1000, 0), nil},

		// Order: the first rule broken is the one reported.
		{"invalid request beats a closed account", all(badRail, closed), nil, invalid("rail")},
		{"closed account beats unapproved KYB", all(closed, kybPending, ofacName, spentToLimit, poor), nil, notActive("closed")},
		{"unapproved KYB beats screening", all(kybPending, ofacName, spentToLimit, poor), nil, notApproved("pending_review")},
		{"screening beats the daily limit and funds", all(ofacName, spentToLimit, poor), nil, screened},
		{"screening beats insufficient funds", all(ofacName, poor), nil, screened},
		{"the daily limit beats insufficient funds", all(spentToLimit, poor), nil, overLimit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := createInputs(c.given)
			got, err := payment.DecideCreate(in)
			if c.err != nil {
				checkRefusal(t, got, err, *c.err)
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if !reflect.DeepEqual(got, c.events) {
				t.Fatalf("events:\n got %#v\nwant %#v", got, c.events)
			}
			if err := ledger.ValidateLines(got[1].(ledger.Recorded).Lines); err != nil {
				t.Errorf("the hold is not a balanced entry: %v", err)
			}
		})
	}
}

func checkRefusal(t *testing.T, got []domain.Event, err error, want refusal) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != want.code {
		t.Fatalf("got events %v, err %v; want error %s", got, err, want.code)
	}
	if got != nil {
		t.Errorf("an error must come with no events, got %v", got)
	}
	if de.ResourceID != want.resourceID || de.Param != want.param {
		t.Errorf("resource %q, param %q; want %q, %q", de.ResourceID, de.Param, want.resourceID, want.param)
	}
	if de.Message == "" || (want.message != "" && de.Message != want.message) {
		t.Errorf("message %q, want %q", de.Message, want.message)
	}
}

// CheckParties is DecideCreate's first rules and nothing else: the app runs
// it before reading what only the later rules need.
func TestCheckPartiesIsTheFirstRules(t *testing.T) {
	cases := []struct {
		name  string
		given func(*payment.CreateInputs)
		err   *refusal
	}{
		{"every party rule passes, later ones fail", all(spentToLimit, poor, func(in *payment.CreateInputs) { in.Chart = nil }), nil},
		{"closed", all(closed, kybPending, ofacName), notActive("closed")},
		{"KYB", all(kybPending, ofacName), notApproved("pending_review")},
		{"screening", ofacName, screened},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := payment.CheckParties(createInputs(c.given))
			if c.err == nil {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			checkRefusal(t, nil, err, *c.err)
		})
	}
}

// The fee of each rail when the schedule does not name it, and the entry
// credits that rail's clearing account.
func TestDecideCreateDefaultFeePerRail(t *testing.T) {
	for _, r := range rails.All {
		in := createInputs(func(in *payment.CreateInputs) { in.Request.Rail = r.String() })
		events, err := payment.DecideCreate(in)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		created, hold := events[0].(payment.Created), events[1].(ledger.Recorded)
		if created.Fee != rails.DefaultFee(r) || created.Rail != r.String() {
			t.Errorf("%s: fee %d on %s, want %d", r, created.Fee, created.Rail, rails.DefaultFee(r))
		}
		if hold.Lines[1].LedgerAccountID != in.Chart[ledger.RailClearing(r.String())] {
			t.Errorf("%s: credits %s, want the rail's clearing account", r, hold.Lines[1].LedgerAccountID)
		}
	}
}

// Expected settlement: the real calendar in live; in the sandbox, the
// platform's delays (instant rails at once), or the calendar when the
// environment has no sandbox settings.
func TestDecideCreateExpectedSettlement(t *testing.T) {
	delays := &platform.SandboxSettings{ACHSameDayDelaySeconds: 60, ACHStandardDelaySeconds: 300}
	nextDayACH := time.Date(2026, 1, 13, 13, 30, 0, 0, time.UTC)
	cases := []struct {
		name    string
		env     domain.Environment
		sandbox *platform.SandboxSettings
		rail    string
		want    time.Time
	}{
		{"live ACH: calendar", domain.Live, nil, "ach_standard", nextDayACH},
		{"live ignores sandbox delays", domain.Live, delays, "ach_standard", nextDayACH},
		{"live RTP: at once", domain.Live, nil, "rtp", createdAt},
		{"sandbox ACH: the delay", domain.Sandbox, delays, "ach_standard", createdAt.Add(300 * time.Second)},
		{"sandbox same-day ACH: its delay", domain.Sandbox, delays, "ach_same_day", createdAt.Add(60 * time.Second)},
		{"sandbox FedNow: at once", domain.Sandbox, delays, "fednow", createdAt},
		{"sandbox without settings: calendar", domain.Sandbox, nil, "ach_standard", nextDayACH},
	}
	for _, c := range cases {
		in := createInputs(func(in *payment.CreateInputs) {
			in.Environment, in.Settings.Sandbox, in.Request.Rail = c.env, c.sandbox, c.rail
		})
		events, err := payment.DecideCreate(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := events[0].(payment.Created).ExpectedSettlementAt; !got.Equal(c.want) {
			t.Errorf("%s: expected settlement %s, want %s", c.name, got, c.want)
		}
	}
}

func TestDecideCreateDescribesTheEntry(t *testing.T) {
	events, err := payment.DecideCreate(createInputs(func(in *payment.CreateInputs) { in.Request.Description = "" }))
	if err != nil {
		t.Fatal(err)
	}
	if got := events[1].(ledger.Recorded).Description; got != "Payment to Acme Supplies" {
		t.Errorf("entry description %q, want the default", got)
	}
	if got := events[0].(payment.Created).Description; got != "" {
		t.Errorf("payment description %q, want it as asked (empty)", got)
	}
}

// The decision reads only its inputs and leaves them as they were.
func TestDecideCreateIsPure(t *testing.T) {
	in := createInputs(func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 7} })
	first, err := payment.DecideCreate(in)
	if err != nil {
		t.Fatal(err)
	}
	again, err := payment.DecideCreate(createInputs(func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 7} }))
	if err != nil || !reflect.DeepEqual(first, again) {
		t.Fatalf("two decisions on equal inputs differ:\n%#v\n%#v (%v)", first, again, err)
	}
	want := createInputs(func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 7} })
	if !reflect.DeepEqual(in.Chart, want.Chart) || !reflect.DeepEqual(in.FeeSchedule, want.FeeSchedule) ||
		!reflect.DeepEqual(in.Request, want.Request) { // the maps it could write to; the rest is passed by value
		t.Errorf("DecideCreate changed its inputs")
	}
}

func TestDailyWindowIsTheUTCDay(t *testing.T) {
	// 23:30 in New York on the 12th is already the 13th in UTC.
	at := time.Date(2026, 1, 12, 23, 30, 0, 0, rails.Eastern)
	start, end := payment.DailyWindow(at)
	if want := time.Date(2026, 1, 13, 0, 0, 0, 0, time.UTC); !start.Equal(want) || !end.Equal(want.Add(24*time.Hour)) {
		t.Errorf("window [%s, %s), want the 13th UTC", start, end)
	}
}

// A payment of the approval threshold or more is held all the same, and
// waits for a second key: ApprovalRequired names the key that asked for it
// and ends ApprovalWindow later. One cent under the threshold goes as usual.
func TestDecideCreateAtTheApprovalThreshold(t *testing.T) {
	for _, tc := range []struct {
		given     string
		threshold *int64
		amount    int64
		waits     bool
	}{
		{"no threshold", nil, 1000, false},
		{"one cent under the threshold", limit(1001), 1000, false},
		{"exactly the threshold", limit(1000), 1000, true},
		{"over the threshold", limit(1), 1000, true},
	} {
		t.Run(tc.given, func(t *testing.T) {
			events, err := payment.DecideCreate(createInputs(func(in *payment.CreateInputs) {
				in.Settings.PaymentApprovalThreshold = tc.threshold
				in.Request.Amount = tc.amount
				in.CreatedBy = "key_creator"
			}))
			if err != nil {
				t.Fatal(err)
			}
			want := []domain.Event{wantCreated(tc.amount, 25), wantHold(tc.amount, 25)}
			if tc.waits {
				c := want[0].(payment.Created)
				c.RequiresApproval = true
				want[0] = c
				want = append(want, payment.ApprovalRequired{CreatedBy: "key_creator", ExpiresAt: createdAt.Add(7 * 24 * time.Hour), At: createdAt})
			}
			if !reflect.DeepEqual(events, want) {
				t.Fatalf("then\n%#v\nwant\n%#v", events, want)
			}
		})
	}
}
