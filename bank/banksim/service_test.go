package banksim_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank"
	"github.com/opentreasury/treasury/bank/banksim"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections/queries"
)

// The bank-sim against the service's own connector (bank.ACHOutbound and
// bank.ACHInbound, on a test database): what it answers is what the
// service applies, and the service's returns of credits come back to it.
func TestBankSimRoundTripWithTheService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := app.New(pgtest.Pool(t), nil, discard)
	c, va := livePlatform(t, ctx, a)
	scope := queries.Scope{PlatformID: c.PlatformID, Environment: domain.Live}

	want := map[string]string{"123456789": "", "4000000002": "R02", "4000000003": "R03", "4000000004": "R04",
		"4000000016": "R16", "4000000023": "R23", banksim.NOCAccount: "", "4000009912": ""}
	ids := map[string]string{}
	for acct := range want {
		key := domain.NewID("k_")
		res, err := a.CreatePayment(ctx, app.Meta{}, &app.Idempotency{Scope: c.PlatformID, Environment: "live", Key: key,
			Operation: "create_payment", RequestHash: key}, c, payment.Request{VirtualAccountID: va, Amount: 1000,
			Rail: "ach_same_day", Destination: payment.Destination{AccountNumber: acct, RoutingNumber: "011000015", Name: "Initech LLC"}})
		if err != nil {
			t.Fatal(err)
		}
		ids[acct] = res.ID
	}

	s := newSim(t)
	out := &bank.ACHOutbound{App: a, Outbox: s.Outbox, Log: discard, Originator: ach.Originator{RoutingNumber: banksim.DefaultRouting,
		Origin: "1234567890", CompanyID: "1234567890", CompanyName: "TREASURY"}}
	in := &bank.ACHInbound{App: a, Inbox: s.Inbox, Log: discard}
	if files, err := out.Cut(ctx, false); err != nil || len(files) != 1 {
		t.Fatalf("cut = %v, %v", files, err)
	}
	s.poll(t, 1)
	if n, err := in.Poll(ctx); err != nil || n != 1 {
		t.Fatalf("the service read the answer: %d, %v", n, err)
	}
	for acct, code := range want {
		p, err := queries.GetPayment(ctx, a.Pool, scope, ids[acct])
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case code != "":
			if p.Status != payment.StatusFailed || p.Failure == nil || p.Failure.NetworkCode != code {
				t.Errorf("a payment to %s: %s %+v, want failed %s", acct, p.Status, p.Failure, code)
			}
		case acct == banksim.NOCAccount:
			if p.Status != payment.StatusSubmitted || p.NotificationOfChange == nil ||
				*p.NotificationOfChange != (queries.ChangeView{Code: banksim.NOCCode, CorrectedData: banksim.CorrectedAccount}) {
				t.Errorf("a payment to %s: %s %+v", acct, p.Status, p.NotificationOfChange)
			}
		default:
			if p.Status != payment.StatusSubmitted || p.Failure != nil || p.NotificationOfChange != nil {
				t.Errorf("a payment to %s: %s %+v %+v, want submitted (it settles)", acct, p.Status, p.Failure, p.NotificationOfChange)
			}
		}
	}

	// A credit to the account and one to no account: the first applied,
	// the second returned R03 in the service's next file.
	v, err := queries.GetVirtualAccount(ctx, a.Pool, scope, va)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Credit(ctx, banksim.CreditRequest{AccountNumber: v.AccountNumber, Amount: 4242, OriginatorName: "Globex"},
		banksim.CreditRequest{AccountNumber: "999999999999", Amount: 500, OriginatorName: "Globex"}); err != nil {
		t.Fatal(err)
	}
	if n, err := in.Poll(ctx); err != nil || n != 1 {
		t.Fatalf("the service read the credits: %d, %v", n, err)
	}
	after, err := queries.GetVirtualAccount(ctx, a.Pool, scope, va)
	if err != nil {
		t.Fatal(err)
	}
	if after.Balance.Posted != v.Balance.Posted+4242 {
		t.Errorf("posted %d → %d", v.Balance.Posted, after.Balance.Posted)
	}
	if files, err := out.Cut(ctx, false); err != nil || len(files) != 1 {
		t.Fatalf("the cut of the return = %v, %v", files, err)
	}
	s.poll(t, 1)
	got := s.ServiceReturns()
	if len(got) != 1 || got[0].Code != "R03" || got[0].AccountNumber != "999999999999" || got[0].Amount != 500 ||
		got[0].OriginalTrace[:8] != banksim.DefaultOriginatorRouting[:8] {
		t.Errorf("the service's returns: %+v", got)
	}
	if n := len(files(t, s.inDir)); n != 0 {
		t.Errorf("the service's return was answered: %d files in the inbox", n)
	}
}

// livePlatform is a live platform with an approved, funded virtual
// account (as bank's tests make one).
func livePlatform(t *testing.T, ctx context.Context, a *app.App) (app.Caller, string) {
	t.Helper()
	must := func(_ app.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.RegisterPlatform(ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Acme", ContactEmail: "ops@acme.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	must(a.ApprovePlatform(ctx, app.Meta{}, res.ID))
	must(a.EnableLive(ctx, app.Meta{}, res.ID))
	c := app.Caller{PlatformID: res.ID, Environment: domain.Live}
	open, err := a.OpenVirtualAccount(ctx, app.Meta{}, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: "biz_1", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	addr := kyb.Address{Line1: "1 Main Street", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}
	sub, err := a.SubmitKYB(ctx, app.Meta{}, c, open.ID, kyb.Submission{
		Business: kyb.Business{LegalName: "Acme Widgets LLC", EIN: "12-3456789", EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE", Address: addr},
		BeneficialOwner: []kyb.Owner{{FirstName: "Jane", LastName: "Roe", DateOfBirth: "1980-05-17", SSNLast4: "1234",
			OwnershipPercentage: decimal.NewFromInt(60), IsControlPerson: true, Address: addr}},
	})
	if err != nil {
		t.Fatal(err)
	}
	head, err := eventstore.Head(ctx, a.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.KYBDecider(nil).CatchUpTo(ctx, head); err != nil { // live: to the review queue
		t.Fatal(err)
	}
	if err := a.DecideKYB(ctx, app.Meta{Actor: "operator"}, nil, kyb.Decide{VerificationID: sub.ID,
		Outcome: kyb.StatusApproved, Method: kyb.MethodManual, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	funds := int64(1_000_000)
	must(a.FundPlatform(ctx, app.Meta{}, nil, app.FundPlatform{PlatformID: c.PlatformID, Environment: domain.Live, Amount: &funds}))
	must(a.PostJournalEntry(ctx, app.Meta{}, nil, c, app.PostJournalEntry{Type: ledger.TypeAdjustment, Description: "funds",
		VirtualAccountID: open.ID, Direction: "credit", Amount: &funds}))
	return c, open.ID
}
