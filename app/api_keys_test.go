package app_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

func keysInUse(t *testing.T, ctx context.Context, pool *pgxpool.Pool, platformID string) int {
	t.Helper()
	return count(t, ctx, pool, `SELECT count(*) FROM api_keys WHERE platform_id = $1 AND environment = 'sandbox'
        AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`, platformID)
}

// TestAPIKeyCapHoldsUnderConcurrency: with 99 sandbox keys in use, eight
// concurrent creates make exactly one more key; the others get 422
// limit_exceeded. A roll at the cap goes through (it replaces a key), a
// second one while the first's grace runs does not, and revoking makes room.
func TestAPIKeyCapHoldsUnderConcurrency(t *testing.T) {
	const racers = 8
	pool := newPool(t, racers+2)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "capped")
	first, err := a.ApprovePlatform(ctx, operatorMeta("req_approve"), id)
	if err != nil {
		t.Fatal(err)
	}
	pm := func(req string) app.Meta { return app.Meta{RequestID: req, Actor: id} }
	var keys []string
	for i := range platform.MaxKeysInUse - 2 {
		res, err := a.CreateAPIKey(ctx, pm(fmt.Sprintf("req_fill_%d", i)), nil, id, domain.Sandbox, domain.Sandbox, "fill")
		if err != nil {
			t.Fatalf("key %d: %v", i+2, err)
		}
		keys = append(keys, res.ID)
	}
	if n := keysInUse(t, ctx, pool, id); n != platform.MaxKeysInUse-1 {
		t.Fatalf("keys in use = %d, want %d", n, platform.MaxKeysInUse-1)
	}

	errs := make([]error, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = a.CreateAPIKey(ctx, pm(fmt.Sprintf("req_race_%d", i)), nil, id, domain.Sandbox, domain.Sandbox, "racer")
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch domain.CodeOf(err) {
		case "":
			ok++
		case domain.CodeLimitExceeded:
		default:
			t.Errorf("racer %d: %v, want success or limit_exceeded", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent creates at 99 keys succeeded, want exactly 1", ok, racers)
	}
	if n := keysInUse(t, ctx, pool, id); n != platform.MaxKeysInUse {
		t.Fatalf("keys in use = %d, want the cap %d", n, platform.MaxKeysInUse)
	}

	if _, err := a.RollAPIKey(ctx, pm("req_roll_1"), id, domain.Sandbox, first.ID, time.Hour); err != nil {
		t.Fatalf("roll at the cap: %v (a roll replaces a key and must not be blocked)", err)
	}
	_, err = a.RollAPIKey(ctx, pm("req_roll_2"), id, domain.Sandbox, keys[0], time.Hour)
	if domain.CodeOf(err) != domain.CodeLimitExceeded {
		t.Fatalf("second roll while the first's grace runs (101 keys in use): %v, want limit_exceeded", err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_revoke_1"), id, domain.Sandbox, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateAPIKey(ctx, pm("req_full"), nil, id, domain.Sandbox, domain.Sandbox, "one too many"); domain.CodeOf(err) != domain.CodeLimitExceeded {
		t.Fatalf("create at 100 keys in use: %v, want limit_exceeded", err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_revoke_2"), id, domain.Sandbox, keys[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CreateAPIKey(ctx, pm("req_room"), nil, id, domain.Sandbox, domain.Sandbox, "after a revoke"); err != nil {
		t.Fatalf("create after revoking one: %v", err)
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
}

// appendLegacyKeys writes n keys created and revoked, plus the unrevoked
// keys named in live, into the platform's own stream, as the log was
// written before keys had streams of their own, and projects them.
func appendLegacyKeys(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string, n int, live ...string) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var version int64
	if err := tx.QueryRow(ctx, `SELECT version FROM streams WHERE stream_id = $1`, platform.StreamID(id)).Scan(&version); err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Truncate(time.Microsecond)
	var evs []domain.Event
	created := func(keyID string) platform.KeyCreated {
		return platform.KeyCreated{KeyID: keyID, Environment: domain.Sandbox, Name: "old", Prefix: "sk_sandbox_x",
			SecretHash: app.HashSecret("legacy " + keyID), At: at}
	}
	for range n {
		keyID := domain.NewID(domain.PrefixAPIKey)
		evs = append(evs, created(keyID), platform.KeyRevoked{KeyID: keyID, At: at})
	}
	for _, keyID := range live {
		evs = append(evs, created(keyID))
	}
	recs, err := eventstore.Append(ctx, tx, eventstore.Stream{ID: platform.StreamID(id), Type: platform.StreamType, PlatformID: id},
		version, app.Meta{RequestID: "req_legacy"}, evs...)
	if err != nil {
		t.Fatal(err)
	}
	b, err := projections.ProjectInline(recs)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func platformVersion(t *testing.T, ctx context.Context, pool *pgxpool.Pool, id string) int {
	t.Helper()
	return count(t, ctx, pool, `SELECT version::int FROM streams WHERE stream_id = $1`, platform.StreamID(id))
}

// medianOf times call n times and returns the median.
func medianOf(t *testing.T, n int, call func(i int) error) time.Duration {
	t.Helper()
	var ds []time.Duration
	for i := range n {
		began := time.Now()
		if err := call(i); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(began))
	}
	slices.Sort(ds)
	return ds[n/2]
}

// TestKeyCommandsDoNotGrowThePlatformStream: a platform's commands used to
// replay its whole stream, every key ever created, revoked or rolled
// included (217 ms for a create after 2,020 keys). Now each key's events
// go to its own stream, so creating and revoking keys leaves the platform's
// stream as it is: what a settings PATCH or a create reads does not grow
// with the keys' history. A log written before that (key events in the
// platform's stream) still folds, its keys can still be revoked and
// rolled, and its key events are not read by other commands. The test
// logs the latencies over 2,000 legacy keys and 100 new ones.
func TestKeyCommandsDoNotGrowThePlatformStream(t *testing.T) {
	const legacy, fresh = 2000, 100
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	id := register(t, ctx, a, "history")
	if _, err := a.ApprovePlatform(ctx, operatorMeta("req_approve"), id); err != nil {
		t.Fatal(err)
	}
	pm := func(req string) app.Meta { return app.Meta{RequestID: req, Actor: id} }
	oldToRoll, oldToRevoke := domain.NewID(domain.PrefixAPIKey), domain.NewID(domain.PrefixAPIKey)
	appendLegacyKeys(t, ctx, pool, id, legacy, oldToRoll, oldToRevoke)

	patch := func(i int) error {
		return a.UpdateSettings(ctx, pm(fmt.Sprintf("req_patch_%d", i)), id, domain.Sandbox,
			platform.SettingsPatch{DailyPaymentLimit: domain.Some(int64(1000 + i))})
	}
	create := func(i int) error {
		res, err := a.CreateAPIKey(ctx, pm(fmt.Sprintf("req_create_%d", i)), nil, id, domain.Sandbox, domain.Sandbox, "timed")
		if err != nil {
			return err
		}
		return a.RevokeAPIKey(ctx, pm(fmt.Sprintf("req_revoke_timed_%d", i)), id, domain.Sandbox, res.ID)
	}
	t.Logf("over %d legacy keys in the platform's stream: PATCH settings %v, create+revoke a key %v (medians of 9)",
		legacy, medianOf(t, 9, patch), medianOf(t, 9, create))

	before := platformVersion(t, ctx, pool, id)
	for i := range fresh {
		res, err := a.CreateAPIKey(ctx, pm(fmt.Sprintf("req_fresh_%d", i)), nil, id, domain.Sandbox, domain.Sandbox, "fresh")
		if err != nil {
			t.Fatal(err)
		}
		if err := a.RevokeAPIKey(ctx, pm(fmt.Sprintf("req_fresh_revoke_%d", i)), id, domain.Sandbox, res.ID); err != nil {
			t.Fatal(err)
		}
		if v := count(t, ctx, pool, `SELECT version::int FROM streams WHERE stream_id = $1`, platform.KeyStreamID(res.ID)); v != 2 {
			t.Fatalf("key %s's stream version = %d, want 2 (created, revoked)", res.ID, v)
		}
	}
	if after := platformVersion(t, ctx, pool, id); after != before {
		t.Fatalf("creating and revoking %d keys moved the platform's stream from version %d to %d: "+
			"its commands would replay every key", fresh, before, after)
	}
	t.Logf("after %d more keys created and revoked: PATCH settings %v, create+revoke a key %v (medians of 9)",
		fresh, medianOf(t, 9, func(i int) error { return patch(100 + i) }), medianOf(t, 9, func(i int) error { return create(100 + i) }))

	// Keys of the old layout are still managed where their events are.
	rolled, err := a.RollAPIKey(ctx, pm("req_roll_old"), id, domain.Sandbox, oldToRoll, time.Hour)
	if err != nil {
		t.Fatalf("roll a key of the old layout: %v", err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_revoke_old"), id, domain.Sandbox, oldToRevoke); err != nil {
		t.Fatalf("revoke a key of the old layout: %v", err)
	}
	if err := a.RevokeAPIKey(ctx, pm("req_revoke_old_again"), id, domain.Sandbox, oldToRevoke); err != nil {
		t.Fatalf("revoke a key of the old layout twice: %v", err)
	}
	for _, c := range []struct{ stream, typ, key string }{
		{platform.StreamID(id), "api_key.rolled", oldToRoll},
		{platform.StreamID(id), "api_key.revoked", oldToRevoke},
		{platform.KeyStreamID(rolled.ID), "api_key.created", rolled.ID},
	} {
		if n := count(t, ctx, pool, `SELECT count(*) FROM events WHERE stream_id = $1 AND event_type = $2 AND data->>'key_id' = $3`,
			c.stream, c.typ, c.key); n != 1 {
			t.Errorf("%s of %s in %s: %d events, want 1", c.typ, c.key, c.stream, n)
		}
	}

	// Another platform cannot reach these keys, in either layout.
	other := register(t, ctx, a, "other")
	if _, err := a.ApprovePlatform(ctx, operatorMeta("req_approve_other"), other); err != nil {
		t.Fatal(err)
	}
	for _, keyID := range []string{rolled.ID, oldToRoll} {
		if err := a.RevokeAPIKey(ctx, pm("req_foreign"), other, domain.Live, keyID); domain.CodeOf(err) != domain.CodeNotFound {
			t.Errorf("another platform revoking %s: %v, want not_found", keyID, err)
		}
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM api_keys WHERE id = $1 AND revoked_at IS NULL`, rolled.ID); n != 1 {
		t.Errorf("key %s was revoked through another platform", rolled.ID)
	}
	assertProjectionsMatchLog(t, ctx, pool, id)
}
