package app_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// roundTripTracer counts the round trips a pool makes: each statement sent
// on its own (BEGIN and COMMIT included) and each batch.
type roundTripTracer struct{ trips atomic.Int64 }

func (r *roundTripTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.trips.Add(1)
	return ctx
}
func (r *roundTripTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (r *roundTripTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.trips.Add(1)
	return ctx
}
func (r *roundTripTracer) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *roundTripTracer) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// count runs f and returns the round trips it made.
func (r *roundTripTracer) count(t *testing.T, f func() error) int64 {
	t.Helper()
	before := r.trips.Load()
	if err := f(); err != nil {
		t.Fatal(err)
	}
	return r.trips.Load() - before
}

// TestCommandRoundTrips pins the round trips of the idempotent commands
// the runner claims for (preparing a statement is not counted): never more
// than before the runner. CreatePayment, pipelined: BEGIN with the key
// check, the claim, the lock and the reads in one batch; the appends, the
// projections, the read and COMMIT in the next (a replay: 3). The others
// claim with their new id in one statement, with no UPDATE after the
// handler. A replay: BEGIN, the claim, the lookup, COMMIT.
func TestCommandRoundTrips(t *testing.T) {
	tr := &roundTripTracer{}
	pool := pgtest.TracedPool(t, tr, 4)
	e := &env{t: t, ctx: testCtx(t), pool: pool, a: app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	c, va := payReady(e, 1_000_000)

	pay := func(key string) func() error {
		return func() error {
			_, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, key, key), c, payRequest(va, 100, "rtp"))
			return err
		}
	}
	register := func(key string) func() error {
		return func() error {
			_, err := e.a.RegisterPlatform(e.ctx, app.Meta{}, idem("operator", "live", key, "register_platform", key), acme)
			return err
		}
	}
	manual := func(key string) func() error {
		return func() error {
			_, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, idem(c.PlatformID, "sandbox", key, "post_journal_entry", key), c,
				app.PostJournalEntry{Type: "adjustment", Description: "d", VirtualAccountID: va, Direction: "credit", Amount: amt(1)})
			return err
		}
	}
	fund := func(key string) func() error {
		return func() error {
			_, err := e.a.FundPlatform(e.ctx, app.Meta{}, idem(c.PlatformID, "sandbox", key, "fund_platform", key),
				app.FundPlatform{PlatformID: c.PlatformID, Environment: domain.Sandbox, Amount: amt(1)})
			return err
		}
	}
	for _, tc := range []struct {
		name         string
		run          func(string) func() error
		want, replay int64
	}{
		{"CreatePayment", pay, 2, 3},         // pipelined: 5 and 4 before
		{"RegisterPlatform", register, 6, 4}, // 7 before: the claim's UPDATE
		{"PostJournalEntry", manual, 8, 4},   // 9 before
		{"FundPlatform", fund, 8, 4},         // 9 before
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr.count(t, tc.run(tc.name+"-warm")) // prepares the statements
			got := tr.count(t, tc.run(tc.name))
			replay := tr.count(t, tc.run(tc.name))
			t.Logf("%s: %d round trips, replay %d", tc.name, got, replay)
			if got != tc.want {
				t.Errorf("%s: %d round trips, want %d", tc.name, got, tc.want)
			}
			if replay != tc.replay {
				t.Errorf("%s replay: %d round trips, want %d", tc.name, replay, tc.replay)
			}
		})
	}
}

// TestSandboxBatchRoundTrips pins the sandbox rail's batch at three round
// trips whatever its size: BEGIN with the payments' streams, the journal
// entries, and the appends, projections and COMMIT in one batch (6 before
// it was pipelined: BEGIN, the loads, the appends, the projections and
// COMMIT each on their own). Its transaction takes an id only in the last.
func TestSandboxBatchRoundTrips(t *testing.T) {
	tr := &roundTripTracer{}
	pool := pgtest.TracedPool(t, tr, 4)
	e := &env{t: t, ctx: testCtx(t), pool: pool, a: app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	c, va := payReady(e, 1_000_000)

	batch := func(n int) []app.SandboxPaymentAction {
		var acts []app.SandboxPaymentAction
		for range n {
			res, err := payCreate(e, c, payRequest(va, 100, "rtp"))
			if err != nil {
				t.Fatal(err)
			}
			acts = append(acts, app.SandboxPaymentAction{PaymentID: res.ID, Submit: true},
				app.SandboxPaymentAction{PaymentID: res.ID})
		}
		return acts
	}
	warm := batch(1)
	tr.count(t, func() error { return e.a.RunSandboxPaymentActions(e.ctx, warm) }) // prepares the statements
	for _, n := range []int{1, 20} {
		acts := batch(n)
		got := tr.count(t, func() error { return e.a.RunSandboxPaymentActions(e.ctx, acts) })
		if got != 3 {
			t.Errorf("a batch of %d payments: %d round trips, want 3", n, got)
		}
		for _, act := range acts {
			if s := payStatus(e, act.PaymentID); s != "completed" {
				t.Fatalf("payment %s is %s after the batch, want completed", act.PaymentID, s)
			}
		}
	}
}

// TestPaymentStatementsKeepTheirPlans checks that a payment makes
// PostgreSQL plan none of its statements again: each is prepared once and,
// after the five custom plans PostgreSQL always tries, runs its generic
// plan. Two did not (the check at commit with the daily sum's "IS NULL OR",
// and the balance update over arrays): planning them at every payment was
// a tenth of the server's CPU at 64 clients. Twenty payments without a
// daily limit, then twenty within one (the check's other statement), each
// set on one connection, so that pg_prepared_statements, which is per
// session, sees them all.
func TestPaymentStatementsKeepTheirPlans(t *testing.T) {
	setup := pgtest.TracedPool(t, &roundTripTracer{}, 4)
	e := &env{t: t, ctx: testCtx(t), pool: setup, a: app.New(setup, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	c, va := payReady(e, 1_000_000)
	const payments = 20
	for _, limit := range []domain.Optional[int64]{{}, domain.Some(int64(1_000_000))} {
		if limit.Set {
			if err := e.a.UpdateSettings(e.ctx, app.Meta{}, c.PlatformID, c.Environment,
				platform.SettingsPatch{DailyPaymentLimit: limit}); err != nil {
				t.Fatal(err)
			}
		}
		cfg := setup.Config()
		cfg.MaxConns = 1
		cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "auto" // PostgreSQL's default, whatever the server's
		pool, err := pgxpool.NewWithConfig(e.ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
		for i := range payments {
			key := fmt.Sprintf("plans-%v-%d", limit.Set, i)
			if _, err := a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, key, key), c, payRequest(va, 100, "rtp")); err != nil {
				t.Fatalf("payment %d: %v", i, err)
			}
		}
		rows, err := pool.Query(e.ctx, `SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements
            WHERE generic_plans + custom_plans >= $1`, payments)
		if err != nil {
			t.Fatal(err)
		}
		type plans struct {
			statement       string
			generic, custom int64
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (p plans, err error) {
			return p, r.Scan(&p.statement, &p.generic, &p.custom)
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) < 10 {
			t.Fatalf("daily limit %v: %d statements ran at every payment, want the payment's ten or more: %+v", limit.Set, len(got), got)
		}
		for _, p := range got {
			if p.custom > 5 {
				t.Errorf("daily limit %v: planned %d times in %d payments (generic plan used %d times): %s",
					limit.Set, p.custom, payments, p.generic, p.statement)
			}
		}
	}
}
