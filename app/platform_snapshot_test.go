package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
)

var platformKeyEventTypes = []string{
	platform.KeyCreated{}.EventType(), platform.KeyRevoked{}.EventType(), platform.KeyRolled{}.EventType(),
}

// fullFold is a platform's state as a command saw it before snapshots:
// every event of the platform's stream up to version upTo (all if < 0)
// but those of keys, then the events of the key keyID wherever they are.
func fullFold(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id, keyID string, upTo int64) platform.State {
	t.Helper()
	if upTo < 0 {
		upTo = 1 << 62
	}
	state := foldQuery(t, ctx, pool, platform.State{ID: id}, `SELECT `+eventstore.SelectColumns+` FROM events
        WHERE stream_id = $1 AND event_type <> ALL($2) AND stream_version <= $3 ORDER BY stream_version`,
		platform.StreamID(id), platformKeyEventTypes, upTo)
	if keyID == "" {
		return state
	}
	return foldQuery(t, ctx, pool, state, `SELECT `+eventstore.SelectColumns+` FROM events
        WHERE stream_id = $1 OR (stream_id = $2 AND event_type = ANY($3) AND data->>'key_id' = $4)
        ORDER BY global_position`, platform.KeyStreamID(keyID), platform.StreamID(id), platformKeyEventTypes, keyID)
}

func foldQuery(t *testing.T, ctx context.Context, pool *pgxpool.Pool, s platform.State, sql string, args ...any) platform.State {
	t.Helper()
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := eventstore.ScanEvents(rows)
	if err != nil {
		t.Fatal(err)
	}
	if s, err = eventstore.Fold(recs, s, platform.Evolve); err != nil {
		t.Fatal(err)
	}
	return s
}

func loadPlatform(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id, keyID string, forKeys bool) app.PlatformLoad {
	t.Helper()
	l, err := app.LoadPlatform(ctx, pool, id, keyID, forKeys)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// assertLoadIsFullFold checks that a command's load, snapshot and tail,
// is the state a full fold gives, and that it read a bounded tail.
func assertLoadIsFullFold(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id, keyID, when string) app.PlatformLoad {
	t.Helper()
	l := loadPlatform(t, ctx, pool, id, keyID, false)
	if want := fullFold(t, ctx, pool, id, keyID, -1); !reflect.DeepEqual(l.State, want) {
		t.Fatalf("%s, key %q: snapshot %d + %d events gives\n%+v\nthe full fold gives\n%+v",
			when, keyID, l.SnapshotVersion, l.EventsRead, l.State, want)
	}
	if l.EventsRead > app.PlatformSnapshotEvery || l.Version-l.SnapshotVersion > app.PlatformSnapshotEvery {
		t.Fatalf("%s: stream at %d, snapshot at %d, %d events read: more than %d",
			when, l.Version, l.SnapshotVersion, l.EventsRead, app.PlatformSnapshotEvery)
	}
	return l
}

type storedSnapshot struct {
	version int64
	schema  int
	state   platform.State
}

func readSnapshot(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) (storedSnapshot, bool) {
	t.Helper()
	var s storedSnapshot
	var data []byte
	err := pool.QueryRow(ctx, `SELECT version, schema_version, state FROM stream_snapshots WHERE stream_id = $1`,
		platform.StreamID(id)).Scan(&s.version, &s.schema, &data)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if s.schema == platform.SnapshotSchema {
		if err := json.Unmarshal(data, &s.state); err != nil {
			t.Fatal(err)
		}
	}
	return s, true
}

// alternateLimit is a hostile platform's PATCH: it flips its daily limit
// between two values, so that every call appends an event.
func alternateLimit(ctx context.Context, a *app.App, id string, i int) error {
	return a.UpdateSettings(ctx, app.Meta{RequestID: fmt.Sprintf("req_flip_%d", i), Actor: id}, id, domain.Sandbox,
		platform.SettingsPatch{DailyPaymentLimit: domain.Some(int64(1000 + i%2))})
}

// TestPlatformCommandsReadABoundedTail: a platform's stream grows by a
// settings event per PATCH that changes something, and every platform
// command used to replay it all. After 1,000 changes a command now reads
// its snapshot and at most PlatformSnapshotEvery events. The latencies
// are logged, not asserted.
func TestPlatformCommandsReadABoundedTail(t *testing.T) {
	const changes = 1000
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "flipper")
	if _, err := a.ApprovePlatform(ctx, operatorMeta("req_approve"), id); err != nil {
		t.Fatal(err)
	}
	timedPatch := func(i int) error { return alternateLimit(ctx, a, id, i) }
	before := medianOf(t, 9, timedPatch)
	for i := range changes {
		if err := alternateLimit(ctx, a, id, i); err != nil {
			t.Fatal(err)
		}
		if i%100 == 99 {
			assertLoadIsFullFold(t, ctx, pool, id, "", fmt.Sprintf("after %d changes", i+1))
		}
	}
	if v := platformVersion(t, ctx, pool, id); v < changes {
		t.Fatalf("stream version %d: the PATCHes did not all append", v)
	}
	after := medianOf(t, 9, timedPatch)
	began := time.Now()
	fullFold(t, ctx, pool, id, "", -1)
	replay := time.Since(began)

	for _, forKeys := range []bool{false, true} {
		l := loadPlatform(t, ctx, pool, id, "", forKeys)
		if l.EventsRead > app.PlatformSnapshotEvery || l.SnapshotVersion == 0 || l.SnapshotVersion > l.Version {
			t.Fatalf("forKeys %v: stream at %d, snapshot at %d, %d events read (at most %d wanted)",
				forKeys, l.Version, l.SnapshotVersion, l.EventsRead, app.PlatformSnapshotEvery)
		}
	}
	res, err := a.CreateAPIKey(ctx, app.Meta{RequestID: "req_key", Actor: id}, nil, id, domain.Sandbox, domain.Sandbox, "after")
	if err != nil {
		t.Fatal(err)
	}
	l := assertLoadIsFullFold(t, ctx, pool, id, res.ID, "after a key")
	t.Logf("PATCH settings: %v at the start, %v after %d changes (read %d events past the snapshot at %d of %d; a full replay reads the stream in %v)",
		before, after, changes, l.EventsRead, l.SnapshotVersion, l.Version, replay)
}

// TestPlatformSnapshotAndTailEqualTheFullFold: over long histories that
// mix every platform event, and keys written before they had streams,
// every load equals the full fold, for the platform and for a key.
func TestPlatformSnapshotAndTailEqualTheFullFold(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	for _, tc := range []struct {
		name   string
		legacy int // keys created and revoked in the platform's stream
	}{
		{"settings, terms and keys", 0},
		{"keys written in the platform's stream before", 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := register(t, ctx, a, fmt.Sprintf("mixed%d", tc.legacy))
			if _, err := a.ApprovePlatform(ctx, operatorMeta("req_approve"), id); err != nil {
				t.Fatal(err)
			}
			legacyKey := domain.NewID(domain.PrefixAPIKey)
			if tc.legacy > 0 {
				appendLegacyKeys(t, ctx, pool, id, tc.legacy, legacyKey)
			}
			watched := ""
			for i := range 300 {
				key, err := mixedCommand(ctx, a, id, i, legacyKey, tc.legacy > 0)
				if err != nil {
					t.Fatalf("command %d: %v", i, err)
				}
				if key != "" {
					watched = key
				}
				when := fmt.Sprintf("after command %d", i)
				assertLoadIsFullFold(t, ctx, pool, id, "", when)
				if watched != "" {
					assertLoadIsFullFold(t, ctx, pool, id, watched, when)
				}
				if tc.legacy > 0 {
					assertLoadIsFullFold(t, ctx, pool, id, legacyKey, when)
				}
			}
			snap, ok := readSnapshot(t, ctx, pool, id)
			if !ok || snap.version < 300-app.PlatformSnapshotEvery {
				t.Fatalf("snapshot %+v (found %v): the history was not snapshotted", snap.version, ok)
			}
		})
	}
}

// mixedCommand runs the i-th command of a history that mixes every
// platform event: settings of both environments, terms, live access,
// keys created, rolled and revoked (and a legacy key rolled). It returns
// a key it created, if any.
func mixedCommand(ctx context.Context, a *app.App, id string, i int, legacyKey string, legacy bool) (string, error) {
	pm := app.Meta{RequestID: fmt.Sprintf("req_mixed_%d", i), Actor: id}
	switch {
	case i == 100:
		_, err := a.EnableLive(ctx, operatorMeta(pm.RequestID), id)
		return "", err
	case i == 150 && legacy:
		res, err := a.RollAPIKey(ctx, pm, id, domain.Sandbox, legacyKey, time.Hour)
		return res.ID, err
	case i%40 == 7:
		res, err := a.CreateAPIKey(ctx, pm, nil, id, domain.Sandbox, domain.Sandbox, fmt.Sprintf("key %d", i))
		if err != nil {
			return "", err
		}
		if _, err := a.RollAPIKey(ctx, pm, id, domain.Sandbox, res.ID, time.Minute); err != nil {
			return "", err
		}
		return res.ID, a.RevokeAPIKey(ctx, pm, id, domain.Sandbox, res.ID)
	case i%3 == 0:
		rate := fmt.Sprintf("0.%02d", i%100)
		return "", a.ConfigurePlatform(ctx, operatorMeta(pm.RequestID), id, platform.ConfigPatch{
			InterestRate: domain.Some(rate), RateLimit: domain.Some(platform.RateLimit{PerSecond: 1 + i, Burst: 2 + i}),
		})
	case i%3 == 1:
		return "", a.UpdateSettings(ctx, pm, id, domain.Sandbox, platform.SettingsPatch{
			DailyPaymentLimit: domain.Some(int64(1000 + i)),
			Sandbox:           domain.Some(platform.SandboxSettingsPatch{AutoSettle: domain.Some(i%2 == 0).Value}),
		})
	default:
		env := domain.Sandbox
		if i > 100 {
			env = domain.Live
		}
		return "", a.UpdateSettings(ctx, pm, id, env, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some(int64(i))})
	}
}

// TestStalePlatformSnapshotIsIgnored: a snapshot of another schema than
// the code's (State or Evolve changed meaning since) is not read, not
// even decoded, and the next command that appends replaces it.
func TestStalePlatformSnapshotIsIgnored(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "stale")
	for i := range 2 * app.PlatformSnapshotEvery {
		if err := alternateLimit(ctx, a, id, i); err != nil {
			t.Fatal(err)
		}
	}
	version := platformVersion(t, ctx, pool, id)
	if _, err := pool.Exec(ctx, `UPDATE stream_snapshots SET schema_version = $2, version = $3,
        state = '{"Name": "stale", "Status": "suspended"}' WHERE stream_id = $1`,
		platform.StreamID(id), platform.SnapshotSchema+1, version); err != nil {
		t.Fatal(err)
	}
	l := loadPlatform(t, ctx, pool, id, "", false)
	if want := fullFold(t, ctx, pool, id, "", -1); !reflect.DeepEqual(l.State, want) {
		t.Fatalf("with a stale snapshot the load gives\n%+v\nthe full fold gives\n%+v", l.State, want)
	}
	if l.SnapshotVersion != 0 || l.EventsRead != version {
		t.Fatalf("with a stale snapshot: started from %d, read %d events, want 0 and all %d", l.SnapshotVersion, l.EventsRead, version)
	}
	if err := alternateLimit(ctx, a, id, 2*app.PlatformSnapshotEvery); err != nil { // the other value
		t.Fatal(err)
	}
	snap, _ := readSnapshot(t, ctx, pool, id)
	if snap.schema != platform.SnapshotSchema || snap.version != int64(version+1) {
		t.Fatalf("after a command: snapshot of schema %d at %d, want %d at %d", snap.schema, snap.version, platform.SnapshotSchema, version+1)
	}
	assertLoadIsFullFold(t, ctx, pool, id, "", "after the stale snapshot was replaced")
}

// TestConcurrentPlatformCommandsKeepTheSnapshotTrue: many writers change
// settings and terms at once. Every change lands, the final state is the
// last event's, the stored snapshot is never newer than the stream and is
// the full fold at its version, and a load still reads a bounded tail.
func TestConcurrentPlatformCommandsKeepTheSnapshotTrue(t *testing.T) {
	const workers, each = 8, 40
	pool := newPool(t, workers+2)
	a := newApp(t, pool)
	a.MaxAttempts = 1000 // the writers all conflict on one stream: let each land
	ctx := testCtx(t)
	id := register(t, ctx, a, "crowd")
	if _, err := a.ApprovePlatform(ctx, operatorMeta("req_approve"), id); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range each {
				if errs[w] = concurrentChange(ctx, a, id, w, j); errs[w] != nil {
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	for w, err := range errs {
		if err != nil {
			t.Fatalf("writer %d: %v", w, err)
		}
	}

	version := int64(platformVersion(t, ctx, pool, id))
	if want := int64(2 + workers*each); version != want {
		t.Fatalf("stream version %d, want %d (every change appends one event)", version, want)
	}
	snap, ok := readSnapshot(t, ctx, pool, id)
	if !ok || snap.version > version || version-snap.version > app.PlatformSnapshotEvery {
		t.Fatalf("snapshot at %d (found %v) for a stream at %d", snap.version, ok, version)
	}
	want := fullFold(t, ctx, pool, id, "", snap.version)
	want.Keys = map[string]platform.Key{}
	if !reflect.DeepEqual(snap.state, want) {
		t.Fatalf("snapshot at %d is\n%+v\nthe full fold at %d is\n%+v", snap.version, snap.state, snap.version, want)
	}
	l := assertLoadIsFullFold(t, ctx, pool, id, "", "after the writers")
	lastLimit, lastRate := lastChanges(t, ctx, pool, id)
	if got := l.State.SettingsFor(domain.Sandbox).DailyPaymentLimit; got == nil || *got != lastLimit {
		t.Fatalf("daily limit %v, want the last event's %d", got, lastLimit)
	}
	if got := l.State.Config.RateLimit; got == nil || got.PerSecond != lastRate {
		t.Fatalf("rate limit %+v, want the last event's %d per second", got, lastRate)
	}
}

// concurrentChange is writer w's j-th change, unique so that it appends.
func concurrentChange(ctx context.Context, a *app.App, id string, w, j int) error {
	n := 1 + w*1000 + j
	if j%2 == 0 {
		return a.UpdateSettings(ctx, app.Meta{RequestID: fmt.Sprintf("req_%d_%d", w, j), Actor: id}, id, domain.Sandbox,
			platform.SettingsPatch{DailyPaymentLimit: domain.Some(int64(n))})
	}
	return a.ConfigurePlatform(ctx, operatorMeta(fmt.Sprintf("req_%d_%d", w, j)), id, platform.ConfigPatch{
		RateLimit: domain.Some(platform.RateLimit{PerSecond: n, Burst: n}),
	})
}

// lastChanges reads, from the log, the daily limit and the rate limit
// the last events of each kind set.
func lastChanges(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) (limit int64, perSecond int) {
	t.Helper()
	if err := pool.QueryRow(ctx, `SELECT
        (SELECT (data->'settings'->>'daily_payment_limit')::bigint FROM events WHERE stream_id = $1
            AND event_type = 'platform.settings_updated' ORDER BY stream_version DESC LIMIT 1),
        (SELECT (data->'config'->'rate_limit'->>'per_second')::int FROM events WHERE stream_id = $1
            AND event_type = 'platform.configured' ORDER BY stream_version DESC LIMIT 1)`,
		platform.StreamID(id)).Scan(&limit, &perSecond); err != nil {
		t.Fatal(err)
	}
	return limit, perSecond
}
