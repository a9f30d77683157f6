package http_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	apihttp "github.com/opentreasury/treasury/http"
)

// ktAuthHeader sends a request with a raw Authorization header (or none),
// each from a client address of its own: failed authentications from one
// address are limited (TestFailedAuthenticationIsLimitedPerAddress).
func ktAuthHeader(t testing.TB, api *testAPI, method, path, authorization string) response {
	t.Helper()
	ktAuthClients++
	addr := fmt.Sprintf("10.%d.%d.%d:1234", ktAuthClients>>16&255, ktAuthClients>>8&255, ktAuthClients&255)
	if authorization == "" {
		return serveFrom(api, addr, method, path, "")
	}
	return serveFrom(api, addr, method, path, "", "Authorization", authorization)
}

var ktAuthClients int

func TestAuthUnauthorizedIsOneAnswer(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Auth Co")
	revokedID, revoked, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "revoked"})
	ktStatus(t, api.do("DELETE", "/v1/platform/api-keys/"+revokedID, p.SandboxSecret, nil), http.StatusOK)
	expiredID, expired, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "expired"})
	ktStatus(t, api.do("POST", "/v1/platform/api-keys/"+expiredID+"/roll", p.SandboxSecret, `{"grace_seconds": 0}`), http.StatusCreated)

	base62 := "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef"[:40]
	cases := []struct{ name, header string }{
		{"no header", ""},
		{"Bearer and nothing", "Bearer "},
		{"Bearer and spaces", "Bearer    "},
		{"Bearer without space", "Bearer"},
		{"other scheme", "Basic " + p.SandboxSecret},
		{"no scheme", p.SandboxSecret},
		{"malformed: short", "Bearer sk_sandbox_abc"},
		{"malformed: long", "Bearer " + p.SandboxSecret + "x"},
		{"malformed: bad chars", "Bearer sk_sandbox_" + strings.Repeat("-", 40)},
		{"malformed: unknown environment", "Bearer sk_test_" + base62},
		{"malformed: too long", "Bearer " + strings.Repeat("a", 500)},
		{"well-formed unknown sandbox key", "Bearer sk_sandbox_" + base62},
		{"well-formed unknown live key", "Bearer sk_live_" + base62},
		{"environment prefix swapped", "Bearer sk_live_" + p.SandboxSecret[len("sk_sandbox_"):]},
		{"revoked key", "Bearer " + revoked},
		{"expired key", "Bearer " + expired},
		{"wrong operator key", "Bearer " + operatorKey + "x"},
		{"operator key prefix", "Bearer " + operatorKey[:len(operatorKey)-1]},
	}
	var message string
	for _, c := range cases {
		for _, route := range []struct{ method, path string }{
			{"GET", "/v1/platform"},
			{"GET", "/v1/operator/platforms"},
			{"POST", "/v1/platform/api-keys"},
		} {
			t.Run(c.name+" "+route.method+" "+route.path, func(t *testing.T) {
				r := ktAuthHeader(t, api, route.method, route.path, c.header)
				m := requireError(t, r, http.StatusUnauthorized, "unauthorized")
				msg, _ := m["message"].(string)
				if message == "" {
					message = msg
				}
				if msg != message {
					t.Fatalf("message %q differs from %q: the 401 must not hint why", msg, message)
				}
				if _, ok := m["param"]; ok {
					t.Fatalf("a 401 names a param: %s", r.Body)
				}
			})
		}
	}
	// The still-valid key is unaffected.
	ktWorks(t, api, p.SandboxSecret)
}

func TestAuthRouteGuards(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Guard Co").ktLive(t, api)
	pending := ktCreatePlatform(api, ktPlatformBody("Pending Co"))
	ktStatus(t, pending, http.StatusCreated)
	pendingID := pending.Str("id")

	// The operator key is not a platform key.
	for _, route := range []struct{ method, path, body string }{
		{"GET", "/v1/platform", ""},
		{"GET", "/v1/platform/settings", ""},
		{"PATCH", "/v1/platform/settings", `{"daily_payment_limit": 1}`},
		{"GET", "/v1/platform/api-keys", ""},
		{"POST", "/v1/platform/api-keys", `{"name": "op"}`},
		{"DELETE", "/v1/platform/api-keys/" + p.SandboxKeyID, ""},
		{"POST", "/v1/platform/api-keys/" + p.SandboxKeyID + "/roll", ""},
	} {
		var body any
		if route.body != "" {
			body = route.body
		}
		requireError(t, api.do(route.method, route.path, operatorKey, body), http.StatusForbidden, "forbidden")
	}
	ktWorks(t, api, p.SandboxSecret)

	// Platform keys are not the operator key.
	for _, key := range []string{p.SandboxSecret, p.LiveSecret} {
		for _, route := range []struct{ method, path, body string }{
			{"POST", "/v1/platforms", `{"name": "Sneaky", "contact_email": "ops@example.com"}`},
			{"GET", "/v1/operator/platforms", ""},
			{"GET", "/v1/operator/platforms/" + p.ID, ""},
			{"PATCH", "/v1/operator/platforms/" + p.ID, `{"revenue_share_rate": "1"}`},
			{"POST", "/v1/operator/platforms/" + pendingID + "/approve", ""},
			{"POST", "/v1/operator/platforms/" + p.ID + "/enable-live", ""},
		} {
			var body any
			if route.body != "" {
				body = route.body
			}
			requireError(t, api.do(route.method, route.path, key, body), http.StatusForbidden, "forbidden")
		}
	}
	// None of it took effect.
	all := ktAllPlatforms(t, api)
	if n, _ := ktCountByName(all, "Sneaky"); n != 0 {
		t.Fatalf("a platform key registered a platform")
	}
	g := api.do("GET", "/v1/operator/platforms/"+pendingID, operatorKey, nil)
	if g.Str("status") != "pending_approval" {
		t.Fatalf("a platform key approved a platform: %s", g.Body)
	}
	g = api.do("GET", "/v1/operator/platforms/"+p.ID, operatorKey, nil)
	if g.Str("revenue_share_rate") != "0.00" {
		t.Fatalf("a platform key configured a platform: %s", g.Body)
	}
}

// TestAuthOperatorKeyUnset: with no operator key configured, no key opens
// the operator routes.
func TestAuthOperatorKeyUnset(t *testing.T) {
	pool := pgtest.Pool(t)
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	srv := httptest.NewServer(apihttp.New(a, apihttp.Config{}))
	t.Cleanup(srv.Close)
	for _, key := range []string{"", operatorKey, "op_anything"} {
		for _, route := range []struct{ method, path string }{
			{"POST", "/v1/platforms"},
			{"GET", "/v1/operator/platforms"},
		} {
			var body io.Reader
			if route.method == "POST" {
				body = strings.NewReader(`{"name": "X", "contact_email": "ops@example.com"}`)
			}
			r, err := ktSend(srv.URL, route.method, route.path, key, body)
			if err != nil {
				t.Fatal(err)
			}
			requireError(t, r, http.StatusUnauthorized, "unauthorized")
		}
	}
	// "Bearer " with the empty configured key is no key either.
	r, err := ktSend(srv.URL, "GET", "/v1/operator/platforms", "", nil, "Authorization", "Bearer ")
	if err != nil {
		t.Fatal(err)
	}
	requireError(t, r, http.StatusUnauthorized, "unauthorized")
}

// TestAuthIsolation: one platform's keys never reach another's objects, and
// a sandbox key never reaches live keys.
func TestAuthIsolation(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	a := ktNewPlatform(t, api, "Platform A").ktLive(t, api)
	b := ktNewPlatform(t, api, "Platform B").ktLive(t, api)
	bExtraID, bExtra, _ := ktCreateKey(t, api, b.SandboxSecret, map[string]any{"name": "b extra"})

	// A cannot revoke or roll B's keys, in either environment.
	for _, aKey := range []string{a.SandboxSecret, a.LiveSecret} {
		for _, bID := range []string{b.SandboxKeyID, b.LiveKeyID, bExtraID} {
			requireError(t, api.do("DELETE", "/v1/platform/api-keys/"+bID, aKey, nil), http.StatusNotFound, "not_found")
			requireError(t, api.do("POST", "/v1/platform/api-keys/"+bID+"/roll", aKey, `{"grace_seconds": 0}`), http.StatusNotFound, "not_found")
		}
	}
	ktWorks(t, api, b.SandboxSecret)
	ktWorks(t, api, b.LiveSecret)
	ktWorks(t, api, bExtra)

	// The 404 for another platform's key says nothing more than the one for
	// a key that does not exist.
	other := requireError(t, api.do("DELETE", "/v1/platform/api-keys/"+b.SandboxKeyID, a.SandboxSecret, nil), http.StatusNotFound, "not_found")
	none := requireError(t, api.do("DELETE", "/v1/platform/api-keys/"+ktUnknownKeyID, a.SandboxSecret, nil), http.StatusNotFound, "not_found")
	if strings.ReplaceAll(other["message"].(string), b.SandboxKeyID, "ID") != strings.ReplaceAll(none["message"].(string), ktUnknownKeyID, "ID") {
		t.Fatalf("404 messages differ: %q vs %q", other["message"], none["message"])
	}

	// A's sandbox key cannot revoke or roll A's live key.
	requireError(t, api.do("DELETE", "/v1/platform/api-keys/"+a.LiveKeyID, a.SandboxSecret, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("POST", "/v1/platform/api-keys/"+a.LiveKeyID+"/roll", a.SandboxSecret, `{"grace_seconds": 0}`), http.StatusNotFound, "not_found")
	ktWorks(t, api, a.LiveSecret)

	// A's sandbox list shows A's sandbox keys only.
	listed := ktKeysListed(t, api, a.SandboxSecret, "")
	if len(listed) != 1 || listed[a.SandboxKeyID] == nil {
		t.Fatalf("A's sandbox list: %v", listed)
	}
	for _, k := range listed {
		if k["environment"] != "sandbox" || k["platform_id"] != a.ID {
			t.Fatalf("A's sandbox list shows %v", k)
		}
	}
	listed = ktKeysListed(t, api, a.LiveSecret, "")
	if len(listed) != 1 || listed[a.LiveKeyID] == nil {
		t.Fatalf("A's live list: %v", listed)
	}

	// GET /v1/platform shows the caller's own platform.
	for _, c := range []struct{ key, id, env string }{
		{a.SandboxSecret, a.ID, "sandbox"}, {a.LiveSecret, a.ID, "live"},
		{b.SandboxSecret, b.ID, "sandbox"}, {b.LiveSecret, b.ID, "live"}, {bExtra, b.ID, "sandbox"},
	} {
		r := api.do("GET", "/v1/platform", c.key, nil)
		ktStatus(t, r, http.StatusOK)
		if r.Str("id") != c.id || r.Str("environment") != c.env {
			t.Fatalf("GET /platform with %s…: %s", c.key[:12], r.Body)
		}
	}

	// Settings are the caller's own.
	ktStatus(t, api.do("PATCH", "/v1/platform/settings", a.SandboxSecret, `{"daily_payment_limit": 777}`), http.StatusOK)
	r := api.do("GET", "/v1/platform/settings", b.SandboxSecret, nil)
	if r.Str("platform_id") != b.ID || r.JSON()["daily_payment_limit"] != nil {
		t.Fatalf("B's settings after A's PATCH: %s", r.Body)
	}
}

// TestAuthSchemeIsCaseInsensitive: HTTP auth schemes are case-insensitive.
func TestAuthSchemeIsCaseInsensitive(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	_, key := api.newPlatform("Scheme")
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		r := api.do("GET", "/v1/platform", "", nil, "Authorization", scheme+" "+key)
		if r.Status != http.StatusOK {
			t.Errorf("%s scheme: %d %s", scheme, r.Status, r.Body)
		}
	}
	r := api.do("GET", "/v1/platform", "", nil, "Authorization", "Basic "+key)
	requireError(t, r, http.StatusUnauthorized, "unauthorized")
}
