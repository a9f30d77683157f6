package sandbox_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/sandbox"
)

// scheduleTracer counts the statements a pool sends, by what they touch.
type scheduleTracer struct {
	mu   sync.Mutex
	sqls []string
}

func (r *scheduleTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	r.sqls = append(r.sqls, d.SQL)
	r.mu.Unlock()
	return ctx
}

func (r *scheduleTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *scheduleTracer) count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, s := range r.sqls {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}

func tracedPool(t *testing.T, url string, tr pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// scheduleRows is the schedule as "id action due", sorted by id.
func scheduleRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []string {
	t.Helper()
	var out []string
	for id, due := range scheduled(t, ctx, pool) {
		out = append(out, fmt.Sprintf("%s %s", id, due.UTC().Format(time.RFC3339Nano)))
	}
	slices.Sort(out)
	return out
}

// scheduleFrom runs a fresh schedule subscription over the whole log in
// batches of batchSize, on pool.
func scheduleFrom(t *testing.T, ctx context.Context, sim *sandbox.Simulator, batchSize int) {
	t.Helper()
	head, err := eventstore.Head(ctx, sim.Pool)
	if err != nil {
		t.Fatal(err)
	}
	sub := sim.Subscription(nil)
	sub.BatchSize = batchSize
	if err := sub.CatchUpTo(ctx, head); err != nil {
		t.Fatal(err)
	}
}

func scheduleReset(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	for _, q := range []string{`DELETE FROM sandbox_schedule`, `DELETE FROM subscription_checkpoints WHERE name = 'sandbox'`} {
		if _, err := pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
}

// Given a log mixing event types — inbound transfers (ACH, which wait, and
// RTP, which do not), payments on every rail from a platform that settles
// on its own and one that turned auto_settle off, a live transfer, and
// events the simulator ignores — when it is scheduled in one batch, then
// the schedule is row for row what scheduling one event at a time writes;
// and the batch reads the platform settings once and writes the schedule
// in one statement.
func TestScheduleBatchWritesWhatOneAtATimeWrites(t *testing.T) {
	url := pgtest.URL(t)
	auto := newSetup(t, url, 2, 5)
	manual := newSetup(t, url, 3, 7)
	off := false
	if err := manual.a.UpdateSettings(manual.ctx, app.Meta{}, manual.c.PlatformID, domain.Sandbox, platform.SettingsPatch{
		Sandbox: domain.Some(platform.SandboxSettingsPatch{AutoSettle: &off})}); err != nil {
		t.Fatal(err)
	}
	ctx := auto.ctx
	var want []string // ids that must be scheduled
	for _, s := range []*setup{auto, manual} {
		s.payApprove()
		s.inbound(500_000, "rtp") // instant: not scheduled
		want = append(want, "settle_inbound:"+s.inbound(700, "ach_same_day"))
		for _, rail := range []string{"rtp", "fednow"} {
			want = append(want, "settle_payment:"+s.payCreate(s.va, 1_000, rail, "123456789"))
		}
		for _, rail := range []string{"ach_same_day", "ach_standard"} {
			id := s.payCreate(s.va, 2_000, rail, "4000000016")
			want = append(want, "submit_payment:"+id)
			if s == auto {
				want = append(want, "settle_payment:"+id)
			}
		}
	}
	slices.Sort(want)

	sim := &sandbox.Simulator{App: auto.a, Pool: auto.pool, Log: discard}
	scheduleFrom(t, ctx, sim, 1)
	one := scheduleRows(t, ctx, auto.pool)
	var ids []string
	for _, r := range one {
		ids = append(ids, strings.Fields(r)[0])
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("one at a time scheduled\n%v\nwant\n%v", ids, want)
	}

	scheduleReset(t, ctx, auto.pool)
	tr := &scheduleTracer{}
	traced := &sandbox.Simulator{App: auto.a, Pool: tracedPool(t, url, tr), Log: discard}
	scheduleFrom(t, ctx, traced, 500)
	if got := scheduleRows(t, ctx, auto.pool); fmt.Sprint(got) != fmt.Sprint(one) {
		t.Fatalf("in one batch:\n%v\none at a time:\n%v", got, one)
	}
	if n := tr.count("platform_settings"); n != 1 {
		t.Errorf("the batch read platform settings %d times, want once", n)
	}
	if n := tr.count("sandbox_schedule"); n != 1 {
		t.Errorf("the batch sent %d statements to sandbox_schedule, want 1", n)
	}

	// Handled again (a crash before the checkpoint moved): nothing changes.
	if _, err := auto.pool.Exec(ctx, `UPDATE sandbox_schedule SET due_at = due_at + interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	moved := scheduleRows(t, ctx, auto.pool)
	if _, err := auto.pool.Exec(ctx, `DELETE FROM subscription_checkpoints WHERE name = 'sandbox'`); err != nil {
		t.Fatal(err)
	}
	scheduleFrom(t, ctx, sim, 500)
	if got := scheduleRows(t, ctx, auto.pool); fmt.Sprint(got) != fmt.Sprint(moved) {
		t.Errorf("handling the batch again changed the schedule:\n%v\nwas\n%v", got, moved)
	}
}
