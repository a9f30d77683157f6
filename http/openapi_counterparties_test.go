package http_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// TestOpenAPICounterpartiesResponsesMatchSchemas causes every documented
// status of the counterparty routes (but 429 and 5xx other than 501) and
// checks each answer against the document; payments to counterparties and
// the prenotes' events conform too.
func TestOpenAPICounterpartiesResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	payFastACH(t, api, key)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	check := c.check

	p := "/counterparties"
	post := func(k string, body any, headers ...string) response {
		return api.do("POST", "/v1/counterparties", k, body, headers...)
	}
	body := cpBody("987654321")
	body["metadata"] = map[string]string{"vendor": "7"}
	cp := check("POST", p, post(key, body, "Idempotency-Key", "cp-1"), 201, "")
	id := cp["id"].(string)
	r := post(key, body, "Idempotency-Key", "cp-1")
	if check("POST", p, r, 200, "")["id"] != id || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %v %s", r.Header, r.Body)
	}
	if e := check("POST", p, post(key, cpBody("123456789"), "Idempotency-Key", "cp-1"), 409, "idempotency_conflict"); e["resource_id"] != id {
		t.Errorf("idempotency_conflict names %v, want %s", e["resource_id"], id)
	}
	bad := cpBody("987654321")
	bad["routing_number"] = "021000022"
	for _, x := range []struct {
		key    string
		body   any
		status int
		code   string
	}{
		{key, bad, 400, "invalid_request"},
		{key, `{"name": 1}`, 400, "invalid_request"},
		{"", cpBody("987654321"), 401, "unauthorized"},
		{operatorKey, cpBody("987654321"), 403, "forbidden"},
		{key, strings.Repeat(" ", apihttp.MaxBodyBytes+1), 413, "request_too_large"},
	} {
		check("POST", p, post(x.key, x.body), x.status, x.code)
	}

	list := check("GET", p, api.do("GET", "/v1/counterparties?metadata[vendor]=7&verification_status=unverified", key, nil), 200, "")
	if data := oaArray(list["data"]); len(data) != 1 || oaObj(data[0])["id"] != id {
		t.Errorf("list: %v", list)
	}
	check("GET", p, api.do("GET", "/v1/counterparties?limit=0", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/counterparties?verification_status=x", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/counterparties", "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1/counterparties", operatorKey, nil), 403, "forbidden")

	one := "/counterparties/{id}"
	check("GET", one, api.do("GET", "/v1/counterparties/"+id, key, nil), 200, "")
	check("GET", one, api.do("GET", "/v1/counterparties/"+id, "", nil), 401, "unauthorized")
	check("GET", one, api.do("GET", "/v1/counterparties/"+id, operatorKey, nil), 403, "forbidden")
	check("GET", one, api.do("GET", "/v1/counterparties/"+id, liveKey, nil), 404, "not_found")
	check("GET", one, api.do("GET", "/v1/counterparties/nope", key, nil), 404, "not_found")

	v := "/counterparties/{id}/verify"
	verify := func(k, id string, body any) response {
		return api.do("POST", "/v1/counterparties/"+id+"/verify", k, body)
	}
	prenote := map[string]any{"method": "prenote"}
	failing := cpCreate(t, api, key, "4000000003")["id"].(string)
	check("POST", v, verify(key, failing, prenote), 200, "")
	check("POST", v, verify(key, id, map[string]any{"method": "ach"}), 400, "invalid_request")
	check("POST", v, verify(key, id, prenote), 200, "")
	check("POST", v, verify(key, id, prenote), 409, "invalid_state")
	check("POST", v, verify("", id, prenote), 401, "unauthorized")
	check("POST", v, verify(operatorKey, id, prenote), 403, "forbidden")
	check("POST", v, verify(liveKey, id, prenote), 404, "not_found")
	check("POST", v, verify(key, id, strings.Repeat(" ", apihttp.MaxBodyBytes+1)), 413, "request_too_large")
	liveCP := cpCreate(t, api, liveKey, "987654321")["id"].(string)
	check("POST", v, verify(liveKey, liveCP, prenote), 200, "") // waits for the next ACH file
	paySettle(t, api, "prenotes answered", func() bool {
		return cpVerification(t, api, key, id)["status"] == "verified" && cpVerification(t, api, key, failing)["status"] == "failed"
	})
	kt2Conforms(t, doc, "Counterparty", vaGet(t, api, key, "/v1/counterparties/"+failing), "a failed counterparty")

	// A payment to a counterparty, and the counterparty refusals of POST /payments.
	va := oapApproved(t, api, key, platformID, "biz_cp", 100_000)
	pay := check("POST", "/payments", oapPay(api, key, cpPayBody(va, id, 1_000, "rtp")), 201, "")
	if pay["counterparty_id"] != id {
		t.Errorf("payment: %v", pay)
	}
	check("POST", "/payments", oapPay(api, key, cpPayBody(va, "cp_01jx0000000000000000000000", 1_000, "rtp")), 404, "not_found")
	paySettings(t, api, key, map[string]any{"require_verified_counterparty": true})
	check("POST", "/payments", oapPay(api, key, cpPayBody(va, failing, 1_000, "rtp")), 422, "counterparty_not_verified")
	check("GET", "/platform/settings", api.do("GET", "/v1/platform/settings", key, nil), 200, "")

	del := "/counterparties/{id}"
	check("DELETE", del, api.do("DELETE", "/v1/counterparties/"+failing, "", nil), 401, "unauthorized")
	check("DELETE", del, api.do("DELETE", "/v1/counterparties/"+failing, operatorKey, nil), 403, "forbidden")
	check("DELETE", del, api.do("DELETE", "/v1/counterparties/"+failing, liveKey, nil), 404, "not_found")
	check("DELETE", del, api.do("DELETE", "/v1/counterparties/"+failing, key, nil), 200, "")
	check("DELETE", del, api.do("DELETE", "/v1/counterparties/"+failing, key, nil), 404, "not_found")

	// The prenotes' events conform.
	api.sync()
	for _, typ := range []string{"counterparty.verified", "counterparty.verification_failed"} {
		events := oaCheck(t, doc, "GET", "/events", api.do("GET", "/v1/events?type="+typ, key, nil))
		if data := oaArray(events["data"]); len(data) != 1 {
			t.Errorf("%d %s events, want 1", len(data), typ)
		} else {
			kt2Conforms(t, doc, "Counterparty", oaObj(oaObj(oaObj(data[0])["data"])["object"]), typ+" data.object")
		}
	}

	for _, o := range []struct{ method, path string }{{"POST", p}, {"GET", p}, {"GET", one}, {"DELETE", one}, {"POST", v}} {
		documented := oaObj(oapOp(doc, o.method, o.path)["responses"])
		for status := range documented {
			if n, _ := strconv.Atoi(status); n != http.StatusTooManyRequests && (n < 500 || n == http.StatusNotImplemented) && !c.seen[o.method+" "+o.path][n] {
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
