package projections_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// TestRevenueShareByHand: fees of completed payments by rail and interest
// on the average daily balance, each × the share rate, rounded
// half-to-even at the end of the line; the period crosses a month.
func TestRevenueShareByHand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	a := app.New(pool, nil, nil)
	reg, err := a.RegisterPlatform(ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Acme", ContactEmail: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApprovePlatform(ctx, app.Meta{}, reg.ID); err != nil {
		t.Fatal(err)
	}
	share, rate := "0.50", "0.0365"
	if err := a.ConfigurePlatform(ctx, app.Meta{}, reg.ID, platform.ConfigPatch{RevenueShareRate: domain.Some(share), InterestRate: domain.Some(rate)}); err != nil {
		t.Fatal(err)
	}
	c := app.Caller{PlatformID: reg.ID, Environment: domain.Sandbox}
	va, err := a.OpenVirtualAccount(ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: reg.ID, EntityRef: "biz", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	owner := kyb.Owner{FirstName: "Ann", LastName: "Lee", DateOfBirth: "1980-01-02", SSNLast4: "1234", IsControlPerson: true,
		Address: kyb.Address{Line1: "2 Oak Ave", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}}
	sub := kyb.Submission{Business: kyb.Business{LegalName: "Acme LLC", EIN: "12-3456789", EntityType: "llc", FormationDate: "2019-05-01",
		FormationState: "DE", Address: kyb.Address{Line1: "1 Main St", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}},
		BeneficialOwner: []kyb.Owner{owner}}
	if _, err := a.SubmitKYB(ctx, app.Meta{}, nil, c, va.ID, sub); err != nil {
		t.Fatal(err)
	}
	head, _ := eventstore.Head(ctx, pool)
	if err := a.KYBDecider(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatal(err)
	}
	if _, err := a.SimulateInboundTransfer(ctx, app.Meta{}, nil, c, app.SimulateInboundTransfer{VirtualAccountID: va.ID, Amount: 100_000,
		Rail: "rtp", Originator: inbound.Originator{Name: "Bob", AccountNumber: "123456789", RoutingNumber: "021000021"}}); err != nil {
		t.Fatal(err)
	}
	// Fees: ach_standard 25, rtp 50, fednow 45 (defaults); one each completed,
	// plus a second ach_standard, and a canceled rtp that must not count.
	pay := func(rail string, complete bool) {
		t.Helper()
		k := fmt.Sprintf("k-%s-%d", rail, time.Now().UnixNano())
		r, err := a.CreatePayment(ctx, app.Meta{}, &app.Idempotency{Scope: c.PlatformID, Environment: "sandbox", Key: k, Operation: "create_payment", RequestHash: k},
			c, payment.Request{VirtualAccountID: va.ID, Amount: 1_000, Rail: rail,
				Destination: payment.Destination{AccountNumber: "123456789", RoutingNumber: "021000021", Name: "Jane"}})
		if err != nil {
			t.Fatal(err)
		}
		if complete {
			err = a.CompletePayment(ctx, app.Meta{}, nil, r.ID)
		} else {
			err = a.CancelPayment(ctx, app.Meta{}, c, r.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	pay("ach_standard", true)
	pay("ach_standard", true)
	pay("rtp", true)
	pay("fednow", true)
	pay("rtp", false)
	head, _ = eventstore.Head(ctx, pool)
	if err := projections.CatchUp(ctx, pool, head, nil); err != nil {
		t.Fatal(err)
	}

	// Posted balance now: 100000 − 4 × 1000 − (25 + 25 + 50 + 45) = 95855;
	// before today, 0. Over 41 days ending today the sum of the daily
	// balances is 95855: interest = 0.0365 × 95855 / 365 = 9.5855 → 10;
	// average 95855 / 41 = 2337.93 → 2338.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, -40)
	if from.Month() == today.Month() {
		t.Fatalf("the period must cross a month: %s..%s", from, today)
	}
	v, err := queries.RevenueShare(ctx, pool, queries.Scope{PlatformID: c.PlatformID, Environment: domain.Sandbox}, from, today)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		source, rail           string
		count                  int64
		basis, gross, platform int64
	}
	wants := []want{
		{"payment_fees", "ach_standard", 2, 50, 50, 25},
		{"payment_fees", "fednow", 1, 45, 45, 22}, // 22.5 → 22 (half to even)
		{"payment_fees", "rtp", 1, 50, 50, 25},
		{"interest", "", 0, 2338, 10, 5}, // 9.5855 × 0.5 = 4.79275 → 5
	}
	if len(v.Lines) != len(wants) {
		t.Fatalf("lines %+v", v.Lines)
	}
	for i, w := range wants {
		l := v.Lines[i]
		rail := ""
		if l.Rail != nil {
			rail = *l.Rail
		}
		var count int64
		if l.Count != nil {
			count = *l.Count
		}
		if l.Source != w.source || rail != w.rail || count != w.count || l.BasisAmount != w.basis || l.GrossAmount != w.gross || l.PlatformShare != w.platform {
			t.Errorf("line %d = %+v (rail %q count %d), want %+v", i, l, rail, count, w)
		}
	}
	if v.TotalGross != 50+45+50+10 || v.TotalPlatformShare != 25+22+25+5 || v.ShareRate != "0.50" {
		t.Errorf("totals %d / %d, share %s", v.TotalGross, v.TotalPlatformShare, v.ShareRate)
	}
}
