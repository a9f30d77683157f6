package http_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	apihttp "github.com/opentreasury/treasury/http"
)

// ktCreateKey creates a key with the caller's key and returns the answer.
func ktCreateKey(t testing.TB, api *testAPI, caller string, body any) (id, secret string, m map[string]any) {
	t.Helper()
	r := api.do("POST", "/v1/platform/api-keys", caller, body)
	ktStatus(t, r, http.StatusCreated)
	m = r.JSON()
	id, _ = m["id"].(string)
	secret, _ = m["secret"].(string)
	return id, secret, m
}

// ktKeysListed lists a caller's keys (one environment) by id.
func ktKeysListed(t testing.TB, api *testAPI, caller, query string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	path := "/v1/platform/api-keys" + query
	for range 100 {
		r := api.do("GET", path, caller, nil)
		data, more, next := ktListPage(t, r)
		for _, k := range data {
			if _, ok := k["secret"]; ok {
				t.Fatalf("a key list shows a secret: %s", r.Body)
			}
			out[k["id"].(string)] = k
		}
		if !more {
			return out
		}
		sep := "?"
		if strings.Contains(query, "?") {
			sep = "&"
		}
		path = "/v1/platform/api-keys" + query + sep + "cursor=" + next
	}
	t.Fatal("key list does not end")
	return nil
}

// ktWorks asserts that a key authenticates (GET /v1/platform answers 200).
func ktWorks(t testing.TB, api *testAPI, key string) {
	t.Helper()
	r := api.do("GET", "/v1/platform", key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("key %s… does not work: %d %s", key[:12], r.Status, r.Body)
	}
}

// ktRefused asserts that a key gets the one 401.
func ktRefused(t testing.TB, api *testAPI, key string) {
	t.Helper()
	requireError(t, api.do("GET", "/v1/platform", key, nil), http.StatusUnauthorized, "unauthorized")
}

func ktParseTime(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	if !ktTimestamp.MatchString(s) {
		t.Fatalf("time %#v is not RFC 3339 UTC with milliseconds", v)
	}
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestAPIKeyCreate(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Keys Co")

	id, secret, m := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "  CI deploys  "})
	if !ktKeyIDPattern.MatchString(id) {
		t.Fatalf("id %q", id)
	}
	if !ktSandboxSecret.MatchString(secret) {
		t.Fatalf("secret %q: a sandbox caller's default environment is sandbox", secret)
	}
	want := map[string]any{
		"object": "api_key", "name": "CI deploys", "environment": "sandbox", "prefix": secret[:12],
		"last_used_at": nil, "expires_at": nil, "revoked_at": nil,
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || got != v {
			t.Errorf("%s = %#v (present %v), want %#v", k, got, ok, v)
		}
	}
	ktParseTime(t, m["created_at"])
	ktWorks(t, api, secret)

	// Explicit sandbox environment.
	_, s2, m2 := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "explicit", "environment": "sandbox"})
	if !ktSandboxSecret.MatchString(s2) || m2["environment"] != "sandbox" {
		t.Fatalf("explicit sandbox key: %v", m2)
	}

	// The list never shows a secret, and shows every key of the environment.
	r := api.do("GET", "/v1/platform/api-keys", p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	for _, s := range []string{p.SandboxSecret, secret, s2} {
		if bytes.Contains(r.Body, []byte(s)) || bytes.Contains(r.Body, []byte(s[12:])) {
			t.Fatalf("key list reveals a secret: %s", r.Body)
		}
	}
	if bytes.Contains(r.Body, []byte(`"secret"`)) {
		t.Fatalf("key list has a secret field: %s", r.Body)
	}
	listed := ktKeysListed(t, api, p.SandboxSecret, "")
	if len(listed) != 3 || listed[id] == nil || listed[p.SandboxKeyID] == nil {
		t.Fatalf("listed %d keys: %v", len(listed), listed)
	}
	if listed[id]["prefix"] != secret[:12] || listed[id]["name"] != "CI deploys" {
		t.Fatalf("listed key: %v", listed[id])
	}
	// The key that was used has last_used_at; the unused one has none.
	if listed[p.SandboxKeyID]["last_used_at"] == nil {
		t.Fatalf("the calling key has no last_used_at: %v", listed[p.SandboxKeyID])
	}
	ktParseTime(t, listed[p.SandboxKeyID]["last_used_at"])
	for kid, k := range listed {
		if kid != p.SandboxKeyID && kid != id && k["last_used_at"] != nil {
			t.Fatalf("an unused key has last_used_at: %v", k)
		}
	}

	// Key list pagination: limit=1 walks all three once.
	seen := map[string]int{}
	path := "/v1/platform/api-keys?limit=1"
	for range 10 {
		data, more, next := ktListPage(t, api.do("GET", path, p.SandboxSecret, nil))
		if len(data) > 1 {
			t.Fatalf("limit=1 gave %d keys", len(data))
		}
		for _, k := range data {
			seen[k["id"].(string)]++
		}
		if !more {
			break
		}
		path = "/v1/platform/api-keys?limit=1&cursor=" + next
	}
	if len(seen) != 3 {
		t.Fatalf("walk saw %v", seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("key %s seen %d times", k, n)
		}
	}
	ktParamError(t, api.do("GET", "/v1/platform/api-keys?limit=0", p.SandboxSecret, nil), "limit")
	ktParamError(t, api.do("GET", "/v1/platform/api-keys?cursor=zzz", p.SandboxSecret, nil), "cursor")

	cases := []struct {
		name  string
		body  string
		param string
	}{
		{"missing name", `{}`, "name"},
		{"empty body", ``, "name"},
		{"blank name", `{"name": "  "}`, "name"},
		{"name of 101 chars", `{"name": "` + strings.Repeat("n", 101) + `"}`, "name"},
		{"name a number", `{"name": 5}`, "name"},
		{"bad environment", `{"name": "x", "environment": "production"}`, "environment"},
		{"environment a number", `{"name": "x", "environment": 1}`, "environment"},
		{"unknown field", `{"name": "x", "scopes": ["read"]}`, "scopes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ktParamError(t, api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, c.body), c.param)
		})
	}
	ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": strings.Repeat("n", 100)})
	if n := len(ktKeysListed(t, api, p.SandboxSecret, "")); n != 4 {
		t.Fatalf("%d keys after refused creations, want 4", n)
	}
}

func TestAPIKeyEnvironments(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})

	// A sandbox key cannot create a live key: 403 whether or not live is
	// enabled. (API.md's 422 live_not_enabled cannot be reached over HTTP:
	// only a live key may create a live key, and a live key exists only
	// once live is enabled.)
	pending := ktNewPlatform(t, api, "No Live Co")
	requireError(t, api.do("POST", "/v1/platform/api-keys", pending.SandboxSecret, `{"name": "x", "environment": "live"}`), http.StatusForbidden, "forbidden")
	p := ktNewPlatform(t, api, "Live Co").ktLive(t, api)
	requireError(t, api.do("POST", "/v1/platform/api-keys", p.SandboxSecret, `{"name": "x", "environment": "live"}`), http.StatusForbidden, "forbidden")

	// A live key creates live keys by default, and sandbox keys on request.
	liveID, liveSecret, m := ktCreateKey(t, api, p.LiveSecret, map[string]any{"name": "live 2"})
	if !ktLiveSecret.MatchString(liveSecret) || m["environment"] != "live" || m["prefix"] != liveSecret[:12] {
		t.Fatalf("live key: %v", m)
	}
	ktWorks(t, api, liveSecret)
	if r := api.do("GET", "/v1/platform", liveSecret, nil); r.Str("environment") != "live" {
		t.Fatalf("new live key acts in %q", r.Str("environment"))
	}
	sbID, sbSecret, m := ktCreateKey(t, api, p.LiveSecret, map[string]any{"name": "sb from live", "environment": "sandbox"})
	if !ktSandboxSecret.MatchString(sbSecret) || m["environment"] != "sandbox" {
		t.Fatalf("sandbox key from live: %v", m)
	}
	if r := api.do("GET", "/v1/platform", sbSecret, nil); r.Str("environment") != "sandbox" {
		t.Fatalf("new sandbox key acts in %q", r.Str("environment"))
	}

	// Lists are per environment.
	sandboxList := ktKeysListed(t, api, p.SandboxSecret, "")
	liveList := ktKeysListed(t, api, p.LiveSecret, "")
	if len(sandboxList) != 2 || sandboxList[p.SandboxKeyID] == nil || sandboxList[sbID] == nil {
		t.Fatalf("sandbox list: %v", sandboxList)
	}
	if len(liveList) != 2 || liveList[p.LiveKeyID] == nil || liveList[liveID] == nil {
		t.Fatalf("live list: %v", liveList)
	}
	for _, k := range sandboxList {
		if k["environment"] != "sandbox" {
			t.Fatalf("sandbox list shows %v", k)
		}
	}
	// A live key may list the sandbox keys; a sandbox key may not list live ones.
	fromLive := ktKeysListed(t, api, p.LiveSecret, "?environment=sandbox")
	if len(fromLive) != 2 || fromLive[sbID] == nil {
		t.Fatalf("live listing sandbox keys: %v", fromLive)
	}
	requireError(t, api.do("GET", "/v1/platform/api-keys?environment=live", p.SandboxSecret, nil), http.StatusForbidden, "forbidden")
	if l := ktKeysListed(t, api, p.SandboxSecret, "?environment=sandbox"); len(l) != 2 {
		t.Fatalf("sandbox listing sandbox explicitly: %v", l)
	}
	ktParamError(t, api.do("GET", "/v1/platform/api-keys?environment=prod", p.LiveSecret, nil), "environment")

	// A live key manages sandbox keys; a sandbox key cannot see live keys.
	r := api.do("DELETE", "/v1/platform/api-keys/"+sbID, p.LiveSecret, nil)
	ktStatus(t, r, http.StatusOK)
	ktRefused(t, api, sbSecret)
	requireError(t, api.do("DELETE", "/v1/platform/api-keys/"+liveID, p.SandboxSecret, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("POST", "/v1/platform/api-keys/"+liveID+"/roll", p.SandboxSecret, nil), http.StatusNotFound, "not_found")
	ktWorks(t, api, liveSecret)
}

func TestAPIKeyRevoke(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Revoke Co")
	id, secret, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "to revoke"})
	ktWorks(t, api, secret)

	r := api.do("DELETE", "/v1/platform/api-keys/"+id, p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	m := r.JSON()
	if m["id"] != id || m["object"] != "api_key" || m["name"] != "to revoke" {
		t.Fatalf("revoke: %s", r.Body)
	}
	if _, ok := m["secret"]; ok {
		t.Fatalf("revoke shows the secret: %s", r.Body)
	}
	revokedAt := ktParseTime(t, m["revoked_at"])
	if d := time.Since(revokedAt); d < -time.Minute || d > time.Minute {
		t.Fatalf("revoked_at %v is not now", revokedAt)
	}
	// The next request with it is refused.
	ktRefused(t, api, secret)
	requireError(t, api.do("GET", "/v1/platform/api-keys", secret, nil), http.StatusUnauthorized, "unauthorized")

	// Revoking again changes nothing.
	r = api.do("DELETE", "/v1/platform/api-keys/"+id, p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	if r.JSON()["revoked_at"] != m["revoked_at"] {
		t.Fatalf("second revoke moved revoked_at: %s vs %v", r.Body, m["revoked_at"])
	}
	// The list shows it revoked.
	if k := ktKeysListed(t, api, p.SandboxSecret, "")[id]; k == nil || k["revoked_at"] != m["revoked_at"] {
		t.Fatalf("listed revoked key: %v", k)
	}

	// A key may revoke itself; its next request is refused.
	r = api.do("DELETE", "/v1/platform/api-keys/"+p.SandboxKeyID, p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	ktRefused(t, api, p.SandboxSecret)

	// Unknown and malformed ids.
	other := ktNewPlatform(t, api, "Other Co")
	for _, bad := range []string{ktUnknownKeyID, "key_bad", p.ID, "x"} {
		requireError(t, api.do("DELETE", "/v1/platform/api-keys/"+bad, other.SandboxSecret, nil), http.StatusNotFound, "not_found")
	}
}

func TestAPIKeyRollImmediate(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Roll Co")
	oldID, oldSecret, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "rolling"})
	ktWorks(t, api, oldSecret)

	r := api.do("POST", "/v1/platform/api-keys/"+oldID+"/roll", p.SandboxSecret, `{"grace_seconds": 0}`)
	ktStatus(t, r, http.StatusCreated)
	m := r.JSON()
	newID, _ := m["id"].(string)
	newSecret, _ := m["secret"].(string)
	if !ktKeyIDPattern.MatchString(newID) || newID == oldID {
		t.Fatalf("roll: new id %q", newID)
	}
	if !ktSandboxSecret.MatchString(newSecret) || m["prefix"] != newSecret[:12] || m["environment"] != "sandbox" ||
		m["name"] != "rolling" || m["object"] != "api_key" || m["expires_at"] != nil || m["revoked_at"] != nil {
		t.Fatalf("rolled key: %s", r.Body)
	}
	// The old key stops at once; the new one works.
	ktRefused(t, api, oldSecret)
	ktWorks(t, api, newSecret)

	listed := ktKeysListed(t, api, p.SandboxSecret, "")
	if listed[oldID] == nil || listed[oldID]["expires_at"] == nil || listed[oldID]["revoked_at"] != nil {
		t.Fatalf("old key in the list: %v", listed[oldID])
	}
	if listed[newID] == nil || listed[newID]["expires_at"] != nil {
		t.Fatalf("new key in the list: %v", listed[newID])
	}
	// An expired key cannot be rolled again.
	requireError(t, api.do("POST", "/v1/platform/api-keys/"+oldID+"/roll", p.SandboxSecret, `{"grace_seconds": 0}`), http.StatusConflict, "invalid_state")

	// A key can roll itself.
	r = api.do("POST", "/v1/platform/api-keys/"+newID+"/roll", newSecret, `{"grace_seconds": 0}`)
	ktStatus(t, r, http.StatusCreated)
	ktRefused(t, api, newSecret)
	ktWorks(t, api, r.Str("secret"))
}

func TestAPIKeyRollDefaultGrace(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Grace Co").ktLive(t, api)
	oldID, oldSecret, _ := ktCreateKey(t, api, p.LiveSecret, map[string]any{"name": "live rolling"})

	for _, body := range []any{nil, `{}`} {
		before := time.Now()
		r := api.do("POST", "/v1/platform/api-keys/"+oldID+"/roll", p.LiveSecret, body)
		ktStatus(t, r, http.StatusCreated)
		newSecret := r.Str("secret")
		if !ktLiveSecret.MatchString(newSecret) || r.Str("environment") != "live" {
			t.Fatalf("rolled live key: %s", r.Body)
		}
		// Both keys work during the grace.
		ktWorks(t, api, oldSecret)
		ktWorks(t, api, newSecret)
		exp := ktParseTime(t, ktKeysListed(t, api, p.LiveSecret, "")[oldID]["expires_at"])
		if body == nil {
			// The default grace is 86400 s.
			lo, hi := before.Add(24*time.Hour-time.Minute), time.Now().Add(24*time.Hour+time.Minute)
			if exp.Before(lo) || exp.After(hi) {
				t.Fatalf("old key expires at %v, want about a day from now", exp)
			}
		}
	}

	// A roll never extends a key's life: a second roll with a longer grace
	// keeps the first expiry.
	first := ktParseTime(t, ktKeysListed(t, api, p.LiveSecret, "")[oldID]["expires_at"])
	r := api.do("POST", "/v1/platform/api-keys/"+oldID+"/roll", p.LiveSecret, `{"grace_seconds": 604800}`)
	ktStatus(t, r, http.StatusCreated)
	if exp := ktParseTime(t, ktKeysListed(t, api, p.LiveSecret, "")[oldID]["expires_at"]); !exp.Equal(first) {
		t.Fatalf("a longer grace extended the key: %v -> %v", first, exp)
	}
	ktWorks(t, api, oldSecret)
}

func TestAPIKeyRollValidation(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Roll Validation Co")
	id, secret, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "k"})
	path := "/v1/platform/api-keys/" + id + "/roll"

	for _, c := range []struct{ name, body, param string }{
		{"grace 700000", `{"grace_seconds": 700000}`, "grace_seconds"},
		{"grace 604801", `{"grace_seconds": 604801}`, "grace_seconds"},
		{"grace negative", `{"grace_seconds": -1}`, "grace_seconds"},
		{"grace a string", `{"grace_seconds": "60"}`, "grace_seconds"},
		{"grace a fraction", `{"grace_seconds": 1.5}`, "grace_seconds"},
		{"unknown field", `{"grace": 60}`, "grace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ktParamError(t, api.do("POST", path, p.SandboxSecret, c.body), c.param)
		})
	}
	// Nothing was rolled: the key has no expiry and there are two keys.
	listed := ktKeysListed(t, api, p.SandboxSecret, "")
	if len(listed) != 2 || listed[id]["expires_at"] != nil {
		t.Fatalf("refused rolls changed keys: %v", listed)
	}
	ktWorks(t, api, secret)

	// A revoked key cannot be rolled.
	ktStatus(t, api.do("DELETE", "/v1/platform/api-keys/"+id, p.SandboxSecret, nil), http.StatusOK)
	requireError(t, api.do("POST", path, p.SandboxSecret, `{"grace_seconds": 60}`), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", path, p.SandboxSecret, nil), http.StatusConflict, "invalid_state")

	// Unknown and malformed ids.
	for _, bad := range []string{ktUnknownKeyID, "key_bad", p.ID} {
		requireError(t, api.do("POST", "/v1/platform/api-keys/"+bad+"/roll", p.SandboxSecret, nil), http.StatusNotFound, "not_found")
	}
	// The maximum grace is accepted.
	id2, _, _ := ktCreateKey(t, api, p.SandboxSecret, map[string]any{"name": "k2"})
	ktStatus(t, api.do("POST", "/v1/platform/api-keys/"+id2+"/roll", p.SandboxSecret, `{"grace_seconds": 604800}`), http.StatusCreated)
}
