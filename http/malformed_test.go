package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	apihttp "github.com/opentreasury/treasury/http"
)

// The malformed-body sweep: every POST route the router has, over real
// HTTP and a real database, gets bodies of every wrong shape. Names in this
// file start with "mf" so that they never clash with other test files.

// mfIDs are real objects of every kind a POST route names in its path.
type mfIDs struct {
	platformID, key          string // an approved platform and its sandbox key
	accountID                string // KYB-approved and funded: payments, transfers, entries
	statusAccountID          string // the :id of freeze, unfreeze and close
	kybAccountID             string // has no verification yet: POST /kyb
	kybID                    string // a verification in pending_review
	apiKeyID                 string // a second key, to roll
	paymentID                string // a pending ACH payment
	webhookID, deliveryID    string
	operatingLedgerAccountID string
	counterpartyID           string
}

// mfTemplates are valid bodies per POST route (several where a route has
// exclusive forms); the sweep breaks each of their fields in turn. A new
// POST route fails TestMalformedBodiesEveryPostRoute until it is listed.
var mfTemplates = map[string]func(ids mfIDs) []map[string]any{
	"/v1/platforms": func(mfIDs) []map[string]any {
		return []map[string]any{{"name": "Sweep Co", "contact_email": "ops@sweep.example", "metadata": map[string]any{"tier": "gold"}}}
	},
	"/v1/operator/platforms/:id/approve":     mfNone,
	"/v1/operator/platforms/:id/enable-live": mfNone,
	"/v1/operator/rails/ach/files":           mfNone,
	"/v1/operator/platforms/:id/fund": func(mfIDs) []map[string]any {
		return []map[string]any{{"amount": 500, "environment": "sandbox", "description": "Wire 42"}}
	},
	"/v1/operator/kyb/:id/decision": func(mfIDs) []map[string]any {
		return []map[string]any{{"outcome": "rejected", "reasons": []any{
			map[string]any{"code": "ein_mismatch", "message": "The EIN does not match", "field": "business.ein"}}}}
	},
	"/v1/platform/api-keys": func(mfIDs) []map[string]any {
		return []map[string]any{{"name": "ci", "environment": "sandbox"}}
	},
	"/v1/platform/api-keys/:id/roll": func(mfIDs) []map[string]any {
		return []map[string]any{{"grace_seconds": 3600}}
	},
	"/v1/virtual-accounts": func(ids mfIDs) []map[string]any {
		return []map[string]any{{"platform_id": ids.platformID, "entity_ref": "sweep_1", "type": "checking", "metadata": map[string]any{"k": "v"}}}
	},
	"/v1/virtual-accounts/:id/freeze":   mfNone,
	"/v1/virtual-accounts/:id/unfreeze": mfNone,
	"/v1/virtual-accounts/:id/close":    mfNone,
	"/v1/ledger/entries": func(ids mfIDs) []map[string]any {
		return []map[string]any{
			{"type": "adjustment", "description": "sweep", "idempotency_key": mfIdemKey, "effective_at": "2026-01-01T00:00:00Z",
				"metadata": map[string]any{"k": "v"}, "lines": []any{vaLine(ids.accountID, "credit", 1), vaLine(ids.operatingLedgerAccountID, "debit", 1)}},
			{"type": "fee", "virtual_account_id": ids.accountID, "direction": "debit", "amount": 1},
			{"reverses": "je_01J00000000000000000000000"},
		}
	},
	"/v1/payments": func(ids mfIDs) []map[string]any {
		b := payBody(ids.accountID, 100, "ach_standard", "123456789")
		b["description"], b["metadata"], b["idempotency_key"] = "sweep", map[string]any{"k": "v"}, mfIdemKey
		return []map[string]any{b}
	},
	"/v1/payments/:id/cancel":  mfNone,
	"/v1/payments/:id/approve": mfNone,
	"/v1/payments/:id/deny": func(mfIDs) []map[string]any {
		return []map[string]any{{"reason": "sweep"}}
	},
	"/v1/book-transfers": func(ids mfIDs) []map[string]any {
		return []map[string]any{{"from_virtual_account_id": ids.accountID, "to_virtual_account_id": ids.kybAccountID, "amount": 1,
			"description": "sweep", "metadata": map[string]any{"k": "v"}, "idempotency_key": mfIdemKey}}
	},
	"/v1/counterparties": func(mfIDs) []map[string]any {
		b := cpBody("987654321")
		b["metadata"] = map[string]any{"k": "v"}
		return []map[string]any{b}
	},
	"/v1/counterparties/:id/verify": func(mfIDs) []map[string]any {
		return []map[string]any{{"method": "prenote"}}
	},
	"/v1/kyb": func(ids mfIDs) []map[string]any {
		return []map[string]any{kt2Submission(ids.kybAccountID, kt2EINFor("4321"))}
	},
	"/v1/webhooks": func(mfIDs) []map[string]any {
		return []map[string]any{{"url": "https://sweep.example/hook", "events": []any{"payment.completed"}, "description": "sweep",
			"status": "enabled", "retry_policy": map[string]any{"max_attempts": 3, "initial_delay_seconds": 5, "max_delay_seconds": 60}}}
	},
	"/v1/webhooks/:id/rotate-secret": mfNone,
	"/v1/webhooks/:id/test":          mfNone,
	"/v1/webhooks/:id/replay": func(mfIDs) []map[string]any {
		return []map[string]any{{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T16:00:00Z", "types": []any{"payment.completed"}}}
	},
	"/v1/webhooks/:id/deliveries/:delivery_id/retry": mfNone,
	"/v1/simulations/inbound-transfers": func(ids mfIDs) []map[string]any {
		return []map[string]any{{"virtual_account_id": ids.accountID, "amount": 100, "rail": "ach_standard",
			"originator": vaOriginator, "description": "sweep"}}
	},
	"/v1/simulations/kyb/:id/decision": func(mfIDs) []map[string]any {
		return []map[string]any{{"outcome": "approved", "reasons": []any{map[string]any{"code": "manual_review", "message": "ok"}}}}
	},
	"/v1/simulations/payments/:id/complete": mfNone,
	"/v1/simulations/payments/:id/release":  mfNone,
	"/v1/simulations/payments/:id/fail": func(mfIDs) []map[string]any {
		return []map[string]any{{"network_code": "R02"}}
	},
}

// mfIdemKey stands for a fresh idempotency key in every request, so that
// one accepted body does not turn the next ones into replays or conflicts.
const mfIdemKey = "mf-idempotency-key"

// mfNone is the body of a route that takes none.
func mfNone(mfIDs) []map[string]any { return []map[string]any{{}} }

// TestMalformedBodiesEveryPostRoute: no body makes a POST route answer
// 5xx; every refusal is a JSON {code, message}; the bodies that cannot be
// valid are refused with 400 (413 past 1 MiB); and a refused request
// writes nothing to the log.
func TestMalformedBodiesEveryPostRoute(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	ids := mfSetup(t, api)
	routes := mfPostRoutes(api)
	var sent int
	start := time.Now()
	for _, route := range routes {
		path := mfPath(t, route, ids)
		key := ids.key
		if route == "/v1/platforms" || strings.HasPrefix(route, "/v1/operator/") {
			key = operatorKey
		}
		for i, tpl := range mfTemplates[route](ids) {
			for _, c := range mfCases(tpl, i == 0) {
				mfCheck(t, api, route, path, key, c)
				sent++
			}
		}
	}
	t.Logf("%d requests on %d POST routes in %v", sent, len(routes), time.Since(start).Round(time.Millisecond))
}

// mfPostRoutes lists the router's POST routes and checks that mfTemplates
// covers exactly them.
func mfPostRoutes(api *testAPI) []string {
	api.t.Helper()
	var routes, missing []string
	seen := map[string]bool{}
	for _, r := range api.API.Routes() {
		if r.Method != http.MethodPost || seen[r.Path] {
			continue
		}
		seen[r.Path] = true
		routes = append(routes, r.Path)
		if mfTemplates[r.Path] == nil {
			missing = append(missing, r.Path)
		}
	}
	var extra []string
	for p := range mfTemplates {
		if !seen[p] {
			extra = append(extra, p)
		}
	}
	sort.Strings(routes)
	if len(missing)+len(extra) > 0 {
		api.t.Fatalf("mfTemplates is out of date: POST routes without a body: %v; bodies without a route: %v", missing, extra)
	}
	return routes
}

// mfPath fills a route's path parameters with real ids, chosen by the
// segment before each one.
func mfPath(t *testing.T, route string, ids mfIDs) string {
	t.Helper()
	byResource := map[string]string{"platforms": ids.platformID, "kyb": ids.kybID, "api-keys": ids.apiKeyID,
		"virtual-accounts": ids.statusAccountID, "payments": ids.paymentID, "webhooks": ids.webhookID, "deliveries": ids.deliveryID,
		"counterparties": ids.counterpartyID}
	segs := strings.Split(route, "/")
	for i, s := range segs {
		if !strings.HasPrefix(s, ":") {
			continue
		}
		id := byResource[segs[i-1]]
		if id == "" {
			t.Fatalf("%s: no id for the parameter %s after %q: add one to mfPath", route, s, segs[i-1])
		}
		segs[i] = id
	}
	return strings.Join(segs, "/")
}

// mfSetup creates one object of each kind the POST routes name.
func mfSetup(t *testing.T, api *testAPI) mfIDs {
	t.Helper()
	var ids mfIDs
	ids.platformID, ids.key = api.newPlatform("Sweep Platform")
	ids.accountID = payAccount(t, api, ids.key, ids.platformID, "sweep_funded", 1_000_000, true)
	ids.statusAccountID = vaOpenID(t, api, ids.key, ids.platformID, "sweep_status")
	ids.kybAccountID = vaOpenID(t, api, ids.key, ids.platformID, "sweep_kyb")
	review := vaOpenID(t, api, ids.key, ids.platformID, "sweep_review")
	ids.kybID = kt2SubmitID(t, api, ids.key, review, kt2EINFor("1111"))
	kt2Decide(t, api)
	if s := kt2Get(t, api, ids.key, ids.kybID)["status"]; s != "pending_review" {
		t.Fatalf("setup: the verification is %v, want pending_review", s)
	}
	ids.apiKeyID = vaRequire(t, api.do("POST", "/v1/platform/api-keys", ids.key, map[string]any{"name": "to roll"}), http.StatusCreated)["id"].(string)
	ids.paymentID = payCreated(t, api, ids.key, payBody(ids.accountID, 100, "ach_standard", "123456789"))["id"].(string)
	ids.webhookID = vaRequire(t, api.do("POST", "/v1/webhooks", ids.key, map[string]any{"url": "https://sweep.example/hook"}), http.StatusCreated)["id"].(string)
	ids.deliveryID = vaRequire(t, api.do("POST", "/v1/webhooks/"+ids.webhookID+"/test", ids.key, nil), http.StatusAccepted)["id"].(string)
	ids.counterpartyID = cpCreate(t, api, ids.key, "987654321")["id"].(string)
	ids.operatingLedgerAccountID, _ = vaLedgerAccounts(t, api, ids.key)["platform_operating"]["id"].(string)
	if ids.operatingLedgerAccountID == "" {
		t.Fatal("setup: no platform_operating ledger account")
	}
	return ids
}

// mfCase is one request of the sweep. want is the status it must get
// (0: anything but 5xx).
type mfCase struct {
	name        string
	body        []byte
	contentType string
	chunked     bool
	header      []string // name, value pairs
	want        int
}

// mfCases are the broken forms of a valid body: whole-body breakage, then
// every field replaced by a value of each wrong kind. The 11 MiB bodies,
// slow to send, go only with the first template of a route (oversized).
func mfCases(valid map[string]any, oversized bool) []mfCase {
	good := mfJSON(valid)
	first := "name"
	if paths := mfPaths(valid); len(paths) > 0 {
		first = paths[0].name
	}
	const bad = http.StatusBadRequest
	deep := func(open, close string, n int) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	cases := []mfCase{
		{name: "empty body"},
		{name: "white space only", body: []byte(" \r\n\t ")},
		{name: "not JSON", body: []byte("name=Acme&amount=100"), want: bad},
		{name: "XML", body: []byte("<request><name>Acme</name></request>"), want: bad},
		{name: "top-level array", body: []byte("[" + string(good) + "]"), want: bad},
		{name: "top-level string", body: []byte(`"` + strings.ReplaceAll(string(good), `"`, `\"`) + `"`), want: bad},
		{name: "top-level number", body: []byte("12345"), want: bad},
		{name: "top-level null", body: []byte("null"), want: bad},
		{name: "top-level true", body: []byte("true"), want: bad},
		{name: "10,000 levels of [", body: []byte(deep("[", "]", 10_000)), want: bad},
		{name: "10,000 levels of {", body: []byte(deep(`{"a":`, "}", 10_000)), want: bad},
		{name: "10,001 levels of {", body: []byte(deep(`{"a":`, "}", 10_001)), want: bad},
		{name: "10,000 levels of [ in a field", body: []byte(`{"` + first + `":` + deep("[", "]", 10_000) + `}`), want: bad},
		{name: "10,000 levels of { in a field", body: []byte(`{"` + first + `":` + deep(`{"a":`, "}", 10_000) + `}`), want: bad},
		{name: "unclosed", body: good[:len(good)-1], want: bad},
		{name: "invalid UTF-8 alone", body: []byte{0xff, 0xfe, 0xfd}, want: bad},
		{name: "invalid UTF-8 key", body: []byte("{\"\xc3\x28\":1}"), want: bad},
		{name: "NUL byte alone", body: []byte{0}, want: bad},
		{name: "NUL byte after", body: append(bytes.Clone(good), 0), want: bad},
		{name: "NUL byte before", body: append([]byte{0}, good...), want: bad},
		{name: "byte order mark", body: append([]byte("\xef\xbb\xbf"), good...), want: bad},
		{name: "trailing garbage", body: append(bytes.Clone(good), " garbage"...), want: bad},
		{name: "two objects", body: append(bytes.Clone(good), good...), want: bad},
		{name: "unknown field", body: mfWith(valid, "no_such_field", []byte(`1`)), want: bad},
		{name: "duplicate key, the last of a wrong type", body: mfDuplicate(good, first), want: bad},
		{name: "a 10,000-character string", body: []byte(`{"` + first + `":"` + strings.Repeat("é", 10_000) + `"}`)},
		{name: "wrong Content-Type, form", body: []byte("a=b"), contentType: "application/x-www-form-urlencoded", want: bad},
		{name: "wrong Content-Type, valid body", body: good, contentType: "text/plain"},
		{name: "no Content-Type, valid body", body: good, contentType: "-"},
		// Go's server lets bytes above 0x7f through in header values.
		{name: "Idempotency-Key header not UTF-8", body: mfJSON(mfWithout(valid, "idempotency_key")), header: []string{"Idempotency-Key", "k\xff\xfe"}},
	}
	if oversized {
		huge := []byte(`{"` + first + `":"` + strings.Repeat("a", 11<<20) + `"}`)
		cases = append(cases,
			mfCase{name: "11 MiB body", body: huge, want: http.StatusRequestEntityTooLarge},
			mfCase{name: "11 MiB body, chunked", body: huge, chunked: true, want: http.StatusRequestEntityTooLarge})
	}
	for _, p := range mfPaths(valid) {
		cases = append(cases, mfFieldCases(valid, p)...)
	}
	return cases
}

// mfDuplicate repeats key at the end of body with a boolean, the type no
// template field has: the last value is the one decoded.
func mfDuplicate(body []byte, key string) []byte {
	sep := ","
	if string(body) == "{}" {
		sep = ""
	}
	return []byte(string(body[:len(body)-1]) + sep + `"` + key + `":true}`)
}

// mfFieldCases replace one field (at a path like destination.name or
// beneficial_owners[0].address) by each wrong kind of value.
func mfFieldCases(valid map[string]any, p mfFieldPath) []mfCase {
	const bad = http.StatusBadRequest
	var cases []mfCase
	add := func(name, raw string, want int) {
		cases = append(cases, mfCase{name: p.name + " = " + name, body: mfWith(valid, p.name, []byte(raw)), want: want})
	}
	// Integer fields refuse fractions and what int64 cannot hold; a
	// decimal field takes them, and its rules decide.
	notInt, notNumber := bad, bad
	switch p.kind {
	case "decimal":
		notInt, notNumber = 0, 0
	case "number":
		notNumber = 0
	}
	add("null", "null", 0)
	add("-0", "-0", notNumber)
	add("1e400", "1e400", bad) // past float64: no decoder here holds it
	add("a 400-digit number", "1"+strings.Repeat("0", 400), bad)
	add("99999999999999999999999", "99999999999999999999999", notInt)
	add("-1e308", "-1e308", notInt)
	add("1.5", "1.5", notInt)
	for kind, raw := range map[string]string{"string": `"x"`, "number": "12345", "boolean": "true", "object": `{"a":1}`, "array": `[1]`} {
		if kind == p.kind || (kind == "number" && p.kind == "decimal") {
			continue
		}
		add("a "+kind, raw, bad)
	}
	if p.kind == "string" {
		add("NUL escaped", `"a\u0000b"`, bad)
		add("invalid UTF-8", "\"a\xffb\"", bad)
		add("a lone surrogate", `"a\ud800b"`, 0)
	}
	if p.kind == "object" {
		add("10,000 levels of {", strings.Repeat(`{"a":`, 10_000)+"1"+strings.Repeat("}", 10_000), bad)
	}
	if p.kind == "array" {
		add("10,000 levels of [", strings.Repeat("[", 10_000)+strings.Repeat("]", 10_000), bad)
	}
	return cases
}

// mfFieldPath is a field of a valid body and the JSON kind of its value.
type mfFieldPath struct {
	name, kind string
	at         []any // map keys (string) and array indices (int) from the root
}

// mfPaths lists every field of v, nested ones included.
func mfPaths(v any) []mfFieldPath {
	var out []mfFieldPath
	var walk func(v any, name string, at []any)
	walk = func(v any, name string, at []any) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				n := k
				if name != "" {
					n = name + "." + k
				}
				child := append(append([]any{}, at...), k)
				out = append(out, mfFieldPath{name: n, kind: mfKind(n, x[k]), at: child})
				walk(x[k], n, child)
			}
		case []any:
			for i, e := range x {
				n := fmt.Sprintf("%s[%d]", name, i)
				child := append(append([]any{}, at...), i)
				out = append(out, mfFieldPath{name: n, kind: mfKind(n, e), at: child})
				walk(e, n, child)
			}
		}
	}
	walk(v, "", nil)
	return out
}

// mfKind is the JSON kind of a template value; ownership_percentage is a
// decimal, which takes both numbers and numeric strings.
func mfKind(name string, v any) string {
	if strings.HasSuffix(name, "ownership_percentage") {
		return "decimal"
	}
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case map[string]any, map[string]string:
		return "object"
	case []any:
		return "array"
	}
	return "number"
}

// mfSentinel marks where a raw value goes in a marshaled body (raw values
// may be invalid JSON or invalid UTF-8, which json.Marshal cannot carry).
const mfSentinel = "\u0001mf-sentinel\u0001"

// mfWith is valid with the field at path (a mfPaths name, or a new
// top-level key) replaced by raw bytes.
func mfWith(valid map[string]any, path string, raw []byte) []byte {
	body := mfClone(valid).(map[string]any)
	at := []any{path}
	for _, p := range mfPaths(valid) {
		if p.name == path {
			at = p.at
		}
	}
	var parent any = body
	for _, step := range at[:len(at)-1] {
		switch s := step.(type) {
		case string:
			parent = parent.(map[string]any)[s]
		case int:
			parent = parent.([]any)[s]
		}
	}
	switch s := at[len(at)-1].(type) {
	case string:
		parent.(map[string]any)[s] = mfSentinel
	case int:
		parent.([]any)[s] = mfSentinel
	}
	j := mfJSON(body)
	quoted := mfJSON(mfSentinel)
	if bytes.Count(j, quoted) != 1 {
		panic("mfWith: the sentinel is not in the body once: " + string(j))
	}
	return bytes.Replace(j, quoted, raw, 1)
}

// mfWithout is valid without a top-level field.
func mfWithout(valid map[string]any, field string) map[string]any {
	body := mfClone(valid).(map[string]any)
	delete(body, field)
	return body
}

// mfClone deep-copies a template (maps of strings become maps of any).
func mfClone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = mfClone(e)
		}
		return out
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = mfClone(e)
		}
		return out
	}
	return v
}

func mfJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

var mfClient = &http.Client{Timeout: time.Minute}

// mfSend sends one case as it is: no re-encoding of the body.
func mfSend(t *testing.T, api *testAPI, path, key string, c mfCase) response {
	t.Helper()
	var body io.Reader = bytes.NewReader(c.body)
	if len(c.body) <= apihttp.MaxBodyBytes {
		body = bytes.NewReader(bytes.ReplaceAll(c.body, []byte(mfIdemKey), []byte(payKey())))
	}
	if c.chunked {
		body = io.MultiReader(body) // hides the length: the body goes chunked
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, api.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	switch c.contentType {
	case "":
		req.Header.Set("Content-Type", "application/json")
	case "-":
	default:
		req.Header.Set("Content-Type", c.contentType)
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	res, err := mfClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// mfCheck sends a case and checks the answer and, when it is a refusal,
// that nothing was written.
func mfCheck(t *testing.T, api *testAPI, route, path, key string, c mfCase) {
	t.Helper()
	before := mfWrites(t, api)
	r := mfSend(t, api, path, key, c)
	where := fmt.Sprintf("POST %s, %s", route, c.name)
	if r.Status >= 500 {
		t.Errorf("%s: %d %.300s", where, r.Status, r.Body)
		return
	}
	if c.want != 0 && r.Status != c.want {
		t.Errorf("%s: status %d, want %d: %.300s", where, r.Status, c.want, r.Body)
	}
	if r.Status < 400 {
		return
	}
	var e struct{ Code, Message string }
	if err := json.Unmarshal(r.Body, &e); err != nil || e.Code == "" || e.Message == "" {
		t.Errorf("%s: %d with a body that is no {code, message}: %.300s", where, r.Status, r.Body)
	}
	if after := mfWrites(t, api); after != before {
		t.Errorf("%s: refused with %d %s, yet the log changed: %s → %s", where, r.Status, e.Code, before, after)
	}
}

// mfWrites counts what a command writes: events and idempotency records.
func mfWrites(t *testing.T, api *testAPI) string {
	t.Helper()
	var events, keys int64
	err := api.Pool.QueryRow(context.Background(),
		`SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM idempotency_keys)`).Scan(&events, &keys)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d events, %d idempotency keys", events, keys)
}

// TestMalformedIdempotencyKeyHeader: an Idempotency-Key header that is not
// UTF-8 (HTTP lets bytes above 0x7f through) is a 400 naming the key, not
// a 500 from PostgreSQL, and writes nothing.
func TestMalformedIdempotencyKeyHeader(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platformID, key := api.newPlatform("Header Co")
	accountID := payAccount(t, api, key, platformID, "header_1", 10_000, true)
	payment := payBody(accountID, 100, "rtp", "123456789")
	delete(payment, "idempotency_key")
	for _, c := range []struct {
		path, key string
		body      any
	}{
		{"/v1/platforms", operatorKey, map[string]any{"name": "Other Co", "contact_email": "ops@other.example"}},
		{"/v1/payments", key, payment},
		{"/v1/ledger/entries", key, map[string]any{"type": "fee", "virtual_account_id": accountID, "direction": "debit", "amount": 1}},
	} {
		before := mfWrites(t, api)
		r := api.do("POST", c.path, c.key, c.body, "Idempotency-Key", "key-\xff\xfe")
		if e := requireError(t, r, http.StatusBadRequest, "invalid_request"); e["param"] != "idempotency_key" {
			t.Errorf("POST %s: param %v, want idempotency_key", c.path, e["param"])
		}
		if after := mfWrites(t, api); after != before {
			t.Errorf("POST %s: refused, yet %s → %s", c.path, before, after)
		}
	}
}
