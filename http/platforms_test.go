package http_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// Helpers shared by the Foundation tests (platforms, API keys, auth, rate
// limits, errors). Every package-level name starts with kt so that it cannot
// clash with other test files of the package.

var (
	ktSandboxSecret = regexp.MustCompile(`^sk_sandbox_[0-9A-Za-z]{40}$`)
	ktLiveSecret    = regexp.MustCompile(`^sk_live_[0-9A-Za-z]{40}$`)
	ktPlatformID    = regexp.MustCompile(`^plt_[0-9a-z]{26}$`)
	ktKeyIDPattern  = regexp.MustCompile(`^key_[0-9a-z]{26}$`)
	ktTimestamp     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
	ktGeneratedReq  = regexp.MustCompile(`^req_[0-9a-z]{26}$`)
)

// ktUnknownPlatformID and ktUnknownKeyID are well formed but never issued.
const (
	ktUnknownPlatformID = "plt_01arz3ndektsv4rrffq69g5fav"
	ktUnknownKeyID      = "key_01arz3ndektsv4rrffq69g5fav"
)

// ktParamError asserts a 400 invalid_request naming param.
func ktParamError(t testing.TB, r response, param string) map[string]any {
	t.Helper()
	m := requireError(t, r, http.StatusBadRequest, "invalid_request")
	if m["param"] != param {
		t.Fatalf("param %v, want %q: %s", m["param"], param, r.Body)
	}
	return m
}

// ktObj returns a nested object field, failing the test if it is not one.
func ktObj(t testing.TB, m map[string]any, field string) map[string]any {
	t.Helper()
	o, ok := m[field].(map[string]any)
	if !ok {
		t.Fatalf("field %q is not an object: %#v", field, m[field])
	}
	return o
}

// ktStatus asserts a status code.
func ktStatus(t testing.TB, r response, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
	}
}

// ktEqualJSON asserts that a decoded JSON value equals want (given as JSON text).
func ktEqualJSON(t testing.TB, what string, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON %q: %v", want, err)
	}
	if !reflect.DeepEqual(got, w) {
		g, _ := json.Marshal(got)
		t.Fatalf("%s = %s, want %s", what, g, want)
	}
}

// ktPlatformBody is a valid registration body.
func ktPlatformBody(name string) map[string]any {
	return map[string]any{"name": name, "contact_email": "ops@example.com"}
}

// ktCreatePlatform posts a registration with the operator key.
func ktCreatePlatform(api *testAPI, body any, headers ...string) response {
	api.t.Helper()
	return api.do("POST", "/v1/platforms", operatorKey, body, headers...)
}

// ktProvisioned is a platform approved (and possibly live-enabled) by the
// operator, with the ids of its provisioned keys.
type ktProvisioned struct {
	ID            string
	SandboxKeyID  string
	SandboxSecret string
	LiveKeyID     string
	LiveSecret    string
}

// ktNewPlatform registers and approves a platform and keeps its key id.
func ktNewPlatform(t testing.TB, api *testAPI, name string) *ktProvisioned {
	t.Helper()
	r := ktCreatePlatform(api, ktPlatformBody(name))
	ktStatus(t, r, http.StatusCreated)
	p := &ktProvisioned{ID: r.Str("id")}
	r = api.do("POST", "/v1/operator/platforms/"+p.ID+"/approve", operatorKey, nil)
	ktStatus(t, r, http.StatusOK)
	k := ktObj(t, r.JSON(), "sandbox_api_key")
	p.SandboxKeyID, _ = k["id"].(string)
	p.SandboxSecret, _ = k["secret"].(string)
	if p.SandboxKeyID == "" || p.SandboxSecret == "" {
		t.Fatalf("approve: no sandbox key in %s", r.Body)
	}
	return p
}

// ktLive enables live for p and keeps the live key.
func (p *ktProvisioned) ktLive(t testing.TB, api *testAPI) *ktProvisioned {
	t.Helper()
	r := api.do("POST", "/v1/operator/platforms/"+p.ID+"/enable-live", operatorKey, nil)
	ktStatus(t, r, http.StatusOK)
	k := ktObj(t, r.JSON(), "live_api_key")
	p.LiveKeyID, _ = k["id"].(string)
	p.LiveSecret, _ = k["secret"].(string)
	if p.LiveKeyID == "" || p.LiveSecret == "" {
		t.Fatalf("enable-live: no live key in %s", r.Body)
	}
	return p
}

// ktSend is a goroutine-safe request (it never calls t.Fatal).
func ktSend(baseURL, method, path, key string, body io.Reader, headers ...string) (response, error) {
	req, err := http.NewRequestWithContext(context.Background(), method, baseURL+path, body)
	if err != nil {
		return response{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}, err
}

// ktListPage decodes a list envelope.
func ktListPage(t testing.TB, r response) (data []map[string]any, hasMore bool, next string) {
	t.Helper()
	ktStatus(t, r, http.StatusOK)
	m := r.JSON()
	if m["object"] != "list" {
		t.Fatalf("object %v, want list: %s", m["object"], r.Body)
	}
	raw, ok := m["data"].([]any)
	if !ok {
		t.Fatalf("data is not an array: %s", r.Body)
	}
	for _, d := range raw {
		data = append(data, d.(map[string]any))
	}
	hasMore, ok = m["has_more"].(bool)
	if !ok {
		t.Fatalf("has_more is not a boolean: %s", r.Body)
	}
	if _, present := m["next_cursor"]; !present {
		t.Fatalf("next_cursor missing: %s", r.Body)
	}
	next, _ = m["next_cursor"].(string)
	if hasMore != (next != "") {
		t.Fatalf("has_more %v but next_cursor %q: %s", hasMore, next, r.Body)
	}
	return data, hasMore, next
}

// ktAllPlatforms walks GET /v1/operator/platforms to its end.
func ktAllPlatforms(t testing.TB, api *testAPI) []map[string]any {
	t.Helper()
	var all []map[string]any
	path := "/v1/operator/platforms?limit=100"
	for range 1000 {
		data, more, next := ktListPage(t, api.do("GET", path, operatorKey, nil))
		all = append(all, data...)
		if !more {
			return all
		}
		path = "/v1/operator/platforms?limit=100&cursor=" + next
	}
	t.Fatal("platform list does not end")
	return nil
}

func ktCountByName(list []map[string]any, name string) (n int, ids []string) {
	for _, p := range list {
		if p["name"] == name {
			n++
			ids = append(ids, p["id"].(string))
		}
	}
	return n, ids
}

// ---------------------------------------------------------------------------
// POST /v1/platforms

func TestPlatformCreateDefaults(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	r := ktCreatePlatform(api, map[string]any{
		"name": "  Acme Payroll  ", "contact_email": "ops@acme.example.com",
		"metadata": map[string]string{"crm_id": "42", "tier": "gold"},
	})
	ktStatus(t, r, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a first request must not be marked as a replay")
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	m := r.JSON()
	id, _ := m["id"].(string)
	if !ktPlatformID.MatchString(id) {
		t.Fatalf("id %q is not plt_ + ULID", id)
	}
	want := map[string]any{
		"object": "platform", "name": "Acme Payroll", "contact_email": "ops@acme.example.com",
		"status": "pending_approval", "live_enabled": false,
		"revenue_share_rate": "0.00", "interest_rate": "0.00", "rate_limit": nil,
		"environment": "sandbox",
	}
	for k, v := range want {
		if got, ok := m[k]; !ok || !reflect.DeepEqual(got, v) {
			t.Errorf("%s = %#v (present %v), want %#v", k, got, ok, v)
		}
	}
	ktEqualJSON(t, "fee_schedule", m["fee_schedule"], `{"ach_standard":25,"ach_same_day":100,"rtp":50,"fednow":45}`)
	ktEqualJSON(t, "metadata", m["metadata"], `{"crm_id":"42","tier":"gold"}`)
	for _, f := range []string{"created_at", "updated_at"} {
		if s, _ := m[f].(string); !ktTimestamp.MatchString(s) {
			t.Errorf("%s = %#v, want RFC 3339 UTC with milliseconds", f, m[f])
		}
	}
	for _, f := range []string{"sandbox_api_key", "live_api_key", "secret"} {
		if _, ok := m[f]; ok {
			t.Errorf("a pending platform must not carry %s: %s", f, r.Body)
		}
	}

	// The operator reads back the same platform.
	g := api.do("GET", "/v1/operator/platforms/"+id, operatorKey, nil)
	ktStatus(t, g, http.StatusOK)
	if !reflect.DeepEqual(g.JSON(), m) {
		t.Fatalf("GET differs from POST:\n%s\n%s", g.Body, r.Body)
	}

	// Without metadata the platform has an empty metadata object.
	r = ktCreatePlatform(api, ktPlatformBody("No Metadata"))
	ktStatus(t, r, http.StatusCreated)
	ktEqualJSON(t, "metadata", r.JSON()["metadata"], `{}`)
}

func TestPlatformCreateValidation(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	many := map[string]string{}
	for i := range 51 {
		many[fmt.Sprintf("k%02d", i)] = "v"
	}
	fifty := map[string]string{}
	for i := range 50 {
		fifty[fmt.Sprintf("k%02d", i)] = "v"
	}
	long41 := strings.Repeat("k", 41)
	with := func(extra map[string]any) map[string]any {
		b := ktPlatformBody("Valid Name")
		for k, v := range extra {
			if v == nil {
				delete(b, k)
			} else {
				b[k] = v
			}
		}
		return b
	}
	cases := []struct {
		name  string
		body  any
		param string
	}{
		{"missing name", with(map[string]any{"name": nil}), "name"},
		{"empty name", with(map[string]any{"name": ""}), "name"},
		{"blank name", with(map[string]any{"name": "   "}), "name"},
		{"name of 201 chars", with(map[string]any{"name": strings.Repeat("n", 201)}), "name"},
		{"name of 201 runes", with(map[string]any{"name": strings.Repeat("é", 201)}), "name"},
		{"name a number", `{"name": 5, "contact_email": "ops@example.com"}`, "name"},
		{"name an object", `{"name": {"x": 1}, "contact_email": "ops@example.com"}`, "name"},
		{"missing contact_email", with(map[string]any{"contact_email": nil}), "contact_email"},
		{"contact_email not an address", with(map[string]any{"contact_email": "not-an-email"}), "contact_email"},
		{"contact_email without domain dot", with(map[string]any{"contact_email": "ops@localhost"}), "contact_email"},
		{"contact_email with display name", with(map[string]any{"contact_email": "Ops <ops@example.com>"}), "contact_email"},
		{"contact_email a boolean", `{"name": "X", "contact_email": true}`, "contact_email"},
		{"metadata with 51 keys", with(map[string]any{"metadata": many}), "metadata"},
		{"metadata key of 41 chars", with(map[string]any{"metadata": map[string]string{long41: "v"}}), "metadata." + long41},
		{"metadata value of 501 chars", with(map[string]any{"metadata": map[string]string{"note": strings.Repeat("v", 501)}}), "metadata.note"},
		{"metadata value a number", `{"name": "X", "contact_email": "ops@example.com", "metadata": {"a": 5}}`, "metadata.a"},
		{"metadata value a boolean", `{"name": "X", "contact_email": "ops@example.com", "metadata": {"a": true}}`, "metadata.a"},
		{"metadata value an object", `{"name": "X", "contact_email": "ops@example.com", "metadata": {"a": {"b": "c"}}}`, "metadata.a"},
		{"metadata a string", `{"name": "X", "contact_email": "ops@example.com", "metadata": "x"}`, "metadata"},
		{"metadata an array", `{"name": "X", "contact_email": "ops@example.com", "metadata": ["x"]}`, "metadata"},
		{"unknown field", with(map[string]any{"website": "https://example.com"}), "website"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ktParamError(t, ktCreatePlatform(api, c.body), c.param)
			if msg, _ := m["message"].(string); msg == "" {
				t.Fatalf("no message: %v", m)
			}
		})
	}
	// Nothing invalid was registered.
	for _, p := range ktAllPlatforms(t, api) {
		t.Errorf("an invalid request registered a platform: %v", p)
	}

	// The limits themselves are accepted.
	ok := []struct {
		name string
		body map[string]any
	}{
		{"name of 200 runes", with(map[string]any{"name": strings.Repeat("é", 200)})},
		{"metadata with 50 keys", with(map[string]any{"metadata": fifty})},
		{"metadata key of 40 chars", with(map[string]any{"metadata": map[string]string{strings.Repeat("k", 40): "v"}})},
		{"metadata value of 500 chars", with(map[string]any{"metadata": map[string]string{"note": strings.Repeat("v", 500)}})},
		{"metadata value empty", with(map[string]any{"metadata": map[string]string{"note": ""}})},
	}
	for _, c := range ok {
		t.Run("accepts "+c.name, func(t *testing.T) {
			ktStatus(t, ktCreatePlatform(api, c.body), http.StatusCreated)
		})
	}
}

// TestPlatformCreateMetadataEmptyKey records what an empty metadata key does:
// API.md §1 bounds keys to 40 characters and ValidateMetadata refuses "".
func TestPlatformCreateMetadataEmptyKey(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	r := ktCreatePlatform(api, `{"name": "X", "contact_email": "ops@example.com", "metadata": {"": "v"}}`)
	m := requireError(t, r, http.StatusBadRequest, "invalid_request")
	if p, _ := m["param"].(string); !strings.HasPrefix(p, "metadata") {
		t.Fatalf("param %q, want it to name metadata", p)
	}
}

func TestPlatformCreateIdempotency(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	body := `{"name":"Idem Co","contact_email":"ops@example.com","metadata":{"a":"1","b":"2"}}`
	first := ktCreatePlatform(api, body, "Idempotency-Key", "create-idem-co")
	ktStatus(t, first, http.StatusCreated)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first request marked as replay")
	}
	id := first.Str("id")

	replays := []string{
		body,
		// key order and white space do not matter
		"{\n  \"metadata\": {\"b\": \"2\", \"a\": \"1\"},\n  \"contact_email\": \"ops@example.com\",\n  \"name\": \"Idem Co\"\n}\n",
		`  {"contact_email" : "ops@example.com" , "name":"Idem Co", "metadata":{ "b":"2","a":"1" }}  `,
	}
	for i, b := range replays {
		r := ktCreatePlatform(api, b, "Idempotency-Key", "create-idem-co")
		ktStatus(t, r, http.StatusOK)
		if r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("replay %d: Idempotent-Replayed = %q", i, r.Header.Get("Idempotent-Replayed"))
		}
		if r.Str("id") != id || r.Str("status") != "pending_approval" || r.Str("name") != "Idem Co" {
			t.Fatalf("replay %d answered another platform: %s", i, r.Body)
		}
	}

	// Another body under the same key: 409 naming the original.
	for _, b := range []any{
		`{"name":"Idem Co 2","contact_email":"ops@example.com","metadata":{"a":"1","b":"2"}}`,
		`{"name":"Idem Co","contact_email":"ops@example.com"}`,
		`{"name":"Idem Co","contact_email":"ops@example.com","metadata":{"a":"1","b":"3"}}`,
	} {
		r := ktCreatePlatform(api, b, "Idempotency-Key", "create-idem-co")
		m := requireError(t, r, http.StatusConflict, "idempotency_conflict")
		if m["resource_id"] != id {
			t.Fatalf("resource_id %v, want %s", m["resource_id"], id)
		}
	}

	// Another key is another platform, even with the same body.
	other := ktCreatePlatform(api, body, "Idempotency-Key", "create-idem-co-2")
	ktStatus(t, other, http.StatusCreated)
	if other.Str("id") == id {
		t.Fatalf("a new key replayed the old platform")
	}
	// No key at all: a new platform every time.
	ktStatus(t, ktCreatePlatform(api, body), http.StatusCreated)

	// A refused request does not use up its key.
	r := ktCreatePlatform(api, `{"name":"","contact_email":"ops@example.com"}`, "Idempotency-Key", "fixed-later")
	ktParamError(t, r, "name")
	r = ktCreatePlatform(api, `{"name":"Fixed","contact_email":"ops@example.com"}`, "Idempotency-Key", "fixed-later")
	ktStatus(t, r, http.StatusCreated)

	// Malformed keys. (Surrounding spaces cannot be tested: HTTP strips
	// them from header values before the handler sees them.)
	ktParamError(t, ktCreatePlatform(api, body, "Idempotency-Key", strings.Repeat("k", 256)), "idempotency_key")
	ktStatus(t, ktCreatePlatform(api, `{"name":"Long Key","contact_email":"ops@example.com"}`, "Idempotency-Key", strings.Repeat("k", 255)), http.StatusCreated)

	n, _ := ktCountByName(ktAllPlatforms(t, api), "Idem Co")
	if n != 3 {
		t.Fatalf("%d platforms named Idem Co, want 3 (key 1, key 2, no key)", n)
	}
}

func TestPlatformCreateConcurrentIdempotency(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	const n = 20
	body := `{"name":"Race Co","contact_email":"ops@example.com"}`
	var wg sync.WaitGroup
	results := make([]response, n)
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = ktSend(api.URL, "POST", "/v1/platforms", operatorKey, strings.NewReader(body), "Idempotency-Key", "race-key")
		}()
	}
	close(start)
	wg.Wait()

	created, replayed, inProgress := 0, 0, 0
	ids := map[string]bool{}
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		switch r.Status {
		case http.StatusCreated:
			created++
			ids[r.Str("id")] = true
		case http.StatusOK:
			replayed++
			if r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("request %d: 200 without Idempotent-Replayed", i)
			}
			ids[r.Str("id")] = true
		case http.StatusConflict:
			requireError(t, r, http.StatusConflict, "idempotency_in_progress")
			inProgress++
		default:
			t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("created %d, replayed %d, in progress %d", created, replayed, inProgress)
	if created != 1 {
		t.Fatalf("%d requests answered 201, want exactly 1", created)
	}
	if len(ids) != 1 {
		t.Fatalf("answers name %d platforms: %v", len(ids), ids)
	}
	count, listed := ktCountByName(ktAllPlatforms(t, api), "Race Co")
	if count != 1 {
		t.Fatalf("%d platforms named Race Co in the list, want 1: %v", count, listed)
	}
	if !ids[listed[0]] {
		t.Fatalf("listed platform %s is not the one answered %v", listed[0], ids)
	}
}

// ---------------------------------------------------------------------------
// approve, enable-live

func TestPlatformApproveAndEnableLive(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	r := ktCreatePlatform(api, ktPlatformBody("Lifecycle Co"))
	ktStatus(t, r, http.StatusCreated)
	id := r.Str("id")

	// Live before approval.
	requireError(t, api.do("POST", "/v1/operator/platforms/"+id+"/enable-live", operatorKey, nil), http.StatusConflict, "invalid_state")

	r = api.do("POST", "/v1/operator/platforms/"+id+"/approve", operatorKey, nil)
	ktStatus(t, r, http.StatusOK)
	m := r.JSON()
	if m["id"] != id || m["status"] != "approved" || m["live_enabled"] != false || m["object"] != "platform" {
		t.Fatalf("approve: %s", r.Body)
	}
	if _, ok := m["live_api_key"]; ok {
		t.Fatalf("approve carries a live key: %s", r.Body)
	}
	sk := ktObj(t, m, "sandbox_api_key")
	secret, _ := sk["secret"].(string)
	if !ktSandboxSecret.MatchString(secret) {
		t.Fatalf("sandbox secret %q is not sk_sandbox_ + 40 base62", secret)
	}
	if sk["prefix"] != secret[:12] {
		t.Fatalf("prefix %v, want %q", sk["prefix"], secret[:12])
	}
	if kid, _ := sk["id"].(string); !ktKeyIDPattern.MatchString(kid) {
		t.Fatalf("key id %q", kid)
	}
	if sk["object"] != "api_key" || sk["environment"] != "sandbox" {
		t.Fatalf("sandbox key: %v", sk)
	}
	for _, f := range []string{"revoked_at", "expires_at"} {
		if v, ok := sk[f]; !ok || v != nil {
			t.Fatalf("sandbox key %s = %v (present %v), want null", f, v, ok)
		}
	}
	if s, _ := sk["created_at"].(string); !ktTimestamp.MatchString(s) {
		t.Fatalf("created_at %v", sk["created_at"])
	}

	// The secret is shown once: never in the operator's reads.
	g := api.do("GET", "/v1/operator/platforms/"+id, operatorKey, nil)
	ktStatus(t, g, http.StatusOK)
	if bytes.Contains(g.Body, []byte(secret)) || g.Str("status") != "approved" {
		t.Fatalf("GET after approve: %s", g.Body)
	}
	// It works.
	own := api.do("GET", "/v1/platform", secret, nil)
	ktStatus(t, own, http.StatusOK)
	if own.Str("id") != id || own.Str("environment") != "sandbox" {
		t.Fatalf("GET /platform: %s", own.Body)
	}

	requireError(t, api.do("POST", "/v1/operator/platforms/"+id+"/approve", operatorKey, nil), http.StatusConflict, "invalid_state")

	r = api.do("POST", "/v1/operator/platforms/"+id+"/enable-live", operatorKey, nil)
	ktStatus(t, r, http.StatusOK)
	m = r.JSON()
	if m["id"] != id || m["status"] != "approved" || m["live_enabled"] != true {
		t.Fatalf("enable-live: %s", r.Body)
	}
	if _, ok := m["sandbox_api_key"]; ok {
		t.Fatalf("enable-live carries a sandbox key: %s", r.Body)
	}
	lk := ktObj(t, m, "live_api_key")
	live, _ := lk["secret"].(string)
	if !ktLiveSecret.MatchString(live) {
		t.Fatalf("live secret %q is not sk_live_ + 40 base62", live)
	}
	if lk["prefix"] != live[:12] || lk["environment"] != "live" || lk["object"] != "api_key" {
		t.Fatalf("live key: %v", lk)
	}
	if lk["id"] == sk["id"] {
		t.Fatalf("live key reuses the sandbox key id")
	}
	requireError(t, api.do("POST", "/v1/operator/platforms/"+id+"/enable-live", operatorKey, nil), http.StatusConflict, "invalid_state")

	own = api.do("GET", "/v1/platform", live, nil)
	ktStatus(t, own, http.StatusOK)
	if own.Str("id") != id || own.Str("environment") != "live" || own.JSON()["live_enabled"] != true {
		t.Fatalf("GET /platform (live): %s", own.Body)
	}
	// The sandbox key still sees the sandbox.
	own = api.do("GET", "/v1/platform", secret, nil)
	if own.Str("environment") != "sandbox" {
		t.Fatalf("GET /platform (sandbox after live): %s", own.Body)
	}
	g = api.do("GET", "/v1/operator/platforms/"+id, operatorKey, nil)
	if bytes.Contains(g.Body, []byte(live)) || g.JSON()["live_enabled"] != true {
		t.Fatalf("GET after enable-live: %s", g.Body)
	}

	// Unknown and malformed ids.
	for _, bad := range []string{ktUnknownPlatformID, "plt_nope", "key_01arz3ndektsv4rrffq69g5fav", "x"} {
		for _, action := range []string{"approve", "enable-live"} {
			requireError(t, api.do("POST", "/v1/operator/platforms/"+bad+"/"+action, operatorKey, nil), http.StatusNotFound, "not_found")
		}
	}
	// A body is not expected, and unknown fields are refused.
	r = ktCreatePlatform(api, ktPlatformBody("Body Co"))
	ktParamError(t, api.do("POST", "/v1/operator/platforms/"+r.Str("id")+"/approve", operatorKey, `{"force":true}`), "force")
}

// ---------------------------------------------------------------------------
// PATCH /v1/operator/platforms/:id

func TestPlatformConfigure(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Config Co")
	path := "/v1/operator/platforms/" + p.ID

	r := api.do("PATCH", path, operatorKey, map[string]any{
		"revenue_share_rate": "0.30", "interest_rate": "0.045",
		"fee_schedule": map[string]int{"rtp": 75},
		"rate_limit":   map[string]int{"per_second": 5, "burst": 10},
	})
	ktStatus(t, r, http.StatusOK)
	m := r.JSON()
	if m["id"] != p.ID || m["revenue_share_rate"] != "0.30" || m["interest_rate"] != "0.045" || m["status"] != "approved" {
		t.Fatalf("PATCH: %s", r.Body)
	}
	ktEqualJSON(t, "fee_schedule", m["fee_schedule"], `{"ach_standard":25,"ach_same_day":100,"rtp":75,"fednow":45}`)
	ktEqualJSON(t, "rate_limit", m["rate_limit"], `{"per_second":5,"burst":10}`)
	g := api.do("GET", path, operatorKey, nil)
	if !reflect.DeepEqual(g.JSON(), m) {
		t.Fatalf("GET differs from PATCH:\n%s\n%s", g.Body, r.Body)
	}

	// Only the named fields change.
	r = api.do("PATCH", path, operatorKey, map[string]any{"interest_rate": "0.05", "fee_schedule": map[string]int{"fednow": 0}})
	ktStatus(t, r, http.StatusOK)
	m = r.JSON()
	if m["revenue_share_rate"] != "0.30" || m["interest_rate"] != "0.05" {
		t.Fatalf("partial PATCH: %s", r.Body)
	}
	ktEqualJSON(t, "fee_schedule", m["fee_schedule"], `{"ach_standard":25,"ach_same_day":100,"rtp":75,"fednow":0}`)
	ktEqualJSON(t, "rate_limit", m["rate_limit"], `{"per_second":5,"burst":10}`)

	// An empty PATCH changes nothing; rate_limit null restores the defaults.
	ktStatus(t, api.do("PATCH", path, operatorKey, `{}`), http.StatusOK)
	r = api.do("PATCH", path, operatorKey, `{"rate_limit": null, "revenue_share_rate": "1", "interest_rate": "0"}`)
	ktStatus(t, r, http.StatusOK)
	m = r.JSON()
	if v, ok := m["rate_limit"]; !ok || v != nil {
		t.Fatalf("rate_limit after null: %s", r.Body)
	}
	if m["revenue_share_rate"] != "1.00" || m["interest_rate"] != "0.00" {
		t.Fatalf("bounds 1 and 0: %s", r.Body)
	}
	before := api.do("GET", path, operatorKey, nil)

	cases := []struct {
		name  string
		body  string
		param string
	}{
		{"rate abc", `{"revenue_share_rate": "abc"}`, "revenue_share_rate"},
		{"rate 1.5", `{"revenue_share_rate": "1.5"}`, "revenue_share_rate"},
		{"rate negative", `{"revenue_share_rate": "-0.01"}`, "revenue_share_rate"},
		{"rate empty", `{"revenue_share_rate": ""}`, "revenue_share_rate"},
		{"rate null", `{"revenue_share_rate": null}`, "revenue_share_rate"},
		{"rate a number", `{"revenue_share_rate": 0.3}`, "revenue_share_rate"},
		{"interest abc", `{"interest_rate": "abc"}`, "interest_rate"},
		{"interest 1.5", `{"interest_rate": "1.5"}`, "interest_rate"},
		{"interest a number", `{"interest_rate": 0.045}`, "interest_rate"},
		{"unknown rail", `{"fee_schedule": {"wire": 10}}`, "fee_schedule.wire"},
		{"negative fee", `{"fee_schedule": {"rtp": -1}}`, "fee_schedule.rtp"},
		{"fee too high", `{"fee_schedule": {"rtp": 100001}}`, "fee_schedule.rtp"},
		{"fee a string", `{"fee_schedule": {"rtp": "75"}}`, "fee_schedule.rtp"},
		{"fee a fraction", `{"fee_schedule": {"rtp": 7.5}}`, "fee_schedule.rtp"},
		{"fee_schedule null", `{"fee_schedule": null}`, "fee_schedule"},
		{"fee_schedule an array", `{"fee_schedule": [75]}`, "fee_schedule"},
		{"burst 0", `{"rate_limit": {"per_second": 5, "burst": 0}}`, "rate_limit.burst"},
		{"burst missing", `{"rate_limit": {"per_second": 5}}`, "rate_limit.burst"},
		{"per_second 0", `{"rate_limit": {"per_second": 0, "burst": 10}}`, "rate_limit.per_second"},
		{"per_second negative", `{"rate_limit": {"per_second": -1, "burst": 10}}`, "rate_limit.per_second"},
		{"per_second a string", `{"rate_limit": {"per_second": "5", "burst": 10}}`, "rate_limit.per_second"},
		{"rate_limit a number", `{"rate_limit": 5}`, "rate_limit"},
		{"unknown field", `{"status": "approved"}`, "status"},
		{"unknown field live_enabled", `{"live_enabled": true}`, "live_enabled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ktParamError(t, api.do("PATCH", path, operatorKey, c.body), c.param)
		})
	}
	// A refused PATCH changes nothing, even when other fields were valid.
	ktParamError(t, api.do("PATCH", path, operatorKey, `{"interest_rate": "0.02", "revenue_share_rate": "abc"}`), "revenue_share_rate")
	after := api.do("GET", path, operatorKey, nil)
	if !bytes.Equal(before.Body, after.Body) {
		t.Fatalf("refused PATCHes changed the platform:\n%s\n%s", before.Body, after.Body)
	}

	requireError(t, api.do("PATCH", "/v1/operator/platforms/"+ktUnknownPlatformID, operatorKey, `{"interest_rate":"0.01"}`), http.StatusNotFound, "not_found")
	requireError(t, api.do("PATCH", "/v1/operator/platforms/plt_bad", operatorKey, `{"interest_rate":"0.01"}`), http.StatusNotFound, "not_found")
}

// TestPlatformConfigureRejectsUnknownNestedField: API.md §1 "Unknown body
// fields are rejected: 400 invalid_request, naming the field in param". A
// misspelt field inside rate_limit must not be silently dropped.
func TestPlatformConfigureRejectsUnknownNestedField(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Nested Co")
	r := api.do("PATCH", "/v1/operator/platforms/"+p.ID, operatorKey,
		`{"rate_limit": {"per_second": 5, "burst": 10, "burst_size": 20}}`)
	ktParamError(t, r, "rate_limit.burst_size")
}

// ---------------------------------------------------------------------------
// GET /v1/operator/platforms

func TestPlatformListPagination(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	// Empty list.
	data, more, _ := ktListPage(t, api.do("GET", "/v1/operator/platforms", operatorKey, nil))
	if len(data) != 0 || more {
		t.Fatalf("empty list: %v %v", data, more)
	}

	var created []string
	for i := range 7 {
		r := ktCreatePlatform(api, ktPlatformBody(fmt.Sprintf("Page Co %d", i)))
		ktStatus(t, r, http.StatusCreated)
		created = append(created, r.Str("id"))
	}

	seen := map[string]int{}
	var order []string
	path := "/v1/operator/platforms?limit=2"
	var sizes []int
	for page := 0; ; page++ {
		if page > 10 {
			t.Fatal("the walk does not end")
		}
		data, more, next := ktListPage(t, api.do("GET", path, operatorKey, nil))
		sizes = append(sizes, len(data))
		for _, p := range data {
			id := p["id"].(string)
			seen[id]++
			order = append(order, id)
			if p["object"] != "platform" {
				t.Fatalf("list item: %v", p)
			}
		}
		if !more {
			break
		}
		path = "/v1/operator/platforms?limit=2&cursor=" + next
	}
	if !reflect.DeepEqual(sizes, []int{2, 2, 2, 1}) {
		t.Fatalf("page sizes %v, want [2 2 2 1]", sizes)
	}
	for _, id := range created {
		if seen[id] != 1 {
			t.Fatalf("platform %s seen %d times", id, seen[id])
		}
	}
	if len(seen) != len(created) {
		t.Fatalf("walk saw %d platforms, want %d", len(seen), len(created))
	}
	// Newest first.
	want := append([]string(nil), created...)
	sort.Sort(sort.Reverse(sort.StringSlice(want)))
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("order %v, want newest first %v", order, want)
	}

	// Exactly divisible: the last page has has_more false and next_cursor null.
	r := api.do("GET", "/v1/operator/platforms?limit=7", operatorKey, nil)
	data, more, _ = ktListPage(t, r)
	if len(data) != 7 || more || !bytes.Contains(r.Body, []byte(`"next_cursor":null`)) {
		t.Fatalf("limit=7: %d items, has_more %v: %s", len(data), more, r.Body)
	}
	// Default limit and the maximum.
	for _, q := range []string{"", "?limit=100", "?limit=1&limit=100"} {
		data, _, _ = ktListPage(t, api.do("GET", "/v1/operator/platforms"+q, operatorKey, nil))
		if q == "?limit=1&limit=100" {
			continue // the first value wins; either is fine
		}
		if len(data) != 7 {
			t.Fatalf("%q: %d items", q, len(data))
		}
	}

	for _, bad := range []string{"0", "101", "x", "-1", "1.5", "%20"} {
		ktParamError(t, api.do("GET", "/v1/operator/platforms?limit="+bad, operatorKey, nil), "limit")
	}
	badCursors := []string{
		"!!!",
		"not-a-cursor",
		base64.RawURLEncoding.EncodeToString([]byte(`{"a":""}`)),
		base64.RawURLEncoding.EncodeToString([]byte(`[1,2]`)),
		base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte("x"), 600)),
	}
	for _, c := range badCursors {
		ktParamError(t, api.do("GET", "/v1/operator/platforms?cursor="+c, operatorKey, nil), "cursor")
	}
}

func TestPlatformGetNotFound(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	ktNewPlatform(t, api, "Exists Co")
	for _, id := range []string{ktUnknownPlatformID, "plt_", "plt_nope", "PLT_01ARZ3NDEKTSV4RRFFQ69G5FAV", ktUnknownKeyID, "abc", strings.Repeat("x", 300)} {
		m := requireError(t, api.do("GET", "/v1/operator/platforms/"+id, operatorKey, nil), http.StatusNotFound, "not_found")
		if msg, _ := m["message"].(string); len(msg) > 200 {
			t.Fatalf("a 404 echoes a long id: %q", msg)
		}
	}
}

// ---------------------------------------------------------------------------
// GET /v1/platform, GET and PATCH /v1/platform/settings

func TestOwnPlatform(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	a := ktNewPlatform(t, api, "Alpha Co")
	b := ktNewPlatform(t, api, "Beta Co")
	for _, c := range []struct {
		key, id, name string
	}{{a.SandboxSecret, a.ID, "Alpha Co"}, {b.SandboxSecret, b.ID, "Beta Co"}} {
		r := api.do("GET", "/v1/platform", c.key, nil)
		ktStatus(t, r, http.StatusOK)
		m := r.JSON()
		if m["id"] != c.id || m["name"] != c.name || m["object"] != "platform" || m["environment"] != "sandbox" || m["status"] != "approved" {
			t.Fatalf("GET /platform: %s", r.Body)
		}
	}
}

func TestSettingsDefaults(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Settings Co").ktLive(t, api)

	r := api.do("GET", "/v1/platform/settings", p.SandboxSecret, nil)
	ktStatus(t, r, http.StatusOK)
	ktEqualJSON(t, "sandbox settings", r.JSON(), `{
		"object": "platform_settings", "platform_id": "`+p.ID+`", "environment": "sandbox",
		"webhook_retry_policy": {"max_attempts": 12, "initial_delay_seconds": 5, "max_delay_seconds": 36000},
		"payment_approval_threshold": null, "daily_payment_limit": null, "require_verified_counterparty": false,
		"sandbox": {"auto_settle": true, "ach_same_day_delay_seconds": 5, "ach_standard_delay_seconds": 15},
		"updated_at": null}`)

	r = api.do("GET", "/v1/platform/settings", p.LiveSecret, nil)
	ktStatus(t, r, http.StatusOK)
	ktEqualJSON(t, "live settings", r.JSON(), `{
		"object": "platform_settings", "platform_id": "`+p.ID+`", "environment": "live",
		"webhook_retry_policy": {"max_attempts": 12, "initial_delay_seconds": 5, "max_delay_seconds": 36000},
		"payment_approval_threshold": null, "daily_payment_limit": null, "require_verified_counterparty": false,
		"sandbox": null, "updated_at": null}`)
}

func TestSettingsPatch(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Settings Co").ktLive(t, api)
	const path = "/v1/platform/settings"

	r := api.do("PATCH", path, p.SandboxSecret, `{"daily_payment_limit": 500000}`)
	ktStatus(t, r, http.StatusOK)
	m := r.JSON()
	if m["daily_payment_limit"] != float64(500000) || m["payment_approval_threshold"] != nil || m["environment"] != "sandbox" {
		t.Fatalf("PATCH daily_payment_limit: %s", r.Body)
	}
	if s, _ := m["updated_at"].(string); !ktTimestamp.MatchString(s) {
		t.Fatalf("updated_at after PATCH: %v", m["updated_at"])
	}
	g := api.do("GET", path, p.SandboxSecret, nil)
	if !reflect.DeepEqual(g.JSON(), m) {
		t.Fatalf("GET differs from PATCH:\n%s\n%s", g.Body, r.Body)
	}

	r = api.do("PATCH", path, p.SandboxSecret, `{
		"payment_approval_threshold": 100000,
		"webhook_retry_policy": {"max_attempts": 5},
		"sandbox": {"auto_settle": false, "ach_same_day_delay_seconds": 0}}`)
	ktStatus(t, r, http.StatusOK)
	m = r.JSON()
	if m["daily_payment_limit"] != float64(500000) || m["payment_approval_threshold"] != float64(100000) {
		t.Fatalf("second PATCH lost a field: %s", r.Body)
	}
	ktEqualJSON(t, "webhook_retry_policy", m["webhook_retry_policy"], `{"max_attempts": 5, "initial_delay_seconds": 5, "max_delay_seconds": 36000}`)
	ktEqualJSON(t, "sandbox", m["sandbox"], `{"auto_settle": false, "ach_same_day_delay_seconds": 0, "ach_standard_delay_seconds": 15}`)

	// null clears an amount and restores the default retry policy.
	r = api.do("PATCH", path, p.SandboxSecret, `{"daily_payment_limit": null, "webhook_retry_policy": null}`)
	ktStatus(t, r, http.StatusOK)
	m = r.JSON()
	if v, ok := m["daily_payment_limit"]; !ok || v != nil {
		t.Fatalf("daily_payment_limit after null: %s", r.Body)
	}
	if m["payment_approval_threshold"] != float64(100000) {
		t.Fatalf("null of one field cleared another: %s", r.Body)
	}
	ktEqualJSON(t, "webhook_retry_policy", m["webhook_retry_policy"], `{"max_attempts": 12, "initial_delay_seconds": 5, "max_delay_seconds": 36000}`)

	// Settings are per environment.
	live := api.do("GET", path, p.LiveSecret, nil)
	ktStatus(t, live, http.StatusOK)
	lm := live.JSON()
	if lm["payment_approval_threshold"] != nil || lm["daily_payment_limit"] != nil || lm["updated_at"] != nil || lm["sandbox"] != nil {
		t.Fatalf("a sandbox PATCH changed live settings: %s", live.Body)
	}
	r = api.do("PATCH", path, p.LiveSecret, `{"daily_payment_limit": 2000}`)
	ktStatus(t, r, http.StatusOK)
	if r.JSON()["daily_payment_limit"] != float64(2000) || r.JSON()["environment"] != "live" {
		t.Fatalf("live PATCH: %s", r.Body)
	}
	sb := api.do("GET", path, p.SandboxSecret, nil)
	if v, ok := sb.JSON()["daily_payment_limit"]; !ok || v != nil {
		t.Fatalf("a live PATCH changed sandbox settings: %s", sb.Body)
	}

	// A live key cannot touch the sandbox block, and the refusal changes nothing.
	before := api.do("GET", path, p.LiveSecret, nil)
	ktParamError(t, api.do("PATCH", path, p.LiveSecret, `{"sandbox": {"auto_settle": false}}`), "sandbox")
	ktParamError(t, api.do("PATCH", path, p.LiveSecret, `{"daily_payment_limit": 1, "sandbox": {"auto_settle": false}}`), "sandbox")
	ktParamError(t, api.do("PATCH", path, p.LiveSecret, `{"sandbox": null}`), "sandbox")
	after := api.do("GET", path, p.LiveSecret, nil)
	if !bytes.Equal(before.Body, after.Body) {
		t.Fatalf("refused live PATCH changed settings:\n%s\n%s", before.Body, after.Body)
	}

	cases := []struct {
		name  string
		body  string
		param string
	}{
		{"limit 0", `{"daily_payment_limit": 0}`, "daily_payment_limit"},
		{"limit negative", `{"daily_payment_limit": -5}`, "daily_payment_limit"},
		{"limit too large", `{"daily_payment_limit": 100000000000}`, "daily_payment_limit"},
		{"limit a string", `{"daily_payment_limit": "abc"}`, "daily_payment_limit"},
		{"limit a fraction", `{"daily_payment_limit": 1.5}`, "daily_payment_limit"},
		{"threshold 0", `{"payment_approval_threshold": 0}`, "payment_approval_threshold"},
		{"threshold a boolean", `{"payment_approval_threshold": true}`, "payment_approval_threshold"},
		{"max_attempts 0", `{"webhook_retry_policy": {"max_attempts": 0}}`, "webhook_retry_policy.max_attempts"},
		{"max_attempts 26", `{"webhook_retry_policy": {"max_attempts": 26}}`, "webhook_retry_policy.max_attempts"},
		{"initial_delay 0", `{"webhook_retry_policy": {"initial_delay_seconds": 0}}`, "webhook_retry_policy.initial_delay_seconds"},
		{"max_delay below initial", `{"webhook_retry_policy": {"initial_delay_seconds": 60, "max_delay_seconds": 30}}`, "webhook_retry_policy.max_delay_seconds"},
		{"max_delay above 7 days", `{"webhook_retry_policy": {"max_delay_seconds": 604801}}`, "webhook_retry_policy.max_delay_seconds"},
		{"retry policy a string", `{"webhook_retry_policy": "fast"}`, "webhook_retry_policy"},
		{"same-day delay negative", `{"sandbox": {"ach_same_day_delay_seconds": -1}}`, "sandbox.ach_same_day_delay_seconds"},
		{"standard delay over a day", `{"sandbox": {"ach_standard_delay_seconds": 86401}}`, "sandbox.ach_standard_delay_seconds"},
		{"auto_settle a string", `{"sandbox": {"auto_settle": "yes"}}`, "sandbox.auto_settle"},
		{"sandbox null", `{"sandbox": null}`, "sandbox"},
		{"unknown field", `{"timezone": "UTC"}`, "timezone"},
		{"read-only field", `{"platform_id": "plt_x"}`, "platform_id"},
	}
	before = api.do("GET", path, p.SandboxSecret, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ktParamError(t, api.do("PATCH", path, p.SandboxSecret, c.body), c.param)
		})
	}
	after = api.do("GET", path, p.SandboxSecret, nil)
	if !bytes.Equal(before.Body, after.Body) {
		t.Fatalf("refused PATCHes changed settings:\n%s\n%s", before.Body, after.Body)
	}
}

// TestSettingsRejectsUnknownNestedField: API.md §1 "Unknown body fields are
// rejected: 400 invalid_request, naming the field in param". A misspelt
// max_attempts must not answer 200 with nothing changed.
func TestSettingsRejectsUnknownNestedField(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Typo Co")
	for _, c := range []struct{ body, param string }{
		{`{"webhook_retry_policy": {"max_attempt": 3}}`, "webhook_retry_policy.max_attempt"},
		{`{"sandbox": {"autosettle": false}}`, "sandbox.autosettle"},
	} {
		ktParamError(t, api.do("PATCH", "/v1/platform/settings", p.SandboxSecret, c.body), c.param)
	}
}
