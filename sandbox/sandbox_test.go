package sandbox_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/sandbox"
)

var originator = inbound.Originator{Name: "Payer Inc", AccountNumber: "000123456789", RoutingNumber: "021000021"}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

func newPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close) // Close is idempotent
	return pool
}

// setup is a platform with one virtual account, on the database at url.
type setup struct {
	t     *testing.T
	ctx   context.Context
	pool  *pgxpool.Pool
	a     *app.App
	c     app.Caller
	va    string
	scope queries.Scope
}

func newSetup(t *testing.T, url string, sameDayDelay, standardDelay int) *setup {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool := newPool(t, url)
	a := app.New(pool, nil, discard)
	res, err := a.RegisterPlatform(ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Sandboxed", ContactEmail: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApprovePlatform(ctx, app.Meta{}, res.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.UpdateSettings(ctx, app.Meta{}, res.ID, domain.Sandbox, platform.SettingsPatch{
		Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHSameDayDelaySeconds: &sameDayDelay, ACHStandardDelaySeconds: &standardDelay})}); err != nil {
		t.Fatal(err)
	}
	c := app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}
	acc, err := a.OpenVirtualAccount(ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: res.ID, EntityRef: "biz", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	return &setup{t: t, ctx: ctx, pool: pool, a: a, c: c, va: acc.ID, scope: queries.Scope{PlatformID: res.ID, Environment: domain.Sandbox}}
}

func (s *setup) inbound(amount int64, rail string) string {
	s.t.Helper()
	res, err := s.a.SimulateInboundTransfer(s.ctx, app.Meta{}, nil, s.c, app.SimulateInboundTransfer{
		VirtualAccountID: s.va, Amount: amount, Rail: rail, Originator: originator})
	if err != nil {
		s.t.Fatalf("inbound %s: %v", rail, err)
	}
	return res.ID
}

func balance(t *testing.T, ctx context.Context, pool *pgxpool.Pool, va string) ledger.Balance {
	t.Helper()
	var b ledger.Balance
	if err := pool.QueryRow(ctx, `SELECT posted, pending_inbound, pending_outbound FROM account_balances WHERE virtual_account_id = $1`, va).
		Scan(&b.Posted, &b.PendingInbound, &b.PendingOutbound); err != nil {
		t.Fatal(err)
	}
	return b
}

func scheduled(t *testing.T, ctx context.Context, pool *pgxpool.Pool) map[string]time.Time {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT id, due_at FROM sandbox_schedule`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var due time.Time
		if err := rows.Scan(&id, &due); err != nil {
			t.Fatal(err)
		}
		out[id] = due
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// catchUp runs the simulator's subscription up to the head of the log. (A
// plain CatchUp may stop early: readers see only events below the oldest
// transaction running anywhere on the server.)
func catchUp(t *testing.T, ctx context.Context, sim *sandbox.Simulator) {
	t.Helper()
	head, err := eventstore.Head(ctx, sim.Pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sim.Subscription(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("sandbox subscription: %v", err)
	}
}

func countEvents(t *testing.T, ctx context.Context, pool *pgxpool.Pool, eventType string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type = $1`, eventType).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func transfer(t *testing.T, ctx context.Context, pool *pgxpool.Pool, scope queries.Scope, id string) queries.InboundTransferView {
	t.Helper()
	v, err := queries.GetInboundTransfer(ctx, pool, scope, id)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An ACH transfer pending when the process dies still settles after it
// comes back: the schedule is in the database, not in the process.
func TestPendingACHSettlesAfterRestart(t *testing.T) {
	url := pgtest.URL(t)
	s := newSetup(t, url, 1, 3600)
	ctx := s.ctx
	const amount = 12_345

	itx := s.inbound(amount, "ach_same_day")
	if b := balance(t, ctx, s.pool, s.va); b != (ledger.Balance{PendingInbound: amount}) {
		t.Fatalf("balance before settlement %+v", b)
	}
	tv := transfer(t, ctx, s.pool, s.scope, itx)
	if tv.Status != inbound.StatusPending {
		t.Fatalf("ACH transfer status %s, want pending", tv.Status)
	}
	if d := tv.ExpectedSettlementAt.Sub(tv.CreatedAt.Time); d != time.Second {
		t.Errorf("expected settlement %v after creation, want the 1 s delay", d)
	}

	// The first process schedules the settlement, then dies before settling.
	first := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, ctx, first)
	before, err := first.Subscription(nil).Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sched := scheduled(t, ctx, s.pool)
	due, ok := sched["settle_inbound:"+itx]
	if len(sched) != 1 || !ok {
		t.Fatalf("schedule after catch-up: %v", sched)
	}
	if !due.Equal(tv.ExpectedSettlementAt.Time) {
		t.Errorf("due at %v, want the expected settlement %v", due, tv.ExpectedSettlementAt.Time)
	}
	// The crash: the simulator is dropped without settling, its pool closed.
	s.pool.Close()

	// A new process on the same database.
	pool := newPool(t, url)
	a := app.New(pool, nil, discard)
	second := &sandbox.Simulator{App: a, Pool: pool, Log: discard}
	if after, err := second.Subscription(nil).Checkpoint(ctx); err != nil || after != before {
		t.Errorf("the restarted subscription's checkpoint %+v (%v), want %+v", after, err, before)
	}
	if st := transfer(t, ctx, pool, s.scope, itx).Status; st != inbound.StatusPending {
		t.Fatalf("after the restart, before any settling, the transfer is %s", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	settled := 0
	for {
		n, err := second.SettleDue(ctx)
		if err != nil {
			t.Fatal(err)
		}
		settled += n
		if transfer(t, ctx, pool, s.scope, itx).Status == inbound.StatusCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the transfer did not settle within 10 s of the restart")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if settled != 1 {
		t.Errorf("SettleDue performed %d actions, want 1", settled)
	}
	if !time.Now().After(due) {
		t.Errorf("settled before it was due (%v)", due)
	}
	if b := balance(t, ctx, pool, s.va); b != (ledger.Balance{Posted: amount}) {
		t.Errorf("balance after settlement %+v, want posted %d and nothing pending", b, amount)
	}
	tv = transfer(t, ctx, pool, s.scope, itx)
	if tv.CompletedAt == nil {
		t.Errorf("completed transfer without completed_at")
	}
	je, err := queries.JournalEntryFromLog(ctx, pool, s.scope, tv.JournalEntryID)
	if err != nil {
		t.Fatal(err)
	}
	if je.Status != ledger.StatusPosted {
		t.Errorf("journal entry %s is %s, want posted", je.ID, je.Status)
	}
	if len(scheduled(t, ctx, pool)) != 0 {
		t.Errorf("the settled action is still scheduled")
	}

	// Running it again does nothing more.
	completed := countEvents(t, ctx, pool, "inbound_transfer.completed")
	posted := countEvents(t, ctx, pool, "ledger.journal_entry.posted")
	if n, err := second.SettleDue(ctx); err != nil || n != 0 {
		t.Errorf("second SettleDue: %d, %v", n, err)
	}
	catchUp(t, ctx, second) // the settlement's own events
	if len(scheduled(t, ctx, pool)) != 0 {
		t.Errorf("the settlement's events scheduled something")
	}
	if n, err := second.SettleDue(ctx); err != nil || n != 0 {
		t.Errorf("third SettleDue: %d, %v", n, err)
	}
	if completed != 1 || posted != 1 ||
		countEvents(t, ctx, pool, "inbound_transfer.completed") != completed ||
		countEvents(t, ctx, pool, "ledger.journal_entry.posted") != posted {
		t.Errorf("settlement events: completed %d, posted %d; want exactly 1 each", completed, posted)
	}
	if b := balance(t, ctx, pool, s.va); b != (ledger.Balance{Posted: amount}) {
		t.Errorf("balance after repeated settling %+v", b)
	}
}

// The process dies after the settlement committed but before its schedule
// row was deleted: the next process performs it again, harmlessly.
func TestSettlementRepeatedAfterCrashIsHarmless(t *testing.T) {
	url := pgtest.URL(t)
	s := newSetup(t, url, 0, 1)
	itx := s.inbound(500, "ach_standard")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	// The command ran (as the dying settler did) but the row stayed.
	if err := s.a.CompleteInboundTransfer(s.ctx, app.Meta{Actor: "sandbox"}, itx); err != nil {
		t.Fatal(err)
	}
	if len(scheduled(t, s.ctx, s.pool)) != 1 {
		t.Fatal("the action should still be scheduled")
	}
	s.pool.Close()

	pool := newPool(t, url)
	again := &sandbox.Simulator{App: app.New(pool, nil, discard), Pool: pool, Log: discard}
	deadline := time.Now().Add(10 * time.Second)
	for len(scheduled(t, s.ctx, pool)) > 0 {
		if _, err := again.SettleDue(s.ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the repeated settlement never ran")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if b := balance(t, s.ctx, pool, s.va); b != (ledger.Balance{Posted: 500}) {
		t.Errorf("balance %+v, want posted 500 once", b)
	}
	if n := countEvents(t, s.ctx, pool, "ledger.journal_entry.posted"); n != 1 {
		t.Errorf("the entry posted %d times", n)
	}
}

// Not yet due: nothing happens.
func TestSettlementWaitsUntilDue(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 3600, 3600)
	itx := s.inbound(900, "ach_standard")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	if due, ok := scheduled(t, s.ctx, s.pool)["settle_inbound:"+itx]; !ok || time.Until(due) < 59*time.Minute {
		t.Fatalf("schedule: %v", scheduled(t, s.ctx, s.pool))
	}
	if n, err := sim.SettleDue(s.ctx); err != nil || n != 0 {
		t.Fatalf("SettleDue before due: %d, %v", n, err)
	}
	if st := transfer(t, s.ctx, s.pool, s.scope, itx).Status; st != inbound.StatusPending {
		t.Errorf("status %s before due", st)
	}
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{PendingInbound: 900}) {
		t.Errorf("balance %+v", b)
	}
}

// RTP completes in the command itself and is never scheduled.
func TestRTPCompletesAtOnceAndIsNeverScheduled(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	itx := s.inbound(2500, "rtp")
	fed := s.inbound(100, "fednow")
	for _, id := range []string{itx, fed} {
		tv := transfer(t, s.ctx, s.pool, s.scope, id)
		if tv.Status != inbound.StatusCompleted || tv.CompletedAt == nil {
			t.Errorf("%s: status %s", id, tv.Status)
		}
	}
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{Posted: 2600}) {
		t.Errorf("balance %+v, want 2600 posted at once", b)
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	if sched := scheduled(t, s.ctx, s.pool); len(sched) != 0 {
		t.Errorf("instant transfers were scheduled: %v", sched)
	}
	if n, err := sim.SettleDue(s.ctx); err != nil || n != 0 {
		t.Errorf("SettleDue: %d, %v", n, err)
	}
	// A zero delay makes ACH instant too.
	zero := newSetup(t, pgtest.URL(t), 0, 0)
	ach := zero.inbound(300, "ach_same_day")
	if st := transfer(t, zero.ctx, zero.pool, zero.scope, ach).Status; st != inbound.StatusCompleted {
		t.Errorf("ACH with a zero delay: %s", st)
	}
	zsim := &sandbox.Simulator{App: zero.a, Pool: zero.pool, Log: discard}
	catchUp(t, zero.ctx, zsim)
	if sched := scheduled(t, zero.ctx, zero.pool); len(sched) != 0 {
		t.Errorf("zero-delay ACH was scheduled: %v", sched)
	}
}

// The simulator acts for the sandbox only: an event of the live
// environment is never scheduled, whatever it says.
func TestLiveEventsAreNeverScheduled(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	at := time.Now().UTC().Truncate(time.Microsecond)
	live := inbound.Received{InboundTransferID: domain.NewID(domain.PrefixInbound), VirtualAccountID: domain.NewID(domain.PrefixVirtualAccount),
		Amount: 100, Rail: "ach_standard", Originator: originator, JournalEntryID: domain.NewID(domain.PrefixJournalEntry),
		ExpectedAt: at.Add(-time.Minute).Add(2 * time.Second), At: at.Add(-time.Minute)}
	tx, err := s.pool.Begin(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eventstore.Append(s.ctx, tx, eventstore.Stream{ID: inbound.StreamID(live.InboundTransferID), Type: inbound.StreamType,
		PlatformID: s.c.PlatformID, Environment: domain.Live.String()}, 0, app.Meta{}, live); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(s.ctx); err != nil {
		t.Fatal(err)
	}
	// And a sandbox one alongside, which must be scheduled.
	sandboxed := s.inbound(100, "ach_standard")

	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard}
	catchUp(t, s.ctx, sim)
	sched := scheduled(t, s.ctx, s.pool)
	if _, ok := sched["settle_inbound:"+live.InboundTransferID]; ok {
		t.Errorf("a live transfer was scheduled by the sandbox")
	}
	if _, ok := sched["settle_inbound:"+sandboxed]; !ok || len(sched) != 1 {
		t.Errorf("schedule %v, want only the sandbox transfer", sched)
	}
	// Its due time has passed; settling does not touch it.
	deadline := time.Now().Add(10 * time.Second)
	for transfer(t, s.ctx, s.pool, s.scope, sandboxed).Status != inbound.StatusCompleted {
		if _, err := sim.SettleDue(s.ctx); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the sandbox transfer did not settle")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var n int
	if err := s.pool.QueryRow(s.ctx, `SELECT count(*) FROM events WHERE stream_id = $1`, inbound.StreamID(live.InboundTransferID)).Scan(&n); err != nil || n != 1 {
		t.Errorf("the live transfer's stream has %d events (%v), want 1 untouched", n, err)
	}
}

// RunSettler settles on its own and stops with its context.
func TestRunSettler(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	itx := s.inbound(4200, "ach_same_day")
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard, Poll: 10 * time.Millisecond}
	ctx, cancel := context.WithCancel(s.ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); sim.RunSettler(ctx) }()
	subDone := make(chan struct{})
	go func() { defer close(subDone); sim.Subscription(nil).Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for transfer(t, s.ctx, s.pool, s.scope, itx).Status != inbound.StatusCompleted {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("RunSettler did not settle within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("RunSettler did not stop with its context")
	}
	<-subDone
	if b := balance(t, s.ctx, s.pool, s.va); b != (ledger.Balance{Posted: 4200}) {
		t.Errorf("balance %+v", b)
	}
}
