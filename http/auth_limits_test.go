package http_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	apihttp "github.com/opentreasury/treasury/http"
)

// TestRateLimitSharedAcrossKeysOfAPlatform: the bucket is the platform's
// environment's, not the key's: ten keys used to give ten budgets. A
// second key of the same platform finds the bucket the first emptied; the
// platform's live environment and another platform have their own.
func TestRateLimitSharedAcrossKeysOfAPlatform(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 4}})
	p := ktNewPlatform(t, api, "Many Keys Co").ktLive(t, api)
	other := ktNewPlatform(t, api, "Other Co")

	r := api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, map[string]any{"name": "second"})
	ktStatus(t, r, http.StatusCreated)
	second := r.Str("secret")
	for range 3 {
		ktStatus(t, api.do("GET", "/v1/platform", p.SandboxSecret, nil), http.StatusOK)
	}
	requireError(t, api.do("GET", "/v1/platform", p.SandboxSecret, nil), http.StatusTooManyRequests, "rate_limited")
	r = api.do("GET", "/v1/platform", second, nil)
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	if ktHeaderInt(t, r, "Retry-After") < 1 || ktHeaderInt(t, r, "RateLimit-Remaining") != 0 {
		t.Fatalf("the second key's 429 headers: %v", r.Header)
	}
	ktStatus(t, api.do("GET", "/v1/platform", p.LiveSecret, nil), http.StatusOK)
	ktStatus(t, api.do("GET", "/v1/platform", other.SandboxSecret, nil), http.StatusOK)
}

// serveFrom sends a request as if from remoteAddr (the connection's peer),
// straight to the handler.
func serveFrom(api *testAPI, remoteAddr, method, path, key string, headers ...string) response {
	return serveFromCtx(context.Background(), api, remoteAddr, method, path, key, headers...)
}

// serveFromCtx is serveFrom with the request's context (a cancelled one
// makes the key's lookup fail).
func serveFromCtx(ctx context.Context, api *testAPI, remoteAddr, method, path, key string, headers ...string) response {
	api.t.Helper()
	req := httptest.NewRequest(method, path, nil).WithContext(ctx)
	req.RemoteAddr = remoteAddr
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	rec := httptest.NewRecorder()
	api.API.ServeHTTP(rec, req)
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

func randomLiveKey(i int) string {
	s := "sk_live_" + strings.Repeat("x", 35)
	return s + strings.Repeat(string(rune('A'+i%26)), 5)
}

// TestFailedAuthenticationIsLimitedPerAddress: 20 failed authentications
// from one address answer 401; the 21st is 429 with Retry-After, and from
// then on an unknown key from that address is refused before any lookup.
// X-Forwarded-For does not move the count to another address; a key that
// has authenticated keeps working from the throttled address; other
// addresses are unaffected; an IPv6 client counts by its /64.
func TestFailedAuthenticationIsLimitedPerAddress(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Brute Forced Co")
	const attacker = "203.0.113.7:40000"
	ktStatus(t, serveFrom(api, attacker, "GET", "/v1/platform", p.SandboxSecret), http.StatusOK)
	// A second valid key that has never authenticated yet.
	r := api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, map[string]any{"name": "unused"})
	ktStatus(t, r, http.StatusCreated)
	unused := r.Str("secret")

	for i := range 20 {
		requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", randomLiveKey(i)), http.StatusUnauthorized, "unauthorized")
	}
	r = serveFrom(api, attacker, "GET", "/v1/platform", randomLiveKey(20))
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	if ra := ktHeaderInt(t, r, "Retry-After"); ra < 1 || ra > 3 {
		t.Fatalf("Retry-After %d, want 1..3 s (one failure every 3 s refills)", ra)
	}
	doc := oaDocument(t, api)
	oaCheck(t, doc, "GET", "/platform", r)

	// Any failure from there is 429: a missing key, a malformed one, a
	// spoofed X-Forwarded-For.
	requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", ""), http.StatusTooManyRequests, "rate_limited")
	requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", "sk_live_short"), http.StatusTooManyRequests, "rate_limited")
	requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", randomLiveKey(21), "X-Forwarded-For", "198.51.100.1"),
		http.StatusTooManyRequests, "rate_limited")
	// A valid key never seen before is not looked up either: only keys
	// that authenticated lately are told apart without the database.
	requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", unused), http.StatusTooManyRequests, "rate_limited")

	// Keys that work keep working from the throttled address.
	ktStatus(t, serveFrom(api, attacker, "GET", "/v1/platform", p.SandboxSecret), http.StatusOK)
	ktStatus(t, serveFrom(api, attacker, "GET", "/v1/operator/platforms", operatorKey), http.StatusOK)

	// Another address is unaffected, whatever X-Forwarded-For says.
	requireError(t, serveFrom(api, "198.51.100.9:5000", "GET", "/v1/platform", randomLiveKey(0), "X-Forwarded-For", "203.0.113.7"),
		http.StatusUnauthorized, "unauthorized")
	ktStatus(t, serveFrom(api, "198.51.100.9:5000", "GET", "/v1/platform", unused), http.StatusOK)

	// IPv6: the /64 is one client.
	for i := range 20 {
		requireError(t, serveFrom(api, "[2001:db8:1:2::1]:443", "GET", "/v1/platform", randomLiveKey(i)), http.StatusUnauthorized, "unauthorized")
	}
	requireError(t, serveFrom(api, "[2001:db8:1:2::ffff]:443", "GET", "/v1/platform", randomLiveKey(0)), http.StatusTooManyRequests, "rate_limited")
	requireError(t, serveFrom(api, "[2001:db8:1:3::1]:443", "GET", "/v1/platform", randomLiveKey(0)), http.StatusUnauthorized, "unauthorized")
}

// TestFailedAuthenticationLimitOff: TREASURY_RATE_LIMIT=off turns this
// limit off too (load tests): every failure is a 401.
func TestFailedAuthenticationLimitOff(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	for i := range 25 {
		r := serveFrom(api, "203.0.113.8:1", "GET", "/v1/platform", randomLiveKey(i))
		if r.Status != http.StatusUnauthorized {
			var m map[string]any
			_ = json.Unmarshal(r.Body, &m)
			t.Fatalf("failure %d with the limit off: %d %v", i+1, r.Status, m)
		}
	}
}

// TestAPIKeyCapAnswers422: the 101st sandbox key in use is 422
// limit_exceeded, as documented; a roll at the cap still answers 201, and
// a second roll while the first's grace runs is 422.
func TestAPIKeyCapAnswers422(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	doc := oaDocument(t, api)
	p := ktNewPlatform(t, api, "Capped Co")
	var ids []string
	for range 99 {
		r := api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, map[string]any{"name": "fill"})
		ktStatus(t, r, http.StatusCreated)
		ids = append(ids, r.Str("id"))
	}
	r := api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, map[string]any{"name": "one too many"})
	m := requireError(t, r, http.StatusUnprocessableEntity, "limit_exceeded")
	if msg, _ := m["message"].(string); !strings.Contains(msg, "100") {
		t.Fatalf("message %q does not name the cap", msg)
	}
	oaCheck(t, doc, "POST", "/platform/api-keys", r)

	r = api.do("POST", "/v1/platform/api-keys/"+ids[0]+"/roll", p.SandboxSecret, map[string]any{"grace_seconds": 3600})
	ktStatus(t, r, http.StatusCreated)
	r = api.do("POST", "/v1/platform/api-keys/"+ids[1]+"/roll", p.SandboxSecret, map[string]any{"grace_seconds": 3600})
	requireError(t, r, http.StatusUnprocessableEntity, "limit_exceeded")
	oaCheck(t, doc, "POST", "/platform/api-keys/{id}/roll", r)
}

// TestFailedAuthenticationLimitUnderConcurrency: 40 bad keys at once from
// one address get 20 answers of 401 (21 if the 3 s refill lands inside
// the burst) and 429 for the rest: the budget is not overdrawn by a race.
func TestFailedAuthenticationLimitUnderConcurrency(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	const n = 40
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			statuses[i] = serveFrom(api, "203.0.113.50:9", "GET", "/v1/platform", randomLiveKey(i)).Status
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts[http.StatusUnauthorized]+counts[http.StatusTooManyRequests] != n {
		t.Fatalf("statuses %v, want only 401 and 429", counts)
	}
	if u := counts[http.StatusUnauthorized]; u < 20 || u > 20+int(time.Since(began)/(3*time.Second)) {
		t.Fatalf("%d answers of 401 in %v, want 20 (plus one per 3 s elapsed)", u, time.Since(began))
	}
}

// TestFailedAuthenticationTableFull: with failures held for 10,000
// addresses, one more address that spends its budget does not lock out
// the next new address: that one still gets its own budget (they used to
// share one overflow bucket, kept full by the 10,000).
func TestFailedAuthenticationTableFull(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	for i := range 10_000 {
		from := fmt.Sprintf("10.%d.%d.1:1", i/256, i%256)
		if r := serveFrom(api, from, "GET", "/v1/platform", ""); r.Status != http.StatusUnauthorized {
			t.Fatalf("address %d: %d %s", i, r.Status, r.Body)
		}
	}
	const attacker = "203.0.113.99:1"
	for range 20 {
		requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", ""), http.StatusUnauthorized, "unauthorized")
	}
	requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", ""), http.StatusTooManyRequests, "rate_limited")
	requireError(t, serveFrom(api, "198.51.100.77:1", "GET", "/v1/platform", ""), http.StatusUnauthorized, "unauthorized")
	requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", ""), http.StatusTooManyRequests, "rate_limited")
}

// TestRevokedKeyIsNoLongerKnown: a key that authenticated and was then
// revoked is forgotten at its first failed lookup, so from a throttled
// address it is refused before any lookup like any guess. (A cancelled
// request context tells: a lookup would fail with it, a refusal before
// the lookup is 429.)
func TestRevokedKeyIsNoLongerKnown(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Leaky Co")
	r := api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, map[string]any{"name": "leaked"})
	ktStatus(t, r, http.StatusCreated)
	leaked, leakedID := r.Str("secret"), r.Str("id")
	ktStatus(t, serveFrom(api, "198.51.100.20:1", "GET", "/v1/platform", leaked), http.StatusOK)
	ktStatus(t, api.do("DELETE", "/v1/platform/api-keys/"+leakedID, p.SandboxSecret, nil), http.StatusOK)
	requireError(t, serveFrom(api, "198.51.100.20:1", "GET", "/v1/platform", leaked), http.StatusUnauthorized, "unauthorized")

	const attacker = "203.0.113.70:1"
	for i := range 20 {
		requireError(t, serveFrom(api, attacker, "GET", "/v1/platform", randomLiveKey(i)), http.StatusUnauthorized, "unauthorized")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	requireError(t, serveFromCtx(cancelled, api, attacker, "GET", "/v1/platform", leaked), http.StatusTooManyRequests, "rate_limited")
}

// TestFailedLookupGivesItsTokenBack: a lookup that fails (here the client
// went away, cancelling the request's context) is not a failed
// authentication: the token taken before it is given back, so 25 of them
// leave the address its whole budget of 20 failures.
func TestFailedLookupGivesItsTokenBack(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	const from = "203.0.113.80:1"
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 25 {
		if r := serveFromCtx(cancelled, api, from, "GET", "/v1/platform", randomLiveKey(i)); r.Status == http.StatusTooManyRequests || r.Status == http.StatusUnauthorized {
			t.Fatalf("lookup %d with a cancelled context: %d %s, want the lookup's failure", i, r.Status, r.Body)
		}
	}
	for i := range 20 {
		requireError(t, serveFrom(api, from, "GET", "/v1/platform", randomLiveKey(i)), http.StatusUnauthorized, "unauthorized")
	}
}
