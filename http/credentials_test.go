package http_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	apihttp "github.com/opentreasury/treasury/http"
)

// countedAPI is the API as `treasury serve` wires it for round trips: a
// pool traced by eventstore.RoundTrips (treasury_db_round_trips_total),
// requests labelled with OriginAPI. url, if set, is the database to use
// (another replica of the same one).
func countedAPI(t *testing.T, url string) (*testAPI, *eventstore.RoundTrips) {
	t.Helper()
	if url == "" {
		url = pgtest.URL(t)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	trips := &eventstore.RoundTrips{}
	cfg.ConnConfig.Tracer = trips
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	api := apihttp.New(a, apihttp.Config{OperatorKey: operatorKey})
	srv := httptest.NewUnstartedServer(api)
	apiCtx := eventstore.WithOrigin(context.Background(), eventstore.OriginAPI)
	srv.Config.BaseContext = func(net.Listener) context.Context { return apiCtx }
	srv.Start()
	t.Cleanup(srv.Close)
	return &testAPI{t: t, URL: srv.URL, Pool: pool, App: a, API: api}, trips
}

// Issue #15 item 3: POST /v1/payments with a key used once before costs
// two API round trips in all — authentication found the key in memory,
// and the command checked it in its first round trip (it cost six: the
// key's lookup, BEGIN, the reads, the appends, the projections, COMMIT).
func TestPaymentOnAWarmKeyCostsTwoRoundTrips(t *testing.T) {
	api, trips := countedAPI(t, "")
	platformID, key := api.newPlatform("Two Trips Co")
	va := payAccount(t, api, key, platformID, "biz_1", 1_000_000, true)
	payCreated(t, api, key, payBody(va, 100, "rtp", "123456789")) // the key's first payment: looked up

	before := trips.Count(eventstore.OriginAPI)
	payCreated(t, api, key, payBody(va, 100, "rtp", "123456789"))
	if got := trips.Count(eventstore.OriginAPI) - before; got != 2 {
		t.Fatalf("POST /v1/payments on a warm key: %d API round trips, want 2", got)
	}
}

// A key revoked through one replica is refused by another on its next
// payment, although the other found it in its credential cache: the
// payment's command checks the key (API.md §3: revocation takes effect on
// the next request). The refusal is the one 401 of every unusable key, and
// the key leaves the cache.
func TestRevokedKeyIsRefusedOnTheNextPaymentByAnotherReplica(t *testing.T) {
	url := pgtest.URL(t)
	a, _ := countedAPI(t, url)
	b, _ := countedAPI(t, url)
	platformID, admin := a.newPlatform("Revoking Co")
	va := payAccount(t, a, admin, platformID, "biz_1", 1_000_000, true)
	keyID, secret, _ := ktCreateKey(t, a, admin, map[string]any{"name": "payments"})

	payCreated(t, b, secret, payBody(va, 100, "rtp", "123456789")) // b caches the key
	payCreated(t, b, secret, payBody(va, 100, "rtp", "123456789")) // and pays from its cache

	vaRequire(t, a.do("DELETE", "/v1/platform/api-keys/"+keyID, admin, nil), http.StatusOK)
	for i := range 2 { // from the cache, then from a lookup
		r := payCreate(b, secret, payBody(va, 100, "rtp", "123456789"))
		requireError(t, r, http.StatusUnauthorized, "unauthorized")
		if msg := r.Str("message"); msg != "missing or invalid API key: send Authorization: Bearer <key>" {
			t.Fatalf("refusal %d: message %q, want the one 401 message", i, msg)
		}
	}
	// Two payments, none after the revocation.
	if n := len(vaData(t, vaGet(t, b, admin, "/v1/payments?virtual_account_id="+va))); n != 2 {
		t.Fatalf("%d payments, want 2", n)
	}
}

// The hot reads on a warm key cost one API round trip: the key's check
// travels in front of the read (it cost two: the key's lookup, then the
// read).
func TestReadOnAWarmKeyCostsOneRoundTrip(t *testing.T) {
	api, trips := countedAPI(t, "")
	platformID, key := api.newPlatform("One Trip Co")
	va := payAccount(t, api, key, platformID, "biz_1", 1_000_000, true)
	pay := payCreated(t, api, key, payBody(va, 100, "rtp", "123456789"))
	for _, path := range []string{"/v1/virtual-accounts/" + va, "/v1/virtual-accounts/" + va + "/balance",
		"/v1/payments/" + pay["id"].(string)} {
		vaGet(t, api, key, path)
		before := trips.Count(eventstore.OriginAPI)
		vaGet(t, api, key, path)
		if got := trips.Count(eventstore.OriginAPI) - before; got != 1 {
			t.Errorf("GET %s on a warm key: %d API round trips, want 1", path, got)
		}
	}
}

// A key revoked through one replica is refused by another on its next
// read of each hot route, although the other found it in its credential
// cache (API.md §3): the read checks the key in its own round trip. The
// refusal is the one 401 of every unusable key, and the key leaves the
// cache (the second refusal comes from a lookup).
func TestRevokedKeyIsRefusedOnTheNextReadByAnotherReplica(t *testing.T) {
	url := pgtest.URL(t)
	a, _ := countedAPI(t, url)
	b, _ := countedAPI(t, url)
	platformID, admin := a.newPlatform("Revoking Reads Co")
	va := payAccount(t, a, admin, platformID, "biz_1", 1_000_000, true)
	pay := payCreated(t, a, admin, payBody(va, 100, "rtp", "123456789"))
	paths := []string{"/v1/virtual-accounts/" + va, "/v1/virtual-accounts/" + va + "/balance",
		"/v1/virtual-accounts/" + va + "/balance?as_of=2030-01-01T00:00:00Z", "/v1/payments/" + pay["id"].(string),
		"/v1/payments", "/v1/virtual-accounts/" + va + "/transactions", "/v1/ledger/entries"}
	for _, path := range paths {
		keyID, secret, _ := ktCreateKey(t, a, admin, map[string]any{"name": "reads"})
		vaGet(t, b, secret, path) // b caches the key
		vaGet(t, b, secret, path) // and reads from its cache
		vaRequire(t, a.do("DELETE", "/v1/platform/api-keys/"+keyID, admin, nil), http.StatusOK)
		for i := range 2 { // from the cache, then from a lookup
			r := b.do("GET", path, secret, nil)
			requireError(t, r, http.StatusUnauthorized, "unauthorized")
			if msg := r.Str("message"); msg != "missing or invalid API key: send Authorization: Bearer <key>" {
				t.Fatalf("GET %s, refusal %d: message %q, want the one 401 message", path, i, msg)
			}
		}
	}
}
