package projections_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/projections/rebuild"
)

// TestRebuildServesWhileReplaying: while the rebuild replays the log, a
// command and a read both complete (a rebuild that locked the tables would
// make them wait until it ends: here, for ever, since the rebuild waits for
// them), and the command's effect survives the swap.
func TestRebuildServesWhileReplaying(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Online")
	va := e.openVA(c, "biz")
	for range 40 {
		e.must(e.inbound(c, va, 10, "rtp"))
	}
	e.sync()

	scope := queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}
	var during error
	_, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{BatchSize: 20,
		AfterBatch: func(replayed int) {
			if replayed != 20 {
				return
			}
			ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel()
			if _, err := e.a.PostJournalEntry(ctx, app.Meta{}, nil, c, feeEntry(va, 150)); err != nil {
				during = fmt.Errorf("command during the replay: %w", err)
				return
			}
			if _, err := queries.GetVirtualAccount(ctx, e.pool, scope, va); err != nil {
				during = fmt.Errorf("read during the replay: %w", err)
			}
		}})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if during != nil {
		t.Fatal(during)
	}
	e.sync()
	var posted int64
	if err := e.pool.QueryRow(e.ctx, `SELECT posted FROM account_balances WHERE virtual_account_id = $1`, va).Scan(&posted); err != nil {
		t.Fatal(err)
	}
	if posted != 400-150 {
		t.Errorf("posted %d after the rebuild, want 250: the fee taken during the replay is lost", posted)
	}
	quiet, err := rebuild.Run(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Changed != 0 {
		t.Errorf("a rebuild of projections that match the log changed %d rows", quiet.Changed)
	}
	requireLogMatches(t, e)
}

// TestRebuildRepairsDriftedRows: rows edited, deleted or added behind the
// log's back are put right by the swap, and later rows are numbered as a
// replay numbers them.
func TestRebuildRepairsDriftedRows(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Drift")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 1000, "rtp"))
	e.must(e.manual(c, ledger.TypeFee, va, "debit", 25))
	e.sync()
	want := snapshot(t, e.ctx, e.pool)

	for _, q := range []string{
		`UPDATE account_balances SET posted = posted + 5 WHERE virtual_account_id = '` + va + `'`,
		`DELETE FROM ledger_entries WHERE seq = (SELECT max(seq) FROM ledger_entries)`,
		`CREATE TEMP TABLE ghost AS SELECT * FROM inbound_transfers`,
		`UPDATE ghost SET id = 'ibt_ghost'`,
		`INSERT INTO inbound_transfers SELECT * FROM ghost`,
	} {
		if _, err := e.pool.Exec(e.ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	stats, err := rebuild.Run(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	// The edited balance counts twice (old row out, new row in).
	if stats.Changed != 4 {
		t.Errorf("the swap changed %d rows, want 4 (balance out and in, ledger entry back, ghost transfer out)", stats.Changed)
	}
	compare(t, "after repairing", want, snapshot(t, e.ctx, e.pool))

	e.must(e.manual(c, ledger.TypeFee, va, "debit", 7))
	e.sync()
	requireLogMatches(t, e)
}

// TestRebuildUnderLoad: many goroutines run commands and reads through
// repeated rebuilds; none fails, reads go on during every replay, and the
// projections equal the log afterwards.
func TestRebuildUnderLoad(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Load")
	scope := queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}
	var vas []string
	for i := range 8 {
		va := e.openVA(c, fmt.Sprintf("biz_%d", i))
		e.must(e.inbound(c, va, 1_000_000, "rtp"))
		vas = append(vas, va)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	var rebuilding atomic.Bool
	var readsDuring, writesDuring atomic.Int64
	errs := make(chan error, 64)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			va := vas[w%len(vas)]
			for i := 0; ctx.Err() == nil; i++ {
				var err error
				write := w%3 == 0
				if write {
					_, err = e.a.PostJournalEntry(ctx, app.Meta{}, nil, c, feeEntry(va, 1))
				} else {
					_, err = queries.GetVirtualAccount(ctx, e.pool, scope, va)
				}
				if err != nil && ctx.Err() == nil {
					report(fmt.Errorf("worker %d: %w", w, err))
					return
				}
				if rebuilding.Load() {
					if write {
						writesDuring.Add(1)
					} else {
						readsDuring.Add(1)
					}
				}
			}
		}()
	}
	var paused, total time.Duration
	for range 4 {
		rebuilding.Store(true)
		stats, err := rebuild.Run(e.ctx, e.pool)
		rebuilding.Store(false)
		if err != nil {
			t.Errorf("rebuild under load: %v", err)
		}
		paused, total = paused+stats.Paused, total+stats.Duration
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}
	if readsDuring.Load() == 0 || writesDuring.Load() == 0 {
		t.Errorf("during the rebuilds %d reads and %d commands completed: the API stopped", readsDuring.Load(), writesDuring.Load())
	}
	t.Logf("4 rebuilds took %s; commands were paused %s; %d reads and %d commands completed meanwhile",
		total, paused, readsDuring.Load(), writesDuring.Load())
	e.sync()
	requireLogMatches(t, e)
}

func feeEntry(va string, amount int64) app.PostJournalEntry {
	return app.PostJournalEntry{Type: ledger.TypeFee, Description: "fee", VirtualAccountID: va, Direction: "debit", Amount: amt(amount)}
}

// requireLogMatches fails unless every projection equals a replay of the log.
func requireLogMatches(t *testing.T, e *env) {
	t.Helper()
	diffs, _, err := rebuild.CompareWithLog(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("%s differs from the log: %d rows only live, %d only rebuilt", d.Table, d.OnlyLive, d.OnlyRebuilt)
	}
}

// TestRolledBackBatchLeavesNoGap: a subscriber batch that rolls back (a
// crash mid-batch) leaves no hole in the rows' seq, so the live ledger
// still equals a replay of the log — and a rebuild changes nothing.
func TestRolledBackBatchLeavesNoGap(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Crash")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 500, "rtp"))
	e.sync()
	e.must(e.manual(c, ledger.TypeFee, va, "debit", 3))
	e.must(e.inbound(c, va, 40, "rtp"))

	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := eventstore.ReadCommitted(e.ctx, tx, checkpoint(t, e.ctx, e.pool), 100)
	if err != nil || len(events) == 0 {
		t.Fatalf("events after the checkpoint: %d, %v", len(events), err)
	}
	if err := projections.ProjectAsync(e.ctx, tx, events, nil, projections.Async()); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.sync()
	requireLogMatches(t, e)
	stats, err := rebuild.Run(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Changed != 0 {
		t.Errorf("a rebuild after a rolled-back batch changed %d rows", stats.Changed)
	}
}

// TestRebuildRewindsTheWebhookFeed: when the swap puts back a public event
// the live table had lost, the webhook fan-out's position moves back to
// just before it, so the event is fanned out rather than skipped.
func TestRebuildRewindsTheWebhookFeed(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Feed")
	va := e.openVA(c, "biz")
	for range 3 {
		e.must(e.inbound(c, va, 100, "rtp"))
	}
	e.sync()
	var lost, last int64
	if err := e.pool.QueryRow(e.ctx, `SELECT min(seq) + 1, max(seq) FROM public_events`).Scan(&lost, &last); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM public_events WHERE seq = $1`, lost); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO subscription_checkpoints (name, global_position) VALUES ($1, $2)`,
		projections.PublicEventsFeed, last); err != nil {
		t.Fatal(err)
	}
	if _, err := rebuild.Run(e.ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	var feed int64
	if err := e.pool.QueryRow(e.ctx, `SELECT global_position FROM subscription_checkpoints WHERE name = $1`,
		projections.PublicEventsFeed).Scan(&feed); err != nil {
		t.Fatal(err)
	}
	if feed != lost-1 {
		t.Errorf("the fan-out is at seq %d after the rebuild put back seq %d; want %d", feed, lost, lost-1)
	}
	requireLogMatches(t, e)

	// The feed already below the row put back: its position stays, but
	// its version (updated_at) moves, so a batch in flight re-reads.
	var before time.Time
	if err := e.pool.QueryRow(e.ctx, `SELECT updated_at FROM subscription_checkpoints WHERE name = $1`,
		projections.PublicEventsFeed).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM public_events WHERE seq = $1`, last); err != nil {
		t.Fatal(err)
	}
	if _, err := rebuild.Run(e.ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	var after time.Time
	if err := e.pool.QueryRow(e.ctx, `SELECT global_position, updated_at FROM subscription_checkpoints WHERE name = $1`,
		projections.PublicEventsFeed).Scan(&feed, &after); err != nil {
		t.Fatal(err)
	}
	if feed != lost-1 || !after.After(before) {
		t.Errorf("after putting back seq %d the feed is at %d (want %d) and its version moved from %s to %s (want later)",
			last, feed, lost-1, before, after)
	}
}

// TestRebuildWaitsForTheHorizon: an old transaction holding the read
// horizon back does not push the events behind it into the swap (where
// commands wait): the replay waits for the horizon to move and replays
// them first.
func TestRebuildWaitsForTheHorizon(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Horizon")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 100, "rtp"))
	e.sync()
	var before int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM events`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	old, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Rollback(context.Background())
	if _, err := old.Exec(e.ctx, `SELECT txid_current()`); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		e.must(e.inbound(c, va, 1, "rtp"))
	}
	stats, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{BatchSize: before + 1,
		AfterBatch: func(replayed int) {
			// The replay reached the horizon: let it move.
			if replayed == before {
				if err := old.Commit(e.ctx); err != nil {
					t.Error(err)
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.SwapEvents > before+1 {
		t.Errorf("%d events were replayed while commands waited, want at most a batch (%d)", stats.SwapEvents, before+1)
	}
	requireLogMatches(t, e)
}

// TestRebuildPausesOnlyForWhatChanged: the swap, while commands wait,
// compares only the rows that differed before it or that were replayed
// since, not whole tables; and those are enough to get every row right.
func TestRebuildPausesOnlyForWhatChanged(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Incremental")
	var vas []string
	for i := range 10 {
		va := e.openVA(c, fmt.Sprintf("biz_%d", i))
		vas = append(vas, va)
		for range 10 {
			e.must(e.inbound(c, va, 100, "rtp"))
		}
	}
	e.sync()
	var rows int64
	if err := e.pool.QueryRow(e.ctx, `SELECT (SELECT count(*) FROM ledger_entries) + (SELECT count(*) FROM public_events)
        + (SELECT count(*) FROM inbound_transfers)`).Scan(&rows); err != nil {
		t.Fatal(err)
	}

	quiet, err := rebuild.Run(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Suspects != 0 || quiet.Compared != 0 || quiet.Changed != 0 {
		t.Errorf("a rebuild with nothing to do found %d suspects, compared %d rows and changed %d; want 0, 0, 0",
			quiet.Suspects, quiet.Compared, quiet.Changed)
	}

	// Two fees commit after the comparison: only their rows are looked at
	// under the gate, and they land.
	stats, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{AfterCompare: func() {
		for _, va := range vas[:2] {
			if _, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, feeEntry(va, 30)); err != nil {
				t.Error(err)
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Compared == 0 || stats.Compared > 40 {
		t.Errorf("the swap compared %d rows for two fees (tables hold %d rows); want a handful", stats.Compared, rows)
	}
	for _, va := range vas[:2] {
		var posted int64
		if err := e.pool.QueryRow(e.ctx, `SELECT posted FROM account_balances WHERE virtual_account_id = $1`, va).Scan(&posted); err != nil {
			t.Fatal(err)
		}
		if posted != 1000-30 {
			t.Errorf("%s has posted %d after the rebuild, want 970", va, posted)
		}
	}
	// The rebuild brought the asynchronous tables up to its position too.
	var fees int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM journal_entries WHERE type = $1`, ledger.TypeFee).Scan(&fees); err != nil {
		t.Fatal(err)
	}
	if fees != 2 {
		t.Errorf("%d fee journal entries after the rebuild, want 2", fees)
	}
	e.sync()
	requireLogMatches(t, e)
}

// TestRebuildWhileTheSubscriberCatchesUp: the asynchronous subscriber is
// behind the replay when live and shadow are compared and catches up
// before the swap, so its tables change after the comparison for events
// the replay had already applied (those tables are then compared whole,
// to be safe); the result still equals the log.
func TestRebuildWhileTheSubscriberCatchesUp(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Behind")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 1000, "rtp"))
	e.sync()
	for range 5 {
		e.must(e.manual(c, ledger.TypeFee, va, "debit", 10))
	}
	stats, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{AfterCompare: func() {
		e.sync()
		e.must(e.manual(c, ledger.TypeFee, va, "debit", 1))
	}})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Suspects == 0 {
		t.Error("the subscriber's missing rows were not found different before the swap")
	}
	var entries int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0)
        FROM ledger_entries WHERE virtual_account_id = $1 AND status = 'posted'`, va).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != 1000-51 {
		t.Errorf("ledger entries of %s sum to %d after the rebuild, want 949", va, entries)
	}
	e.sync()
	requireLogMatches(t, e)
}

// TestRebuildBesideARunningSubscriber: with the asynchronous subscriber
// running, as in the service, and commands committing throughout, the
// candidates are narrowed in rounds before the pause, and the result
// still equals the log.
func TestRebuildBesideARunningSubscriber(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Running")
	var vas []string
	for i := range 4 {
		va := e.openVA(c, fmt.Sprintf("biz_%d", i))
		e.must(e.inbound(c, va, 1_000_000, "rtp"))
		vas = append(vas, va)
	}
	for range 100 {
		e.must(e.manual(c, ledger.TypeFee, vas[0], "debit", 1))
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var wg sync.WaitGroup
	runSubscriber(ctx, e, &wg)
	var writes atomic.Int64
	for _, va := range vas {
		chargeFees(ctx, e, &wg, c, va, &writes)
	}
	stats, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{BatchSize: 100})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Refined == 0 {
		t.Error("no round narrowed the candidates although the subscriber was running")
	}
	t.Logf("%+v; %d commands during the rebuild", stats, writes.Load())
	e.sync()
	requireLogMatches(t, e)
}

// TestRebuildWhenTheSubscriberStartsAfterTheComparison: the subscriber is
// not running when live and shadow are first compared (its tables lag the
// shadow), then starts and catches up while commands commit; the
// refinement compares its tables whole once it has caught up, and the
// result equals the log.
func TestRebuildWhenTheSubscriberStartsAfterTheComparison(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Late")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 1_000_000, "rtp"))
	e.sync()
	for range 30 {
		e.must(e.manual(c, ledger.TypeFee, va, "debit", 1))
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	stats, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{AfterCompare: func() {
		runSubscriber(ctx, e, &wg)
		chargeFees(ctx, e, &wg, c, va, new(atomic.Int64))
	}})
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if stats.Suspects == 0 || stats.Refined == 0 {
		t.Errorf("suspects %d, refinement rounds %d: want the lagging subscriber's rows found, then a refinement", stats.Suspects, stats.Refined)
	}
	e.sync()
	requireLogMatches(t, e)
}

// runSubscriber runs the asynchronous subscribers, as the service does
// (polling often, standing in for the commit wake-up), until ctx ends.
func runSubscriber(ctx context.Context, e *env, wg *sync.WaitGroup) {
	for _, sub := range projections.NewSubscriptions(e.pool, nil) {
		sub.PollInterval = 10 * time.Millisecond
		wg.Go(func() { sub.Run(ctx) })
	}
}

// chargeFees posts 1-cent fees on va until ctx ends, counting them.
func chargeFees(ctx context.Context, e *env, wg *sync.WaitGroup, c app.Caller, va string, n *atomic.Int64) {
	wg.Go(func() {
		for ctx.Err() == nil {
			if _, err := e.a.PostJournalEntry(ctx, app.Meta{}, nil, c, feeEntry(va, 1)); err != nil && ctx.Err() == nil {
				e.t.Error(err)
				return
			}
			n.Add(1)
		}
	})
}

// TestRebuildEndsWhenAReplayFails: the public events replayed beside the
// rest, in a transaction of their own, may fail after the rest of the
// batch committed; the rebuild then ends with the error, the live tables
// untouched and the shadow (its tables at different positions) dropped.
func TestRebuildEndsWhenAReplayFails(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Failing")
	va := e.openVA(c, "biz")
	for range 10 {
		e.must(e.inbound(c, va, 100, "rtp"))
	}
	e.sync()
	before := snapshot(t, e.ctx, e.pool)
	broken := false
	_, err := rebuild.RunWith(e.ctx, e.pool, rebuild.Options{BatchSize: 5, AfterBatch: func(int) {
		if broken {
			return
		}
		broken = true
		// Existing rows pass; the next public event inserted fails.
		if _, err := e.pool.Exec(e.ctx, `ALTER TABLE projections_rebuild.public_events
            ADD CONSTRAINT replay_fails CHECK (false) NOT VALID`); err != nil {
			t.Error(err)
		}
	}})
	if err == nil || !strings.Contains(err.Error(), "replay_fails") {
		t.Fatalf("rebuild with a failing public events replay: %v, want the constraint's error", err)
	}
	compare(t, "live tables after a failed rebuild", before, snapshot(t, e.ctx, e.pool))
	var left bool
	if err := e.pool.QueryRow(e.ctx, `SELECT to_regnamespace('projections_rebuild') IS NOT NULL`).Scan(&left); err != nil || left {
		t.Errorf("the shadow schema is left after a failed rebuild (%v)", err)
	}
	requireLogMatches(t, e)
}
