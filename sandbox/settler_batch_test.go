package sandbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/sandbox"
)

// batchShape is what a payment's settlement wrote, with the ids and times
// left out: its events as "type<-causation" (the payment's id replaced by
// X) with a failure's code, its journal entry's events, and its view.
func batchShape(t *testing.T, ctx context.Context, s *setup, id string) string {
	t.Helper()
	v := payView(t, ctx, s.pool, s.scope, id)
	var je string
	if err := s.pool.QueryRow(ctx, `SELECT data->>'journal_entry_id' FROM events WHERE stream_id = $1 AND stream_version = 1`,
		payment.StreamID(id)).Scan(&je); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, stream := range []string{payment.StreamID(id), ledger.StreamID(je)} {
		rows, err := s.pool.Query(ctx, `SELECT event_type, coalesce(metadata->>'causation_id', ''), coalesce(metadata->>'actor', ''),
                coalesce(data->'failure'->>'code', '') FROM events WHERE stream_id = $1 ORDER BY stream_version`, stream)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var typ, cause, actor, code string
			if err := rows.Scan(&typ, &cause, &actor, &code); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s<-%s/%s%s", typ, strings.ReplaceAll(cause, id, "X"), actor, code))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	var failure string
	if v.Failure != nil {
		failure = fmt.Sprint(*v.Failure)
	}
	return fmt.Sprintf("%s | status %s submitted %v completed %v failed %v failure %s", strings.Join(out, " "),
		v.Status, v.SubmittedAt != nil, v.CompletedAt != nil, v.FailedAt != nil, failure)
}

// Given two accounts with the same payments — instant and ACH, settling
// and failing (magic numbers), some to be submitted and settled in one go,
// one submitted only, one already completed, one canceled — when one
// account's are settled one command at a time and the other's by one
// RunSandboxPaymentActions, then every payment has the same events (with
// the same metadata), journal entry events, view and balance.
func TestSandboxPaymentBatchWritesWhatOneAtATimeWrites(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	s.payApprove()
	type plan struct {
		rail, dest string
		actions    []string // "submit" / "settle", in order
		before     string   // "complete" or "cancel" before the rail acts
	}
	plans := []plan{
		{"rtp", "123456789", []string{"settle"}, ""},
		{"rtp", "4000000003", []string{"settle"}, ""},
		{"fednow", "4000009912", []string{"settle"}, ""},
		{"ach_same_day", "123456789", []string{"submit", "settle"}, ""},
		{"ach_standard", "4000000016", []string{"submit", "settle"}, ""},
		{"ach_standard", "123456789", []string{"submit"}, ""},
		{"ach_same_day", "4000000002", []string{"settle"}, ""},
		{"rtp", "123456789", []string{"settle"}, "complete"},
		{"ach_standard", "123456789", []string{"submit", "settle"}, "cancel"},
		{"rtp", "123456789", []string{"settle", "settle"}, ""},
	}
	one, batched := s.payOpen(100_000), s.payOpen(100_000)
	ids := map[string][]string{}
	for _, va := range []string{one, batched} {
		for i, p := range plans {
			id := s.payCreate(va, int64(1_000+i), p.rail, p.dest)
			switch p.before {
			case "complete":
				if err := s.a.CompletePayment(ctx, app.Meta{}, &s.c, id); err != nil {
					t.Fatal(err)
				}
			case "cancel":
				if err := s.a.CancelPayment(ctx, app.Meta{}, s.c, id); err != nil {
					t.Fatal(err)
				}
			}
			ids[va] = append(ids[va], id)
		}
	}
	meta := func(action, id string) app.Meta {
		return app.Meta{Actor: "sandbox", CausationID: action + "_payment:" + id}
	}
	var actions []app.SandboxPaymentAction
	for i, p := range plans {
		for _, act := range p.actions {
			id := ids[one][i]
			var err error
			if act == "submit" {
				err = s.a.SubmitPayment(ctx, meta(act, id), id)
			} else {
				err = s.a.SettleSandboxPayment(ctx, meta(act, id), id)
			}
			if err != nil {
				t.Fatalf("%s %s: %v", act, id, err)
			}
			bid := ids[batched][i]
			actions = append(actions, app.SandboxPaymentAction{PaymentID: bid, Submit: act == "submit", Meta: meta(act, bid)})
		}
	}
	if err := s.a.RunSandboxPaymentActions(ctx, actions); err != nil {
		t.Fatal(err)
	}

	for i, p := range plans {
		want, got := batchShape(t, ctx, s, ids[one][i]), batchShape(t, ctx, s, ids[batched][i])
		if got != want {
			t.Errorf("%s to %s %v:\nbatched    %s\none by one %s", p.rail, p.dest, p.actions, got, want)
		}
	}
	if b, w := balance(t, ctx, s.pool, batched), balance(t, ctx, s.pool, one); b != w {
		t.Errorf("balance after the batch %+v, one at a time %+v", b, w)
	}
	if b := balance(t, ctx, s.pool, one); b.PendingOutbound == 0 || b.Posted == 100_000 {
		t.Errorf("balance %+v: the plans should leave a payment pending and some posted", b)
	}
	payCheckLedger(t, ctx, s.pool)
}

// A batch in which one payment cannot be settled (it does not exist) rolls
// back; its payments are retried one by one at once, so the others settle
// in the same round and only the bad one waits out its lease.
func TestSettlerRetriesAFailedBatchOneByOne(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	s.payApprove()
	va := s.payOpen(50_000)
	var ids []string
	for range 5 {
		ids = append(ids, s.payCreate(va, 1_000, "rtp", "123456789"))
	}
	var logged strings.Builder
	var logMu sync.Mutex
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: slog.New(slog.NewTextHandler(&lockedWriter{&logMu, &logged}, nil))}
	catchUp(t, ctx, sim)
	if _, err := s.pool.Exec(ctx, `INSERT INTO sandbox_schedule (id, action, due_at)
        VALUES ('settle_payment:pay_missing', 'settle_payment', now() - interval '1 minute')`); err != nil {
		t.Fatal(err)
	}
	settlerAllDue(t, ctx, s.pool)
	n, err := sim.SettleDue(ctx)
	if n != 5 || err == nil || !strings.Contains(err.Error(), "pay_missing") {
		t.Errorf("SettleDue = %d, %v; want the 5 payments settled and pay_missing's error", n, err)
	}
	for _, id := range ids {
		if st := payView(t, ctx, s.pool, s.scope, id).Status; st != payment.StatusCompleted {
			t.Errorf("%s is %s", id, st)
		}
	}
	sched := scheduled(t, ctx, s.pool)
	if due, ok := sched["settle_payment:pay_missing"]; len(sched) != 1 || !ok || time.Until(due) < sandbox.Lease/2 {
		t.Errorf("schedule %v, want only pay_missing, leased", sched)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if !strings.Contains(logged.String(), "one by one") {
		t.Errorf("the failed batch was not logged: %q", logged.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Many goroutines create RTP payments on a few accounts through the API
// while the simulator schedules and settles them in batches. Neither side
// retries (MaxAttempts 1), so a deadlock between the settler's batches and
// the API's payments, or between two batches, would surface as an error:
// none does, every payment completes, and every balance is exact.
func TestBatchedSettlerKeepsUpWithConcurrentPayments(t *testing.T) {
	url := pgtest.URL(t)
	s := newSetup(t, url, 1, 1)
	ctx := s.ctx
	s.payApprove()
	const (
		accounts   = 3
		goroutines = 12
		perG       = 25
		funds      = 1_000_000
		amount     = 100
		fee        = 50 // RTP's default fee
	)
	var vas []string
	for range accounts {
		vas = append(vas, s.payOpen(funds))
	}
	s.a.MaxAttempts = 1
	settlerApp := app.New(newPool(t, url), nil, discard)
	settlerApp.MaxAttempts = 1
	var warnings atomic.Int64
	log := slog.New(countingHandler{slog.NewTextHandler(os.Stderr, nil), &warnings})
	sim := &sandbox.Simulator{App: settlerApp, Pool: settlerApp.Pool, Log: log, Poll: 5 * time.Millisecond, PaymentBatch: 8}

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bg sync.WaitGroup
	bg.Go(func() { sim.RunSettler(runCtx) })
	sub := sim.Subscription(nil)
	sub.PollInterval = 5 * time.Millisecond
	bg.Go(func() { sub.Run(runCtx) })

	var (
		mu   sync.Mutex
		ids  []string
		errs []error
		wg   sync.WaitGroup
	)
	perAccount := make([]atomic.Int64, accounts)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perG {
				k := (g + i) % accounts
				key := fmt.Sprintf("conc-%d-%d", g, i)
				res, err := s.a.CreatePayment(ctx, app.Meta{}, &app.Idempotency{Scope: s.c.PlatformID, Environment: "sandbox", Key: key,
					Operation: "create_payment", RequestHash: key}, s.c, payment.Request{VirtualAccountID: vas[k], Amount: amount, Rail: "rtp",
					Destination: payment.Destination{AccountNumber: "123456789", RoutingNumber: "021000021", Name: "Initech LLC"}})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, res.ID)
					perAccount[k].Add(1)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d payments refused, first: %v", len(errs), errs[0])
	}

	// Bounded poll: every payment completes.
	deadline := time.Now().Add(60 * time.Second)
	for {
		var open int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE id = ANY($1) AND status <> 'completed'`, ids).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d payments not completed after 60 s", open, len(ids))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	bg.Wait()

	if w := warnings.Load(); w > 0 {
		t.Errorf("the settler logged %d warnings (failed batches or steps)", w)
	}
	for k, va := range vas {
		want := ledger.Balance{Posted: funds - perAccount[k].Load()*(amount+fee)}
		if b := balance(t, ctx, s.pool, va); b != want {
			t.Errorf("account %s: balance %+v, want %+v", va, b, want)
		}
	}
	var completed int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type = 'payment.completed'
        AND stream_id = ANY(SELECT 'payment-' || unnest($1::text[]))`, ids).Scan(&completed); err != nil {
		t.Fatal(err)
	}
	if completed != goroutines*perG {
		t.Errorf("%d completions, want one for each of the %d payments", completed, goroutines*perG)
	}
	payCheckLedger(t, ctx, s.pool)
}

type countingHandler struct {
	slog.Handler
	warnings *atomic.Int64
}

func (h countingHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.warnings.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

// Given a settler whose poll is an hour, when an RTP payment is created,
// then it completes at once: the subscription's commit of its plan wakes
// the settler.
func TestSchedulingWakesTheSettler(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	s.payApprove()
	va := s.payOpen(10_000)
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Log: discard, Poll: time.Hour}
	runCtx, cancel := context.WithCancel(ctx)
	var bg sync.WaitGroup
	defer func() { cancel(); bg.Wait() }()
	bg.Go(func() { sim.RunSettler(runCtx) })
	sub := sim.Subscription(nil)
	sub.PollInterval = 5 * time.Millisecond
	bg.Go(func() { sub.Run(runCtx) })

	for i := range 3 { // more than once: the wake-up is not used up
		id := s.payCreate(va, 100, "rtp", "123456789")
		deadline := time.Now().Add(10 * time.Second)
		for payView(t, ctx, s.pool, s.scope, id).Status != payment.StatusCompleted {
			if time.Now().After(deadline) {
				t.Fatalf("payment %d not completed 10 s after creation (the settler polls hourly)", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// Given payments of four accounts created in turn, and a fifth account
// with more payments due than a batch holds, when one round settles them
// over four workers, then an account settled in more than one
// transaction is alone in each of them: a batch holding some accounts'
// balance rows never queues for another's behind the API's payments (the
// convoy that held ten hot accounts' payments back). The four accounts'
// payments each settle in one transaction.
func TestSettlerBatchesDoNotShareAccounts(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	s.payApprove()
	const accounts, perAccount, heavy = 4, 6, 30
	var vas []string
	for range accounts + 1 {
		vas = append(vas, s.payOpen(100_000))
	}
	var ids []string
	for i := range heavy {
		for k, va := range vas {
			if k < accounts && i >= perAccount {
				continue
			}
			ids = append(ids, s.payCreate(va, 1_000, "rtp", "123456789"))
		}
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Workers: accounts}
	catchUp(t, ctx, sim)
	settlerAllDue(t, ctx, s.pool)
	if n, err := sim.SettleDue(ctx); n != len(ids) || err != nil {
		t.Fatalf("SettleDue = %d, %v; want all %d payments settled", n, err, len(ids))
	}
	rows, err := s.pool.Query(ctx, `SELECT e.transaction_id::text, array_agg(DISTINCT p.virtual_account_id ORDER BY p.virtual_account_id)
        FROM events e JOIN payments p ON 'payment-' || p.id = e.stream_id
        WHERE e.event_type = 'payment.completed' AND p.id = ANY($1) GROUP BY 1`, ids)
	if err != nil {
		t.Fatal(err)
	}
	txAccounts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
		var tx string
		var acc []string
		err := r.Scan(&tx, &acc)
		return acc, err
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, acc := range txAccounts {
		for _, a := range acc {
			seen[a]++
		}
	}
	for _, acc := range txAccounts {
		for _, a := range acc {
			if seen[a] > 1 && len(acc) > 1 {
				t.Errorf("account %s settled in %d transactions, one of them with accounts %v", a, seen[a], acc)
			}
		}
	}
	for _, va := range vas[:accounts] {
		if seen[va] != 1 {
			t.Errorf("account %s with %d payments settled in %d transactions, want 1", va, perAccount, seen[va])
		}
	}
	if seen[vas[accounts]] < 2 {
		t.Errorf("the account with %d payments due settled in %d transactions: the test wants it split", heavy, seen[vas[accounts]])
	}
}

// Given four accounts with three payments due each, when one worker
// settles them in batches of at most five, then no transaction settles
// more than five: accounts are kept whole, but never past the batch.
func TestSettlerBatchesKeepToPaymentBatch(t *testing.T) {
	s := newSetup(t, pgtest.URL(t), 1, 1)
	ctx := s.ctx
	s.payApprove()
	var vas, ids []string
	for range 4 {
		vas = append(vas, s.payOpen(100_000))
	}
	for range 3 {
		for _, va := range vas {
			ids = append(ids, s.payCreate(va, 1_000, "rtp", "123456789"))
		}
	}
	sim := &sandbox.Simulator{App: s.a, Pool: s.pool, Workers: 1, PaymentBatch: 5}
	catchUp(t, ctx, sim)
	settlerAllDue(t, ctx, s.pool)
	if n, err := sim.SettleDue(ctx); n != len(ids) || err != nil {
		t.Fatalf("SettleDue = %d, %v; want all %d payments settled", n, err, len(ids))
	}
	rows, err := s.pool.Query(ctx, `SELECT count(*) FROM events
        WHERE event_type = 'payment.completed' AND stream_id = ANY(SELECT 'payment-' || unnest($1::text[]))
        GROUP BY transaction_id`, ids)
	if err != nil {
		t.Fatal(err)
	}
	sizes, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range sizes {
		if n > 5 {
			t.Errorf("a transaction settled %d payments, more than PaymentBatch (5); all: %v", n, sizes)
		}
	}
}
