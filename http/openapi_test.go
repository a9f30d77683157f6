package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/opentreasury/treasury/domain"
	apihttp "github.com/opentreasury/treasury/http"
)

// The OpenAPI document is checked three ways: it is served as OpenAPI 3.1,
// it documents exactly the routes the server registers under /v1, and real
// responses fit the schemas the document gives for their status.

// oaPrefix is where the document's server URL points.
const oaPrefix = "/v1"

// oaMethods are the HTTP methods an OpenAPI path item may hold.
var oaMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// oaDocument fetches and decodes the served document.
func oaDocument(t *testing.T, api *testAPI) map[string]any {
	t.Helper()
	r := api.do("GET", oaPrefix+"/openapi.json", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/openapi.json: %d %s", r.Status, r.Body)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("the OpenAPI document is not valid JSON: %v", err)
	}
	return doc
}

func oaObj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// oaResolve follows "$ref"s inside the document ("#/a/b/c").
func oaResolve(t *testing.T, doc, node map[string]any) map[string]any {
	t.Helper()
	for i := 0; node != nil && i < 10; i++ {
		ref, ok := node["$ref"].(string)
		if !ok {
			return node
		}
		node = oaPointer(doc, ref)
		if node == nil {
			t.Fatalf("unresolvable $ref %q", ref)
		}
	}
	return node
}

// oaPointer returns the object a local JSON pointer names, or nil.
func oaPointer(doc map[string]any, ref string) map[string]any {
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = doc
	for _, part := range strings.Split(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		cur = oaObj(cur)[part]
	}
	return oaObj(cur)
}

func TestOpenAPIDocumentServed(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	r := api.do("GET", oaPrefix+"/openapi.json", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	if !bytes.Equal(r.Body, apihttp.OpenAPIDocument()) {
		t.Errorf("the served document differs from the embedded one")
	}
	if !json.Valid(r.Body) {
		t.Fatalf("the document is not valid JSON")
	}
	doc := oaDocument(t, api)
	if doc["openapi"] != "3.1.0" {
		t.Errorf("openapi = %v, want 3.1.0", doc["openapi"])
	}
	info := oaObj(doc["info"])
	if info["title"] == "" || info["version"] == "" {
		t.Errorf("info lacks title or version: %v", info)
	}
	desc, _ := info["description"].(string)
	for _, route := range []string{"/healthz", "/readyz", "/metrics"} {
		if !strings.Contains(desc, route) {
			t.Errorf("info.description does not document %s", route)
		}
	}
	servers, _ := doc["servers"].([]any)
	if len(servers) == 0 || !strings.HasSuffix(fmt.Sprint(oaObj(servers[0])["url"]), oaPrefix) {
		t.Errorf("servers[0].url must end in %s: %v", oaPrefix, doc["servers"])
	}
	schemes := oaObj(oaObj(doc["components"])["securitySchemes"])
	for name, s := range schemes {
		if s := oaObj(s); s["type"] != "http" || s["scheme"] != "bearer" {
			t.Errorf("security scheme %s is not http bearer: %v", name, s)
		}
	}
	if len(schemes) == 0 {
		t.Errorf("no security schemes")
	}
	for _, name := range []string{"Platform", "PlatformWithKeys", "PlatformSettings", "APIKey", "APIKeyList", "PlatformList", "Error"} {
		if oaPointer(doc, "#/components/schemas/"+name) == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}
}

// oaRouteKey converts an echo route under /v1 to "METHOD /path/{param}";
// ok is false for routes outside /v1.
func oaRouteKey(method, path string) (string, bool) {
	rest, ok := strings.CutPrefix(path, oaPrefix+"/")
	if !ok {
		return "", false
	}
	parts := strings.Split(rest, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.ToUpper(method) + " /" + strings.Join(parts, "/"), true
}

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	doc := oaDocument(t, api)

	served := map[string]bool{}
	for _, r := range api.API.Routes() {
		if !slices.Contains(oaMethods, strings.ToLower(r.Method)) {
			continue // echo's internal entries, such as RouteNotFound handlers
		}
		if key, ok := oaRouteKey(r.Method, r.Path); ok {
			served[key] = true
		}
	}
	if len(served) == 0 {
		t.Fatal("the server registers no routes under /v1")
	}

	documented := map[string]bool{}
	for path, item := range oaObj(doc["paths"]) {
		if !strings.HasPrefix(path, "/") || strings.HasPrefix(path, oaPrefix+"/") {
			t.Errorf("path %q must be relative to the server URL (no %s prefix)", path, oaPrefix)
		}
		for method := range oaObj(item) {
			if slices.Contains(oaMethods, method) {
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}

	var missing, extra []string
	for k := range served {
		if !documented[k] {
			missing = append(missing, k)
		}
	}
	for k := range documented {
		if !served[k] {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, k := range missing {
		t.Errorf("route %s is served but not documented", k)
	}
	for _, k := range extra {
		t.Errorf("route %s is documented but not served", k)
	}
}

// TestOpenAPIDocumentIsConsistent checks what a generator would trip on:
// dangling $refs, duplicate operation ids, undeclared path parameters,
// operations without responses.
func TestOpenAPIDocumentIsConsistent(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(apihttp.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	// Every $ref resolves (walked with an explicit stack).
	stack := []any{doc}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch v := n.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && oaPointer(doc, ref) == nil {
				t.Errorf("dangling $ref %q", ref)
			}
			for _, c := range v {
				stack = append(stack, c)
			}
		case []any:
			stack = append(stack, v...)
		}
	}
	ids := map[string]string{}
	for path, item := range oaObj(doc["paths"]) {
		for method, op := range oaObj(item) {
			if !slices.Contains(oaMethods, method) {
				continue
			}
			op := oaObj(op)
			where := strings.ToUpper(method) + " " + path
			id, _ := op["operationId"].(string)
			if id == "" {
				t.Errorf("%s has no operationId", where)
			} else if other, dup := ids[id]; dup {
				t.Errorf("operationId %s is used by %s and %s", id, other, where)
			}
			ids[id] = where
			if len(oaObj(op["responses"])) == 0 {
				t.Errorf("%s has no responses", where)
			}
			if _, ok := op["security"]; !ok {
				t.Errorf("%s does not state its security", where)
			}
			declared := map[string]bool{}
			for _, p := range oaArray(op["parameters"]) {
				p := oaResolve(t, doc, oaObj(p))
				if p["in"] == "path" {
					declared[p["name"].(string)] = true
				}
			}
			for _, seg := range strings.Split(path, "/") {
				if name, ok := strings.CutPrefix(seg, "{"); ok {
					if name = strings.TrimSuffix(name, "}"); !declared[name] {
						t.Errorf("%s does not declare path parameter %s", where, name)
					}
				}
			}
		}
	}
}

func TestOpenAPIErrorCodes(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(apihttp.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	code := oaObj(oaObj(oaPointer(doc, "#/components/schemas/Error")["properties"])["code"])
	var got []string
	for _, c := range code["enum"].([]any) {
		got = append(got, c.(string))
	}
	want := []string{}
	for _, c := range []domain.Code{
		domain.CodeInvalidRequest, domain.CodeUnbalancedEntry, domain.CodeAmountExceedsRailLimit,
		domain.CodeUnauthorized, domain.CodeForbidden, domain.CodeNotFound,
		domain.CodeIdempotencyConflict, domain.CodeIdempotencyInProgress, domain.CodePaymentNotCancelable,
		domain.CodeKYBInProgress, domain.CodeKYBAlreadyApproved, domain.CodeInvalidState,
		domain.CodeRequestTooLarge, domain.CodeRequestTimeout, domain.CodeKYBNotApproved, domain.CodeComplianceRejected,
		domain.CodeInsufficientFunds, domain.CodeAccountNotActive, domain.CodeLimitExceeded,
		domain.CodeLiveNotEnabled, domain.CodeRateLimited, domain.CodeInternal, domain.CodeUnavailable,
		domain.CodeReplayTooLarge,
		domain.CodeCounterpartyNotVerified, domain.CodeNotImplemented,
	} {
		want = append(want, string(c))
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("Error.code enum = %v, want %v", got, want)
	}
}

// oaSchema is a schema flattened over $ref and allOf: its properties and
// the fields it requires.
type oaSchema struct {
	props    map[string]map[string]any
	required []string
}

// oaFlatten merges a schema with its $ref and allOf members, without
// recursing into properties.
func oaFlatten(t *testing.T, doc, schema map[string]any) oaSchema {
	t.Helper()
	out := oaSchema{props: map[string]map[string]any{}}
	todo := []map[string]any{schema}
	for n := 0; len(todo) > 0; n++ {
		if n > 50 {
			t.Fatal("schema too deeply composed")
		}
		s := todo[0]
		todo = todo[1:]
		if ref, ok := s["$ref"].(string); ok {
			r := oaPointer(doc, ref)
			if r == nil {
				t.Fatalf("unresolvable $ref %q", ref)
			}
			todo = append(todo, r)
		}
		for _, m := range oaObjects(s["allOf"]) {
			todo = append(todo, m)
		}
		for name, p := range oaObj(s["properties"]) {
			if _, seen := out.props[name]; !seen {
				out.props[name] = oaObj(p)
			}
		}
		for _, r := range oaArray(s["required"]) {
			out.required = append(out.required, r.(string))
		}
	}
	return out
}

func oaObjects(v any) []map[string]any {
	var out []map[string]any
	for _, x := range oaArray(v) {
		out = append(out, oaObj(x))
	}
	return out
}

func oaArray(v any) []any { l, _ := v.([]any); return l }

// oaTypes lists the JSON types a property schema allows, following $ref,
// anyOf and oneOf one step each; nil means unconstrained.
func oaTypes(t *testing.T, doc, prop map[string]any) []string {
	t.Helper()
	var out []string
	alts := []map[string]any{prop}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts = append(alts, oaObjects(prop[key])...)
	}
	for _, a := range alts {
		a = oaResolve(t, doc, a)
		switch ty := a["type"].(type) {
		case string:
			out = append(out, ty)
		case []any:
			for _, x := range ty {
				out = append(out, x.(string))
			}
		}
	}
	return out
}

// oaJSONType names the JSON type of a decoded value; whole numbers are
// "integer" (and so also match "number").
func oaJSONType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// oaCheckObject checks one level of a JSON object against a schema: every
// field is declared, every required field is present, each value has an
// allowed type and matches a const or enum.
func oaCheckObject(t *testing.T, doc, schema map[string]any, obj map[string]any, label string) {
	t.Helper()
	if obj == nil {
		t.Errorf("%s: not a JSON object", label)
		return
	}
	s := oaFlatten(t, doc, schema)
	for field, v := range obj {
		prop, ok := s.props[field]
		if !ok {
			t.Errorf("%s: field %q is not declared in the schema", label, field)
			continue
		}
		if types := oaTypes(t, doc, prop); types != nil {
			jt := oaJSONType(v)
			if !slices.Contains(types, jt) && !(jt == "integer" && slices.Contains(types, "number")) {
				t.Errorf("%s: field %q is %s, the schema allows %v", label, field, jt, types)
			}
		}
		p := oaResolve(t, doc, prop)
		if c, ok := p["const"]; ok && c != v {
			t.Errorf("%s: field %q = %v, the schema's const is %v", label, field, v, c)
		}
		if enum := oaArray(p["enum"]); enum != nil && !slices.Contains(enum, v) {
			t.Errorf("%s: field %q = %v, not in the schema's enum %v", label, field, v, enum)
		}
	}
	for _, field := range s.required {
		if _, ok := obj[field]; !ok {
			t.Errorf("%s: required field %q is missing", label, field)
		}
	}
}

// oaCheck checks a real response against the document's operation: the
// status is documented, its required headers are present, and the body's
// top-level fields fit the schema. It returns the decoded body.
func oaCheck(t *testing.T, doc map[string]any, method, path string, r response) map[string]any {
	t.Helper()
	label := fmt.Sprintf("%s %s → %d", method, path, r.Status)
	op := oaObj(oaObj(oaObj(doc["paths"])[path])[strings.ToLower(method)])
	if op == nil {
		t.Fatalf("%s: the operation is not documented", label)
	}
	res := oaObj(oaObj(op["responses"])[strconv.Itoa(r.Status)])
	if res == nil {
		t.Fatalf("%s: status not documented for this operation (body %s)", label, r.Body)
	}
	res = oaResolve(t, doc, res)
	for name, h := range oaObj(res["headers"]) {
		if oaResolve(t, doc, oaObj(h))["required"] == true && r.Header.Get(name) == "" {
			t.Errorf("%s: required header %s is missing", label, name)
		}
	}
	schema := oaObj(oaObj(oaObj(res["content"])["application/json"])["schema"])
	if schema == nil {
		t.Fatalf("%s: no application/json schema", label)
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("%s: body is not a JSON object: %v: %s", label, err, r.Body)
	}
	oaCheckObject(t, doc, schema, body, label)
	return body
}

// oaComponent is a "$ref" to a components schema.
func oaComponent(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func TestOpenAPIResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	doc := oaDocument(t, api)
	check := func(method, path string, r response) map[string]any {
		t.Helper()
		return oaCheck(t, doc, method, path, r)
	}
	checkKey := func(label string, v any) {
		t.Helper()
		oaCheckObject(t, doc, oaComponent("APIKey"), oaObj(v), label)
	}

	// Operator: register (and replay), list, configure, approve, enable live.
	create := map[string]any{"name": "Acme Payroll", "contact_email": "ops@acme.example", "metadata": map[string]string{"crm_id": "42"}}
	r := api.do("POST", "/v1/platforms", operatorKey, create, "Idempotency-Key", "oa-create-1")
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	id := check("POST", "/platforms", r)["id"].(string)
	r = api.do("POST", "/v1/platforms", operatorKey, create, "Idempotency-Key", "oa-create-1")
	if r.Status != http.StatusOK || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %v %s", r.Status, r.Header, r.Body)
	}
	check("POST", "/platforms", r)

	r = api.do("GET", "/v1/operator/platforms?limit=1", operatorKey, nil)
	list := check("GET", "/operator/platforms", r)
	for i, p := range oaArray(list["data"]) {
		oaCheckObject(t, doc, oaComponent("Platform"), oaObj(p), fmt.Sprintf("GET /operator/platforms data[%d]", i))
	}
	check("GET", "/operator/platforms/{id}", api.do("GET", "/v1/operator/platforms/"+id, operatorKey, nil))
	r = api.do("PATCH", "/v1/operator/platforms/"+id, operatorKey, map[string]any{
		"revenue_share_rate": "0.3", "fee_schedule": map[string]int{"rtp": 40}, "rate_limit": map[string]int{"per_second": 1000, "burst": 1000}})
	body := check("PATCH", "/operator/platforms/{id}", r)
	oaCheckObject(t, doc, oaComponent("FeeSchedule"), oaObj(body["fee_schedule"]), "PATCH /operator/platforms/{id} fee_schedule")
	oaCheckObject(t, doc, oaComponent("RateLimit"), oaObj(body["rate_limit"]), "PATCH /operator/platforms/{id} rate_limit")

	r = api.do("POST", "/v1/operator/platforms/"+id+"/approve", operatorKey, nil)
	body = check("POST", "/operator/platforms/{id}/approve", r)
	checkKey("approve sandbox_api_key", body["sandbox_api_key"])
	sandboxKey, _ := oaObj(body["sandbox_api_key"])["secret"].(string)
	r = api.do("POST", "/v1/operator/platforms/"+id+"/enable-live", operatorKey, nil)
	body = check("POST", "/operator/platforms/{id}/enable-live", r)
	checkKey("enable-live live_api_key", body["live_api_key"])
	liveKey, _ := oaObj(body["live_api_key"])["secret"].(string)
	if sandboxKey == "" || liveKey == "" {
		t.Fatal("approval or enabling live returned no secret")
	}

	// Platform: own platform, settings in both environments, keys.
	check("GET", "/platform", api.do("GET", "/v1/platform", sandboxKey, nil))
	for _, key := range []string{sandboxKey, liveKey} {
		body = check("GET", "/platform/settings", api.do("GET", "/v1/platform/settings", key, nil))
		oaCheckObject(t, doc, oaComponent("WebhookRetryPolicy"), oaObj(body["webhook_retry_policy"]), "settings webhook_retry_policy")
		if sb := oaObj(body["sandbox"]); sb != nil {
			oaCheckObject(t, doc, oaComponent("SandboxSettings"), sb, "settings sandbox")
		}
	}
	r = api.do("PATCH", "/v1/platform/settings", sandboxKey, map[string]any{
		"daily_payment_limit": 500000, "sandbox": map[string]any{"auto_settle": false}})
	check("PATCH", "/platform/settings", r)

	r = api.do("POST", "/v1/platform/api-keys", liveKey, map[string]any{"name": "CI", "environment": "sandbox"})
	if r.Status != http.StatusCreated {
		t.Fatalf("create key: %d %s", r.Status, r.Body)
	}
	keyID := check("POST", "/platform/api-keys", r)["id"].(string)
	r = api.do("GET", "/v1/platform/api-keys?environment=sandbox", liveKey, nil)
	list = check("GET", "/platform/api-keys", r)
	for i, k := range oaArray(list["data"]) {
		checkKey(fmt.Sprintf("GET /platform/api-keys data[%d]", i), k)
	}
	check("POST", "/platform/api-keys/{id}/roll", api.do("POST", "/v1/platform/api-keys/"+keyID+"/roll", sandboxKey, map[string]any{"grace_seconds": 60}))
	check("DELETE", "/platform/api-keys/{id}", api.do("DELETE", "/v1/platform/api-keys/"+keyID, sandboxKey, nil))

	// Errors, with the headers their status requires.
	for _, c := range []struct {
		method, path, url, key string
		body                   any
		status                 int
		code                   string
	}{
		{"GET", "/platform", "/v1/platform", "", nil, http.StatusUnauthorized, "unauthorized"},
		{"GET", "/platform", "/v1/platform", operatorKey, nil, http.StatusForbidden, "forbidden"},
		{"GET", "/operator/platforms", "/v1/operator/platforms", sandboxKey, nil, http.StatusForbidden, "forbidden"},
		{"GET", "/operator/platforms/{id}", "/v1/operator/platforms/plt_nope", operatorKey, nil, http.StatusNotFound, "not_found"},
		{"POST", "/platforms", "/v1/platforms", operatorKey, `{"name":"x","nickname":"y"}`, http.StatusBadRequest, "invalid_request"},
		{"POST", "/platform/api-keys/{id}/roll", "/v1/platform/api-keys/" + keyID + "/roll", sandboxKey, nil, http.StatusConflict, "invalid_state"},
		{"POST", "/platform/api-keys", "/v1/platform/api-keys", sandboxKey, map[string]any{"name": "x", "environment": "live"}, http.StatusForbidden, "forbidden"},
		{"PATCH", "/platform/settings", "/v1/platform/settings", sandboxKey, strings.Repeat(" ", apihttp.MaxBodyBytes+1), http.StatusRequestEntityTooLarge, "request_too_large"},
	} {
		r := api.do(c.method, c.url, c.key, c.body)
		if got := check(c.method, c.path, r); r.Status != c.status || got["code"] != c.code {
			t.Errorf("%s %s: %d %v, want %d %s", c.method, c.url, r.Status, got["code"], c.status, c.code)
		}
	}
	r = api.do("POST", "/v1/platforms", operatorKey, map[string]any{"name": "Other", "contact_email": "ops@acme.example"}, "Idempotency-Key", "oa-create-1")
	if body := check("POST", "/platforms", r); r.Status != http.StatusConflict || body["resource_id"] != id {
		t.Errorf("reused Idempotency-Key: want 409 with the original's resource_id, got %d %s", r.Status, r.Body)
	}
}

func TestOpenAPIRateLimitResponse(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 1}})
	doc := oaDocument(t, api)
	_, key := api.newPlatform("Throttled")
	var r response
	for i := 0; i < 3 && r.Status != http.StatusTooManyRequests; i++ {
		r = api.do("GET", "/v1/platform", key, nil)
		oaCheck(t, doc, "GET", "/platform", r)
	}
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("no 429 with a limit of 1/s burst 1: %d %s", r.Status, r.Body)
	}
}
