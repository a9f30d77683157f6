package sandbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/sandbox"
)

// Helpers of the payment tests; their names start with "pay".

// payRails are the four rails with their default fees (API.md §5).
var payRails = []struct {
	name string
	fee  int64
}{{"ach_standard", 25}, {"ach_same_day", 100}, {"rtp", 50}, {"fednow", 45}}

// payMagic is a magic destination account number and what each rail does
// with it (API.md §5): "" settles.
type payMagic struct {
	number, ach, rtp, fednow, code, action, suggested string
}

var payMagicNumbers = []payMagic{
	{"4000000002", "R02", "AC04", "AC04", "account_closed", "update_destination", ""},
	{"4000000003", "R03", "AC03", "AC03", "no_account", "update_destination", ""},
	{"4000000004", "R04", "AC02", "AC02", "invalid_account_number", "update_destination", ""},
	{"4000000016", "R16", "AC06", "AC06", "account_frozen", "contact_recipient", ""},
	{"4000000023", "R23", "CUST", "CUST", "credit_refused", "do_not_retry", ""},
	{"4000009912", "", "9912", "E997", "network_unavailable", "retry_other_rail", "ach_same_day"},
}

func (m payMagic) networkCode(rail string) string {
	switch rail {
	case "rtp":
		return m.rtp
	case "fednow":
		return m.fednow
	}
	return m.ach
}

// payApprove gets the setup's business KYB approved by the sandbox decider.
func (s *setup) payApprove() {
	s.t.Helper()
	addr := kyb.Address{Line1: "1 Main Street", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}
	sub := kyb.Submission{
		Business: kyb.Business{LegalName: "Acme Widgets LLC", EIN: "12-3456789", EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE", Address: addr},
		BeneficialOwner: []kyb.Owner{{FirstName: "Jane", LastName: "Roe", DateOfBirth: "1980-05-17", SSNLast4: "1234",
			OwnershipPercentage: decimal.NewFromInt(60), IsControlPerson: true, Address: addr}},
	}
	if _, err := s.a.SubmitKYB(s.ctx, app.Meta{}, nil, s.c, s.va, sub); err != nil {
		s.t.Fatalf("submit KYB: %v", err)
	}
	head, err := eventstore.Head(s.ctx, s.pool)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.a.KYBDecider(nil).CatchUpTo(s.ctx, head); err != nil {
		s.t.Fatalf("KYB decider: %v", err)
	}
}

// payOpen opens another account of the same (approved) business, funded.
func (s *setup) payOpen(funds int64) string {
	s.t.Helper()
	res, err := s.a.OpenVirtualAccount(s.ctx, app.Meta{}, nil, s.c, app.OpenVirtualAccount{PlatformID: s.c.PlatformID, EntityRef: "biz", Type: "checking"})
	if err != nil {
		s.t.Fatal(err)
	}
	if funds > 0 {
		if _, err := s.a.SimulateInboundTransfer(s.ctx, app.Meta{}, nil, s.c, app.SimulateInboundTransfer{
			VirtualAccountID: res.ID, Amount: funds, Rail: "rtp", Originator: originator}); err != nil {
			s.t.Fatalf("fund: %v", err)
		}
	}
	return res.ID
}

var payKeySeq atomic.Int64

// payCreate creates a payment from va and requires success.
func (s *setup) payCreate(va string, amount int64, rail, accountNumber string) string {
	s.t.Helper()
	k := fmt.Sprintf("pay-%d", payKeySeq.Add(1))
	res, err := s.a.CreatePayment(s.ctx, app.Meta{}, &app.Idempotency{Scope: s.c.PlatformID, Environment: "sandbox", Key: k,
		Operation: "create_payment", RequestHash: k}, s.c, payment.Request{VirtualAccountID: va, Amount: amount, Rail: rail,
		Destination: payment.Destination{AccountNumber: accountNumber, RoutingNumber: "021000021", Name: "Initech LLC"}})
	if err != nil {
		s.t.Fatalf("create %s payment to %s: %v", rail, accountNumber, err)
	}
	return res.ID
}

func payView(t *testing.T, ctx context.Context, pool *pgxpool.Pool, scope queries.Scope, id string) queries.PaymentView {
	t.Helper()
	v, err := queries.GetPayment(ctx, pool, scope, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func payFinal(status string) bool {
	return status == payment.StatusCompleted || status == payment.StatusFailed || status == payment.StatusCanceled
}

// paySettle performs due actions until every payment of ids is completed,
// failed or canceled, for at most 15 s, and returns how many actions ran.
func paySettle(t *testing.T, ctx context.Context, sim *sandbox.Simulator, scope queries.Scope, ids ...string) int {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	done := 0
	for {
		n, err := sim.SettleDue(ctx)
		if err != nil {
			t.Fatalf("settle due: %v", err)
		}
		done += n
		pending := 0
		for _, id := range ids {
			if !payFinal(payView(t, ctx, sim.Pool, scope, id).Status) {
				pending++
			}
		}
		if pending == 0 {
			return done
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d payments still unsettled after 15 s", pending, len(ids))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// payEventsOf counts a payment's events by type.
func payEventsOf(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) map[string]int {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT event_type, count(*) FROM events WHERE stream_id = $1 GROUP BY 1`, payment.StreamID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var typ string
		var n int
		if err := rows.Scan(&typ, &n); err != nil {
			t.Fatal(err)
		}
		out[typ] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// payCheckLedger catches the projections up and asserts Σ debits = Σ
// credits and that the balance rows equal the sums of their entries.
func payCheckLedger(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := projections.CatchUp(cctx, pool, head, nil); err != nil {
		t.Fatalf("catch up projections: %v", err)
	}
	var debits, credits int64
	var mismatched int
	if err := pool.QueryRow(ctx, `SELECT coalesce(sum(amount) FILTER (WHERE direction = 'debit'), 0),
        coalesce(sum(amount) FILTER (WHERE direction = 'credit'), 0) FROM ledger_entries`).Scan(&debits, &credits); err != nil {
		t.Fatal(err)
	}
	if debits != credits || debits == 0 {
		t.Errorf("Σ debits %d, Σ credits %d", debits, credits)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM account_balances b WHERE
        b.posted <> (SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0) FROM ledger_entries l
                     WHERE l.virtual_account_id = b.virtual_account_id AND l.status = 'posted')
        OR b.pending_outbound <> (SELECT coalesce(sum(amount), 0) FROM ledger_entries l
                     WHERE l.virtual_account_id = b.virtual_account_id AND l.status = 'pending' AND direction = 'debit')
        OR b.posted - b.pending_outbound < 0`).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Errorf("%d balance rows differ from their entries", mismatched)
	}
}

// ---------------------------------------------------------------------------

// Payments pending when the process dies still settle after it restarts:
// the simulator's schedule is in the database. A magic number still fails.
func TestPendingPaymentsSettleAfterRestart(t *testing.T) {
	url := pgtest.URL(t)
	s := newSetup(t, url, 1, 1)
	ctx := s.ctx
	s.payApprove()
	const funds = 100_000
	s.inbound(funds, "rtp")
	ok := map[string]int64{ // payment → amount + fee
		s.payCreate(s.va, 1_000, "ach_standard", "123456789"):  1_025,
		s.payCreate(s.va, 2_000, "ach_same_day", "123456789"):  2_100,
		s.payCreate(s.va, 3_000, "ach_same_day", "4000009912"): 3_100, // ACH settles it
		s.payCreate(s.va, 4_000, "rtp", "123456789"):           4_050,
	}
	bad := s.payCreate(s.va, 5_000, "ach_standard", "4000000016")
	var all []string
	var held int64
	for id, total := range ok {
		all = append(all, id)
		held += total
	}
	all = append(all, bad)
	held += 5_025
	if b := balance(t, ctx, s.pool, s.va); b != (ledger.Balance{Posted: funds, PendingOutbound: held}) {
		t.Fatalf("balance before settlement %+v", b)
	}

	// The first process schedules everything, then dies before settling.
	first := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, ctx, first)
	sched := scheduled(t, ctx, s.pool)
	for _, id := range all {
		v := payView(t, ctx, s.pool, s.scope, id)
		due, ok := sched["settle_payment:"+id]
		if !ok || !due.Equal(v.ExpectedSettlementAt.Time) {
			t.Errorf("%s %s: settle due %v (scheduled %v), want at the expected settlement %v", v.Rail, id, due, ok, v.ExpectedSettlementAt.Time)
		}
		if _, submit := sched["submit_payment:"+id]; submit != (v.Rail != "rtp") {
			t.Errorf("%s %s: submit scheduled %v", v.Rail, id, submit)
		}
	}
	if len(sched) != 2*len(all)-1 {
		t.Errorf("schedule %v", sched)
	}
	// One more payment is accepted but the process dies before the
	// simulator even saw it.
	late := s.payCreate(s.va, 6_000, "ach_same_day", "123456789")
	ok[late] = 6_100
	all = append(all, late)
	held += 6_100
	s.pool.Close()

	// A new process on the same database.
	pool := newPool(t, url)
	second := &sandbox.Simulator{App: app.New(pool, nil, discard), Pool: pool, Log: discard}
	for _, id := range all {
		if st := payView(t, ctx, pool, s.scope, id).Status; st != payment.StatusPending {
			t.Fatalf("after the restart, before any settling, %s is %s", id, st)
		}
	}
	catchUp(t, ctx, second) // the late payment
	if _, ok := scheduled(t, ctx, pool)["settle_payment:"+late]; !ok {
		t.Errorf("the restarted simulator did not schedule the payment it had not seen")
	}
	paySettle(t, ctx, second, s.scope, all...)
	for id := range ok {
		v := payView(t, ctx, pool, s.scope, id)
		if v.Status != payment.StatusCompleted || v.SubmittedAt == nil || v.CompletedAt == nil || v.Failure != nil {
			t.Errorf("%s %s after the restart: %+v", v.Rail, id, v)
		}
		if ev := payEventsOf(t, ctx, pool, id); ev["payment.submitted"] != 1 || ev["payment.completed"] != 1 || ev["payment.failed"] != 0 {
			t.Errorf("%s: events %v", id, ev)
		}
	}
	v := payView(t, ctx, pool, s.scope, bad)
	if v.Status != payment.StatusFailed || v.Failure == nil || v.Failure.Code != "account_frozen" || v.Failure.NetworkCode != "R16" ||
		v.Failure.Advice.Action != "contact_recipient" {
		t.Errorf("the magic number payment after the restart: %+v", v)
	}
	if b := balance(t, ctx, pool, s.va); b != (ledger.Balance{Posted: funds - held + 5_025}) {
		t.Errorf("balance after settlement %+v, want posted %d and nothing pending", b, funds-held+5_025)
	}
	if len(scheduled(t, ctx, pool)) != 0 {
		t.Errorf("actions left: %v", scheduled(t, ctx, pool))
	}
	// Running again, and scheduling the settlement's own events, does nothing.
	catchUp(t, ctx, second)
	if n, err := second.SettleDue(ctx); err != nil || n != 0 || len(scheduled(t, ctx, pool)) != 0 {
		t.Errorf("SettleDue after everything settled: %d, %v, schedule %v", n, err, scheduled(t, ctx, pool))
	}
	if n := countEvents(t, ctx, pool, "payment.completed") + countEvents(t, ctx, pool, "payment.failed"); n != len(all) {
		t.Errorf("%d settlement events, want %d", n, len(all))
	}
	payCheckLedger(t, ctx, pool)
}

// Every rail completes in the sandbox: RTP and FedNow at once, ACH after
// the delay; amount and fee post.
func TestSandboxPaymentsCompleteOnEveryRail(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 2)
	s.payApprove()
	const funds = 1_000_000
	s.inbound(funds, "rtp")
	ids := map[string]string{}
	var total int64
	for i, r := range payRails {
		amount := int64(10_000 * (i + 1))
		ids[r.name] = s.payCreate(s.va, amount, r.name, "123456789")
		total += amount + r.fee
		v := payView(t, s.ctx, s.pool, s.scope, ids[r.name])
		if v.Fee != r.fee {
			t.Errorf("%s fee %d, want %d", r.name, v.Fee, r.fee)
		}
		wait := v.ExpectedSettlementAt.Sub(v.CreatedAt.Time)
		want := map[string]time.Duration{"ach_standard": 2 * time.Second, "ach_same_day": time.Second}[r.name]
		if wait != want {
			t.Errorf("%s settles %v after creation, want %v", r.name, wait, want)
		}
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	// The instant rails are due at once.
	paySettle(t, s.ctx, sim, s.scope, ids["rtp"], ids["fednow"])
	for _, r := range []string{"ach_standard", "ach_same_day"} {
		// Only meaningful while the ACH delay has not passed (a slow
		// machine may have spent it settling the instant rails).
		v := payView(t, s.ctx, s.pool, s.scope, ids[r])
		if payFinal(v.Status) && v.ExpectedSettlementAt.After(time.Now()) {
			t.Errorf("%s is %s before its settlement time", r, v.Status)
		}
	}
	paySettle(t, s.ctx, sim, s.scope, ids["ach_standard"], ids["ach_same_day"])
	for r, id := range ids {
		v := payView(t, s.ctx, s.pool, s.scope, id)
		if v.Status != payment.StatusCompleted || v.SubmittedAt == nil || v.CompletedAt == nil {
			t.Errorf("%s: %+v", r, v)
		}
		if v.CompletedAt != nil && v.CompletedAt.Before(v.ExpectedSettlementAt.Time) {
			t.Errorf("%s completed at %v, before its expected settlement %v", r, v.CompletedAt, v.ExpectedSettlementAt)
		}
		// ACH is handed to the rail after sandbox.SubmitAfter.
		if v.SubmittedAt != nil && (r == "ach_standard" || r == "ach_same_day") && v.SubmittedAt.Sub(v.CreatedAt.Time) < sandbox.SubmitAfter {
			t.Errorf("%s submitted %v after creation, want at least %v", r, v.SubmittedAt.Sub(v.CreatedAt.Time), sandbox.SubmitAfter)
		}
	}
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{Posted: funds - total}) {
		t.Errorf("balance %+v, want posted %d", b, funds-total)
	}
	payCheckLedger(t, s.ctx, s.pool)
}

// Every magic number fails on every rail (but 4000009912 settles over
// ACH) with its failure code and advice, and the balance is restored
// exactly.
func TestSandboxMagicNumbersFailOnEveryRail(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	s.payApprove()
	type run struct {
		magic       payMagic
		rail        string
		funds, fee  int64
		account, id string
	}
	var runs []run
	var ids []string
	for _, m := range payMagicNumbers {
		for i, r := range payRails {
			x := run{magic: m, rail: r.name, fee: r.fee, funds: int64(2_000+i) + r.fee}
			x.account = s.payOpen(x.funds)
			x.id = s.payCreate(x.account, x.funds-x.fee, r.name, m.number)
			if b := balance(t, s.ctx, s.pool, x.account); b != (ledger.Balance{Posted: x.funds, PendingOutbound: x.funds}) {
				t.Fatalf("%s on %s: balance %+v after creation", m.number, r.name, b)
			}
			runs = append(runs, x)
			ids = append(ids, x.id)
		}
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	paySettle(t, s.ctx, sim, s.scope, ids...)
	for _, x := range runs {
		name := x.magic.number + " on " + x.rail
		v := payView(t, s.ctx, s.pool, s.scope, x.id)
		b := balance(t, s.ctx, s.pool, x.account)
		code := x.magic.networkCode(x.rail)
		if code == "" {
			if v.Status != payment.StatusCompleted || b != (ledger.Balance{}) {
				t.Errorf("%s: %s with balance %+v, want completed and empty", name, v.Status, b)
			}
			continue
		}
		if v.Status != payment.StatusFailed || v.FailedAt == nil || v.CompletedAt != nil || v.Failure == nil {
			t.Errorf("%s: %+v, want failed", name, v)
			continue
		}
		f := v.Failure
		if f.Code != x.magic.code || f.NetworkCode != code || f.Reason == "" || f.Advice.Action != x.magic.action ||
			f.Advice.SuggestedRail != x.magic.suggested {
			t.Errorf("%s: failure %+v, want code %s, network code %s, action %s, suggested rail %q",
				name, *f, x.magic.code, code, x.magic.action, x.magic.suggested)
		}
		if b != (ledger.Balance{Posted: x.funds}) {
			t.Errorf("%s: balance %+v, want exactly the %d funds back", name, b, x.funds)
		}
		if ev := payEventsOf(t, s.ctx, s.pool, x.id); ev["payment.failed"] != 1 || ev["payment.completed"] != 0 {
			t.Errorf("%s: events %v", name, ev)
		}
	}
	if len(scheduled(t, s.ctx, s.pool)) != 0 {
		t.Errorf("actions left: %v", scheduled(t, s.ctx, s.pool))
	}
	payCheckLedger(t, s.ctx, s.pool)
}

// With auto_settle off, ACH payments are submitted and then stay
// submitted — magic numbers too — until the simulation commands decide.
// Instant rails still settle.
func TestAutoSettleOffLeavesACHSubmitted(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	off := false
	if err := s.a.UpdateSettings(s.ctx, app.Meta{}, s.c.PlatformID, domain.Sandbox, platform.SettingsPatch{
		Sandbox: domain.Some(platform.SandboxSettingsPatch{AutoSettle: &off})}); err != nil {
		t.Fatal(err)
	}
	s.payApprove()
	const funds = 100_000
	s.inbound(funds, "rtp")
	std := s.payCreate(s.va, 1_000, "ach_standard", "123456789")
	same := s.payCreate(s.va, 2_000, "ach_same_day", "4000000002")
	rtp := s.payCreate(s.va, 3_000, "rtp", "123456789")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	sched := scheduled(t, s.ctx, s.pool)
	_, stdSettles := sched["settle_payment:"+std]
	_, sameSettles := sched["settle_payment:"+same]
	if len(sched) != 3 || stdSettles || sameSettles {
		t.Errorf("schedule with auto_settle off: %v, want the two submissions and the RTP settlement", sched)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(scheduled(t, s.ctx, s.pool)) > 0 {
		if _, err := sim.SettleDue(s.ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the submissions never ran: %v", scheduled(t, s.ctx, s.pool))
		}
		time.Sleep(25 * time.Millisecond)
	}
	for id, want := range map[string]string{std: payment.StatusSubmitted, same: payment.StatusSubmitted, rtp: payment.StatusCompleted} {
		if st := payView(t, s.ctx, s.pool, s.scope, id).Status; st != want {
			t.Errorf("%s is %s, want %s", id, st, want)
		}
	}
	// Past the expected settlement, nothing more happens.
	catchUp(t, s.ctx, sim)
	if n, err := sim.SettleDue(s.ctx); err != nil || n != 0 {
		t.Errorf("SettleDue: %d, %v", n, err)
	}
	if st := payView(t, s.ctx, s.pool, s.scope, std).Status; st != payment.StatusSubmitted {
		t.Errorf("ACH became %s without a simulation", st)
	}
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{Posted: funds - 3_050, PendingOutbound: 1_025 + 2_100}) {
		t.Errorf("balance %+v", b)
	}
	// Canceling a submitted payment is refused.
	if err := s.a.CancelPayment(s.ctx, app.Meta{}, s.c, std); domain.CodeOf(err) != domain.CodePaymentNotCancelable {
		t.Errorf("cancel a submitted payment: %v", err)
	}
	if err := s.a.CompletePayment(s.ctx, app.Meta{}, &s.c, std); err != nil {
		t.Fatal(err)
	}
	if err := s.a.FailPayment(s.ctx, app.Meta{}, &s.c, same, "R02"); err != nil {
		t.Fatal(err)
	}
	v := payView(t, s.ctx, s.pool, s.scope, same)
	if v.Status != payment.StatusFailed || v.Failure == nil || v.Failure.Code != "account_closed" {
		t.Errorf("simulated failure: %+v", v)
	}
	if st := payView(t, s.ctx, s.pool, s.scope, std).Status; st != payment.StatusCompleted {
		t.Errorf("simulated completion: %s", st)
	}
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{Posted: funds - 3_050 - 1_025}) {
		t.Errorf("balance %+v", b)
	}
	payCheckLedger(t, s.ctx, s.pool)
}

// A payment canceled while pending is left alone by the simulator: its
// submission and settlement do nothing, and the hold stays released.
func TestCanceledPaymentIsNotSettled(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	s.payApprove()
	s.inbound(10_000, "rtp")
	id := s.payCreate(s.va, 1_000, "ach_same_day", "123456789")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	if err := s.a.CancelPayment(s.ctx, app.Meta{}, s.c, id); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(scheduled(t, s.ctx, s.pool)) > 0 {
		if _, err := sim.SettleDue(s.ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("the actions never ran: %v", scheduled(t, s.ctx, s.pool))
		}
		time.Sleep(25 * time.Millisecond)
	}
	v := payView(t, s.ctx, s.pool, s.scope, id)
	if v.Status != payment.StatusCanceled || v.SubmittedAt != nil || v.CompletedAt != nil {
		t.Errorf("canceled payment after the simulator: %+v", v)
	}
	if ev := payEventsOf(t, s.ctx, s.pool, id); len(ev) != 2 || ev["payment.created"] != 1 || ev["payment.canceled"] != 1 {
		t.Errorf("events %v", ev)
	}
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{Posted: 10_000}) {
		t.Errorf("balance %+v", b)
	}
	payCheckLedger(t, s.ctx, s.pool)
}

// TestSandboxACHPaymentWaitsUntilDue: an ACH payment is not settled before
// its sandbox delay, however often the settler runs; its settlement is
// scheduled at the payment's expected_settlement_at.
func TestSandboxACHPaymentWaitsUntilDue(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 3600, 3600)
	s.payApprove()
	s.inbound(1_000_000, "rtp")
	id := s.payCreate(s.va, 10_000, "ach_same_day", "123456789")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	for range 3 {
		catchUp(t, s.ctx, sim)
		if _, err := sim.SettleDue(s.ctx); err != nil {
			t.Fatal(err)
		}
	}
	v := payView(t, s.ctx, s.pool, s.scope, id)
	if payFinal(v.Status) {
		t.Fatalf("ach_same_day is %s an hour before its settlement time", v.Status)
	}
	var found bool
	for key, due := range scheduled(t, s.ctx, s.pool) {
		if strings.HasSuffix(key, id) && due.Equal(v.ExpectedSettlementAt.Time) {
			found = true
		}
	}
	if !found || time.Until(v.ExpectedSettlementAt.Time) < 59*time.Minute {
		t.Errorf("no settlement of %s scheduled at its expected_settlement_at %s: %v", id, v.ExpectedSettlementAt, scheduled(t, s.ctx, s.pool))
	}
}
