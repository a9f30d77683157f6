package projections_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// paymentsAndKYB adds what the ledger workload lacks: a business verified
// (and a second account opened after it), payments that complete, fail,
// are canceled, and are submitted then completed.
func (e *env) paymentsAndKYB() {
	e.t.Helper()
	c := e.platform("Payer")
	va := e.openVA(c, "biz_pay")
	sub := kyb.Submission{Business: kyb.Business{LegalName: "Acme Widgets LLC", EIN: "12-3456789", EntityType: "llc",
		FormationDate: "2015-03-01", FormationState: "DE", Address: kyb.Address{Line1: "1 Main Street", City: "Dover",
			State: "DE", PostalCode: "19901", Country: "US"}}}
	sub.BeneficialOwner = []kyb.Owner{{FirstName: "Jane", LastName: "Roe", DateOfBirth: "1980-05-17", SSNLast4: "1234",
		OwnershipPercentage: decimal.NewFromInt(60), IsControlPerson: true, Address: sub.Business.Address}}
	if _, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, va, sub); err != nil {
		e.t.Fatalf("submit KYB: %v", err)
	}
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.a.KYBDecider(nil).CatchUpTo(e.ctx, head); err != nil {
		e.t.Fatalf("KYB decider: %v", err)
	}
	e.openVA(c, "biz_pay") // shows the business already approved
	e.must(e.inbound(c, va, 100_000, "rtp"))
	pay := func(rail, account string) string {
		k := fmt.Sprintf("%s-%s-%d", rail, account, rand.Int())
		res, err := e.a.CreatePayment(e.ctx, app.Meta{}, &app.Idempotency{Scope: c.PlatformID, Environment: "sandbox",
			Key: k, Operation: "create_payment", RequestHash: k}, c, payment.Request{VirtualAccountID: va, Amount: 150,
			Rail: rail, Destination: payment.Destination{AccountNumber: account, RoutingNumber: "021000021", Name: "Initech LLC"}})
		if err != nil {
			e.t.Fatalf("create %s payment: %v", rail, err)
		}
		return res.ID
	}
	steps := []error{
		e.a.SettleSandboxPayment(e.ctx, app.Meta{}, pay("rtp", "123456789")),
		e.a.SettleSandboxPayment(e.ctx, app.Meta{}, pay("rtp", "4000000002")),
		e.a.CancelPayment(e.ctx, app.Meta{}, c, pay("ach_standard", "123456789")),
	}
	submitted := pay("ach_same_day", "123456789")
	steps = append(steps, e.a.SubmitPayment(e.ctx, app.Meta{}, submitted), e.a.CompletePayment(e.ctx, app.Meta{}, nil, submitted))
	for i, err := range steps {
		if err != nil {
			e.t.Fatalf("payment step %d: %v", i, err)
		}
	}
	e.counterparties(c, va)
}

// counterparties saves counterparties, verifies them by sandbox prenote
// (one verified, one failed), pays one, deletes it while the payment is
// in flight, and completes the payment.
func (e *env) counterparties(c app.Caller, va string) {
	e.t.Helper()
	create := func(account string) string {
		res, err := e.a.CreateCounterparty(e.ctx, app.Meta{}, nil, c, counterparty.Request{Name: "Initech LLC",
			AccountNumber: account, RoutingNumber: "021000021", AccountType: "checking", Metadata: map[string]string{"k": account}})
		if err != nil {
			e.t.Fatalf("create counterparty: %v", err)
		}
		return res.ID
	}
	good, bad := create("987654321"), create("4000000003")
	create("123456789") // left unverified
	k := fmt.Sprintf("cp-%d", rand.Int())
	res, err := e.a.CreatePayment(e.ctx, app.Meta{}, &app.Idempotency{Scope: c.PlatformID, Environment: "sandbox",
		Key: k, Operation: "create_payment", RequestHash: k}, c, payment.Request{VirtualAccountID: va, Amount: 150,
		Rail: "ach_same_day", CounterpartyID: good})
	if err != nil {
		e.t.Fatalf("pay a counterparty: %v", err)
	}
	steps := []error{
		e.a.VerifyCounterparty(e.ctx, app.Meta{}, c, good, "prenote"),
		e.a.VerifyCounterparty(e.ctx, app.Meta{}, c, bad, "prenote"),
		e.a.SettleSandboxPrenote(e.ctx, app.Meta{}, good),
		e.a.SettleSandboxPrenote(e.ctx, app.Meta{}, bad),
		e.a.DeleteCounterparty(e.ctx, app.Meta{}, c, good),
		e.a.SubmitPayment(e.ctx, app.Meta{}, res.ID),
		e.a.CompletePayment(e.ctx, app.Meta{}, nil, res.ID),
	}
	for i, err := range steps {
		if err != nil {
			e.t.Fatalf("counterparty step %d: %v", i, err)
		}
	}
}

// A batch is folded in Go before anything is written: an entry recorded
// and posted (or archived, or reversed) in the same batch, a payment
// created and completed in it, must come out as one event at a time
// leaves them. Every batching of the same log — one event at a time, the
// whole log at once, random sizes, streams read from the log, from a
// replay's cache or from a live subscriber's bounded cache — must give the
// live tables row for row.
func TestEveryBatchingGivesTheSameRows(t *testing.T) {
	e := newEnv(t)
	e.workload(4, 40, 7)
	e.paymentsAndKYB()
	e.sync()
	types := map[string]bool{}
	rows, err := e.pool.Query(e.ctx, `SELECT DISTINCT event_type FROM events`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var typ string
		if err := rows.Scan(&typ); err != nil {
			t.Fatal(err)
		}
		types[typ] = true
	}
	for _, want := range []string{"ledger.journal_entry.recorded", "ledger.journal_entry.posted",
		"ledger.journal_entry.archived", "payment.completed", "payment.failed", "payment.canceled",
		"payment.submitted", "kyb.approved", "inbound_transfer.completed", "counterparty.created",
		"counterparty.verification_requested", "counterparty.verified", "counterparty.verification_failed", "counterparty.deleted"} {
		if !types[want] {
			t.Fatalf("the log has no %s event: the workload does not cover it", want)
		}
	}

	// Every public event's data is the text PostgreSQL prints for it as
	// jsonb (migration 00016: rows converted from jsonb equal new ones).
	var public, unlike int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*), count(*) FILTER (WHERE data <> data::jsonb::text)
        FROM public_events`).Scan(&public, &unlike); err != nil {
		t.Fatal(err)
	}
	if public < 100 || unlike != 0 {
		t.Fatalf("%d of %d public events differ from their data as jsonb text (want 0 of at least 100)", unlike, public)
	}

	r := rand.New(rand.NewPCG(1, 2))
	batchings := []struct {
		name  string
		next  func() int
		cache *projections.StreamCache
	}{
		{"one_at_a_time", func() int { return 1 }, nil},
		{"whole_log", func() int { return 1_000_000 }, nil},
		{"random", func() int { return 1 + r.IntN(40) }, nil},
		{"one_at_a_time_replay_cache", func() int { return 1 }, projections.NewReplayCache()},
		{"whole_log_replay_cache", func() int { return 1_000_000 }, projections.NewReplayCache()},
		{"random_live_cache", func() int { return 1 + r.IntN(40) }, projections.NewLiveCache(1000)},
		// A live cache that forgets all but three streams: most folds read
		// the log again, the rest come from what it kept.
		{"random_tiny_live_cache", func() int { return 1 + r.IntN(40) }, projections.NewLiveCache(3)},
	}
	for _, b := range batchings {
		schema := "batching_" + b.name
		if err := projections.ReplayInto(e.ctx, e.pool, schema, b.next, b.cache); err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		for _, table := range projections.AllTables() {
			var onlyLive, onlyReplay int64
			if err := e.pool.QueryRow(e.ctx, fmt.Sprintf(`SELECT
                    (SELECT count(*) FROM (SELECT * FROM public.%[1]s EXCEPT ALL SELECT * FROM %[2]s.%[1]s) x),
                    (SELECT count(*) FROM (SELECT * FROM %[2]s.%[1]s EXCEPT ALL SELECT * FROM public.%[1]s) y)`,
				table, schema)).Scan(&onlyLive, &onlyReplay); err != nil {
				t.Fatal(err)
			}
			if onlyLive+onlyReplay != 0 {
				t.Errorf("%s: %s has %d rows only live and %d only replayed", b.name, table, onlyLive, onlyReplay)
			}
		}
	}
}
