package http_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
)

// cpBody is a counterparty request for an account number.
func cpBody(accountNumber string) map[string]any {
	return map[string]any{"name": "Initech LLC", "account_number": accountNumber, "routing_number": "021000021",
		"account_type": "checking"}
}

// cpCreate saves a counterparty and returns it.
func cpCreate(t testing.TB, api *testAPI, key, accountNumber string) map[string]any {
	t.Helper()
	return vaRequire(t, api.do("POST", "/v1/counterparties", key, cpBody(accountNumber)), http.StatusCreated)
}

// cpVerification is a counterparty's verification object.
func cpVerification(t testing.TB, api *testAPI, key, id string) map[string]any {
	t.Helper()
	v, _ := vaGet(t, api, key, "/v1/counterparties/"+id)["verification"].(map[string]any)
	return v
}

// A counterparty is saved whole but shown by its last four digits, read,
// listed (by metadata and verification status) and deleted: 404 after.
func TestCounterpartyLifecycle(t *testing.T) {
	api, _, key := vaAPI(t)
	body := cpBody("987654321")
	body["account_type"] = "savings"
	body["metadata"] = map[string]any{"vendor": "V-7"}
	cp := vaRequire(t, api.do("POST", "/v1/counterparties", key, body), http.StatusCreated)
	id, _ := cp["id"].(string)
	if !strings.HasPrefix(id, "cp_") || cp["object"] != "counterparty" || cp["name"] != "Initech LLC" ||
		cp["account_number_last4"] != "4321" || cp["routing_number"] != "021000021" || cp["account_type"] != "savings" ||
		cp["environment"] != "sandbox" || cp["created_at"] == nil {
		t.Fatalf("counterparty: %v", cp)
	}
	if _, shown := cp["account_number"]; shown || strings.Contains(string(api.do("GET", "/v1/counterparties/"+id, key, nil).Body), "987654321") {
		t.Fatalf("the whole account number is shown: %v", cp)
	}
	if v, _ := cp["verification"].(map[string]any); v["status"] != "unverified" || v["method"] != nil {
		t.Fatalf("verification: %v", cp["verification"])
	}
	if md, _ := cp["metadata"].(map[string]any); md["vendor"] != "V-7" {
		t.Fatalf("metadata: %v", cp["metadata"])
	}
	if got := vaGet(t, api, key, "/v1/counterparties/"+id); got["id"] != id || got["account_number_last4"] != "4321" {
		t.Fatalf("GET: %v", got)
	}
	other := cpCreate(t, api, key, "123456789")["id"].(string)
	for q, want := range map[string][]string{"": {other, id}, "?metadata[vendor]=V-7": {id}, "?metadata[vendor]=V-8": nil,
		"?verification_status=unverified": {other, id}, "?verification_status=verified": nil, "?limit=1": {other}} {
		list := vaData(t, vaGet(t, api, key, "/v1/counterparties"+q))
		var got []string
		for _, x := range list {
			got = append(got, x["id"].(string))
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("list%s: %v, want %v", q, got, want)
		}
	}
	requireError(t, api.do("GET", "/v1/counterparties?verification_status=maybe", key, nil), 400, "invalid_request")

	del := vaRequire(t, api.do("DELETE", "/v1/counterparties/"+id, key, nil), http.StatusOK)
	if del["id"] != id || del["object"] != "counterparty" || del["deleted"] != true {
		t.Fatalf("delete: %v", del)
	}
	requireError(t, api.do("GET", "/v1/counterparties/"+id, key, nil), 404, "not_found")
	requireError(t, api.do("DELETE", "/v1/counterparties/"+id, key, nil), 404, "not_found")
	requireError(t, api.do("POST", "/v1/counterparties/"+id+"/verify", key, map[string]any{"method": "prenote"}), 404, "not_found")
	if list := vaData(t, vaGet(t, api, key, "/v1/counterparties")); len(list) != 1 || list[0]["id"] != other {
		t.Errorf("list after delete: %v", list)
	}
}

// A counterparty is validated as a payment's destination is.
func TestCounterpartyValidation(t *testing.T) {
	api, _, key := vaAPI(t)
	for _, c := range []struct {
		field string
		value any
		param string
	}{
		{"routing_number", "021000022", "routing_number"},
		{"routing_number", "12345", "routing_number"},
		{"account_number", "123", "account_number"},
		{"account_number", "123456789012345678", "account_number"},
		{"account_number", "12345x", "account_number"},
		{"name", "", "name"},
		{"name", strings.Repeat("n", 81), "name"},
		{"account_type", "brokerage", "account_type"},
		{"account_type", nil, "account_type"},
		{"account_number", 987654321, "account_number"},
		{"nickname", "x", "nickname"},
	} {
		body := cpBody("987654321")
		if c.value == nil {
			delete(body, c.field)
		} else {
			body[c.field] = c.value
		}
		e := requireError(t, api.do("POST", "/v1/counterparties", key, body), 400, "invalid_request")
		if e["param"] != c.param {
			t.Errorf("%s=%v: param %v, want %s", c.field, c.value, e["param"], c.param)
		}
	}
	requireError(t, api.do("POST", "/v1/counterparties/cp_01jx0000000000000000000000/verify", key,
		map[string]any{"method": "prenote", "amount": 0}), 400, "invalid_request")
}

// One platform never sees another's counterparties, nor sandbox live's.
func TestCounterpartyIsolation(t *testing.T) {
	api, platformID, key := vaAPI(t)
	liveKey := api.enableLive(platformID)
	_, otherKey := api.newPlatform("Globex Payroll")
	id := cpCreate(t, api, key, "987654321")["id"].(string)
	for _, k := range []string{otherKey, liveKey} {
		requireError(t, api.do("GET", "/v1/counterparties/"+id, k, nil), 404, "not_found")
		requireError(t, api.do("DELETE", "/v1/counterparties/"+id, k, nil), 404, "not_found")
		requireError(t, api.do("POST", "/v1/counterparties/"+id+"/verify", k, map[string]any{"method": "prenote"}), 404, "not_found")
		if list := vaData(t, vaGet(t, api, k, "/v1/counterparties")); len(list) != 0 {
			t.Errorf("another scope lists %v", list)
		}
	}
	requireError(t, api.do("GET", "/v1/counterparties/nope", key, nil), 404, "not_found")
	// Still there for its owner.
	vaGet(t, api, key, "/v1/counterparties/"+id)
}

// A sandbox prenote is pending, then verified after the ACH same-day
// delay; the magic account numbers fail it with their return code, and
// the answers are the public events counterparty.verified and
// counterparty.verification_failed.
func TestCounterpartySandboxPrenote(t *testing.T) {
	api, _, key := vaAPI(t)
	payFastACH(t, api, key)
	good := cpCreate(t, api, key, "987654321")["id"].(string)
	failing := map[string]string{}
	for acct, code := range map[string]string{"4000000003": "R03", "4000000004": "R04", "4000000023": "R23"} {
		failing[cpCreate(t, api, key, acct)["id"].(string)] = code
	}
	verify := func(id string) response {
		return api.do("POST", "/v1/counterparties/"+id+"/verify", key, map[string]any{"method": "prenote"})
	}
	got := vaRequire(t, verify(good), http.StatusOK)
	if v, _ := got["verification"].(map[string]any); v["status"] != "pending" || v["method"] != "prenote" {
		t.Fatalf("after verify: %v", got)
	}
	requireError(t, verify(good), 409, "invalid_state") // pending
	requireError(t, api.do("POST", "/v1/counterparties/"+good+"/verify", key, map[string]any{"method": "micro_deposits"}), 400, "invalid_request")
	for id := range failing {
		vaRequire(t, verify(id), http.StatusOK)
	}
	// Not before the delay (1 s): the simulator has nothing due yet.
	if n, err := vaSimulator(api).SettleDue(t.Context()); err != nil || n != 0 {
		t.Fatalf("settled %d before the delay (%v)", n, err)
	}
	paySettle(t, api, "prenotes answered", func() bool {
		if cpVerification(t, api, key, good)["status"] != "verified" {
			return false
		}
		for id := range failing {
			if cpVerification(t, api, key, id)["status"] != "failed" {
				return false
			}
		}
		return true
	})
	if v := cpVerification(t, api, key, good); v["failure_code"] != nil {
		t.Errorf("verified one has a failure code: %v", v)
	}
	for id, code := range failing {
		if v := cpVerification(t, api, key, id); v["failure_code"] != code {
			t.Errorf("%s: %v, want failure_code %s", id, v, code)
		}
	}
	requireError(t, verify(good), 409, "invalid_state") // verified: not again
	// A failed one may be tried again: pending once more.
	for id := range failing {
		if v, _ := vaRequire(t, verify(id), http.StatusOK)["verification"].(map[string]any); v["status"] != "pending" || v["failure_code"] != nil {
			t.Errorf("re-verify of a failed one: %v", v)
		}
		break
	}

	api.sync()
	verified := vaData(t, vaGet(t, api, key, "/v1/events?type=counterparty.verified"))
	if len(verified) != 1 {
		t.Fatalf("%d counterparty.verified events, want 1", len(verified))
	}
	if obj, _ := verified[0]["data"].(map[string]any)["object"].(map[string]any); obj["id"] != good ||
		obj["verification"].(map[string]any)["status"] != "verified" {
		t.Errorf("event object: %v", verified[0])
	}
	failed := vaData(t, vaGet(t, api, key, "/v1/events?type=counterparty.verification_failed"))
	if len(failed) != len(failing) {
		t.Fatalf("%d counterparty.verification_failed events, want %d", len(failed), len(failing))
	}
	for _, e := range failed {
		obj := e["data"].(map[string]any)["object"].(map[string]any)
		if v := obj["verification"].(map[string]any); v["status"] != "failed" || v["failure_code"] != failing[obj["id"].(string)] {
			t.Errorf("event object: %v", obj)
		}
	}
	// Internal events stay internal.
	for _, e := range payWalk(t, api, key, "/v1/events") {
		if typ, _ := e["type"].(string); strings.HasPrefix(typ, "counterparty.") && typ != "counterparty.verified" &&
			typ != "counterparty.verification_failed" {
			t.Errorf("%s is public: %v", typ, e)
		}
	}
}

// A prenote of a counterparty deleted while it is pending is dropped.
func TestCounterpartyDeletedWhilePrenotePending(t *testing.T) {
	api, _, key := vaAPI(t)
	payFastACH(t, api, key)
	id := cpCreate(t, api, key, "987654321")["id"].(string)
	vaRequire(t, api.do("POST", "/v1/counterparties/"+id+"/verify", key, map[string]any{"method": "prenote"}), http.StatusOK)
	vaRequire(t, api.do("DELETE", "/v1/counterparties/"+id, key, nil), http.StatusOK)
	paySettle(t, api, "the schedule drained", func() bool {
		var n int
		if err := api.Pool.QueryRow(t.Context(), `SELECT count(*) FROM sandbox_schedule`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 0
	})
	var status string
	if err := api.Pool.QueryRow(t.Context(), `SELECT verification_status FROM counterparties WHERE id = $1`, id).Scan(&status); err != nil || status != "pending" {
		t.Errorf("deleted counterparty's status %q (%v), want it left pending", status, err)
	}
}

// cpPayBody is a payment to a counterparty.
func cpPayBody(accountID, counterpartyID string, amount int64, rail string) map[string]any {
	return map[string]any{"virtual_account_id": accountID, "amount": amount, "rail": rail,
		"counterparty_id": counterpartyID, "idempotency_key": payKey()}
}

// A payment to a counterparty copies its destination and names it;
// exactly one of destination and counterparty_id; unknown, deleted and
// other scopes' counterparties are 404.
func TestPaymentToCounterparty(t *testing.T) {
	api, platformID, key := vaAPI(t)
	liveKey := api.enableLive(platformID)
	_, otherKey := api.newPlatform("Globex Payroll")
	va := payAccount(t, api, key, platformID, "payer", 100_000, true)
	cp := cpCreate(t, api, key, "987654321")["id"].(string)

	p := vaRequire(t, api.do("POST", "/v1/payments", key, cpPayBody(va, cp, 1_000, "rtp")), http.StatusCreated)
	dest, _ := p["destination"].(map[string]any)
	if p["counterparty_id"] != cp || dest["account_number"] != "987654321" || dest["routing_number"] != "021000021" ||
		dest["name"] != "Initech LLC" {
		t.Fatalf("payment: %v", p)
	}
	if got := payGet(t, api, key, p["id"].(string)); got["counterparty_id"] != cp {
		t.Errorf("GET: %v", got)
	}
	raw := vaRequire(t, api.do("POST", "/v1/payments", key, payBody(va, 1_000, "rtp", "123456789")), http.StatusCreated)
	if _, ok := raw["counterparty_id"]; ok {
		t.Errorf("a raw destination's payment names a counterparty: %v", raw)
	}

	both := cpPayBody(va, cp, 1_000, "rtp")
	both["destination"] = payDest("123456789")
	neither := cpPayBody(va, cp, 1_000, "rtp")
	delete(neither, "counterparty_id")
	badID := cpPayBody(va, "va_01jx0000000000000000000000", 1_000, "rtp")
	for name, body := range map[string]map[string]any{"both": both, "neither": neither, "not a cp_ id": badID} {
		if e := requireError(t, api.do("POST", "/v1/payments", key, body), 400, "invalid_request"); e["param"] != "counterparty_id" {
			t.Errorf("%s: param %v", name, e["param"])
		}
	}
	// Another platform's, the other environment's, an unknown one: 404.
	otherCP := cpCreate(t, api, otherKey, "987654321")["id"].(string)
	liveCP := cpCreate(t, api, liveKey, "987654321")["id"].(string)
	for _, id := range []string{otherCP, liveCP, "cp_01jx0000000000000000000000"} {
		if e := requireError(t, api.do("POST", "/v1/payments", key, cpPayBody(va, id, 1_000, "rtp")), 404, "not_found"); e["param"] != "counterparty_id" {
			t.Errorf("%s: %v", id, e)
		}
	}
	// Deleted: 404 for new payments.
	vaRequire(t, api.do("DELETE", "/v1/counterparties/"+cp, key, nil), http.StatusOK)
	requireError(t, api.do("POST", "/v1/payments", key, cpPayBody(va, cp, 1_000, "rtp")), 404, "not_found")
}

// A counterparty deleted while a payment to it is pending: the payment
// keeps the destination it copied and completes.
func TestPaymentToDeletedCounterpartyCompletes(t *testing.T) {
	api, platformID, key := vaAPI(t)
	payFastACH(t, api, key)
	va := payAccount(t, api, key, platformID, "payer", 100_000, true)
	cp := cpCreate(t, api, key, "987654321")["id"].(string)
	p := vaRequire(t, api.do("POST", "/v1/payments", key, cpPayBody(va, cp, 2_000, "ach_same_day")), http.StatusCreated)
	id := p["id"].(string)
	if p["status"] != "pending" {
		t.Fatalf("payment: %v", p)
	}
	vaRequire(t, api.do("DELETE", "/v1/counterparties/"+cp, key, nil), http.StatusOK)
	paySettle(t, api, "the payment completes", func() bool { return payGet(t, api, key, id)["status"] == "completed" })
	got := payGet(t, api, key, id)
	if dest, _ := got["destination"].(map[string]any); got["counterparty_id"] != cp || dest["account_number"] != "987654321" {
		t.Errorf("completed payment: %v", got)
	}
}

// require_verified_counterparty: off by default; on, a payment to a
// counterparty not verified, or to a raw destination, is 422
// counterparty_not_verified; to a verified one it goes.
func TestRequireVerifiedCounterparty(t *testing.T) {
	api, platformID, key := vaAPI(t)
	payFastACH(t, api, key)
	if s := vaGet(t, api, key, "/v1/platform/settings"); s["require_verified_counterparty"] != false {
		t.Fatalf("default settings: %v", s)
	}
	va := payAccount(t, api, key, platformID, "payer", 100_000, true)
	unverified := cpCreate(t, api, key, "987654321")["id"].(string)
	verified := cpCreate(t, api, key, "123456789")["id"].(string)
	failed := cpCreate(t, api, key, "4000000003")["id"].(string)
	for _, id := range []string{verified, failed} {
		vaRequire(t, api.do("POST", "/v1/counterparties/"+id+"/verify", key, map[string]any{"method": "prenote"}), http.StatusOK)
	}
	paySettle(t, api, "prenotes answered", func() bool {
		return cpVerification(t, api, key, verified)["status"] == "verified" && cpVerification(t, api, key, failed)["status"] == "failed"
	})
	// Off: any counterparty, any destination.
	vaRequire(t, api.do("POST", "/v1/payments", key, cpPayBody(va, unverified, 100, "rtp")), http.StatusCreated)

	s := vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{"require_verified_counterparty": true}), http.StatusOK)
	if s["require_verified_counterparty"] != true {
		t.Fatalf("settings: %v", s)
	}
	if got := vaGet(t, api, key, "/v1/platform/settings"); got["require_verified_counterparty"] != true {
		t.Fatalf("settings after PATCH: %v", got)
	}
	for _, id := range []string{unverified, failed} {
		e := requireError(t, api.do("POST", "/v1/payments", key, cpPayBody(va, id, 100, "rtp")), 422, "counterparty_not_verified")
		if e["param"] != "counterparty_id" || e["resource_id"] != id {
			t.Errorf("%s: %v", id, e)
		}
	}
	if e := requireError(t, api.do("POST", "/v1/payments", key, payBody(va, 100, "rtp", "123456789")), 422, "counterparty_not_verified"); e["param"] != "destination" {
		t.Errorf("raw destination: %v", e)
	}
	vaRequire(t, api.do("POST", "/v1/payments", key, cpPayBody(va, verified, 100, "rtp")), http.StatusCreated)
	requireError(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{"require_verified_counterparty": "yes"}), 400, "invalid_request")
	requireError(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{"require_verified_counterparty": nil}), 400, "invalid_request")
	// The live environment's settings are its own.
	liveKey := api.enableLive(platformID)
	if got := vaGet(t, api, liveKey, "/v1/platform/settings"); got["require_verified_counterparty"] != false {
		t.Errorf("live settings: %v", got)
	}
}

// Twenty verifies at once send one prenote: one 200, the others 409
// invalid_state; one verification_requested in the log.
func TestCounterpartyConcurrentVerifySendsOnePrenote(t *testing.T) {
	api, _, key := vaAPI(t)
	id := cpCreate(t, api, key, "987654321")["id"].(string)
	statuses := make(chan int, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			r := api.do("POST", "/v1/counterparties/"+id+"/verify", key, map[string]any{"method": "prenote"})
			if r.Status != http.StatusOK && r.Str("code") != "invalid_state" {
				t.Errorf("verify: %d %s", r.Status, r.Body)
			}
			statuses <- r.Status
		})
	}
	wg.Wait()
	close(statuses)
	ok := 0
	for s := range statuses {
		if s == http.StatusOK {
			ok++
		}
	}
	var requested int
	if err := api.Pool.QueryRow(t.Context(), `SELECT count(*) FROM events WHERE stream_id = $1 AND event_type = 'counterparty.verification_requested'`,
		"counterparty-"+id).Scan(&requested); err != nil {
		t.Fatal(err)
	}
	if ok != 1 || requested != 1 {
		t.Errorf("%d verifies answered 200 and %d prenotes were logged, want 1 and 1", ok, requested)
	}
}
