package sandbox_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/sandbox"
)

// Helpers of the settler tests; their names start with "settler".

// settlerAllDue moves every scheduled action an hour earlier: all due now,
// in the same relative order.
func settlerAllDue(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	if _, err := pool.Exec(ctx, `UPDATE sandbox_schedule SET due_at = due_at - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
}

// settlerDrain runs SettleDue until the schedule is empty, for at most
// 60 s, and returns how many actions it performed.
func settlerDrain(t *testing.T, ctx context.Context, sim *sandbox.Simulator) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	total := 0
	for {
		n, err := sim.SettleDue(ctx)
		if err != nil {
			t.Fatalf("SettleDue: %v", err)
		}
		total += n
		if n == 0 && len(scheduled(t, ctx, sim.Pool)) == 0 {
			return total
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d actions still scheduled after 60 s", len(scheduled(t, ctx, sim.Pool)))
		}
	}
}

// settlerHistory is a payment's events as "type<-causation", in order.
func settlerHistory(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT event_type, coalesce(metadata->>'causation_id', '') FROM events
        WHERE stream_id = $1 ORDER BY stream_version`, payment.StreamID(id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, cause string
		if err := rows.Scan(&typ, &cause); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+"<-"+cause)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, " ")
}

// settlerACHHistory is what an ACH payment's log must read: submitted by
// its submission, then settled by its settlement.
func settlerACHHistory(id, outcome string) string {
	return "payment.created<- payment.submitted<-submit_payment:" + id + " payment." + outcome + "<-settle_payment:" + id
}

// ---------------------------------------------------------------------------

// A backlog of 240 due actions over 40 accounts — instant payments, ACH
// payments whose submission and settlement are both due, some failing,
// and ACH inbound transfers — is worked off by concurrent workers in
// batches smaller than the backlog: every action runs once, each ACH
// payment is submitted by its submission before its settlement settles it,
// and the books balance.
func TestSettleDueWorksOffABacklogConcurrently(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 2)
	ctx := s.ctx
	s.payApprove()
	const accounts, funds = 40, 100_000
	type acct struct {
		va, rtp, sameDay, standard, inbound string
		fails                               bool
	}
	var accs []acct
	for i := range accounts {
		a := acct{va: s.payOpen(funds), fails: i%5 == 0}
		dest := "123456789"
		if a.fails {
			dest = "4000000016" // R16 over ACH
		}
		a.rtp = s.payCreate(a.va, 1_000, "rtp", "123456789")
		a.sameDay = s.payCreate(a.va, 2_000, "ach_same_day", dest)
		a.standard = s.payCreate(a.va, 3_000, "ach_standard", "123456789")
		res, err := s.a.SimulateInboundTransfer(ctx, app.Meta{}, nil, s.c, app.SimulateInboundTransfer{
			VirtualAccountID: a.va, Amount: 500, Rail: "ach_same_day", Originator: originator})
		if err != nil {
			t.Fatal(err)
		}
		a.inbound = res.ID
		accs = append(accs, a)
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard, Workers: 8, Batch: 64}
	catchUp(t, ctx, sim)
	if n := len(scheduled(t, ctx, s.pool)); n != 6*accounts {
		t.Fatalf("%d actions scheduled, want %d", n, 6*accounts)
	}
	settlerAllDue(t, ctx, s.pool)

	// The pacer hears of the backlog: a round that claimed a full batch
	// leaves the settler behind; only the round that takes everything due
	// brings it back.
	sim.Pacer = eventstore.NewPacer(time.Second, time.Minute)
	sim.Pacer.Read(sandbox.SettlerName, time.Now().Add(-time.Hour), true)
	first, err := sim.SettleDue(ctx)
	if err != nil || first != 64 {
		t.Fatalf("first round: %d, %v; want a full batch of 64", first, err)
	}
	if lag, _ := sim.Pacer.Behind(time.Now()); lag < 59*time.Minute {
		t.Errorf("after a full round the settler is %v behind, want its old lag", lag)
	}
	if n := first + settlerDrain(t, ctx, sim); n != 6*accounts {
		t.Errorf("SettleDue performed %d actions, want each of the %d once", n, 6*accounts)
	}
	if lag, _ := sim.Pacer.Behind(time.Now()); lag > time.Minute {
		t.Errorf("after the backlog the settler is still %v behind", lag)
	}
	for _, a := range accs {
		if h := settlerHistory(t, ctx, s.pool, a.rtp); h != "payment.created<- payment.submitted<-settle_payment:"+a.rtp+
			" payment.completed<-settle_payment:"+a.rtp {
			t.Errorf("RTP %s: %s", a.rtp, h)
		}
		sameDay := "completed"
		if a.fails {
			sameDay = "failed"
		}
		for id, outcome := range map[string]string{a.sameDay: sameDay, a.standard: "completed"} {
			if h := settlerHistory(t, ctx, s.pool, id); h != settlerACHHistory(id, outcome) {
				t.Errorf("ACH %s: %s, want %s", id, h, settlerACHHistory(id, outcome))
			}
			if v := payView(t, ctx, s.pool, s.scope, id); v.Status != outcome || v.SubmittedAt == nil {
				t.Errorf("ACH %s: status %s, submitted at %v", id, v.Status, v.SubmittedAt)
			}
		}
		if st := transfer(t, ctx, s.pool, s.scope, a.inbound).Status; st != inbound.StatusCompleted {
			t.Errorf("inbound %s: %s", a.inbound, st)
		}
		spent := int64(1_050 + 3_025)
		if !a.fails {
			spent += 2_100
		}
		if b := balance(t, ctx, s.pool, a.va); b != (ledger.Balance{Posted: funds - spent + 500}) {
			t.Errorf("account %s: balance %+v, want posted %d and nothing pending", a.va, b, funds-spent+500)
		}
	}
	catchUp(t, ctx, sim) // the settlements' own events schedule nothing
	if n, err := sim.SettleDue(ctx); err != nil || n != 0 || len(scheduled(t, ctx, s.pool)) != 0 {
		t.Errorf("SettleDue after the backlog: %d, %v, schedule %v", n, err, scheduled(t, ctx, s.pool))
	}
	payCheckLedger(t, ctx, s.pool)
}

// Two due actions run side by side: both commands are seen waiting on the
// same locked balance rows at once (one at a time, only one ever waits).
// Ending the context while they wait stops RunSettler with nothing
// performed and no goroutine left behind; the actions run after the lease.
func TestSettlerRunsActionsSideBySideAndStopsWithItsContext(t *testing.T) {
	url := pgtest.URL(t)
	s := newSetup(t, url, 1, 1)
	ctx := s.ctx
	other, err := s.a.OpenVirtualAccount(ctx, app.Meta{}, nil, s.c, app.OpenVirtualAccount{PlatformID: s.c.PlatformID, EntityRef: "biz", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	vas := []string{s.va, other.ID}
	var itxs []string
	for _, va := range vas {
		res, err := s.a.SimulateInboundTransfer(ctx, app.Meta{}, nil, s.c, app.SimulateInboundTransfer{
			VirtualAccountID: va, Amount: 700, Rail: "ach_same_day", Originator: originator})
		if err != nil {
			t.Fatal(err)
		}
		itxs = append(itxs, res.ID)
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard, Poll: 10 * time.Millisecond}
	catchUp(t, ctx, sim)
	settlerAllDue(t, ctx, s.pool)

	// A transaction elsewhere holds both accounts' balance rows.
	blocker := newPool(t, url)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var pid int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM account_balances WHERE virtual_account_id = ANY($1) FOR UPDATE`, vas); err != nil {
		t.Fatal(err)
	}
	waiting := func() int {
		var n int
		if err := blocker.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	goroutines := runtime.NumGoroutine()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() { defer close(stopped); sim.RunSettler(runCtx) }()
	deadline := time.Now().Add(15 * time.Second)
	for waiting() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d command(s) waiting on the locked accounts, want both actions at once", waiting())
		}
		time.Sleep(10 * time.Millisecond)
	}

	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("RunSettler did not stop with its context")
	}
	for deadline := time.Now().Add(10 * time.Second); waiting() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the canceled commands still wait on the lock")
		}
	}
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after RunSettler stopped, %d before:\n%s", runtime.NumGoroutine(), goroutines, buf[:runtime.Stack(buf, true)])
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	sched := scheduled(t, ctx, s.pool)
	for _, id := range itxs {
		if st := transfer(t, ctx, s.pool, s.scope, id).Status; st != inbound.StatusPending {
			t.Errorf("%s is %s after its command was canceled", id, st)
		}
		if due, ok := sched["settle_inbound:"+id]; !ok || time.Until(due) < sandbox.Lease/2 {
			t.Errorf("%s: scheduled %v at %v, want leased", id, ok, due)
		}
	}

	// The lease runs out: both settle.
	settlerAllDue(t, ctx, s.pool)
	if n := settlerDrain(t, ctx, sim); n != 2 {
		t.Errorf("performed %d actions after the lease, want 2", n)
	}
	for i, id := range itxs {
		if st := transfer(t, ctx, s.pool, s.scope, id).Status; st != inbound.StatusCompleted {
			t.Errorf("%s is %s", id, st)
		}
		if b := balance(t, ctx, s.pool, vas[i]); b != (ledger.Balance{Posted: 700}) {
			t.Errorf("%s: balance %+v", vas[i], b)
		}
	}
}

// A payment's settlement does not overtake its submission while the
// submission is leased (running elsewhere, or failed and waiting out the
// lease), even though the settlement is due; once the lease runs out, the
// submission runs first.
func TestSettlementDoesNotOvertakeALeasedSubmission(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	s.payApprove()
	s.inbound(100_000, "rtp")
	ok := s.payCreate(s.va, 1_000, "ach_same_day", "123456789")
	bad := s.payCreate(s.va, 2_000, "ach_standard", "4000000003")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, ctx, sim)
	if _, err := s.pool.Exec(ctx, `UPDATE sandbox_schedule SET due_at = CASE action
        WHEN 'submit_payment' THEN now() + interval '20 seconds' ELSE now() - interval '1 minute' END`); err != nil {
		t.Fatal(err)
	}
	before := scheduled(t, ctx, s.pool)
	if n, err := sim.SettleDue(ctx); err != nil || n != 0 {
		t.Errorf("SettleDue with the submissions leased: %d, %v; want nothing performed", n, err)
	}
	for _, id := range []string{ok, bad} {
		if st := payView(t, ctx, s.pool, s.scope, id).Status; st != payment.StatusPending {
			t.Errorf("%s is %s while its submission is leased", id, st)
		}
	}
	if after := scheduled(t, ctx, s.pool); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("schedule changed: %v, was %v", after, before)
	}

	// The lease runs out: the submission is now due later than the
	// settlement, and still runs first.
	if _, err := s.pool.Exec(ctx, `UPDATE sandbox_schedule SET due_at = now() - interval '1 second' WHERE action = 'submit_payment'`); err != nil {
		t.Fatal(err)
	}
	if n := settlerDrain(t, ctx, sim); n != 4 {
		t.Errorf("performed %d actions, want 4", n)
	}
	for id, outcome := range map[string]string{ok: "completed", bad: "failed"} {
		if h := settlerHistory(t, ctx, s.pool, id); h != settlerACHHistory(id, outcome) {
			t.Errorf("%s: %s, want %s", id, h, settlerACHHistory(id, outcome))
		}
	}
	if b := balance(t, ctx, s.pool, s.va); b != (ledger.Balance{Posted: 100_000 - 1_100}) {
		t.Errorf("balance %+v", b)
	}
}

// A failing action waits out its lease and does not hold back the others;
// SettleDue counts the ones performed and returns the error.
func TestFailingActionWaitsOutItsLease(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	itx := s.inbound(800, "ach_same_day")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, ctx, sim)
	if _, err := s.pool.Exec(ctx, `INSERT INTO sandbox_schedule (id, action, due_at)
        VALUES ('refund_payment:pay_x', 'refund_payment', now() - interval '2 hours')`); err != nil {
		t.Fatal(err)
	}
	settlerAllDue(t, ctx, s.pool)
	n, err := sim.SettleDue(ctx)
	if n != 1 || err == nil || !strings.Contains(err.Error(), "refund_payment") {
		t.Errorf("SettleDue: %d, %v; want 1 performed and the failure", n, err)
	}
	if st := transfer(t, ctx, s.pool, s.scope, itx).Status; st != inbound.StatusCompleted {
		t.Errorf("the transfer is %s", st)
	}
	sched := scheduled(t, ctx, s.pool)
	if due, ok := sched["refund_payment:pay_x"]; len(sched) != 1 || !ok || time.Until(due) < sandbox.Lease/2 {
		t.Errorf("schedule %v, want only the failed action, leased", sched)
	}
	if n, err := sim.SettleDue(ctx); n != 0 || err != nil {
		t.Errorf("SettleDue during the lease: %d, %v", n, err)
	}
}

// Three settlers on one database (three replicas of serve) work off one
// backlog side by side, each claiming small rounds: every action runs once
// in all, each ACH payment is submitted by its submission before its
// settlement settles it, whichever replica claimed which (a settlement is
// never claimed while its payment's submission is leased elsewhere), and
// the books balance.
func TestSettlersOfSeveralReplicasShareOneBacklog(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 2)
	ctx := s.ctx
	s.payApprove()
	const accounts, funds = 24, 100_000
	var rtps, achs []string
	for range accounts {
		va := s.payOpen(funds)
		rtps = append(rtps, s.payCreate(va, 1_000, "rtp", "123456789"))
		achs = append(achs, s.payCreate(va, 2_000, "ach_same_day", "123456789"), s.payCreate(va, 3_000, "ach_standard", "123456789"))
	}
	schedule := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, ctx, schedule)
	want := len(rtps) + 2*len(achs) // an RTP payment settles in one action; ACH is submitted, then settled
	if n := len(scheduled(t, ctx, s.pool)); n != want {
		t.Fatalf("%d actions scheduled, want %d", n, want)
	}
	settlerAllDue(t, ctx, s.pool)

	performed := make(chan int, 3)
	for range 3 {
		sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard, Workers: 2, Batch: 7}
		go func() {
			total := 0
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) {
				n, err := sim.SettleDue(ctx)
				if err != nil {
					t.Errorf("SettleDue: %v", err)
					break
				}
				total += n
				if n == 0 && len(scheduled(t, ctx, s.pool)) == 0 {
					break
				}
			}
			performed <- total
		}()
	}
	total := 0
	var each []int
	for range 3 {
		n := <-performed
		each = append(each, n)
		total += n
	}
	if total != want {
		t.Errorf("the three settlers performed %v actions, %d in all, want each of the %d once", each, total, want)
	}
	working := 0
	for _, n := range each {
		if n > 0 {
			working++
		}
	}
	if working < 2 {
		t.Errorf("the settlers performed %v actions: one did all the work, so they were never side by side", each)
	}
	for _, id := range rtps {
		if h := settlerHistory(t, ctx, s.pool, id); h != "payment.created<- payment.submitted<-settle_payment:"+id+
			" payment.completed<-settle_payment:"+id {
			t.Errorf("RTP %s: %s", id, h)
		}
	}
	for _, id := range achs {
		if h := settlerHistory(t, ctx, s.pool, id); h != settlerACHHistory(id, "completed") {
			t.Errorf("ACH %s: %s, want %s", id, h, settlerACHHistory(id, "completed"))
		}
	}
	payCheckLedger(t, ctx, s.pool)
}
