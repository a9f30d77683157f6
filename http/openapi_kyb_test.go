package http_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain/kyb"
	apihttp "github.com/opentreasury/treasury/http"
)

// The OpenAPI checks of openapi_test.go, over the KYB routes, plus a
// recursive validator (kt2Validate) for what the one-level checks cannot
// see: nested objects, patterns and bounds.

// kt2Ops are the KYB operations: document path and method.
var kt2Ops = []struct{ method, path string }{
	{"POST", "/kyb"},
	{"GET", "/kyb"},
	{"GET", "/kyb/{id}"},
	{"POST", "/operator/kyb/{id}/decision"},
	{"POST", "/simulations/kyb/{id}/decision"},
}

// kt2Validate checks v against a schema of the document and returns what
// is wrong: $ref, anyOf/oneOf, type, const, enum, pattern, minLength,
// maxLength, minimum, maximum, required, properties, additionalProperties,
// items, minItems, maxItems. strict makes an undeclared field an error
// even where the schema is open (responses must declare what they send).
func kt2Validate(t testing.TB, doc, schema map[string]any, v any, path string, strict bool) []string {
	t.Helper()
	for i := 0; i < 10; i++ {
		ref, ok := schema["$ref"].(string)
		if !ok {
			break
		}
		schema = oaPointer(doc, ref)
		if schema == nil {
			return []string{path + ": unresolvable $ref " + ref}
		}
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts := oaObjects(schema[key]); len(alts) > 0 {
			var all []string
			matched := 0
			for _, a := range alts {
				e := kt2Validate(t, doc, a, v, path, strict)
				if len(e) == 0 {
					matched++
				}
				all = append(all, e...)
			}
			if matched == 0 || (key == "oneOf" && matched > 1) {
				fail("%s: %d alternatives match (%s)", key, matched, strings.Join(all, "; "))
			}
		}
	}
	for _, a := range oaObjects(schema["allOf"]) {
		errs = append(errs, kt2Validate(t, doc, a, v, path, strict)...)
	}
	if types := kt2SchemaTypes(schema["type"]); types != nil {
		jt := oaJSONType(v)
		if !slices.Contains(types, jt) && !(jt == "integer" && slices.Contains(types, "number")) {
			fail("%s, the schema allows %v", jt, types)
			return errs
		}
	}
	if c, ok := schema["const"]; ok && !reflect.DeepEqual(c, v) {
		fail("%v, the schema's const is %v", v, c)
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		fail("%v is not in the enum %v", v, enum)
	}
	switch x := v.(type) {
	case string:
		if p, ok := schema["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(x) {
			fail("%q does not match %s", x, p)
		}
		n := float64(utf8.RuneCountInString(x))
		if m, ok := schema["minLength"].(float64); ok && n < m {
			fail("%q is shorter than %v", x, m)
		}
		if m, ok := schema["maxLength"].(float64); ok && n > m {
			fail("%d characters, more than %v", int(n), m)
		}
	case float64:
		if m, ok := schema["minimum"].(float64); ok && x < m {
			fail("%v < minimum %v", x, m)
		}
		if m, ok := schema["maximum"].(float64); ok && x > m {
			fail("%v > maximum %v", x, m)
		}
		if m, ok := schema["multipleOf"].(float64); ok {
			if q := x / m; q-float64(int64(q+0.5)) > 1e-6 || float64(int64(q+0.5))-q > 1e-6 {
				fail("%v is not a multiple of %v", x, m)
			}
		}
	case []any:
		if m, ok := schema["minItems"].(float64); ok && float64(len(x)) < m {
			fail("%d items, fewer than %v", len(x), m)
		}
		if m, ok := schema["maxItems"].(float64); ok && float64(len(x)) > m {
			fail("%d items, more than %v", len(x), m)
		}
		if items := oaObj(schema["items"]); items != nil {
			for i, item := range x {
				errs = append(errs, kt2Validate(t, doc, items, item, fmt.Sprintf("%s[%d]", path, i), strict)...)
			}
		}
	case map[string]any:
		props := oaObj(schema["properties"])
		for _, r := range oaArray(schema["required"]) {
			if _, ok := x[r.(string)]; !ok {
				fail("required field %q is missing", r)
			}
		}
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if p, ok := props[k]; ok {
				errs = append(errs, kt2Validate(t, doc, oaObj(p), x[k], path+"."+k, strict)...)
				continue
			}
			switch ap := schema["additionalProperties"].(type) {
			case bool:
				if !ap {
					fail("field %q is not allowed", k)
				}
			case map[string]any:
				errs = append(errs, kt2Validate(t, doc, ap, x[k], path+"."+k, strict)...)
			default:
				if strict && props != nil {
					fail("field %q is not declared", k)
				}
			}
		}
		if m, ok := schema["maxProperties"].(float64); ok && float64(len(x)) > m {
			fail("%d fields, more than %v", len(x), m)
		}
	}
	return errs
}

// kt2SchemaTypes reads a schema's type (a string or a list), nil if none.
func kt2SchemaTypes(v any) []string {
	switch ty := v.(type) {
	case string:
		return []string{ty}
	case []any:
		var out []string
		for _, x := range ty {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

// kt2Conforms reports the validation errors of v against a component.
func kt2Conforms(t testing.TB, doc map[string]any, component string, v any, label string) {
	t.Helper()
	for _, e := range kt2Validate(t, doc, oaComponent(component), v, label, true) {
		t.Error(e)
	}
}

// kt2Prop is a property schema of a component, followed through $ref.
func kt2Prop(t *testing.T, doc map[string]any, component, prop string) map[string]any {
	t.Helper()
	p := oaFlatten(t, doc, oaComponent(component)).props[prop]
	if p == nil {
		t.Fatalf("%s.%s is not documented", component, prop)
	}
	return oaResolve(t, doc, p)
}

func TestOpenAPIKYBSchemasDocumented(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	doc := oaDocument(t, api)
	for _, name := range []string{"KYBVerification", "KYBVerificationList", "KYBSubmitRequest", "KYBDecisionRequest",
		"KYBBusinessRequest", "KYBOwnerRequest", "KYBAddress", "KYBReasonRequest", "KYBBusiness", "KYBOwner",
		"KYBDecision", "KYBReview", "KYBReason"} {
		if oaPointer(doc, "#/components/schemas/"+name) == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}
	// Request bodies are closed, at every depth, as the decoder is.
	for _, name := range []string{"KYBSubmitRequest", "KYBBusinessRequest", "KYBOwnerRequest", "KYBAddress",
		"KYBDecisionRequest", "KYBReasonRequest"} {
		if s := oaPointer(doc, "#/components/schemas/"+name); s == nil || s["additionalProperties"] != false {
			t.Errorf("%s does not have additionalProperties: false", name)
		}
	}
	// The documented fields are exactly the ones the decoder knows.
	for component, typ := range map[string]reflect.Type{
		"KYBBusinessRequest": reflect.TypeOf(kyb.Business{}), "KYBOwnerRequest": reflect.TypeOf(kyb.Owner{}),
		"KYBAddress": reflect.TypeOf(kyb.Address{}), "KYBReasonRequest": reflect.TypeOf(kyb.Reason{}),
		"KYBBusiness": reflect.TypeOf(kyb.MaskedBusiness{}), "KYBOwner": reflect.TypeOf(kyb.MaskedOwner{}),
		"KYBReason": reflect.TypeOf(kyb.Reason{}),
	} {
		var want, got []string
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			want = append(want, name)
		}
		for p := range oaFlatten(t, doc, oaComponent(component)).props {
			got = append(got, p)
		}
		sort.Strings(want)
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s documents %v; the Go type %s has %v", component, got, typ, want)
		}
	}
	// Masking is documented: a masked EIN fits, a full one does not.
	ein := kt2Prop(t, doc, "KYBBusiness", "ein")
	for v, ok := range map[string]bool{"**-***6789": true, "12-3456789": false, "123456789": false} {
		if errs := kt2Validate(t, doc, ein, v, "ein", true); (len(errs) == 0) != ok {
			t.Errorf("KYBBusiness.ein accepts %q: %v, want %v", v, len(errs) == 0, ok)
		}
	}
	if c := kt2Prop(t, doc, "KYBOwner", "ssn_last4")["const"]; c != "****" {
		t.Errorf("KYBOwner.ssn_last4 const = %v, want ****", c)
	}
	if ty := kt2Prop(t, doc, "KYBOwner", "ownership_percentage")["type"]; ty != "string" {
		t.Errorf("KYBOwner.ownership_percentage type %v, want string (a decimal string)", ty)
	}
	// The decisions and events are described.
	desc, _ := oaPointer(doc, "#/components/schemas/Event")["description"].(string)
	for _, typ := range []string{"kyb.pending_review", "kyb.approved", "kyb.rejected"} {
		if !strings.Contains(desc, typ) {
			t.Errorf("the Event description does not describe %s", typ)
		}
	}
	submit := oaObj(oaObj(oaObj(doc["paths"])["/kyb"])["post"])
	sd, _ := submit["description"].(string)
	for _, s := range []string{"0000", "1111", "pending_review", "ein_mismatch", "compliance_rejected", "OFAC TEST", "kyb_in_progress", "kyb_already_approved", "live"} {
		if !strings.Contains(sd, s) {
			t.Errorf("POST /kyb's description does not mention %s", s)
		}
	}
	if d, _ := kt2Prop(t, doc, "VirtualAccount", "kyb_status")["description"].(string); strings.Contains(d, "no KYB routes") {
		t.Errorf("VirtualAccount.kyb_status still says there are no KYB routes: %s", d)
	}
	for _, op := range kt2Ops {
		o := oaObj(oaObj(oaObj(doc["paths"])[op.path])[strings.ToLower(op.method)])
		if o == nil {
			t.Errorf("%s %s is not documented", op.method, op.path)
			continue
		}
		if d, _ := o["description"].(string); len(d) < 40 {
			t.Errorf("%s %s has no real description", op.method, op.path)
		}
	}
}

// TestOpenAPIKYBExamples: the document's examples fit its schemas, the
// server accepts the request examples, and the error examples have the
// codes of their statuses (API.md §2).
func TestOpenAPIKYBExamples(t *testing.T) {
	api, platformID, key := vaAPI(t)
	doc := oaDocument(t, api)
	examples := func(name string) []any {
		ex := oaArray(oaPointer(doc, "#/components/schemas/"+name)["examples"])
		if len(ex) == 0 {
			t.Errorf("%s has no example", name)
		}
		return ex
	}
	for _, name := range []string{"KYBSubmitRequest", "KYBVerification", "KYBDecisionRequest", "KYBAddress"} {
		for i, ex := range examples(name) {
			kt2Conforms(t, doc, name, ex, fmt.Sprintf("%s example %d", name, i))
		}
	}
	for i, ex := range examples("KYBSubmitRequest") {
		body := oaObj(ex)
		body["virtual_account_id"] = vaOpenID(t, api, key, platformID, fmt.Sprintf("biz_example_%d", i))
		r := kt2Submit(api, key, body)
		if r.Status != http.StatusCreated {
			t.Errorf("the KYBSubmitRequest example is refused: %d %s", r.Status, r.Body)
		}
	}
	// The decision example, on a verification in review.
	id := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_example_review"), kt2EINFor("1111"))
	kt2Decide(t, api)
	for _, ex := range examples("KYBDecisionRequest") {
		if r := api.do("POST", "/v1/operator/kyb/"+id+"/decision", operatorKey, ex); r.Status != http.StatusOK {
			t.Errorf("the KYBDecisionRequest example is refused: %d %s", r.Status, r.Body)
		}
	}

	codes := map[string][]string{"400": {"invalid_request"}, "401": {"unauthorized"}, "403": {"forbidden"},
		"404": {"not_found"}, "409": {"kyb_in_progress", "kyb_already_approved", "invalid_state"},
		"413": {"request_too_large"}, "422": {"compliance_rejected"}, "429": {"rate_limited"},
		"500": {"internal_error"}, "503": {"unavailable"}}
	for _, op := range kt2Ops {
		o := oaObj(oaObj(oaObj(doc["paths"])[op.path])[strings.ToLower(op.method)])
		for status, res := range oaObj(o["responses"]) {
			res := oaResolve(t, doc, oaObj(res))
			media := oaObj(oaObj(res["content"])["application/json"])
			if len(status) != 3 || status[0] < '4' {
				continue
			}
			if oaObj(media["schema"])["$ref"] != "#/components/schemas/Error" {
				t.Errorf("%s %s → %s: the schema is not Error", op.method, op.path, status)
			}
			if len(oaObj(media["examples"])) == 0 {
				t.Errorf("%s %s → %s: no examples", op.method, op.path, status)
			}
			for name, ex := range oaObj(media["examples"]) {
				value := oaObj(oaObj(ex)["value"])
				label := fmt.Sprintf("%s %s → %s example %s", op.method, op.path, status, name)
				kt2Conforms(t, doc, "Error", value, label)
				if !slices.Contains(codes[status], fmt.Sprint(value["code"])) {
					t.Errorf("%s: code %v does not go with %s", label, value["code"], status)
				}
				if value["code"] == "invalid_request" && value["param"] == nil {
					t.Errorf("%s: invalid_request without param", label)
				}
				if (value["code"] == "compliance_rejected" || strings.HasPrefix(fmt.Sprint(value["code"]), "kyb_")) && value["resource_id"] == nil {
					t.Errorf("%s: %v without resource_id", label, value["code"])
				}
			}
		}
	}
}

// TestOpenAPIKYBRequestFieldsAccepted sends every documented request
// field, alone, and checks the server does not refuse it as unknown.
func TestOpenAPIKYBRequestFieldsAccepted(t *testing.T) {
	api, _, key := vaAPI(t)
	doc := oaDocument(t, api)
	props := func(name string) []string {
		var out []string
		for p := range oaFlatten(t, doc, oaComponent(name)).props {
			out = append(out, p)
		}
		sort.Strings(out)
		return out
	}
	check := func(label, path, k string, body map[string]any) {
		t.Helper()
		r := api.do("POST", path, k, body)
		if msg, _ := r.JSON()["message"].(string); r.Status == http.StatusBadRequest && strings.HasPrefix(msg, "unknown field") {
			t.Errorf("%s: a documented field is refused: %s", label, r.Body)
		}
	}
	for _, p := range props("KYBSubmitRequest") {
		check("KYBSubmitRequest."+p, "/v1/kyb", key, map[string]any{p: nil})
	}
	for _, p := range props("KYBBusinessRequest") {
		check("KYBBusinessRequest."+p, "/v1/kyb", key, map[string]any{"business": map[string]any{p: nil}})
	}
	for _, p := range props("KYBAddress") {
		check("KYBAddress."+p, "/v1/kyb", key, map[string]any{"business": map[string]any{"address": map[string]any{p: nil}}})
		check("KYBAddress."+p+" (owner)", "/v1/kyb", key, map[string]any{"beneficial_owners": []any{map[string]any{"address": map[string]any{p: nil}}}})
	}
	for _, p := range props("KYBOwnerRequest") {
		check("KYBOwnerRequest."+p, "/v1/kyb", key, map[string]any{"beneficial_owners": []any{map[string]any{p: nil}}})
	}
	id := vaUnknown("kyb_")
	for _, p := range props("KYBDecisionRequest") {
		check("KYBDecisionRequest."+p, "/v1/operator/kyb/"+id+"/decision", operatorKey, map[string]any{p: nil})
		check("KYBDecisionRequest."+p+" (simulation)", "/v1/simulations/kyb/"+id+"/decision", key, map[string]any{p: nil})
	}
	for _, p := range props("KYBReasonRequest") {
		check("KYBReasonRequest."+p, "/v1/operator/kyb/"+id+"/decision", operatorKey, map[string]any{"reasons": []any{map[string]any{p: nil}}})
	}
}

// kt2Bound is one value of one field and whether the document accepts it.
type kt2Bound struct {
	field string // as in param
	value any
}

// TestOpenAPIKYBBoundsMatchCode checks the documented bounds against the
// server, value by value: for each value the document's schema accepts
// or refuses, the server must do the same. Nothing is recorded: the
// submissions fail later on purpose (business fields: no owners; owner
// fields: no control person; decisions: a verification already decided),
// so a field that passes shows as an error on something else.
func TestOpenAPIKYBBoundsMatchCode(t *testing.T) {
	api, platformID, key := vaAPI(t)
	doc := oaDocument(t, api)
	va := vaOpenID(t, api, key, platformID, "biz_bounds")
	today := time.Now().UTC()
	date := func(tm time.Time) string { return tm.Format("2006-01-02") }

	schemaOf := func(component, field string) map[string]any { return kt2Prop(t, doc, component, field) }
	docAccepts := func(schema map[string]any, v any) bool {
		var decoded any // as the server sees it: 100 is a float64
		b, _ := json.Marshal(v)
		_ = json.Unmarshal(b, &decoded)
		return len(kt2Validate(t, doc, schema, decoded, "", false)) == 0
	}
	type fieldCase struct {
		component, field, param string
		values                  []any
		// extra: refused by a rule the schema states in words only.
		extraRefused []any
	}
	var states []any
	for _, s := range oaArray(schemaOf("KYBAddress", "state")["enum"]) {
		states = append(states, s)
	}
	states = append(states, "XX", "tx", "T", "TEX", "")
	var entityTypes []any
	for _, e := range oaArray(schemaOf("KYBBusinessRequest", "entity_type")["enum"]) {
		entityTypes = append(entityTypes, e)
	}
	entityTypes = append(entityTypes, "LLC", "gmbh", "")
	long := func(n int) string { return strings.Repeat("a", n) }

	business := []fieldCase{
		{"KYBBusinessRequest", "legal_name", "business.legal_name", []any{"A", long(200), long(201), "", " x ", "é" + long(199)}, []any{"   "}},
		{"KYBBusinessRequest", "dba", "business.dba", []any{"A", long(200), long(201), ""}, []any{"  "}},
		{"KYBBusinessRequest", "ein", "business.ein", []any{"12-3456789", "123456789", "12345678", "1234567890", "12-34567890",
			"123-456789", "12-345678", "ab-cdefghi", "12 3456789", "12–3456789", " 123456789"}, nil},
		{"KYBBusinessRequest", "entity_type", "business.entity_type", entityTypes, nil},
		{"KYBBusinessRequest", "formation_state", "business.formation_state", states, nil},
		{"KYBBusinessRequest", "formation_date", "business.formation_date", []any{"2015-06-01", date(today), "1800-01-01", "15-06-01", "2015/06/01", "2015-6-1"},
			[]any{"2015-02-30", date(today.AddDate(0, 0, 1)), "1799-12-31"}},
		{"KYBBusinessRequest", "website", "business.website", []any{"https://acme.example", "http://a", "ftp://acme.example",
			"acme.example", "https://acme .example", "https://" + long(192), "https://" + long(193), "HTTPS://acme.example"}, nil},
		{"KYBBusinessRequest", "naics_code", "business.naics_code", []any{"54", "541214", "5", "5412145", "54a", ""}, nil},
		{"KYBBusinessRequest", "phone", "business.phone", []any{"+15125550100", "5125550100", "512555010", "+123456789012345",
			"+1234567890123456", "512-555-0100", "++5125550100", ""}, nil},
		{"KYBAddress", "line1", "business.address.line1", []any{"1 Main St", long(200), long(201), ""},
			[]any{"  ", "PO Box 12", "P.O. Box 12", "p o box 12", "POB 12", "Post Office Box 12", "Postal Box 7", "Box 12"}},
		{"KYBAddress", "line2", "business.address.line2", []any{"Suite 200", "", long(200), long(201)}, []any{"PO Box 12"}},
		{"KYBAddress", "city", "business.address.city", []any{"Austin", long(100), long(101), ""}, nil},
		{"KYBAddress", "state", "business.address.state", states, nil},
		{"KYBAddress", "postal_code", "business.address.postal_code", []any{"78701", "78701-1234", "7870", "787011", "78701-123",
			"787011234", "ABCDE", "78701 1234"}, nil},
		{"KYBAddress", "country", "business.address.country", []any{"US", "us", "USA", "CA", ""}, nil},
	}
	for _, c := range business {
		schema := schemaOf(c.component, c.field)
		for _, v := range append(slices.Clone(c.values), c.extraRefused...) {
			body := kt2Submission(va, kt2EINFor("6789"))
			body["beneficial_owners"] = []any{}
			target := kt2Business(body)
			if c.component == "KYBAddress" {
				target = kt2Obj(t, body, "business", "address")
			}
			target[c.field] = v
			r := kt2Submit(api, key, body)
			e := requireError(t, r, http.StatusBadRequest, "invalid_request")
			serverAccepts := e["param"] != c.param
			if serverAccepts && e["param"] != "beneficial_owners" {
				t.Errorf("%s = %q: refused on %v: %s", c.param, v, e["param"], r.Body)
				continue
			}
			docOK := docAccepts(schema, v) && !slices.Contains(c.extraRefused, v)
			if serverAccepts != docOK {
				t.Errorf("%s = %q: the server accepts it: %v; the document: %v", c.param, v, serverAccepts, docOK)
			}
		}
	}

	// Owner fields: one owner who is not a control person, so a valid
	// owner is refused with param beneficial_owners.
	adult := date(today.AddDate(-18, 0, 0))
	if today.Month() == time.February && today.Day() == 29 {
		adult = date(today.AddDate(-18, 0, -1))
	}
	owners := []fieldCase{
		{"KYBOwnerRequest", "first_name", "beneficial_owners[0].first_name", []any{"J", long(100), long(101), ""}, []any{" "}},
		{"KYBOwnerRequest", "last_name", "beneficial_owners[0].last_name", []any{"D", long(100), long(101), ""}, nil},
		{"KYBOwnerRequest", "title", "beneficial_owners[0].title", []any{"CEO", long(100), long(101), ""}, nil},
		{"KYBOwnerRequest", "ssn_last4", "beneficial_owners[0].ssn_last4", []any{"1234", "0000", "123", "12345", "12a4", "１２３４"}, nil},
		{"KYBOwnerRequest", "date_of_birth", "beneficial_owners[0].date_of_birth", []any{"1980-04-12", adult, "80-04-12"},
			[]any{date(today.AddDate(-18, 0, 1)), date(today), fmt.Sprintf("%d-12-31", today.Year()-121), "1980-02-30"}},
		{"KYBOwnerRequest", "ownership_percentage", "beneficial_owners[0].ownership_percentage", []any{"0", "100", "12.3456", 12.3456,
			100, 0, nil, "100.0001", "12.34567", 12.34567, 100.5, -1, "-1"}, nil},
	}
	for _, c := range owners {
		schema := schemaOf(c.component, c.field)
		for _, v := range append(slices.Clone(c.values), c.extraRefused...) {
			body := kt2Submission(va, kt2EINFor("6789"))
			owner := kt2Owner(body, 0)
			owner["is_control_person"] = false
			body["beneficial_owners"] = []any{owner}
			owner[c.field] = v
			r := kt2Submit(api, key, body)
			e := requireError(t, r, http.StatusBadRequest, "invalid_request")
			serverAccepts := e["param"] != c.param
			if serverAccepts && e["param"] != "beneficial_owners" {
				t.Errorf("%s = %v: refused on %v: %s", c.param, v, e["param"], r.Body)
				continue
			}
			docOK := docAccepts(schema, v) && !slices.Contains(c.extraRefused, v)
			if serverAccepts != docOK {
				t.Errorf("%s = %v: the server accepts it: %v; the document: %v", c.param, v, serverAccepts, docOK)
			}
		}
	}

	// beneficial_owners: 1 to 25. With 25 valid owners the count passes
	// and the last owner's bad ssn_last4 is named; with 26 the count is.
	items := oaResolve(t, doc, oaObj(oaFlatten(t, doc, oaComponent("KYBSubmitRequest")).props["beneficial_owners"]))
	if items["minItems"] != 1.0 || items["maxItems"] != 25.0 {
		t.Errorf("beneficial_owners is documented with %v to %v items, the code takes 1 to %d", items["minItems"], items["maxItems"], kyb.MaxOwners)
	}
	for _, n := range []int{25, 26} {
		body := kt2Submission(va, kt2EINFor("6789"))
		var list []any
		for i := 0; i < n; i++ {
			o := map[string]any{}
			for k, v := range kt2Owner(body, 0) {
				o[k] = v
			}
			o["ownership_percentage"] = "1"
			list = append(list, o)
		}
		list[n-1].(map[string]any)["ssn_last4"] = "x"
		body["beneficial_owners"] = list
		e := requireError(t, kt2Submit(api, key, body), http.StatusBadRequest, "invalid_request")
		want := fmt.Sprintf("beneficial_owners[%d].ssn_last4", n-1)
		if n > kyb.MaxOwners {
			want = "beneficial_owners"
		}
		if e["param"] != want {
			t.Errorf("%d owners: param %v, want %s", n, e["param"], want)
		}
	}

	// The decision body, on a verification already approved: a valid body
	// gets 409, an invalid one 400.
	decided := kt2SubmitID(t, api, key, vaOpenID(t, api, key, platformID, "biz_bounds_decided"), kt2EINFor("6789"))
	kt2Decide(t, api)
	decisionSchema := oaPointer(doc, "#/components/schemas/KYBDecisionRequest")
	var ten, eleven []any
	for i := 0; i < 11; i++ {
		eleven = append(eleven, map[string]any{"code": "r"})
	}
	ten = eleven[:10]
	for _, body := range []map[string]any{
		{"outcome": "approved"}, {"outcome": "rejected"}, {"outcome": "pending_review"}, {"outcome": ""}, {},
		{"outcome": "approved", "reasons": nil}, {"outcome": "approved", "reasons": []any{}},
		{"outcome": "approved", "reasons": ten}, {"outcome": "approved", "reasons": eleven},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a"}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a" + strings.Repeat("b", 63)}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a" + strings.Repeat("b", 64)}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "9lives"}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": ""}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "Doc"}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "doc-1"}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"message": "no code"}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a", "message": long(500)}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a", "message": long(501)}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a", "field": long(100)}}},
		{"outcome": "approved", "reasons": []any{map[string]any{"code": "a", "field": long(101)}}},
	} {
		docOK := len(kt2Validate(t, doc, decisionSchema, body, "", false)) == 0
		r := api.do("POST", "/v1/operator/kyb/"+decided+"/decision", operatorKey, body)
		serverAccepts := r.Status == http.StatusConflict && r.Str("code") == "invalid_state"
		if !serverAccepts && r.Status != http.StatusBadRequest {
			t.Errorf("decision %v: %d %s", body, r.Status, r.Body)
		}
		if serverAccepts != docOK {
			t.Errorf("decision %v: the server accepts it: %v; the document: %v (%s)", body, serverAccepts, docOK, r.Body)
		}
	}
	if items := vaData(t, vaGet(t, api, key, "/v1/kyb")); len(items) != 1 {
		t.Errorf("the bounds checks recorded verifications: %d", len(items))
	}
}

func TestOpenAPIKYBResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	_, otherKey := api.newPlatform("Globex")

	seen := map[string]map[int]bool{}
	check := func(method, path string, r response, status int, code string) map[string]any {
		t.Helper()
		if r.Status != status || (code != "" && r.Str("code") != code) {
			t.Fatalf("%s %s: %d %s, want %d %s", method, path, r.Status, r.Body, status, code)
		}
		body := oaCheck(t, doc, method, path, r)
		op := method + " " + path
		if seen[op] == nil {
			seen[op] = map[int]bool{}
		}
		seen[op][status] = true
		// Deeply too.
		res := oaResolve(t, doc, oaObj(oaObj(oaObj(oaObj(oaObj(doc["paths"])[path])[strings.ToLower(method)])["responses"])[strconv.Itoa(r.Status)]))
		schema := oaObj(oaObj(oaObj(res["content"])["application/json"])["schema"])
		for _, e := range kt2Validate(t, doc, schema, body, fmt.Sprintf("%s %s → %d", method, path, r.Status), true) {
			t.Error(e)
		}
		return body
	}
	huge := strings.Repeat(" ", apihttp.MaxBodyBytes+1)

	va := vaOpenID(t, api, key, platformID, "biz_oa")
	sibling := vaOpenID(t, api, key, platformID, "biz_oa")

	// POST /kyb
	p := "/kyb"
	v := check("POST", p, api.do("POST", "/v1/kyb", key, kt2Submission(va, kt2EINFor("1111")), "Idempotency-Key", "kyb-oa"), 201, "")
	id := v["id"].(string)
	if again := check("POST", p, api.do("POST", "/v1/kyb", key, kt2Submission(va, kt2EINFor("1111")), "Idempotency-Key", "kyb-oa"), 200, ""); again["id"] != id {
		t.Errorf("the replay answered %v, want %s", again["id"], id)
	}
	check("POST", p, kt2Submit(api, key, kt2Submission(sibling, kt2EINFor("6789"))), 409, "kyb_in_progress")
	bad := kt2Submission(va, kt2EINFor("6789"))
	kt2Business(bad)["nickname"] = "x"
	check("POST", p, kt2Submit(api, key, bad), 400, "invalid_request")
	check("POST", p, kt2Submit(api, key, kt2Submission(vaUnknown("va_"), kt2EINFor("6789"))), 404, "not_found")
	check("POST", p, kt2Submit(api, "", kt2Submission(va, kt2EINFor("6789"))), 401, "unauthorized")
	check("POST", p, kt2Submit(api, operatorKey, kt2Submission(va, kt2EINFor("6789"))), 403, "forbidden")
	check("POST", p, kt2Submit(api, key, huge), 413, "request_too_large")
	screenedVA := vaOpenID(t, api, key, platformID, "biz_oa_screened")
	screened := kt2Submission(screenedVA, kt2EINFor("6789"))
	kt2Owner(screened, 0)["last_name"] = "OFAC TEST"
	e := check("POST", p, kt2Submit(api, key, screened), 422, "compliance_rejected")
	screenedID, _ := e["resource_id"].(string)
	approvedVA := vaOpenID(t, api, key, platformID, "biz_oa_approved")
	approvedID := kt2SubmitID(t, api, key, approvedVA, kt2EINFor("6789"))
	liveID := kt2SubmitID(t, api, liveKey, vaOpenID(t, api, liveKey, platformID, "biz_oa_live"), kt2EINFor("6789"))
	kt2Decide(t, api)
	check("POST", p, kt2Submit(api, key, kt2Submission(approvedVA, kt2EINFor("6789"))), 409, "kyb_already_approved")

	// GET /kyb/{id}, in every state.
	p = "/kyb/{id}"
	for _, x := range []struct{ id, key string }{{id, key}, {screenedID, key}, {approvedID, key}, {liveID, liveKey}} {
		check("GET", p, api.do("GET", "/v1/kyb/"+x.id, x.key, nil), 200, "")
	}
	check("GET", p, api.do("GET", "/v1/kyb/"+id, otherKey, nil), 404, "not_found")
	check("GET", p, api.do("GET", "/v1/kyb/nope", key, nil), 404, "not_found")
	check("GET", p, api.do("GET", "/v1/kyb/"+id, "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1/kyb/"+id, operatorKey, nil), 403, "forbidden")

	// GET /kyb
	p = "/kyb"
	list := check("GET", p, api.do("GET", "/v1/kyb?limit=2", key, nil), 200, "")
	if len(oaArray(list["data"])) != 2 || list["has_more"] != true {
		t.Errorf("GET /kyb?limit=2: %v", list)
	}
	check("GET", p, api.do("GET", "/v1/kyb?status=rejected&virtual_account_id="+screenedVA, key, nil), 200, "")
	check("GET", p, api.do("GET", "/v1/kyb?status=nope", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/kyb", "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1/kyb", operatorKey, nil), 403, "forbidden")

	// POST /operator/kyb/{id}/decision
	p = "/operator/kyb/{id}/decision"
	op := func(k, id string, body any) response {
		return api.do("POST", "/v1/operator/kyb/"+id+"/decision", k, body)
	}
	check("POST", p, op(operatorKey, id, map[string]any{"outcome": "nope"}), 400, "invalid_request")
	check("POST", p, op(operatorKey, vaUnknown("kyb_"), map[string]any{"outcome": "approved"}), 404, "not_found")
	check("POST", p, op(key, id, map[string]any{"outcome": "approved"}), 403, "forbidden")
	check("POST", p, op("", id, map[string]any{"outcome": "approved"}), 401, "unauthorized")
	check("POST", p, op(operatorKey, id, huge), 413, "request_too_large")
	check("POST", p, op(operatorKey, approvedID, map[string]any{"outcome": "approved"}), 409, "invalid_state")
	check("POST", p, op(operatorKey, liveID, map[string]any{"outcome": "rejected", "reasons": []any{
		map[string]any{"code": "document_mismatch", "message": "m", "field": "business.legal_name"}}}), 200, "")

	// POST /simulations/kyb/{id}/decision
	p = "/simulations/kyb/{id}/decision"
	sim := func(k, id string, body any) response {
		return api.do("POST", "/v1/simulations/kyb/"+id+"/decision", k, body)
	}
	check("POST", p, sim(key, id, map[string]any{"outcome": "approved", "x": 1}), 400, "invalid_request")
	check("POST", p, sim(otherKey, id, map[string]any{"outcome": "approved"}), 404, "not_found")
	check("POST", p, sim(liveKey, id, map[string]any{"outcome": "approved"}), 403, "forbidden")
	check("POST", p, sim(operatorKey, id, map[string]any{"outcome": "approved"}), 403, "forbidden")
	check("POST", p, sim("", id, map[string]any{"outcome": "approved"}), 401, "unauthorized")
	check("POST", p, sim(key, id, huge), 413, "request_too_large")
	check("POST", p, sim(key, approvedID, map[string]any{"outcome": "approved"}), 409, "invalid_state")
	check("POST", p, sim(key, id, map[string]any{"outcome": "approved"}), 200, "")

	// The KYB events carry verifications as documented.
	api.sync()
	for _, k := range []string{key, liveKey} {
		r := api.do("GET", "/v1/events?limit=100", k, nil)
		events := oaCheck(t, doc, "GET", "/events", r)
		n := 0
		for i, ev := range oaArray(events["data"]) {
			ev := oaObj(ev)
			kt2Conforms(t, doc, "Event", ev, fmt.Sprintf("event %d", i))
			if typ, _ := ev["type"].(string); strings.HasPrefix(typ, "kyb.") {
				n++
				kt2Conforms(t, doc, "KYBVerification", oaObj(ev["data"])["object"], fmt.Sprintf("%s data.object", typ))
			}
		}
		if n == 0 {
			t.Errorf("no KYB events to check")
		}
	}

	// Every documented status was seen, but those this test cannot cause.
	for _, o := range kt2Ops {
		documented := oaObj(oaObj(oaObj(oaObj(doc["paths"])[o.path])[strings.ToLower(o.method)])["responses"])
		for status := range documented {
			n, _ := strconv.Atoi(status)
			if n == 429 || n >= 500 {
				continue
			}
			if !seen[o.method+" "+o.path][n] {
				t.Errorf("%s %s → %s is documented but this test did not see it", o.method, o.path, status)
			}
		}
		for n := range seen[o.method+" "+o.path] {
			if documented[strconv.Itoa(n)] == nil {
				t.Errorf("%s %s → %d is not documented", o.method, o.path, n)
			}
		}
	}
}
