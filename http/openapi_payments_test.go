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
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	apihttp "github.com/opentreasury/treasury/http"
	"github.com/opentreasury/treasury/projections/queries"
)

// The OpenAPI checks of openapi_test.go over the payment routes: the
// document's schemas, tables and bounds against the code, and real
// responses (every documented status this test can cause) against the
// schemas, deeply (kt2Validate). Helpers of this file start with "oap".

// oapOps are the payment operations: document path and method.
var oapOps = []struct{ method, path string }{
	{"POST", "/payments"},
	{"GET", "/payments"},
	{"GET", "/payments/{id}"},
	{"POST", "/payments/{id}/cancel"},
	{"POST", "/simulations/payments/{id}/complete"},
	{"POST", "/simulations/payments/{id}/fail"},
}

// oapRails are the four rails by API name.
var oapRails = map[string]rails.Rail{"ach_standard": rails.ACHStandard, "ach_same_day": rails.ACHSameDay,
	"rtp": rails.RTP, "fednow": rails.FedNow}

var oapSeq atomic.Int64

// oapKey is a fresh idempotency key.
func oapKey() string { return fmt.Sprintf("oap-%d-%d", time.Now().UnixNano(), oapSeq.Add(1)) }

// oapDest is a valid destination (021000021 passes the ABA checksum).
func oapDest(accountNumber string) map[string]any {
	return map[string]any{"account_number": accountNumber, "routing_number": "021000021", "name": "Initech LLC"}
}

// oapBody is a valid payment request with a fresh idempotency key.
func oapBody(accountID string, amount int64, rail, accountNumber string) map[string]any {
	return map[string]any{"virtual_account_id": accountID, "amount": amount, "rail": rail,
		"destination": oapDest(accountNumber), "idempotency_key": oapKey()}
}

// oapPay posts a payment request.
func oapPay(api *testAPI, key string, body any, headers ...string) response {
	return api.do("POST", "/v1/payments", key, body, headers...)
}

// oapPayID creates a payment and requires 201; it returns the payment.
func oapPayID(t testing.TB, api *testAPI, key, accountID string, amount int64, rail, accountNumber string) map[string]any {
	t.Helper()
	return vaRequire(t, oapPay(api, key, oapBody(accountID, amount, rail, accountNumber)), http.StatusCreated)
}

// oapApproved opens an account of entityRef, gets its business approved
// by the sandbox KYB decider and funds it over RTP.
func oapApproved(t testing.TB, api *testAPI, key, platformID, entityRef string, funds int64) string {
	t.Helper()
	va := vaOpenID(t, api, key, platformID, entityRef)
	kt2SubmitID(t, api, key, va, kt2EINFor("6789"))
	kt2Decide(t, api)
	if s := kt2VAStatus(t, api, key, va); s != "approved" {
		t.Fatalf("kyb_status %s after the decider, want approved", s)
	}
	if funds > 0 {
		vaCredit(t, api, key, va, funds)
	}
	return va
}

// oapOp is an operation of the document.
func oapOp(doc map[string]any, method, path string) map[string]any {
	return oaObj(oaObj(oaObj(doc["paths"])[path])[strings.ToLower(method)])
}

// oapAccepts reports whether the document's schema accepts v as the
// server would see it (decoded from JSON), with propertyNames too, which
// kt2Validate does not check.
func oapAccepts(t *testing.T, doc, schema map[string]any, v any) bool {
	t.Helper()
	var decoded any
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Fatal(err)
	}
	if len(kt2Validate(t, doc, schema, decoded, "", false)) > 0 {
		return false
	}
	resolved := oaResolve(t, doc, schema)
	if names := oaObj(resolved["propertyNames"]); names != nil {
		for k := range oaObj(decoded) {
			if len(kt2Validate(t, doc, names, k, "", false)) > 0 {
				return false
			}
		}
	}
	return true
}

// oapJSONFields lists the JSON names of a struct type's fields.
func oapJSONFields(typ reflect.Type) []string {
	var out []string
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// oapAdvice writes a retry recommendation as the document's tables do.
func oapAdvice(a rails.RetryAdvice) string {
	s := "`" + a.Action + "`"
	if a.SuggestedRail != "" {
		s += ", `suggested_rail` `" + a.SuggestedRail + "`"
	}
	if a.RetryAfterSeconds != 0 {
		s += fmt.Sprintf(", `retry_after` %d", a.RetryAfterSeconds)
	}
	return s
}

// oapFailureRow is a row of the PaymentFailure table.
type oapFailureRow struct{ code, rails, failureCode, advice string }

var oapFailureRowRE = regexp.MustCompile("^\\| `([A-Z0-9]+)` \\| (ACH|RTP, FedNow) \\| `([a-z_]+)` \\| (.+) \\|$")

func oapFailureTable(t *testing.T, doc map[string]any) []oapFailureRow {
	t.Helper()
	desc, _ := oaPointer(doc, "#/components/schemas/PaymentFailure")["description"].(string)
	var rows []oapFailureRow
	for _, line := range strings.Split(desc, "\n") {
		if m := oapFailureRowRE.FindStringSubmatch(line); m != nil {
			rows = append(rows, oapFailureRow{m[1], m[2], m[3], m[4]})
		}
	}
	if len(rows) == 0 {
		t.Fatal("PaymentFailure's description has no table of network codes")
	}
	return rows
}

// oapMagicRow is a row of the magic number table of POST /payments.
type oapMagicRow struct {
	number      string
	codes       map[string]string // rail → network code; "" settles
	failureCode string
	advice      string
}

var oapMagicRowRE = regexp.MustCompile("^\\| `([0-9]{10})` \\| (R[0-9]{2}|settles) \\| ([A-Z0-9]+) \\| ([A-Z0-9]+) \\| `([a-z_]+)` \\| (.+) \\|$")

func oapMagicTable(t *testing.T, doc map[string]any) []oapMagicRow {
	t.Helper()
	desc, _ := oapOp(doc, "POST", "/payments")["description"].(string)
	var rows []oapMagicRow
	for _, line := range strings.Split(desc, "\n") {
		m := oapMagicRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ach := m[2]
		if ach == "settles" {
			ach = ""
		}
		rows = append(rows, oapMagicRow{number: m[1], failureCode: m[5], advice: m[6], codes: map[string]string{
			"ach_standard": ach, "ach_same_day": ach, "rtp": m[3], "fednow": m[4]}})
	}
	if len(rows) == 0 {
		t.Fatal("POST /payments' description has no table of magic account numbers")
	}
	return rows
}

func TestOpenAPIPaymentsSchemasDocumented(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	doc := oaDocument(t, api)
	for _, name := range []string{"Payment", "PaymentList", "PaymentRequest", "PaymentFailure", "RetryRecommendation",
		"Destination", "SimulatePaymentFailRequest"} {
		if oaPointer(doc, "#/components/schemas/"+name) == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}
	// Request bodies are closed, as the decoder is.
	for _, name := range []string{"PaymentRequest", "Destination", "SimulatePaymentFailRequest"} {
		if s := oaPointer(doc, "#/components/schemas/"+name); s == nil || s["additionalProperties"] != false {
			t.Errorf("%s does not have additionalProperties: false", name)
		}
	}
	// The documented fields are exactly the Go types'.
	for component, typ := range map[string]reflect.Type{
		"Payment": reflect.TypeOf(queries.PaymentView{}), "Destination": reflect.TypeOf(payment.Destination{}),
		"PaymentFailure": reflect.TypeOf(rails.Failure{}), "RetryRecommendation": reflect.TypeOf(rails.RetryAdvice{}),
	} {
		var got []string
		for p := range oaFlatten(t, doc, oaComponent(component)).props {
			got = append(got, p)
		}
		sort.Strings(got)
		if want := oapJSONFields(typ); !slices.Equal(got, want) {
			t.Errorf("%s documents %v; the Go type %s has %v", component, got, typ, want)
		}
	}
	var reqFields []string
	for p := range oaFlatten(t, doc, oaComponent("PaymentRequest")).props {
		reqFields = append(reqFields, p)
	}
	sort.Strings(reqFields)
	if want := []string{"amount", "counterparty_id", "description", "destination", "idempotency_key", "metadata", "rail", "scheduled_for", "virtual_account_id"}; !slices.Equal(reqFields, want) {
		t.Errorf("PaymentRequest documents %v, API.md §5 and §12 have %v", reqFields, want)
	}

	// The rail limits and default fees.
	amount := kt2Prop(t, doc, "PaymentRequest", "amount")
	var maxAmount int64
	for name, r := range oapRails {
		maxAmount = max(maxAmount, rails.MaxAmount(r))
		if d, _ := amount["description"].(string); !strings.Contains(d, fmt.Sprintf("`%s`", name)) || !strings.Contains(d, strconv.FormatInt(rails.MaxAmount(r), 10)) {
			t.Errorf("PaymentRequest.amount's description does not give the %s limit %d", name, rails.MaxAmount(r))
		}
		fee := fmt.Sprintf("`%s` %d", name, rails.DefaultFee(r))
		if d, _ := oapOp(doc, "POST", "/payments")["description"].(string); !strings.Contains(d, fee) {
			t.Errorf("POST /payments' description does not give the default fee %s", fee)
		}
	}
	if amount["minimum"] != 1.0 || amount["maximum"] != float64(maxAmount) {
		t.Errorf("PaymentRequest.amount is %v to %v, the code takes 1 to %d", amount["minimum"], amount["maximum"], maxAmount)
	}

	// The failure table is the code's, and complete.
	rows := oapFailureTable(t, doc)
	documented := map[string]bool{}
	codes := map[string]bool{"unknown": true}
	for _, c := range payment.RuleFailureCodes() { // a scheduled payment refused on its date
		codes[c] = true
	}
	for _, row := range rows {
		r := rails.RTP
		if row.rails == "ACH" {
			r = rails.ACHStandard
		}
		documented[row.rails+" "+row.code] = true
		codes[row.failureCode] = true
		if !rails.KnownNetworkCode(r, row.code) {
			t.Errorf("PaymentFailure documents %s for %s; the code does not know it", row.code, row.rails)
			continue
		}
		f := rails.FailureFor(r, row.code)
		if f.Code != row.failureCode || oapAdvice(f.Advice) != row.advice {
			t.Errorf("PaymentFailure documents %s (%s) as %s, %s; the code says %s, %s", row.code, row.rails,
				row.failureCode, row.advice, f.Code, oapAdvice(f.Advice))
		}
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var candidates func(prefix string, n int, yield func(string))
	candidates = func(prefix string, n int, yield func(string)) {
		if n == 0 {
			yield(prefix)
			return
		}
		for i := 0; i < len(alphabet); i++ {
			candidates(prefix+alphabet[i:i+1], n-1, yield)
		}
	}
	for _, n := range []int{2, 3, 4} {
		candidates("", n, func(c string) {
			if rails.KnownNetworkCode(rails.ACHStandard, c) && !documented["ACH "+c] {
				t.Errorf("the ACH code %s is not in PaymentFailure's table", c)
			}
			if rails.KnownNetworkCode(rails.RTP, c) && !documented["RTP, FedNow "+c] {
				t.Errorf("the RTP/FedNow code %s is not in PaymentFailure's table", c)
			}
		})
	}
	var enum []string
	for _, c := range oaArray(kt2Prop(t, doc, "PaymentFailure", "code")["enum"]) {
		enum = append(enum, c.(string))
		if !codes[c.(string)] {
			t.Errorf("PaymentFailure.code enum has %v, which no network code gives", c)
		}
	}
	for c := range codes {
		if !slices.Contains(enum, c) {
			t.Errorf("PaymentFailure.code enum lacks %s", c)
		}
	}
	if u := rails.FailureFor(rails.ACHStandard, "R99"); u.Code != "unknown" || u.Advice.Action != rails.ActionContactRecipient {
		t.Errorf("an unknown code is %+v; PaymentFailure documents unknown with contact_recipient", u)
	}
	if p, _ := kt2Prop(t, doc, "SimulatePaymentFailRequest", "network_code")["pattern"].(string); p != "^[A-Z0-9]{2,8}$" {
		t.Errorf("SimulatePaymentFailRequest.network_code pattern %q, the handler's is ^[A-Z0-9]{2,8}$", p)
	}

	// The magic numbers are the sandbox rail's; API.md §5 lists six.
	magic := oapMagicTable(t, doc)
	if len(magic) != 6 {
		t.Errorf("the magic number table has %d rows, API.md §5 has 6", len(magic))
	}
	for _, row := range magic {
		for name, r := range oapRails {
			want := row.codes[name]
			if got := rails.SandboxOutcome(r, row.number); got != want {
				t.Errorf("%s on %s: the document says %q, the sandbox rail does %q", row.number, name, want, got)
			}
			if want == "" {
				continue
			}
			f := rails.FailureFor(r, want)
			if f.Code != row.failureCode || oapAdvice(f.Advice) != row.advice {
				t.Errorf("%s on %s: the document says %s, %s; the code %s, %s", row.number, name, row.failureCode, row.advice,
					f.Code, oapAdvice(f.Advice))
			}
		}
	}
	if rails.SandboxOutcome(rails.RTP, "123456789") != "" {
		t.Errorf("an ordinary account number fails in the sandbox")
	}

	// The decisions and events are described.
	desc, _ := oaPointer(doc, "#/components/schemas/Event")["description"].(string)
	for _, typ := range []string{"payment.created", "payment.submitted", "payment.completed", "payment.failed", "payment.canceled",
		"payment.requires_approval", "payment.approved", "payment.denied"} {
		if !strings.Contains(desc, typ) {
			t.Errorf("the Event description does not describe %s", typ)
		}
	}
	if strings.Contains(desc, "The other types are reserved") {
		t.Errorf("the Event description still calls the payment types reserved")
	}
	create, _ := oapOp(doc, "POST", "/payments")["description"].(string)
	for _, s := range []string{"account_not_active", "kyb_not_approved", "compliance_rejected", "limit_exceeded", "insufficient_funds",
		"OFAC TEST", "fee_schedule", "rail_clearing_<rail>", "service_fee_revenue", "payment_reversal", "archived",
		"expected_settlement_at", "10:30, 14:45 or 16:45 ET", "08:30 ET", "auto_settle", "1 s", "UTC day",
		"payment_approval_threshold", "requires_approval", "approval_expired", "POST /payments/{id}/approve", "TREASURY_ACH_OUTBOX", "trace_number", "GET /readyz", "Idempotent-Replayed", "idempotency_conflict"} {
		if !strings.Contains(create, s) {
			t.Errorf("POST /payments' description does not mention %s", s)
		}
	}
	// The rules are listed in the order the code applies them.
	last := -1
	for _, code := range []string{"`account_not_active`", "`kyb_not_approved`", "`compliance_rejected`", "`limit_exceeded`", "`insufficient_funds`"} {
		i := strings.Index(create, code)
		if i < last {
			t.Errorf("POST /payments' description lists %s out of the code's order", code)
		}
		last = i
	}
	for _, field := range []string{"payment_approval_threshold", "daily_payment_limit"} {
		d, _ := kt2Prop(t, doc, "PlatformSettings", field)["description"].(string)
		if field == "payment_approval_threshold" && !strings.Contains(d, "requires_approval") {
			t.Errorf("PlatformSettings.%s does not say what it does: %s", field, d)
		}
		if field == "daily_payment_limit" && !strings.Contains(d, "UTC day") {
			t.Errorf("PlatformSettings.%s does not say which day counts: %s", field, d)
		}
	}
	if !slices.Contains(oaArray(kt2Prop(t, doc, "Source", "type")["enum"]), any("payment")) {
		t.Errorf("Source.type does not list payment")
	}
	for _, op := range oapOps {
		o := oapOp(doc, op.method, op.path)
		if o == nil {
			t.Errorf("%s %s is not documented", op.method, op.path)
			continue
		}
		if d, _ := o["description"].(string); len(d) < 40 {
			t.Errorf("%s %s has no real description", op.method, op.path)
		}
	}
}

// TestOpenAPIPaymentsExamples: the document's examples fit its schemas,
// the server accepts the request examples, and the error examples have
// the codes of their statuses (API.md §2) and are named in their
// response's description.
func TestOpenAPIPaymentsExamples(t *testing.T) {
	api, platformID, key := vaAPI(t)
	doc := oaDocument(t, api)
	examples := func(name string) []any {
		ex := oaArray(oaPointer(doc, "#/components/schemas/"+name)["examples"])
		if len(ex) == 0 {
			t.Errorf("%s has no example", name)
		}
		return ex
	}
	for _, name := range []string{"PaymentRequest", "Payment", "Destination", "PaymentFailure", "RetryRecommendation", "SimulatePaymentFailRequest"} {
		for i, ex := range examples(name) {
			kt2Conforms(t, doc, name, ex, fmt.Sprintf("%s example %d", name, i))
		}
	}
	va := oapApproved(t, api, key, platformID, "biz_oap_examples", 10_000_000)
	for i, ex := range examples("PaymentRequest") {
		body := oaObj(ex)
		body["virtual_account_id"] = va
		if r := oapPay(api, key, body); r.Status != http.StatusCreated {
			t.Errorf("PaymentRequest example %d is refused: %d %s", i, r.Status, r.Body)
		}
	}
	for i, ex := range examples("SimulatePaymentFailRequest") {
		rail := "rtp"
		if rails.KnownNetworkCode(rails.ACHStandard, fmt.Sprint(oaObj(ex)["network_code"])) {
			rail = "ach_standard"
		}
		id := oapPayID(t, api, key, va, 100, rail, "123456789")["id"].(string)
		if r := api.do("POST", "/v1/simulations/payments/"+id+"/fail", key, ex); r.Status != http.StatusOK {
			t.Errorf("SimulatePaymentFailRequest example %d is refused: %d %s", i, r.Status, r.Body)
		}
	}

	codes := map[string][]string{"400": {"invalid_request", "amount_exceeds_rail_limit"}, "401": {"unauthorized"},
		"403": {"forbidden"}, "404": {"not_found"},
		"409": {"idempotency_conflict", "idempotency_in_progress", "payment_not_cancelable", "invalid_state"},
		"413": {"request_too_large"},
		"422": {"account_not_active", "kyb_not_approved", "compliance_rejected", "limit_exceeded", "insufficient_funds", "counterparty_not_verified"},
		"429": {"rate_limited"}, "500": {"internal_error"}, "503": {"unavailable"}}
	withResource := map[string]bool{"idempotency_conflict": true, "account_not_active": true, "kyb_not_approved": true,
		"limit_exceeded": true, "insufficient_funds": true, "counterparty_not_verified": true}
	for _, op := range oapOps {
		for status, res := range oaObj(oapOp(doc, op.method, op.path)["responses"]) {
			res := oaResolve(t, doc, oaObj(res))
			if len(status) != 3 || status[0] < '4' {
				continue
			}
			media := oaObj(oaObj(res["content"])["application/json"])
			if oaObj(media["schema"])["$ref"] != "#/components/schemas/Error" {
				t.Errorf("%s %s → %s: the schema is not Error", op.method, op.path, status)
			}
			if len(oaObj(media["examples"])) == 0 {
				t.Errorf("%s %s → %s: no examples", op.method, op.path, status)
			}
			desc, _ := res["description"].(string)
			for name, ex := range oaObj(media["examples"]) {
				value := oaObj(oaObj(ex)["value"])
				label := fmt.Sprintf("%s %s → %s example %s", op.method, op.path, status, name)
				kt2Conforms(t, doc, "Error", value, label)
				code := fmt.Sprint(value["code"])
				if !slices.Contains(codes[status], code) {
					t.Errorf("%s: code %s does not go with %s", label, code, status)
				}
				if !strings.Contains(desc, "`"+code+"`") {
					t.Errorf("%s: the response's description does not name %s", label, code)
				}
				if code == "invalid_request" && value["param"] == nil {
					t.Errorf("%s: invalid_request without param", label)
				}
				if withResource[code] && value["resource_id"] == nil {
					t.Errorf("%s: %s without resource_id", label, code)
				}
			}
		}
	}
}

// TestOpenAPIPaymentsRequestFieldsAccepted sends every documented request
// field, alone, and checks the server does not refuse it as unknown.
func TestOpenAPIPaymentsRequestFieldsAccepted(t *testing.T) {
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
	check := func(label, path string, body map[string]any) {
		t.Helper()
		r := api.do("POST", path, key, body)
		if msg, _ := r.JSON()["message"].(string); r.Status == http.StatusBadRequest && strings.HasPrefix(msg, "unknown field") {
			t.Errorf("%s: a documented field is refused: %s", label, r.Body)
		}
	}
	for _, p := range props("PaymentRequest") {
		check("PaymentRequest."+p, "/v1/payments", map[string]any{p: nil})
	}
	for _, p := range props("Destination") {
		check("Destination."+p, "/v1/payments", map[string]any{"destination": map[string]any{p: nil}})
	}
	for _, p := range props("SimulatePaymentFailRequest") {
		check("SimulatePaymentFailRequest."+p, "/v1/simulations/payments/"+vaUnknown("pay_")+"/fail", map[string]any{p: nil})
	}
	// And an undocumented one is refused, nested too.
	for _, body := range []map[string]any{{"iban": "x"}, {"destination": map[string]any{"iban": "x"}}} {
		if r := api.do("POST", "/v1/payments", key, body); r.Status != http.StatusBadRequest {
			t.Errorf("an unknown field is accepted: %v → %d %s", body, r.Status, r.Body)
		}
	}
}

// TestOpenAPIPaymentsBoundsMatchCode checks the documented bounds against
// the server, value by value: for each value the document's schema
// accepts or refuses, the server must do the same. Nothing is recorded:
// the payments come from a frozen account, so a valid request gets 422
// account_not_active (which comes after every 400) and an invalid one 400
// naming its field.
func TestOpenAPIPaymentsBoundsMatchCode(t *testing.T) {
	api, platformID, key := vaAPI(t)
	doc := oaDocument(t, api)
	frozen := vaOpenID(t, api, key, platformID, "biz_oap_bounds")
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+frozen+"/freeze", key, nil), http.StatusOK)
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	meta := func(keys, keyLen, valueLen int) map[string]string {
		m := map[string]string{}
		for i := 0; i < keys; i++ {
			k := fmt.Sprintf("k%0*d", keyLen-1, i)
			m[k] = long("v", valueLen)
		}
		return m
	}
	// outcome sends a request and says whether the server accepts it; a
	// refusal must name param (or a field under it).
	outcome := func(label, param string, body map[string]any, headers ...string) bool {
		t.Helper()
		r := oapPay(api, key, body, headers...)
		if r.Status == http.StatusUnprocessableEntity && r.Str("code") == "account_not_active" {
			return true
		}
		if r.Status != http.StatusBadRequest || (r.Str("param") != param && !strings.HasPrefix(r.Str("param"), param+".")) {
			t.Errorf("%s: %d %s, want 422 account_not_active or 400 on %s", label, r.Status, r.Body, param)
		}
		return false
	}
	type fieldCase struct {
		component, field, param string
		set                     func(body map[string]any, v any)
		values                  []any
		// extraRefused: refused by a rule the schema states in words only.
		extraRefused []any
	}
	top := func(field string) func(map[string]any, any) {
		return func(b map[string]any, v any) { b[field] = v }
	}
	dest := func(field string) func(map[string]any, any) {
		return func(b map[string]any, v any) { b["destination"].(map[string]any)[field] = v }
	}
	cases := []fieldCase{
		{"PaymentRequest", "rail", "rail", top("rail"), []any{"ach_standard", "ach_same_day", "rtp", "fednow", "ACH_STANDARD", "wire", "", 1}, nil},
		{"Destination", "routing_number", "destination.routing_number", dest("routing_number"),
			[]any{"021000021", "110000000", "02100002", "0210000210", "02100002a", "", " 21000021"}, []any{"021000022", "123456789"}},
		{"Destination", "account_number", "destination.account_number", dest("account_number"),
			[]any{"1234", "12345678901234567", "123", "123456789012345678", "12a4", "", " 1234", "１２３４", "4000000002"}, nil},
		{"Destination", "name", "destination.name", dest("name"),
			[]any{"A", long("a", 80), long("a", 81), "", long("é", 80), long("é", 81), 7}, []any{"   ", "\t"}},
		{"PaymentRequest", "description", "description", top("description"),
			[]any{"", "Invoice 1", long("a", 140), long("a", 141), long("é", 140), long("é", 141)}, nil},
		{"PaymentRequest", "metadata", "metadata", top("metadata"),
			[]any{map[string]string{}, meta(50, 3, 1), meta(51, 3, 1), meta(1, 40, 1), meta(1, 41, 1), meta(1, 3, 500),
				meta(1, 3, 501), map[string]string{"": "x"}, map[string]any{"a": 1}}, nil},
		{"PaymentRequest", "idempotency_key", "idempotency_key", top("idempotency_key"),
			[]any{"k", "a b", long("k", 255), long("k", 256), " k", "k ", 5}, nil},
	}
	for _, c := range cases {
		schema := kt2Prop(t, doc, c.component, c.field)
		for _, v := range append(slices.Clone(c.values), c.extraRefused...) {
			body := oapBody(frozen, 100, "ach_standard", "123456789")
			c.set(body, v)
			label := fmt.Sprintf("%s = %q", c.param, v)
			server := outcome(label, c.param, body)
			docOK := oapAccepts(t, doc, schema, v) && !slices.Contains(c.extraRefused, v)
			if server != docOK {
				t.Errorf("%s: the server accepts it: %v; the document: %v", label, server, docOK)
			}
		}
	}

	// amount, by rail: the schema's bounds, plus each rail's limit in words
	// (400 amount_exceeds_rail_limit).
	schema := kt2Prop(t, doc, "PaymentRequest", "amount")
	for name, rail := range oapRails {
		limit := rails.MaxAmount(rail)
		for _, v := range []any{1, 0, -5, 1.5, "100", limit, limit + 1, int64(9_999_999_999), int64(10_000_000_000), nil} {
			body := oapBody(frozen, 0, name, "123456789")
			body["amount"] = v
			label := fmt.Sprintf("%s amount = %v", name, v)
			res := oapPay(api, key, body)
			server := res.Status == http.StatusUnprocessableEntity && res.Str("code") == "account_not_active"
			if !server && (res.Status != http.StatusBadRequest || res.Str("param") != "amount") {
				t.Errorf("%s: %d %s", label, res.Status, res.Body)
			}
			n, isInt := v.(int64)
			if i, ok := v.(int); ok {
				n, isInt = int64(i), true
			}
			overLimit := isInt && n > limit
			if overLimit && res.Str("code") != "amount_exceeds_rail_limit" {
				t.Errorf("%s: code %s, want amount_exceeds_rail_limit", label, res.Str("code"))
			}
			if docOK := oapAccepts(t, doc, schema, v) && !overLimit; server != docOK {
				t.Errorf("%s: the server accepts it: %v; the document: %v", label, server, docOK)
			}
		}
	}

	// The key: required in the body or the header; both must be equal.
	header := kt2Prop(t, doc, "PaymentRequest", "idempotency_key")
	for _, c := range []struct {
		label, body, header string
		ok                  bool
	}{
		{"neither", "", "", false},
		{"header only", "", "h-1", true},
		{"both equal", "k-1", "k-1", true},
		{"both different", "k-1", "k-2", false},
		{"header of 255", "", long("h", 255), true},
		{"header of 256", "", long("h", 256), false},
	} {
		body := oapBody(frozen, 100, "rtp", "123456789")
		delete(body, "idempotency_key")
		if c.body != "" {
			body["idempotency_key"] = c.body
		}
		var headers []string
		if c.header != "" {
			headers = []string{"Idempotency-Key", c.header}
			if docOK := oapAccepts(t, doc, header, c.header); docOK != (len(c.header) <= 255) {
				t.Errorf("Idempotency-Key of %d bytes: the document accepts it: %v", len(c.header), docOK)
			}
		}
		if got := outcome(c.label, "idempotency_key", body, headers...); got != c.ok {
			t.Errorf("idempotency key %s: accepted %v, want %v", c.label, got, c.ok)
		}
	}

	// The fail simulation's network_code, on a canceled payment of each
	// rail: a valid code gets 409 invalid_state, an invalid one 400. The
	// schema gives the form; the rail's table (in words) the rest.
	va := oapApproved(t, api, key, platformID, "biz_oap_bounds_fail", 10_000)
	failSchema := kt2Prop(t, doc, "SimulatePaymentFailRequest", "network_code")
	for name, rail := range oapRails {
		canceled := oapPayID(t, api, key, va, 100, name, "123456789")["id"].(string)
		vaRequire(t, api.do("POST", "/v1/payments/"+canceled+"/cancel", key, nil), http.StatusOK)
		for _, v := range []any{"R02", "R29", "AC04", "9912", "E997", "CUST", "AB", "ABCDEFGH", "A", "ABCDEFGHI", "r02", "R-02", "", " R02", 2} {
			r := api.do("POST", "/v1/simulations/payments/"+canceled+"/fail", key, map[string]any{"network_code": v})
			server := r.Status == http.StatusConflict && r.Str("code") == "invalid_state"
			if !server && (r.Status != http.StatusBadRequest || r.Str("param") != "network_code") {
				t.Errorf("%s network_code = %q: %d %s", name, v, r.Status, r.Body)
			}
			code, _ := v.(string)
			if docOK := oapAccepts(t, doc, failSchema, v) && rails.KnownNetworkCode(rail, code); server != docOK {
				t.Errorf("%s network_code = %q: the server accepts it: %v; the document: %v", name, v, server, docOK)
			}
		}
	}
	if items := vaData(t, vaGet(t, api, key, "/v1/payments?virtual_account_id="+frozen)); len(items) != 0 {
		t.Errorf("the bounds checks recorded %d payments", len(items))
	}
}

// oapChecker checks responses against the document and records which
// statuses of which operations it saw.
type oapChecker struct {
	t    *testing.T
	doc  map[string]any
	seen map[string]map[int]bool
}

func (c *oapChecker) check(method, path string, r response, status int, code string) map[string]any {
	c.t.Helper()
	if r.Status != status || (code != "" && r.Str("code") != code) {
		c.t.Fatalf("%s %s: %d %s, want %d %s", method, path, r.Status, r.Body, status, code)
	}
	body := oaCheck(c.t, c.doc, method, path, r)
	op := method + " " + path
	if c.seen[op] == nil {
		c.seen[op] = map[int]bool{}
	}
	c.seen[op][status] = true
	res := oaResolve(c.t, c.doc, oaObj(oaObj(oapOp(c.doc, method, path)["responses"])[strconv.Itoa(r.Status)]))
	schema := oaObj(oaObj(oaObj(res["content"])["application/json"])["schema"])
	for _, e := range kt2Validate(c.t, c.doc, schema, body, fmt.Sprintf("%s %s → %d", method, path, r.Status), true) {
		c.t.Error(e)
	}
	return body
}

func TestOpenAPIPaymentsResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	_, otherKey := api.newPlatform("Globex")
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	check := c.check
	huge := strings.Repeat(" ", apihttp.MaxBodyBytes+1)
	const funds = 10_000_000

	va := oapApproved(t, api, key, platformID, "biz_oap", funds)
	unfunded := vaOpenID(t, api, key, platformID, "biz_oap") // same business: approved
	frozen := vaOpenID(t, api, key, platformID, "biz_oap")
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+frozen+"/freeze", key, nil), http.StatusOK)
	unverified := vaOpenID(t, api, key, platformID, "biz_oap_unverified")

	// POST /payments
	p := "/payments"
	body := oapBody(va, 1_000, "rtp", "123456789")
	body["description"], body["metadata"] = "Invoice 7", map[string]string{"invoice": "7"}
	pay := check("POST", p, oapPay(api, key, body), 201, "")
	rtpID := pay["id"].(string)
	if pay["status"] != "pending" || pay["fee"] != 50.0 || pay["idempotency_key"] != body["idempotency_key"] {
		t.Errorf("a new RTP payment: %v", pay)
	}
	if !kt2Time(t, pay["expected_settlement_at"]).Equal(kt2Time(t, pay["created_at"])) {
		t.Errorf("a sandbox RTP payment settles at %v, created %v: want at once", pay["expected_settlement_at"], pay["created_at"])
	}
	// A replay, with the key in the header instead of the body.
	replay := map[string]any{}
	for k, v := range body {
		replay[k] = v
	}
	delete(replay, "idempotency_key")
	r := oapPay(api, key, replay, "Idempotency-Key", body["idempotency_key"].(string))
	if check("POST", p, r, 200, "")["id"] != rtpID || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %v %s", r.Header, r.Body)
	}
	replay["amount"] = 1_001
	e := check("POST", p, oapPay(api, key, replay, "Idempotency-Key", body["idempotency_key"].(string)), 409, "idempotency_conflict")
	if e["resource_id"] != rtpID {
		t.Errorf("idempotency_conflict names %v, want %s", e["resource_id"], rtpID)
	}
	ach := check("POST", p, oapPay(api, key, oapBody(va, 2_000, "ach_standard", "123456789")), 201, "")
	achID := ach["id"].(string)
	if got, want := kt2Time(t, ach["expected_settlement_at"]).Sub(kt2Time(t, ach["created_at"])), 15*time.Second; got != want {
		t.Errorf("a sandbox standard ACH payment settles %v after its creation, want %v (the default delay)", got, want)
	}
	sameDayID := check("POST", p, oapPay(api, key, oapBody(va, 3_000, "ach_same_day", "123456789")), 201, "")["id"].(string)
	fednowID := check("POST", p, oapPay(api, key, oapBody(va, 4_000, "fednow", "123456789")), 201, "")["id"].(string)
	laterID := check("POST", p, oapPay(api, key, oapBody(va, 5_000, "rtp", "123456789")), 201, "")["id"].(string)
	r01ID := check("POST", p, oapPay(api, key, oapBody(va, 6_000, "ach_standard", "123456789")), 201, "")["id"].(string)
	returnID := check("POST", p, oapPay(api, key, oapBody(va, 7_000, "ach_standard", "123456789")), 201, "")["id"].(string)

	withField := oapBody(va, 1, "rtp", "123456789")
	withField["destination"].(map[string]any)["iban"] = "x"
	noKey := oapBody(va, 1, "rtp", "123456789")
	delete(noKey, "idempotency_key")
	ofac := oapBody(va, 1, "rtp", "123456789")
	ofac["destination"].(map[string]any)["name"] = "Ofac Test Holdings"
	for _, x := range []struct {
		key     string
		body    any
		headers []string
		status  int
		code    string
	}{
		{key, withField, nil, 400, "invalid_request"},
		{key, oapBody(va, 1, "wire", "123456789"), nil, 400, "invalid_request"},
		{key, noKey, nil, 400, "invalid_request"},
		{key, oapBody(va, 1, "rtp", "123456789"), []string{"Idempotency-Key", "other"}, 400, "invalid_request"},
		{key, oapBody(va, 100_000_001, "ach_same_day", "123456789"), nil, 400, "amount_exceeds_rail_limit"},
		{"", oapBody(va, 1, "rtp", "123456789"), nil, 401, "unauthorized"},
		{operatorKey, oapBody(va, 1, "rtp", "123456789"), nil, 403, "forbidden"},
		{key, oapBody(vaUnknown("va_"), 1, "rtp", "123456789"), nil, 404, "not_found"},
		{otherKey, oapBody(va, 1, "rtp", "123456789"), nil, 404, "not_found"},
		{liveKey, oapBody(va, 1, "rtp", "123456789"), nil, 404, "not_found"},
		{key, huge, nil, 413, "request_too_large"},
		{key, oapBody(frozen, 1, "rtp", "123456789"), nil, 422, "account_not_active"},
		{key, oapBody(unverified, 1, "rtp", "123456789"), nil, 422, "kyb_not_approved"},
		{key, ofac, nil, 422, "compliance_rejected"},
		{key, oapBody(unfunded, 1, "rtp", "123456789"), nil, 422, "insufficient_funds"},
	} {
		e := check("POST", p, oapPay(api, x.key, x.body, x.headers...), x.status, x.code)
		for _, id := range []string{frozen, unverified, unfunded} {
			if strings.Contains(fmt.Sprint(x.body), id) && e["resource_id"] != id {
				t.Errorf("%s: resource_id %v, want the account %s", x.code, e["resource_id"], id)
			}
		}
	}

	// Payments moving: cancel, complete, fail (pending, then completed:
	// a return), and the refusals.
	p = "/payments/{id}/cancel"
	cancel := func(k, id string, body any) response { return api.do("POST", "/v1/payments/"+id+"/cancel", k, body) }
	v := check("POST", p, cancel(key, achID, nil), 200, "")
	if v["status"] != "canceled" || v["canceled_at"] == nil {
		t.Errorf("a canceled payment: %v", v)
	}
	check("POST", p, cancel(key, achID, "{}"), 409, "payment_not_cancelable")
	check("POST", p, cancel(key, rtpID, map[string]any{"reason": "x"}), 400, "invalid_request")
	check("POST", p, cancel(key, vaUnknown("pay_"), nil), 404, "not_found")
	check("POST", p, cancel(otherKey, rtpID, nil), 404, "not_found")
	check("POST", p, cancel("", rtpID, nil), 401, "unauthorized")
	check("POST", p, cancel(operatorKey, rtpID, nil), 403, "forbidden")
	check("POST", p, cancel(key, rtpID, huge), 413, "request_too_large")

	p = "/simulations/payments/{id}/complete"
	complete := func(k, id string, body any) response {
		return api.do("POST", "/v1/simulations/payments/"+id+"/complete", k, body)
	}
	v = check("POST", p, complete(key, rtpID, nil), 200, "")
	if v["status"] != "completed" || v["submitted_at"] == nil || v["completed_at"] == nil {
		t.Errorf("a completed payment: %v", v)
	}
	check("POST", p, complete(key, rtpID, nil), 200, "")
	check("POST", p, complete(key, sameDayID, nil), 200, "")
	check("POST", p, complete(key, returnID, nil), 200, "")
	check("POST", p, complete(key, achID, nil), 409, "invalid_state")
	check("POST", p, complete(key, fednowID, map[string]any{"at": "now"}), 400, "invalid_request")
	check("POST", p, complete(key, vaUnknown("pay_"), nil), 404, "not_found")
	check("POST", p, complete(otherKey, fednowID, nil), 404, "not_found")
	check("POST", p, complete(liveKey, fednowID, nil), 403, "forbidden")
	check("POST", p, complete(operatorKey, fednowID, nil), 403, "forbidden")
	check("POST", p, complete("", fednowID, nil), 401, "unauthorized")
	check("POST", p, complete(key, fednowID, huge), 413, "request_too_large")
	check("POST", "/payments/{id}/cancel", cancel(key, rtpID, nil), 409, "payment_not_cancelable")

	p = "/simulations/payments/{id}/fail"
	fail := func(k, id string, body any) response {
		return api.do("POST", "/v1/simulations/payments/"+id+"/fail", k, body)
	}
	failure := func(v map[string]any, code, networkCode, action string) {
		t.Helper()
		f := oaObj(v["failure"])
		kt2Conforms(t, doc, "PaymentFailure", f, "failure")
		kt2Conforms(t, doc, "RetryRecommendation", f["retry_recommendation"], "failure.retry_recommendation")
		if v["status"] != "failed" || v["failed_at"] == nil || f["code"] != code || f["network_code"] != networkCode ||
			oaObj(f["retry_recommendation"])["action"] != action {
			t.Errorf("failed payment: %v, want %s %s %s", v, code, networkCode, action)
		}
	}
	failure(check("POST", p, fail(key, fednowID, map[string]any{"network_code": "AC04"}), 200, ""), "account_closed", "AC04", "update_destination")
	failure(check("POST", p, fail(key, fednowID, map[string]any{"network_code": "AC06"}), 200, ""), "account_closed", "AC04", "update_destination")
	v = check("POST", p, fail(key, laterID, map[string]any{"network_code": "9912"}), 200, "")
	failure(v, "network_unavailable", "9912", "retry_other_rail")
	if rec := oaObj(oaObj(v["failure"])["retry_recommendation"]); rec["suggested_rail"] != "ach_same_day" {
		t.Errorf("9912: %v", v)
	}
	v = check("POST", p, fail(key, returnID, map[string]any{"network_code": "R16"}), 200, "") // a return
	failure(v, "account_frozen", "R16", "contact_recipient")
	if v["completed_at"] == nil {
		t.Errorf("a returned payment lost its completed_at: %v", v)
	}
	check("POST", p, fail(key, returnID, map[string]any{"network_code": "R02"}), 200, "")
	check("POST", p, fail(key, rtpID, map[string]any{"network_code": "9912"}), 409, "invalid_state") // instant: final
	failure(check("POST", p, fail(key, r01ID, map[string]any{"network_code": "R01"}), 200, ""), "insufficient_funds", "R01", "retry_later")
	if after := oaObj(oaObj(check("GET", "/payments/{id}", api.do("GET", "/v1/payments/"+r01ID, key, nil), 200, "")["failure"])["retry_recommendation"])["retry_after"]; after != 86400.0 {
		t.Errorf("R01 retry_after %v, want 86400", after)
	}
	check("POST", p, fail(key, sameDayID, map[string]any{"network_code": "AC04"}), 400, "invalid_request") // not an ACH code
	check("POST", p, fail(key, achID, map[string]any{"network_code": "R02"}), 409, "invalid_state")
	check("POST", p, fail(key, achID, map[string]any{"network_code": "r02"}), 400, "invalid_request")
	check("POST", p, fail(key, achID, map[string]any{"network_code": "R02", "reason": "x"}), 400, "invalid_request")
	check("POST", p, fail(key, vaUnknown("pay_"), map[string]any{"network_code": "R02"}), 404, "not_found")
	check("POST", p, fail(key, "pay_nope", map[string]any{"network_code": "r02"}), 404, "not_found")
	check("POST", p, fail(liveKey, rtpID, map[string]any{"network_code": "R02"}), 403, "forbidden")
	check("POST", p, fail(operatorKey, rtpID, map[string]any{"network_code": "R02"}), 403, "forbidden")
	check("POST", p, fail("", rtpID, map[string]any{"network_code": "R02"}), 401, "unauthorized")
	check("POST", p, fail(key, rtpID, huge), 413, "request_too_large")

	// The daily limit counts the UTC day's payments by amount, without
	// fees and without failed or canceled ones: the payments left are the
	// completed RTP (1000) and same-day ACH (3000); a limit of 4100 lets
	// 100 through, not 1 more.
	p = "/payments"
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{"daily_payment_limit": 4_100}), http.StatusOK)
	check("POST", p, oapPay(api, key, oapBody(va, 100, "rtp", "123456789")), 201, "")
	e = check("POST", p, oapPay(api, key, oapBody(va, 1, "rtp", "123456789")), 422, "limit_exceeded")
	if e["resource_id"] != va {
		t.Errorf("limit_exceeded names %v, want %s", e["resource_id"], va)
	}
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{"daily_payment_limit": nil}), http.StatusOK)

	// A live payment: pending, by the real calendar.
	liveVA := vaOpenID(t, api, liveKey, platformID, "biz_oap_live")
	liveKYB := kt2SubmitID(t, api, liveKey, liveVA, kt2EINFor("6789"))
	kt2Decide(t, api)
	vaRequire(t, api.do("POST", "/v1/operator/kyb/"+liveKYB+"/decision", operatorKey, map[string]any{"outcome": "approved"}), http.StatusOK)
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 100_000}), http.StatusCreated) // live money is funded first
	vaRequire(t, vaEntry(api, liveKey, map[string]any{"type": "adjustment", "description": "Opening funds",
		"virtual_account_id": liveVA, "direction": "credit", "amount": 100_000}), http.StatusCreated)
	livePayments := map[string]string{}
	for _, rail := range []string{"ach_same_day", "ach_standard", "rtp"} {
		v := check("POST", p, oapPay(api, liveKey, oapBody(liveVA, 1_000, rail, "4000000002")), 201, "")
		livePayments[rail] = v["id"].(string)
		want := rails.ExpectedSettlement(oapRails[rail], kt2Time(t, v["created_at"])).Truncate(time.Millisecond)
		if got := kt2Time(t, v["expected_settlement_at"]); !got.Equal(want) || v["environment"] != "live" {
			t.Errorf("live %s payment: expected_settlement_at %v, want %v by the calendar (%v)", rail, got, want, v)
		}
	}

	// GET /payments/{id}
	p = "/payments/{id}"
	for _, x := range []struct{ id, key string }{{rtpID, key}, {achID, key}, {fednowID, key}, {livePayments["rtp"], liveKey}} {
		check("GET", p, api.do("GET", "/v1/payments/"+x.id, x.key, nil), 200, "")
	}
	check("GET", p, api.do("GET", "/v1/payments/"+livePayments["rtp"], key, nil), 404, "not_found")
	check("GET", p, api.do("GET", "/v1/payments/"+rtpID, otherKey, nil), 404, "not_found")
	check("GET", p, api.do("GET", "/v1/payments/nope", key, nil), 404, "not_found")
	check("GET", p, api.do("GET", "/v1/payments/"+rtpID, "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1/payments/"+rtpID, operatorKey, nil), 403, "forbidden")
	check("POST", "/payments/{id}/cancel", cancel(liveKey, livePayments["ach_standard"], nil), 200, "")

	// GET /payments
	p = "/payments"
	list := check("GET", p, api.do("GET", "/v1/payments?limit=2", key, nil), 200, "")
	if len(oaArray(list["data"])) != 2 || list["has_more"] != true {
		t.Errorf("GET /payments?limit=2: %v", list)
	}
	list = check("GET", p, api.do("GET", "/v1/payments?status=failed&rail=ach_standard&virtual_account_id="+va+"&created_after=2020-01-01", key, nil), 200, "")
	if ids := vaIDs(t, list); !slices.Equal(ids, []string{returnID, r01ID}) {
		t.Errorf("failed standard ACH payments: %v, want %v", ids, []string{returnID, r01ID})
	}
	list = check("GET", p, api.do("GET", "/v1/payments?idempotency_key="+body["idempotency_key"].(string), key, nil), 200, "")
	if ids := vaIDs(t, list); !slices.Equal(ids, []string{rtpID}) {
		t.Errorf("by idempotency key: %v", ids)
	}
	check("GET", p, api.do("GET", "/v1/payments?status=nope", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/payments?rail=wire", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/payments?limit=0", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/payments?created_before=soon", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/payments", "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1/payments", operatorKey, nil), 403, "forbidden")

	// The money, as documented: held while pending or submitted, posted
	// once completed, given back when failed or canceled.
	var held, spent int64
	for _, item := range vaData(t, vaGet(t, api, key, "/v1/payments?limit=100&virtual_account_id="+va)) {
		total := vaInt(t, item["amount"]) + vaInt(t, item["fee"])
		switch item["status"] {
		case "pending", "submitted":
			held += total
		case "completed":
			spent += total
		}
	}
	if b := vaBalance(t, api, key, va); b["posted"] != funds-spent || b["pending_outbound"] != held || b["available"] != funds-spent-held {
		t.Errorf("balance %v; the payments hold %d and spent %d of %d", b, held, spent, funds)
	}

	// The transactions and ledger entries of payments, and their events.
	api.sync()
	txns := vaData(t, vaGet(t, api, key, "/v1/virtual-accounts/"+va+"/transactions?limit=100"))
	types := map[string]int{}
	for i, tx := range txns {
		src := oaObj(tx["source"])
		if src["type"] != "payment" {
			continue
		}
		kt2Conforms(t, doc, "Transaction", tx, fmt.Sprintf("transaction %d", i))
		if src["id"] == returnID {
			types[fmt.Sprint(tx["type"])]++
		}
	}
	if want := map[string]int{"payment": 1, "payment_fee": 1, "payment_reversal": 2}; !reflect.DeepEqual(types, want) {
		t.Errorf("the returned payment's transactions: %v, want %v", types, want)
	}
	for _, typ := range []string{"payment", "payment_fee", "payment_reversal"} {
		entries := vaData(t, vaGet(t, api, key, "/v1/ledger/entries?type="+typ))
		if len(entries) == 0 {
			t.Errorf("no %s ledger entries", typ)
		}
		for i, le := range entries {
			kt2Conforms(t, doc, "LedgerEntry", le, fmt.Sprintf("%s ledger entry %d", typ, i))
		}
	}
	// A payment's entry is undone by the payment only, and manual lines
	// stay off the accounts payments keep.
	var paymentJE string
	for _, le := range vaData(t, vaGet(t, api, key, "/v1/ledger/entries?type=payment&status=posted")) {
		paymentJE, _ = le["journal_entry_id"].(string)
	}
	r = vaEntry(api, key, map[string]any{"reverses": paymentJE})
	if oaCheck(t, doc, "POST", "/ledger/entries", r); r.Status != http.StatusConflict || r.Str("code") != "invalid_state" {
		t.Errorf("a manual reversal of a payment's entry: %d %s, want 409 invalid_state", r.Status, r.Body)
	}
	for _, la := range vaData(t, vaGet(t, api, key, "/v1/ledger/accounts?limit=100")) {
		if name := fmt.Sprint(la["name"]); name == "service_fee_revenue" || strings.HasPrefix(name, "rail_clearing_") {
			r = vaEntry(api, key, map[string]any{"type": "adjustment", "description": "x", "lines": []any{
				vaLine(va, "debit", 1), vaLine(la["id"].(string), "credit", 1)}})
			if oaCheck(t, doc, "POST", "/ledger/entries", r); r.Status != http.StatusBadRequest || r.Str("param") != "lines[1].ledger_account_id" {
				t.Errorf("a manual line on %s: %d %s, want 400 on lines[1].ledger_account_id", name, r.Status, r.Body)
			}
		}
	}

	status := map[string]string{"payment.created": "pending", "payment.submitted": "submitted",
		"payment.completed": "completed", "payment.failed": "failed", "payment.canceled": "canceled"}
	for typ, want := range status {
		for _, k := range []string{key, liveKey} {
			events := oaCheck(t, doc, "GET", "/events", api.do("GET", "/v1/events?limit=100&type="+typ, k, nil))
			for i, ev := range oaArray(events["data"]) {
				ev := oaObj(ev)
				kt2Conforms(t, doc, "Event", ev, fmt.Sprintf("%s %d", typ, i))
				obj := oaObj(oaObj(ev["data"])["object"])
				kt2Conforms(t, doc, "Payment", obj, fmt.Sprintf("%s %d data.object", typ, i))
				if obj["status"] != want {
					t.Errorf("%s data.object is %v, want %s (the payment at that event)", typ, obj["status"], want)
				}
			}
			if len(oaArray(events["data"])) == 0 && (k == key || typ == "payment.created" || typ == "payment.canceled") {
				t.Errorf("no %s event to check", typ)
			}
		}
	}

	// Every documented status was seen, but those this test cannot cause.
	for _, o := range oapOps {
		documented := oaObj(oapOp(doc, o.method, o.path)["responses"])
		for status := range documented {
			n, _ := strconv.Atoi(status)
			if n == 429 || n >= 500 {
				continue
			}
			if !c.seen[o.method+" "+o.path][n] {
				t.Errorf("%s %s → %s is documented but this test did not see it", o.method, o.path, status)
			}
		}
		for n := range c.seen[o.method+" "+o.path] {
			if documented[strconv.Itoa(n)] == nil {
				t.Errorf("%s %s → %d is not documented", o.method, o.path, n)
			}
		}
	}
}

// TestOpenAPIPaymentsSandboxAsDocumented drives the sandbox simulator over
// the document's magic number table, rail by rail, and checks what the
// document says of auto_settle.
func TestOpenAPIPaymentsSandboxAsDocumented(t *testing.T) {
	api, platformID, key := vaAPI(t)
	doc := oaDocument(t, api)
	va := oapApproved(t, api, key, platformID, "biz_oap_sandbox", 1_000_000)
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"ach_same_day_delay_seconds": 0, "ach_standard_delay_seconds": 0}}), http.StatusOK)

	type made struct {
		id, rail, networkCode string
		row                   oapMagicRow
	}
	var all []made
	actions := 0
	for _, row := range append(oapMagicTable(t, doc), oapMagicRow{number: "123456789", codes: map[string]string{}}) {
		for rail := range oapRails {
			v := oapPayID(t, api, key, va, 100, rail, row.number)
			all = append(all, made{v["id"].(string), rail, row.codes[rail], row})
			actions++ // settle
			if !rails.IsInstant(oapRails[rail]) {
				actions++ // submit
			}
		}
	}
	// A live payment, even to a magic number: no rail is connected, and
	// the sandbox simulator leaves it alone.
	liveKey := api.enableLive(platformID)
	liveVA := vaOpenID(t, api, liveKey, platformID, "biz_oap_sandbox_live")
	liveKYB := kt2SubmitID(t, api, liveKey, liveVA, kt2EINFor("6789"))
	kt2Decide(t, api)
	vaRequire(t, api.do("POST", "/v1/operator/kyb/"+liveKYB+"/decision", operatorKey, map[string]any{"outcome": "approved"}), http.StatusOK)
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 100_000}), http.StatusCreated) // live money is funded first
	vaRequire(t, vaEntry(api, liveKey, map[string]any{"type": "adjustment", "description": "Opening funds",
		"virtual_account_id": liveVA, "direction": "credit", "amount": 100_000}), http.StatusCreated)
	var live []string
	for rail := range oapRails {
		live = append(live, oapPayID(t, api, liveKey, liveVA, 100, rail, "4000000002")["id"].(string))
	}

	vaSettle(t, api, actions)
	for _, id := range live {
		if s := vaGet(t, api, liveKey, "/v1/payments/"+id)["status"]; s != "pending" {
			t.Errorf("a live payment is %v after the sandbox settled, want pending", s)
		}
	}
	for _, m := range all {
		v := vaGet(t, api, key, "/v1/payments/"+m.id)
		kt2Conforms(t, doc, "Payment", v, m.id)
		f := oaObj(v["failure"])
		if m.networkCode == "" {
			if v["status"] != "completed" {
				t.Errorf("%s to %s: %v, the document says it settles", m.rail, m.row.number, v["status"])
			}
			continue
		}
		if v["status"] != "failed" || f["network_code"] != m.networkCode || f["code"] != m.row.failureCode ||
			!strings.HasPrefix(m.row.advice, "`"+fmt.Sprint(oaObj(f["retry_recommendation"])["action"])+"`") {
			t.Errorf("%s to %s: %s %v, the document says %s %s %s", m.rail, m.row.number, v["status"], f, m.networkCode,
				m.row.failureCode, m.row.advice)
		}
	}

	// auto_settle off: ACH is submitted after 1 s and waits; RTP settles.
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"auto_settle": false, "ach_same_day_delay_seconds": 2}}), http.StatusOK)
	achID := oapPayID(t, api, key, va, 100, "ach_same_day", "123456789")["id"].(string)
	rtpID := oapPayID(t, api, key, va, 100, "rtp", "123456789")["id"].(string)
	vaSettle(t, api, 2)
	v := vaGet(t, api, key, "/v1/payments/"+achID)
	if v["status"] != "submitted" || kt2Time(t, v["submitted_at"]).Sub(kt2Time(t, v["created_at"])) < time.Second-time.Millisecond {
		t.Errorf("ACH with auto_settle off: %s submitted %v after creation %v", v["status"], v["submitted_at"], v["created_at"])
	}
	if s := vaGet(t, api, key, "/v1/payments/"+rtpID)["status"]; s != "completed" {
		t.Errorf("RTP with auto_settle off: %v, the document says it settles", s)
	}
	time.Sleep(1500 * time.Millisecond) // past the 2 s delay: a settlement would be due now
	if n, err := vaSimulator(api).SettleDue(t.Context()); err != nil || n != 0 {
		t.Errorf("with auto_settle off the simulator still did %d actions (%v)", n, err)
	}
	if s := vaGet(t, api, key, "/v1/payments/"+achID)["status"]; s != "submitted" {
		t.Errorf("ACH with auto_settle off, after its delay: %v, want submitted", s)
	}
}
