package http_test

import (
	"net/http"
	"strconv"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// ktHeaderInt reads an integer response header, failing if it is absent.
func ktHeaderInt(t testing.TB, r response, name string) int {
	t.Helper()
	s := r.Header.Get(name)
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("header %s = %q, want an integer (status %d)", name, s, r.Status)
	}
	return n
}

func TestRateLimitGlobalConfig(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 3}})
	p := ktNewPlatform(t, api, "Limited Co")

	// At 1 token a second, four requests in well under a second see a
	// full bucket of 3 and then nothing.
	var rs []response
	for range 4 {
		rs = append(rs, api.do("GET", "/v1/platform", p.SandboxSecret, nil))
	}
	prev := 1 << 30
	for i, r := range rs[:3] {
		ktStatus(t, r, http.StatusOK)
		if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != 3 {
			t.Fatalf("request %d: RateLimit-Limit %d, want 3", i, l)
		}
		rem := ktHeaderInt(t, r, "RateLimit-Remaining")
		if rem != 2-i {
			t.Fatalf("request %d: RateLimit-Remaining %d, want %d", i, rem, 2-i)
		}
		if rem >= prev {
			t.Fatalf("RateLimit-Remaining does not decrease: %d then %d", prev, rem)
		}
		prev = rem
		if reset := ktHeaderInt(t, r, "RateLimit-Reset"); reset < 1 || reset > 3 {
			t.Fatalf("request %d: RateLimit-Reset %d, want 1..3 seconds", i, reset)
		}
		if r.Header.Get("Retry-After") != "" {
			t.Fatalf("request %d: Retry-After on a success", i)
		}
	}
	last := rs[3]
	requireError(t, last, http.StatusTooManyRequests, "rate_limited")
	if ra := ktHeaderInt(t, last, "Retry-After"); ra < 1 {
		t.Fatalf("Retry-After %d, want at least 1", ra)
	}
	if ktHeaderInt(t, last, "RateLimit-Limit") != 3 || ktHeaderInt(t, last, "RateLimit-Remaining") != 0 {
		t.Fatalf("429 headers: %v", last.Header)
	}
	ktHeaderInt(t, last, "RateLimit-Reset")
	if last.Header.Get("X-Request-Id") != last.Str("request_id") {
		t.Fatalf("429 request id header %q, body %q", last.Header.Get("X-Request-Id"), last.Str("request_id"))
	}

	// Every route of the key draws on the same bucket.
	requireError(t, api.do("GET", "/v1/platform/settings", p.SandboxSecret, nil), http.StatusTooManyRequests, "rate_limited")
	// A route the key may not call answers 403, not 429: the guard runs
	// before the limiter.
	requireError(t, api.do("GET", "/v1/operator/platforms", p.SandboxSecret, nil), http.StatusForbidden, "forbidden")

	// The operator key has its own bucket at the live default (burst 200),
	// untouched by the global configuration meant for platform keys.
	// (It refills at 100/s, so Remaining is only bounded, not exact.)
	for i := range 10 {
		r := api.do("GET", "/v1/operator/platforms", operatorKey, nil)
		ktStatus(t, r, http.StatusOK)
		if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != 200 {
			t.Fatalf("operator RateLimit-Limit %d, want 200", l)
		}
		if rem := ktHeaderInt(t, r, "RateLimit-Remaining"); rem < 150 || rem > 199 {
			t.Fatalf("operator request %d: RateLimit-Remaining %d, want 150..199", i, rem)
		}
	}
}

// With three replicas, each enforces a third of the limit (rounded up):
// a platform whose requests all reach one replica gets its share, and the
// headers say so.
func TestRateLimitSharedByReplicas(t *testing.T) {
	replicas := 3
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 7},
		Replicas: func() int { return replicas }})
	p := ktNewPlatform(t, api, "Replicated Co")
	for i := range 4 { // a burst of ceil(7/3) = 3
		r := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
		if i < 3 {
			ktStatus(t, r, http.StatusOK)
			if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != 3 {
				t.Fatalf("request %d: RateLimit-Limit %d, want this replica's share, 3", i, l)
			}
			continue
		}
		requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	}
	// Two replicas leave: the whole limit is this replica's now, but the
	// tokens spent stay spent (no fresh burst of 7).
	replicas = 1
	requireError(t, api.do("GET", "/v1/platform", p.SandboxSecret, nil), http.StatusTooManyRequests, "rate_limited")
}

// TestRateLimitGuardBeforeLimiter: a key's refused calls to routes it may
// not use do not drain its bucket.
func TestRateLimitGuardBeforeLimiter(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 2}})
	p := ktNewPlatform(t, api, "Guarded Co")
	for range 5 {
		requireError(t, api.do("POST", "/v1/platforms", p.SandboxSecret, ktPlatformBody("Nope")), http.StatusForbidden, "forbidden")
	}
	r := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	if rem := ktHeaderInt(t, r, "RateLimit-Remaining"); rem != 1 {
		t.Fatalf("RateLimit-Remaining %d after refused calls, want 1 (a full bucket of 2 less this call)", rem)
	}
}

func TestRateLimitDefaults(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Default Limits Co").ktLive(t, api)
	for _, c := range []struct {
		key   string
		burst int
	}{{p.SandboxSecret, 50}, {p.LiveSecret, 200}} {
		r := api.do("GET", "/v1/platform", c.key, nil)
		ktStatus(t, r, http.StatusOK)
		if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != c.burst {
			t.Fatalf("%s…: RateLimit-Limit %d, want %d", c.key[:12], l, c.burst)
		}
		if rem := ktHeaderInt(t, r, "RateLimit-Remaining"); rem != c.burst-1 {
			t.Fatalf("%s…: RateLimit-Remaining %d, want %d", c.key[:12], rem, c.burst-1)
		}
		if reset := ktHeaderInt(t, r, "RateLimit-Reset"); reset != 1 {
			t.Fatalf("%s…: RateLimit-Reset %d, want 1", c.key[:12], reset)
		}
	}
}

func TestRateLimitOff(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true, RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 1}})
	p := ktNewPlatform(t, api, "Unlimited Co")
	// Even an operator override does not limit when limits are off.
	ktStatus(t, api.do("PATCH", "/v1/operator/platforms/"+p.ID, operatorKey, `{"rate_limit": {"per_second": 1, "burst": 1}}`), http.StatusOK)
	for i := range 50 {
		r := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("request %d with rate limits off: %d %s", i, r.Status, r.Body)
		}
	}
}

func TestRateLimitPlatformOverride(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Override Co")
	other := ktNewPlatform(t, api, "Bystander Co")
	_, second, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "second"})

	r := api.do("PATCH", "/v1/operator/platforms/"+p.ID, operatorKey, `{"rate_limit": {"per_second": 1, "burst": 2}}`)
	ktStatus(t, r, http.StatusOK)

	// The override applies to the platform's keys from their next request.
	r1 := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
	r2 := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
	r3 := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
	ktStatus(t, r1, http.StatusOK)
	ktStatus(t, r2, http.StatusOK)
	if l := ktHeaderInt(t, r1, "RateLimit-Limit"); l != 2 {
		t.Fatalf("RateLimit-Limit %d after the override, want 2", l)
	}
	if a, b := ktHeaderInt(t, r1, "RateLimit-Remaining"), ktHeaderInt(t, r2, "RateLimit-Remaining"); a != 1 || b != 0 {
		t.Fatalf("RateLimit-Remaining %d, %d; want 1, 0", a, b)
	}
	requireError(t, r3, http.StatusTooManyRequests, "rate_limited")
	if ra := ktHeaderInt(t, r3, "Retry-After"); ra < 1 {
		t.Fatalf("Retry-After %d", ra)
	}

	// The bucket is the platform's environment's: the second key finds it
	// empty too (issue #14: a bucket per key made each key a new budget).
	r = api.do("GET", "/v1/platform", second, nil)
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != 2 {
		t.Fatalf("second key: RateLimit-Limit %d, want 2", l)
	}

	// Other platforms keep the defaults.
	r = api.do("GET", "/v1/platform", other.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != 50 {
		t.Fatalf("bystander: RateLimit-Limit %d, want 50", l)
	}

	// Removing the override restores the defaults at once.
	ktStatus(t, api.do("PATCH", "/v1/operator/platforms/"+p.ID, operatorKey, `{"rate_limit": null}`), http.StatusOK)
	r = api.do("GET", "/v1/platform", p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	if l := ktHeaderInt(t, r, "RateLimit-Limit"); l != 50 {
		t.Fatalf("after removing the override: RateLimit-Limit %d, want 50", l)
	}
}

// TestRateLimitOverrideBeatsGlobal: the operator's per-platform override is
// above the global configuration (API.md §3).
func TestRateLimitOverrideBeatsGlobal(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 1}})
	p := ktNewPlatform(t, api, "Generous Co")
	ktStatus(t, api.do("PATCH", "/v1/operator/platforms/"+p.ID, operatorKey, `{"rate_limit": {"per_second": 100, "burst": 20}}`), http.StatusOK)
	for i := range 20 {
		r := api.do("GET", "/v1/platform", p.SandboxSecret, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
}
