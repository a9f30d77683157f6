package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// ---------------------------------------------------------------------------
// Helpers shared by the tests of this package.

// newPool returns a pool on a fresh migrated database. The concurrency
// tests size it so that many goroutines really hold transactions at once
// (the default pool of a 2-CPU machine has only 4 connections).
func newPool(t *testing.T, maxConns int32) *pgxpool.Pool {
	return pgtest.SizedPool(t, maxConns)
}

// newApp wires an App with no notifier (nil is allowed) and a silent log.
func newApp(t *testing.T, pool *pgxpool.Pool) *app.App {
	t.Helper()
	return app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func operatorMeta(requestID string) app.Meta {
	return app.Meta{RequestID: requestID, Actor: "operator"}
}

// register registers a platform without an idempotency key.
func register(t *testing.T, ctx context.Context, a *app.App, name string) string {
	t.Helper()
	res, err := a.RegisterPlatform(ctx, operatorMeta("req_register_"+name), nil, app.RegisterPlatform{
		Name: name, ContactEmail: "ops@" + name + ".example.com", Metadata: map[string]string{"tier": "gold"},
	})
	if err != nil {
		t.Fatalf("register %s: %v", name, err)
	}
	if !domain.HasPrefix(res.ID, domain.PrefixPlatform) || res.Replayed {
		t.Fatalf("register %s: result %+v", name, res)
	}
	return res.ID
}

// streamVersions returns the stream versions of a platform's events, in order.
func streamVersions(t *testing.T, ctx context.Context, pool *pgxpool.Pool, platformID string) []int64 {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT stream_version FROM events WHERE stream_id = 'platform-'||$1 ORDER BY 1`, platformID)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// assertGapless checks that a platform's stream holds exactly versions
// 1..n and that streams.version says n.
func assertGapless(t *testing.T, ctx context.Context, pool *pgxpool.Pool, platformID string, n int) {
	t.Helper()
	got := streamVersions(t, ctx, pool, platformID)
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stream versions = %v (%d events), want 1..%d", got, len(got), n)
	}
	var version int64
	if err := pool.QueryRow(ctx, `SELECT version FROM streams WHERE stream_id = 'platform-'||$1`, platformID).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != int64(n) {
		t.Fatalf("streams.version = %d, want %d", version, n)
	}
}

func count(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// waitFor polls cond every few milliseconds until it holds or timeout passes.
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		<-tick.C
	}
}

// fold rebuilds a platform's state from its stream, as a command does.
func fold(t *testing.T, ctx context.Context, pool *pgxpool.Pool, platformID string) (platform.State, []eventstore.RecordedEvent) {
	t.Helper()
	// The platform's stream and its keys' streams, in the order written.
	rows, err := pool.Query(ctx, `SELECT `+eventstore.SelectColumns+` FROM events
        WHERE stream_id = $1 OR (platform_id = $2 AND stream_id LIKE 'apikey-%') ORDER BY global_position`,
		platform.StreamID(platformID), platformID)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := eventstore.ScanEvents(rows)
	if err != nil {
		t.Fatal(err)
	}
	s := platform.State{ID: platformID}
	for i := range recs {
		e, err := recs[i].Decode()
		if err != nil {
			t.Fatal(err)
		}
		s = platform.Evolve(s, e)
	}
	return s, recs
}

// asJSON shows a value with pointers followed, for messages.
func asJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

func requestID(t *testing.T, r eventstore.RecordedEvent) string {
	t.Helper()
	var m app.Meta
	if err := json.Unmarshal(r.Metadata, &m); err != nil {
		t.Fatalf("metadata of %s: %v", r.EventID, err)
	}
	return m.RequestID
}

// ---------------------------------------------------------------------------
// The command runner under concurrency.

var allRails = []string{"ach_standard", "ach_same_day", "rtp", "fednow"}

// TestConcurrentCommandsOnOnePlatformAllSucceed runs 50 goroutines that each
// configure the platform, update its settings and create a key — 150
// commands appending to ONE stream, so they keep conflicting — and expects
// every one to succeed through the runner's retries, with a gapless stream,
// no lost update, and projections equal to the folded log.
//
// Why MaxAttempts = the number of commands is enough: an attempt fails with
// a version conflict only if another command committed between the
// attempt's Load (a READ COMMITTED snapshot) and its Append's version
// check. The windows of one caller's attempts do not overlap, so each of
// its failed attempts is paid for by a distinct commit of another command.
// There are only total-1 other commands (nothing else retries here: no
// serialization failures at READ COMMITTED, and every command locks only
// the stream row before its projection rows, so no deadlock), hence at most
// total-1 failures and success at attempt total at the latest — whatever
// the timing. The default 8 is not a guarantee under this much contention.
func TestConcurrentCommandsOnOnePlatformAllSucceed(t *testing.T) {
	const workers = 50
	const total = workers * 3
	pool := newPool(t, 32)
	a := newApp(t, pool)
	a.MaxAttempts = total
	// Optimistic retries on one hot stream are slow (seconds to tens of
	// seconds with -race on a small machine): allow more than testCtx's 2 min.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	id := register(t, ctx, a, "concurrent")

	// Every patch changes something (each value is the worker's own and
	// differs from the defaults), so every command appends exactly one event.
	keyIDs := make([]string, workers)
	secrets := make([]string, workers)
	errs := make([][]error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			configure := func() error {
				fee := int64(i)
				return a.ConfigurePlatform(ctx, operatorMeta(fmt.Sprintf("cfg-%d", i)), id, platform.ConfigPatch{
					FeeSchedule: domain.Some(map[string]int64{allRails[i%len(allRails)]: fee}),
				})
			}
			settings := func() error {
				var p platform.SettingsPatch
				if i%2 == 0 {
					p.DailyPaymentLimit = domain.Some(int64(1000 + i))
				} else {
					p.PaymentApprovalThreshold = domain.Some(int64(1000 + i))
				}
				return a.UpdateSettings(ctx, app.Meta{RequestID: fmt.Sprintf("set-%d", i), Actor: id}, id, domain.Sandbox, p)
			}
			createKey := func() error {
				res, err := a.CreateAPIKey(ctx, app.Meta{RequestID: fmt.Sprintf("key-%d", i), Actor: id}, nil, id,
					domain.Sandbox, domain.Sandbox, fmt.Sprintf("key %d", i))
				keyIDs[i], secrets[i] = res.ID, res.Secret
				return err
			}
			calls := []func() error{configure, settings, createKey}
			<-start
			for j := range calls {
				if err := calls[(i+j)%len(calls)](); err != nil {
					errs[i] = append(errs[i], err)
				}
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	t.Logf("%d commands on one stream took %v", total, time.Since(began))
	for i, e := range errs {
		if len(e) > 0 {
			t.Errorf("worker %d: %v", i, e)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	// Keys have streams of their own: the platform's holds the rest.
	assertGapless(t, ctx, pool, id, 1+2*workers)
	if n := count(t, ctx, pool, `SELECT count(*) FROM api_keys WHERE platform_id = $1`, id); n != workers {
		t.Fatalf("api_keys rows = %d, want %d", n, workers)
	}
	for i, kid := range keyIDs {
		if n := count(t, ctx, pool, `SELECT count(*) FROM api_keys WHERE id = $1 AND secret_hash = $2`, kid, app.HashSecret(secrets[i])); n != 1 {
			t.Errorf("key %d (%s) not stored with its hash", i, kid)
		}
	}
	byType := map[string]int{}
	rows, err := pool.Query(ctx, `SELECT event_type, count(*) FROM events WHERE platform_id = $1 GROUP BY 1`, id)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var typ string
		var n int
		if err := rows.Scan(&typ, &n); err != nil {
			t.Fatal(err)
		}
		byType[typ] = n
	}
	want := map[string]int{"platform.registered": 1, "platform.configured": workers, "platform.settings_updated": workers, "api_key.created": workers}
	if !reflect.DeepEqual(byType, want) {
		t.Fatalf("events by type = %v, want %v", byType, want)
	}

	// No lost update: every command decided on the state just before its
	// event. Replaying the patches in stream order, each Configured and
	// SettingsUpdated event must hold exactly the previous state with its
	// own patch applied; a decision on stale state would drop an earlier
	// commit's change. Each patch touched one field, named by its request id.
	_, recs := fold(t, ctx, pool, id)
	wantFees := platform.DefaultConfig().FeeSchedule
	wantSettings := platform.DefaultSettings(domain.Sandbox)
	for k := range recs {
		r := &recs[k]
		var i int
		rid := requestID(t, *r)
		ev, err := r.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case platform.Configured:
			if _, err := fmt.Sscanf(rid, "cfg-%d", &i); err != nil {
				t.Fatalf("configured event with request id %q", rid)
			}
			wantFees[allRails[i%len(allRails)]] = int64(i)
			if !reflect.DeepEqual(e.Config.FeeSchedule, wantFees) {
				t.Errorf("version %d (%s): fee_schedule %v, want %v: decided on stale state", r.StreamVersion, rid, e.Config.FeeSchedule, wantFees)
				wantFees = e.Config.FeeSchedule
			}
		case platform.SettingsUpdated:
			if _, err := fmt.Sscanf(rid, "set-%d", &i); err != nil {
				t.Fatalf("settings event with request id %q", rid)
			}
			v := int64(1000 + i)
			if i%2 == 0 {
				wantSettings.DailyPaymentLimit = &v
			} else {
				wantSettings.PaymentApprovalThreshold = &v
			}
			if !reflect.DeepEqual(e.Settings, wantSettings) {
				t.Errorf("version %d (%s): settings %s, want %s: decided on stale state", r.StreamVersion, rid, asJSON(e.Settings), asJSON(wantSettings))
				wantSettings = e.Settings
			}
		}
	}
	p, err := queries.GetPlatform(ctx, pool, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.FeeSchedule, wantFees) {
		t.Errorf("fee_schedule = %v, want %v (the last patch of each rail in commit order)", p.FeeSchedule, wantFees)
	}
	st, err := queries.GetSettings(ctx, pool, id, domain.Sandbox)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Settings, wantSettings) {
		t.Errorf("settings = %s, want %s (the last patch of each field in commit order)", asJSON(st.Settings), asJSON(wantSettings))
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
}

// TestMaxAttemptsBoundsRetriesUnderContention releases 30 goroutines at
// once on one stream with MaxAttempts = 1: they all load the same version,
// so some must lose and get ErrVersionConflict back, and a failed call
// leaves no trace (no event, no settings change). (Settings, not keys:
// key commands queue on the platform's lock instead of conflicting.)
func TestMaxAttemptsBoundsRetriesUnderContention(t *testing.T) {
	const workers = 30
	pool := newPool(t, workers+2)
	a := newApp(t, pool)
	a.MaxAttempts = 1
	ctx := testCtx(t)
	id := register(t, ctx, a, "bounded")
	// Open every connection first, so the goroutines do not serialize on dialing.
	var conns []*pgxpool.Conn
	for range workers {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}

	errs := make([]error, workers)
	start := make(chan struct{})
	var ready, wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		ready.Add(1)
		go func() {
			defer wg.Done()
			ready.Done()
			<-start
			errs[i] = a.UpdateSettings(ctx, app.Meta{RequestID: fmt.Sprintf("set-%d", i)}, id, domain.Sandbox,
				platform.SettingsPatch{DailyPaymentLimit: domain.Some(int64(1000 + i))})
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()

	ok, conflicts := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, eventstore.ErrVersionConflict):
			conflicts++
		default:
			t.Errorf("worker %d: unexpected error %v", i, err)
		}
	}
	t.Logf("MaxAttempts=1, %d writers: %d succeeded, %d conflicts", workers, ok, conflicts)
	if conflicts == 0 {
		t.Fatalf("no call failed with ErrVersionConflict: MaxAttempts=1 did not bound the retries")
	}
	if ok == 0 {
		t.Fatalf("no call succeeded")
	}
	assertGapless(t, ctx, pool, id, 1+ok)
	if n := count(t, ctx, pool, `SELECT count(*) FROM events WHERE platform_id = $1 AND event_type = 'platform.settings_updated'`, id); n != ok {
		t.Fatalf("settings_updated events = %d, want %d (one per successful call)", n, ok)
	}
}

// holdAppend appends the Configured event of patch (which must change
// something) to the platform's stream in a transaction it leaves open,
// holding the stream row lock; commit ends it.
func holdAppend(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string, patch platform.ConfigPatch) (commit func()) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	recs, version, err := eventstore.Load(ctx, tx, platform.StreamID(id))
	if err != nil {
		t.Fatal(err)
	}
	s := platform.State{ID: id}
	for i := range recs {
		e, _ := recs[i].Decode()
		s = platform.Evolve(s, e)
	}
	evs, err := platform.Decide(s, platform.Configure{Patch: patch, At: time.Now().UTC().Truncate(time.Microsecond)})
	if err != nil || len(evs) != 1 {
		t.Fatalf("held configure: %d events, %v", len(evs), err)
	}
	stream := eventstore.Stream{ID: platform.StreamID(id), Type: platform.StreamType, PlatformID: id}
	out, err := eventstore.Append(ctx, tx, stream, version, app.Meta{RequestID: "req_held"}, evs...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := projections.ProjectInline(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// waitBlocked waits until some session of the test database is waiting
// for a lock: the command has loaded the stream and is blocked appending.
// It fails if the command finished instead (done delivered its result).
func waitBlocked(t *testing.T, ctx context.Context, pool *pgxpool.Pool, done <-chan error) {
	t.Helper()
	waitFor(t, "a command blocked on the stream's row lock", 20*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the command finished without blocking on the held transaction: %v", err)
		default:
		}
		return count(t, ctx, pool, `SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock'`) > 0
	})
}

// TestVersionConflictIsRetriedUpToMaxAttempts forces a conflict
// deterministically: a transaction of ours appends to the stream and stays
// open; the command loads the old version, blocks on the stream row, and
// finds the version moved when we commit. With MaxAttempts = 1 the conflict
// is returned; with MaxAttempts = 2 the second attempt succeeds.
func TestVersionConflictIsRetriedUpToMaxAttempts(t *testing.T) {
	pool := newPool(t, 8)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "forced")

	for _, tc := range []struct {
		maxAttempts            int
		wantErr                bool
		heldShare, cmdInterest string
	}{{1, true, "0.25", "0.045"}, {2, false, "0.35", "0.055"}} {
		t.Run(fmt.Sprintf("MaxAttempts=%d", tc.maxAttempts), func(t *testing.T) {
			a.MaxAttempts = tc.maxAttempts
			before := len(streamVersions(t, ctx, pool, id))
			commit := holdAppend(t, ctx, pool, id, platform.ConfigPatch{RevenueShareRate: domain.Some(tc.heldShare)})
			done := make(chan error, 1)
			go func() {
				done <- a.ConfigurePlatform(ctx, operatorMeta("req_cfg"), id, platform.ConfigPatch{InterestRate: domain.Some(tc.cmdInterest)})
			}()
			waitBlocked(t, ctx, pool, done)
			commit()
			err := <-done
			p, perr := queries.GetPlatform(ctx, pool, id)
			if perr != nil {
				t.Fatal(perr)
			}
			if tc.wantErr {
				if !errors.Is(err, eventstore.ErrVersionConflict) {
					t.Fatalf("err = %v, want ErrVersionConflict", err)
				}
				assertGapless(t, ctx, pool, id, before+1) // only the held event
				if p.RevenueShareRate != tc.heldShare || p.InterestRate == tc.cmdInterest {
					t.Fatalf("rates = %s / %s, want only the held change (%s)", p.RevenueShareRate, p.InterestRate, tc.heldShare)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v, want success on the second attempt", err)
			}
			assertGapless(t, ctx, pool, id, before+2)
			// The retry decided on fresh state: the held change survived.
			if p.RevenueShareRate != tc.heldShare || p.InterestRate != tc.cmdInterest {
				t.Fatalf("rates = %s / %s, want %s / %s", p.RevenueShareRate, p.InterestRate, tc.heldShare, tc.cmdInterest)
			}
		})
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
}

// TestNonRetryableErrorIsNotRetried: a domain error is final; only lost
// races are retried, so a bad request does not sit through the backoff.
func TestNonRetryableErrorIsNotRetried(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	a.MaxAttempts = 50
	ctx := testCtx(t)
	id := register(t, ctx, a, "notretried")
	began := time.Now()
	err := a.ConfigurePlatform(ctx, operatorMeta("req_bad"), id, platform.ConfigPatch{InterestRate: domain.Some("2")})
	if domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Fatalf("err = %v, want invalid_request", err)
	}
	// 50 attempts with backoff (capped at 200 ms each) would take ~9 s; one
	// attempt takes milliseconds, even on a loaded machine.
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("a domain error took %v: it was retried", d)
	}
	assertGapless(t, ctx, pool, id, 1)
	err = a.ConfigurePlatform(ctx, operatorMeta("req_missing"), "plt_missing", platform.ConfigPatch{})
	if domain.CodeOf(err) != domain.CodeNotFound {
		t.Fatalf("configure unknown platform: err = %v, want not_found", err)
	}
}
