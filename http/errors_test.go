package http_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

func TestErrorsRequestID(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Request Id Co")

	safe := []string{"abc", "req-123_ABC.def:9", strings.Repeat("a", 64), "0"}
	for _, id := range safe {
		// Echoed on success...
		r := api.do("GET", "/v1/platform", p.SandboxSecret, nil, "X-Request-Id", id)
		ktStatus(t, r, http.StatusOK)
		if got := r.Header.Get("X-Request-Id"); got != id {
			t.Fatalf("X-Request-Id %q, want the client's %q", got, id)
		}
		// ...and on errors, where the body carries it too.
		r = api.do("GET", "/v1/platform", "", nil, "X-Request-Id", id)
		m := requireError(t, r, http.StatusUnauthorized, "unauthorized")
		if r.Header.Get("X-Request-Id") != id || m["request_id"] != id {
			t.Fatalf("error: header %q, body %v, want %q", r.Header.Get("X-Request-Id"), m["request_id"], id)
		}
	}

	unsafe := []string{
		strings.Repeat("a", 65),
		"has space",
		"semi;colon",
		"slash/id",
		"quote\"id",
		"naïve",
		"<script>",
	}
	seen := map[string]bool{}
	for _, id := range unsafe {
		r := api.do("GET", "/v1/platform", "", nil, "X-Request-Id", id)
		m := requireError(t, r, http.StatusUnauthorized, "unauthorized")
		got := r.Header.Get("X-Request-Id")
		if got == id || !ktGeneratedReq.MatchString(got) {
			t.Fatalf("unsafe id %q: X-Request-Id %q, want a generated req_ id", id, got)
		}
		if m["request_id"] != got {
			t.Fatalf("body request_id %v, header %q", m["request_id"], got)
		}
		if seen[got] {
			t.Fatalf("generated request id %q repeats", got)
		}
		seen[got] = true
	}

	// Without one, every response gets a fresh id, the same in header and body.
	for _, route := range []struct{ method, path, key string }{
		{"GET", "/v1/platform", p.SandboxSecret},
		{"GET", "/v1/platform", ""},
		{"GET", "/v1/nope", ""},
		{"GET", "/healthz", ""},
		{"GET", "/v1/operator/platforms/" + ktUnknownPlatformID, operatorKey},
	} {
		r := api.do(route.method, route.path, route.key, nil)
		got := r.Header.Get("X-Request-Id")
		if !ktGeneratedReq.MatchString(got) || seen[got] {
			t.Fatalf("%s %s: X-Request-Id %q", route.method, route.path, got)
		}
		seen[got] = true
		if r.Status >= 400 && r.Str("request_id") != got {
			t.Fatalf("%s %s: body request_id %q, header %q", route.method, route.path, r.Str("request_id"), got)
		}
	}
}

func TestErrorsBodyTooLarge(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	const limit = 1 << 20
	prefix := `{"name":"Big Co","contact_email":"ops@example.com","metadata":{"note":"`
	suffix := `"}}`
	big := prefix + strings.Repeat("x", limit+1-len(prefix)-len(suffix)) + suffix // limit+1 bytes
	if len(big) != limit+1 {
		t.Fatalf("body of %d bytes", len(big))
	}

	// With Content-Length.
	r, err := ktSend(api.URL, "POST", "/v1/platforms", operatorKey, strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	m := requireError(t, r, http.StatusRequestEntityTooLarge, "request_too_large")
	if m["request_id"] != r.Header.Get("X-Request-Id") {
		t.Fatalf("request_id %v, header %q", m["request_id"], r.Header.Get("X-Request-Id"))
	}

	// Chunked (no Content-Length): the limit holds while reading.
	for _, size := range []int{limit + 1, 3 * limit} {
		body := io.MultiReader(strings.NewReader(prefix), strings.NewReader(strings.Repeat("x", size-len(prefix)-len(suffix))), strings.NewReader(suffix))
		r, err = ktSend(api.URL, "POST", "/v1/platforms", operatorKey, body)
		if err != nil {
			t.Fatal(err)
		}
		requireError(t, r, http.StatusRequestEntityTooLarge, "request_too_large")
	}
	// Also on a platform route and before authentication.
	r, err = ktSend(api.URL, "PATCH", "/v1/platform/settings", "", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	requireError(t, r, http.StatusRequestEntityTooLarge, "request_too_large")

	if n, _ := ktCountByName(ktAllPlatforms(t, api), "Big Co"); n != 0 {
		t.Fatalf("an oversized body registered a platform")
	}

	// Exactly 1 MiB is accepted (here: valid JSON padded with white space).
	small := `{"name":"Edge Co","contact_email":"ops@example.com"}`
	exact := small + strings.Repeat(" ", limit-len(small))
	ktStatus(t, ktCreatePlatform(api, exact), http.StatusCreated)
	exactChunked := io.MultiReader(strings.NewReader(small), strings.NewReader(strings.Repeat(" ", limit-len(small))))
	r, err = ktSend(api.URL, "POST", "/v1/platforms", operatorKey, exactChunked)
	if err != nil {
		t.Fatal(err)
	}
	ktStatus(t, r, http.StatusCreated)
}

func TestErrorsInvalidJSON(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Json Co")
	valid := `{"name":"Json Co 2","contact_email":"ops@example.com"}`
	cases := []struct {
		name string
		body []byte
	}{
		{"truncated", []byte(`{"name":"x"`)},
		{"just a brace", []byte(`{`)},
		{"missing value", []byte(`{"name":}`)},
		{"single quotes", []byte(`{'name':'x'}`)},
		{"trailing comma", []byte(`{"name":"x",}`)},
		{"array", []byte(`[]`)},
		{"array of object", []byte(`[` + valid + `]`)},
		{"null", []byte(`null`)},
		{"string", []byte(`"x"`)},
		{"number", []byte(`42`)},
		{"trailing garbage", []byte(valid + ` xyz`)},
		{"two objects", []byte(valid + valid)},
		{"trailing number", []byte(valid + `1`)},
		{"invalid UTF-8 in a string", []byte("{\"name\":\"Bad \xff\xfe\",\"contact_email\":\"ops@example.com\"}")},
		{"invalid UTF-8 outside strings", []byte("{\"name\":\"x\",\"contact_email\":\"ops@example.com\"}\xff")},
		{"truncated UTF-8 sequence", []byte("{\"name\":\"caf\xc3\",\"contact_email\":\"ops@example.com\"}")},
		{"UTF-16 surrogate bytes", []byte("{\"name\":\"\xed\xa0\x80\",\"contact_email\":\"ops@example.com\"}")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, route := range []struct{ method, path, key string }{
				{"POST", "/v1/platforms", operatorKey},
				{"PATCH", "/v1/platform/settings", p.SandboxSecret},
				{"POST", "/v1/platform/api-keys", p.SandboxSecret},
			} {
				r := api.do(route.method, route.path, route.key, c.body)
				m := requireError(t, r, http.StatusBadRequest, "invalid_request")
				if msg, _ := m["message"].(string); strings.Contains(msg, "json:") || strings.Contains(msg, "http_test") {
					t.Fatalf("%s %s: message leaks internals: %q", route.method, route.path, msg)
				}
			}
		})
	}
	n, _ := ktCountByName(ktAllPlatforms(t, api), "Json Co 2")
	if n != 0 {
		t.Fatalf("an invalid body registered %d platforms", n)
	}
	if k := ktKeysListed(t, api, p.SandboxSecret, ""); len(k) != 1 {
		t.Fatalf("an invalid body created keys: %v", k)
	}
	// Surrounding white space is fine.
	ktStatus(t, api.do("POST", "/v1/platforms", operatorKey, "\n\t "+valid+" \r\n"), http.StatusCreated)
}

// TestErrorsTrailingCloserRejected: API.md §1 wants JSON object bodies; a
// body with a stray "}" or "]" after the object is not one, and must be
// refused like any other trailing data.
func TestErrorsTrailingCloserRejected(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	for _, tail := range []string{"}", "]", "}}", "]]]"} {
		body := `{"name":"Closer Co","contact_email":"ops@example.com"}` + tail
		r := api.do("POST", "/v1/platforms", operatorKey, body)
		if r.Status != http.StatusBadRequest {
			t.Errorf("body with trailing %q: %d %s", tail, r.Status, r.Body)
		}
	}
	if n, _ := ktCountByName(ktAllPlatforms(t, api), "Closer Co"); n != 0 {
		t.Errorf("bodies with trailing closers registered %d platforms", n)
	}
}

func TestErrorsUnknownRoute(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	for _, route := range []struct{ method, path, key string }{
		{"GET", "/v1/nope", ""},
		{"GET", "/v1/nope", operatorKey},
		{"GET", "/nope", ""},
		{"GET", "/", ""},
		{"GET", "/v2/platform", ""},
		{"GET", "/v1/platforms", operatorKey},    // only POST exists
		{"DELETE", "/v1/platform", ""},           // only GET exists
		{"PUT", "/v1/platform/settings", ""},     // only GET and PATCH exist
		{"POST", "/v1/operator/platforms", ""},   // only GET exists
		{"GET", "/v1/platform/api-keys/x/y", ""}, // no such depth
	} {
		r := api.do(route.method, route.path, route.key, nil)
		m := requireError(t, r, http.StatusNotFound, "not_found")
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s %s: Content-Type %q", route.method, route.path, ct)
		}
		if m["request_id"] != r.Header.Get("X-Request-Id") {
			t.Fatalf("%s %s: request_id %v vs header %q", route.method, route.path, m["request_id"], r.Header.Get("X-Request-Id"))
		}
	}
}

func TestErrorsErrorBodyShape(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	// Only the documented fields, and param / resource_id only when they apply.
	r := api.do("GET", "/v1/platform", "", nil)
	m := requireError(t, r, http.StatusUnauthorized, "unauthorized")
	for k := range m {
		switch k {
		case "code", "message", "request_id":
		default:
			t.Fatalf("unexpected field %q in %s", k, r.Body)
		}
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q", ct)
	}
	r = ktCreatePlatform(api, `{"name": ""}`)
	m = ktParamError(t, r, "name")
	if _, ok := m["resource_id"]; ok {
		t.Fatalf("resource_id on a 400: %s", r.Body)
	}
}

func TestErrorsHealthAndMetrics(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	r := api.do("GET", "/healthz", "", nil)
	ktStatus(t, r, http.StatusOK)
	if r.Str("status") != "ok" {
		t.Fatalf("/healthz: %s", r.Body)
	}
	r = api.do("GET", "/readyz", "", nil)
	ktStatus(t, r, http.StatusOK)
	if r.Str("status") != "ready" {
		t.Fatalf("/readyz: %s", r.Body)
	}

	ktStatus(t, ktCreatePlatform(api, ktPlatformBody("Metrics Co")), http.StatusCreated)
	api.do("GET", "/v1/operator/platforms/"+ktUnknownPlatformID, operatorKey, nil)
	api.do("GET", "/v1/nope", "", nil)

	r = api.do("GET", "/metrics", "", nil)
	ktStatus(t, r, http.StatusOK)
	body := string(r.Body)
	for _, want := range []string{
		"# TYPE treasury_http_requests_total counter",
		`treasury_http_requests_total{method="POST",route="/v1/platforms",status="201"} 1`,
		`treasury_http_requests_total{method="GET",route="/v1/operator/platforms/:id",status="404"} 1`,
		`treasury_http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		"treasury_http_request_duration_seconds_bucket",
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, ktGrep(body, "treasury_http_requests_total"))
		}
	}
	// Route labels are templates, never raw paths with ids.
	if strings.Contains(body, ktUnknownPlatformID) {
		t.Fatalf("/metrics has a raw id in a label")
	}
}

func ktGrep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestErrorsNotReady: while Config.Ready is false, /v1 answers 503
// unavailable with Retry-After; the probes still answer.
func TestErrorsNotReady(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{Ready: func() bool { return false }})
	for _, route := range []struct{ method, path, key string }{
		{"GET", "/v1/platform", ""},
		{"POST", "/v1/platforms", operatorKey},
		{"GET", "/v1/operator/platforms", operatorKey},
	} {
		r := api.do(route.method, route.path, route.key, nil)
		requireError(t, r, http.StatusServiceUnavailable, "unavailable")
		if r.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: 503 without Retry-After", route.method, route.path)
		}
	}
	ktStatus(t, api.do("GET", "/healthz", "", nil), http.StatusOK)
}

// TestErrorsSuccessHasJSONAndRequestID: successes are JSON and carry X-Request-Id.
func TestErrorsSuccessHasJSONAndRequestID(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	p := ktNewPlatform(t, api, "Headers Co")
	for _, r := range []response{
		api.do("GET", "/v1/platform", p.SandboxSecret, nil),
		api.do("GET", "/v1/platform/settings", p.SandboxSecret, nil),
		api.do("GET", "/v1/platform/api-keys", p.SandboxSecret, nil),
		api.do("GET", "/v1/operator/platforms", operatorKey, nil),
	} {
		ktStatus(t, r, http.StatusOK)
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || r.Header.Get("X-Request-Id") == "" {
			t.Fatalf("headers %v", r.Header)
		}
		if !bytes.HasPrefix(r.Body, []byte("{")) {
			t.Fatalf("body %s", r.Body)
		}
	}
}

// TestErrorsFieldNamesAreExact: encoding/json matches names regardless of
// case; the API does not, so "NAME" is an unknown field, named in param.
func TestErrorsFieldNamesAreExact(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	r := api.do("POST", "/v1/platforms", operatorKey, `{"NAME":"Acme","contact_email":"ops@example.com"}`)
	if m := requireError(t, r, http.StatusBadRequest, "invalid_request"); m["param"] != "NAME" {
		t.Fatalf("param = %v, want NAME: %s", m["param"], r.Body)
	}
}
