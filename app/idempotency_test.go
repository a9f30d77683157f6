package app_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
)

func idem(scope, env, key, op, hash string) *app.Idempotency {
	return &app.Idempotency{Scope: scope, Environment: env, Key: key, Operation: op, RequestHash: hash}
}

var acme = app.RegisterPlatform{Name: "Acme", ContactEmail: "ops@acme.example.com"}

func platformCount(t *testing.T, ctx context.Context, pool *pgxpool.Pool) int {
	t.Helper()
	return count(t, ctx, pool, `SELECT count(*) FROM platforms`)
}

// assertOnlyPlatforms checks that exactly n platforms exist, each with its
// one stream and its one registration event (a lost race leaves no trace).
func assertOnlyPlatforms(t *testing.T, ctx context.Context, pool *pgxpool.Pool, n int) {
	t.Helper()
	if got := platformCount(t, ctx, pool); got != n {
		t.Fatalf("platforms rows = %d, want %d", got, n)
	}
	if got := count(t, ctx, pool, `SELECT count(*) FROM streams`); got != n {
		t.Fatalf("streams rows = %d, want %d", got, n)
	}
	if got := count(t, ctx, pool, `SELECT count(*) FROM events WHERE event_type = 'platform.registered'`); got != n {
		t.Fatalf("platform.registered events = %d, want %d", got, n)
	}
}

func wantConflict(t *testing.T, err error, resourceID string) {
	t.Helper()
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeIdempotencyConflict {
		t.Fatalf("err = %v, want *domain.Error idempotency_conflict", err)
	}
	if de.ResourceID != resourceID {
		t.Fatalf("conflict resource_id = %q, want the first request's %q", de.ResourceID, resourceID)
	}
	if !errors.Is(err, &domain.Error{Code: domain.CodeIdempotencyConflict}) {
		t.Fatalf("errors.Is does not match the conflict code")
	}
}

// TestIdempotentReplay: the same key and request twice creates one
// platform; the second answer is a replay with the same id.
func TestIdempotentReplay(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	k := idem("operator", "live", "key-1", "register_platform", "hash-a")

	first, err := a.RegisterPlatform(ctx, operatorMeta("req_1"), k, acme)
	if err != nil {
		t.Fatal(err)
	}
	if first.Replayed || !domain.HasPrefix(first.ID, domain.PrefixPlatform) {
		t.Fatalf("first = %+v", first)
	}
	for i := range 2 {
		again, err := a.RegisterPlatform(ctx, operatorMeta(fmt.Sprintf("req_again_%d", i)), k, acme)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || again.ID != first.ID {
			t.Fatalf("replay %d = %+v, want Replayed with id %s", i, again, first.ID)
		}
	}
	assertOnlyPlatforms(t, ctx, pool, 1)
	if n := count(t, ctx, pool, `SELECT count(*) FROM idempotency_keys WHERE resource_id = $1 AND request_hash = 'hash-a'
        AND operation = 'register_platform'`, first.ID); n != 1 {
		t.Fatalf("idempotency_keys rows for the platform = %d, want 1", n)
	}
	// No key, no idempotency: the same request twice makes two platforms.
	for range 2 {
		if res, err := a.RegisterPlatform(ctx, operatorMeta("req_nokey"), nil, acme); err != nil || res.Replayed {
			t.Fatalf("without a key: %+v, %v", res, err)
		}
	}
	assertOnlyPlatforms(t, ctx, pool, 3)
}

// TestIdempotencyConflicts: the same key with another request, or for
// another operation, is a conflict naming the first request's resource,
// and creates nothing.
func TestIdempotencyConflicts(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	first, err := a.RegisterPlatform(ctx, operatorMeta("req_1"), idem("operator", "live", "key-1", "register_platform", "hash-a"), acme)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("different request hash", func(t *testing.T) {
		other := app.RegisterPlatform{Name: "Other", ContactEmail: "ops@other.example.com"}
		res, err := a.RegisterPlatform(ctx, operatorMeta("req_2"), idem("operator", "live", "key-1", "register_platform", "hash-b"), other)
		wantConflict(t, err, first.ID)
		if res.ID != "" {
			t.Fatalf("a conflict returned a result %+v", res)
		}
	})
	t.Run("different operation", func(t *testing.T) {
		_, err := a.RegisterPlatform(ctx, operatorMeta("req_3"), idem("operator", "live", "key-1", "approve_platform", "hash-a"), acme)
		wantConflict(t, err, first.ID)
	})
	assertOnlyPlatforms(t, ctx, pool, 1)
	// The key still replays its own request.
	if res, err := a.RegisterPlatform(ctx, operatorMeta("req_4"), idem("operator", "live", "key-1", "register_platform", "hash-a"), acme); err != nil || !res.Replayed || res.ID != first.ID {
		t.Fatalf("replay after conflicts: %+v, %v", res, err)
	}
}

// TestIdempotencyKeysAreScoped: the same key in another scope or another
// environment is another key.
func TestIdempotencyKeysAreScoped(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	keys := []*app.Idempotency{
		idem("operator", "live", "shared", "register_platform", "h"),
		idem("plt_01ARZ3NDEKTSV4RRFFQ69G5FAV", "live", "shared", "register_platform", "h"),
		idem("operator", "sandbox", "shared", "register_platform", "h"),
	}
	ids := map[string]bool{}
	var first []string
	for i, k := range keys {
		res, err := a.RegisterPlatform(ctx, operatorMeta(fmt.Sprintf("req_%d", i)), k, acme)
		if err != nil {
			t.Fatalf("%+v: %v", k, err)
		}
		if res.Replayed || ids[res.ID] {
			t.Fatalf("%+v: %+v is a replay of another scope's request", k, res)
		}
		ids[res.ID] = true
		first = append(first, res.ID)
	}
	assertOnlyPlatforms(t, ctx, pool, len(keys))
	for i, k := range keys {
		res, err := a.RegisterPlatform(ctx, operatorMeta("req_replay"), k, acme)
		if err != nil || !res.Replayed || res.ID != first[i] {
			t.Fatalf("replay %+v: %+v, %v; want %s", k, res, err, first[i])
		}
	}
	// A conflict in one scope names that scope's resource.
	_, err := a.RegisterPlatform(ctx, operatorMeta("req_x"), idem("operator", "sandbox", "shared", "register_platform", "other"), acme)
	wantConflict(t, err, first[2])
	assertOnlyPlatforms(t, ctx, pool, len(keys))
}

// TestConcurrentDuplicatesCreateOnePlatform: 30 identical requests at once
// create exactly one platform; each gets its id (one fresh, the others
// replays) or idempotency_in_progress.
func TestConcurrentDuplicatesCreateOnePlatform(t *testing.T) {
	const workers = 30
	pool := newPool(t, workers+2)
	a := newApp(t, pool)
	ctx := testCtx(t)
	k := idem("operator", "live", "dup", "register_platform", "same")

	results := make([]app.Result, workers)
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
			results[i], errs[i] = a.RegisterPlatform(ctx, operatorMeta(fmt.Sprintf("req_%d", i)), k, acme)
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()

	assertOnlyPlatforms(t, ctx, pool, 1)
	var id string
	if err := pool.QueryRow(ctx, `SELECT id FROM platforms`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	fresh, replayed := 0, 0
	for i := range workers {
		switch {
		case errs[i] == nil && results[i].ID == id:
			if results[i].Replayed {
				replayed++
			} else {
				fresh++
			}
		default:
			t.Errorf("call %d: %+v, %v; want %s (a duplicate waits for the first and replays it)", i, results[i], errs[i], id)
		}
	}
	t.Logf("%d concurrent duplicates: %d fresh, %d replayed", workers, fresh, replayed)
	if fresh != 1 {
		t.Errorf("%d calls claim to have created the platform, want exactly 1", fresh)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM idempotency_keys`); n != 1 {
		t.Errorf("idempotency_keys rows = %d, want 1", n)
	}
}

// TestConcurrentConflictingRequests: two different requests race with the
// same key. One platform is created; every caller of the winning request
// gets it, every caller of the other gets a conflict naming it.
func TestConcurrentConflictingRequests(t *testing.T) {
	const workers = 20
	pool := newPool(t, workers+2)
	a := newApp(t, pool)
	ctx := testCtx(t)
	hash := func(i int) string { return fmt.Sprintf("hash-%d", i%2) }

	results := make([]app.Result, workers)
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
			in := app.RegisterPlatform{Name: fmt.Sprintf("Racer %d", i%2), ContactEmail: "ops@racer.example.com"}
			results[i], errs[i] = a.RegisterPlatform(ctx, operatorMeta(fmt.Sprintf("req_%d", i)),
				idem("operator", "live", "race", "register_platform", hash(i)), in)
		}()
	}
	ready.Wait()
	close(start)
	wg.Wait()

	assertOnlyPlatforms(t, ctx, pool, 1)
	var id, winner string
	if err := pool.QueryRow(ctx, `SELECT resource_id, request_hash FROM idempotency_keys WHERE key = 'race'`).Scan(&id, &winner); err != nil {
		t.Fatal(err)
	}
	var name string
	if err := pool.QueryRow(ctx, `SELECT name FROM platforms WHERE id = $1`, id).Scan(&name); err != nil {
		t.Fatal(err)
	}
	if want := "Racer " + winner[len("hash-"):]; name != want {
		t.Fatalf("the stored key's request is %s but the platform is %q", winner, name)
	}
	for i := range workers {
		switch {
		case domain.CodeOf(errs[i]) == domain.CodeIdempotencyInProgress:
		case hash(i) == winner:
			if errs[i] != nil || results[i].ID != id {
				t.Errorf("call %d (winning request): %+v, %v; want %s", i, results[i], errs[i], id)
			}
		default:
			var de *domain.Error
			if !errors.As(errs[i], &de) || de.Code != domain.CodeIdempotencyConflict || de.ResourceID != id {
				t.Errorf("call %d (losing request): %+v, %v; want idempotency_conflict on %s", i, results[i], errs[i], id)
			}
		}
	}
}

// TestFailedCommandDoesNotStoreTheKey: a request refused by the domain
// leaves no key behind, so the corrected request may reuse it.
func TestFailedCommandDoesNotStoreTheKey(t *testing.T) {
	pool := newPool(t, 4)
	a := newApp(t, pool)
	ctx := testCtx(t)
	bad := app.RegisterPlatform{Name: "Acme", ContactEmail: "not-an-email"}
	for range 2 { // the same bad request again is refused again, not replayed
		_, err := a.RegisterPlatform(ctx, operatorMeta("req_bad"), idem("operator", "live", "k", "register_platform", "bad"), bad)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.CodeInvalidRequest || de.Param != "contact_email" {
			t.Fatalf("err = %v, want invalid_request on contact_email", err)
		}
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM idempotency_keys`); n != 0 {
		t.Fatalf("idempotency_keys rows = %d after a refused request, want 0", n)
	}
	assertOnlyPlatforms(t, ctx, pool, 0)

	res, err := a.RegisterPlatform(ctx, operatorMeta("req_good"), idem("operator", "live", "k", "register_platform", "good"), acme)
	if err != nil || res.Replayed {
		t.Fatalf("corrected retry: %+v, %v", res, err)
	}
	assertOnlyPlatforms(t, ctx, pool, 1)
	res2, err := a.RegisterPlatform(ctx, operatorMeta("req_good_again"), idem("operator", "live", "k", "register_platform", "good"), acme)
	if err != nil || !res2.Replayed || res2.ID != res.ID {
		t.Fatalf("replay of the corrected request: %+v, %v", res2, err)
	}
}
