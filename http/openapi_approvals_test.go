package http_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// TestOpenAPIApprovalsResponsesMatchSchemas causes every documented status
// of approve and deny (but 429 and 5xx) and checks each answer, and the
// approval's events, against the document.
func TestOpenAPIApprovalsResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	check := c.check
	va := oapApproved(t, api, key, platformID, "biz_ap", 1_000_000)
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": 1_000})
	_, approver := apSecondKey(t, api, key)
	waiting := func() string {
		p := check("POST", "/payments", oapPay(api, key, oapBody(va, 1_000, "rtp", "123456789")), 201, "")
		if p["status"] != "requires_approval" {
			t.Fatalf("at the threshold: %v", p)
		}
		return p["id"].(string)
	}
	huge := strings.Repeat(" ", apihttp.MaxBodyBytes+1)
	for _, op := range []string{"approve", "deny"} {
		path := "/payments/{id}/" + op
		do := func(k, id string, body any) response { return api.do("POST", "/v1/payments/"+id+"/"+op, k, body) }
		id := waiting()
		check("POST", path, do("", id, nil), 401, "unauthorized")
		check("POST", path, do(operatorKey, id, nil), 403, "forbidden")
		check("POST", path, do(liveKey, id, nil), 404, "not_found")
		check("POST", path, do(key, "pay_nope", nil), 404, "not_found")
		check("POST", path, do(approver, id, `{"unknown": 1}`), 400, "invalid_request")
		check("POST", path, do(approver, id, huge), 413, "request_too_large")
		if op == "approve" {
			check("POST", path, do(key, id, nil), 403, "forbidden")
			p := check("POST", path, do(approver, id, nil), 200, "")
			kt2Conforms(t, doc, "Payment", p, "approved")
		} else {
			check("POST", path, do(approver, id, map[string]any{"reason": strings.Repeat("x", 501)}), 400, "invalid_request")
			p := check("POST", path, do(key, id, map[string]any{"reason": "duplicate"}), 200, "")
			kt2Conforms(t, doc, "Payment", p, "denied")
		}
		check("POST", path, do(approver, id, nil), 409, "invalid_state")
	}
	check("GET", "/payments", api.do("GET", "/v1/payments?status=requires_approval", key, nil), 200, "")
	check("GET", "/payments", api.do("GET", "/v1/payments?status=denied", key, nil), 200, "")
	canceled := check("POST", "/payments/{id}/cancel", api.do("POST", "/v1/payments/"+waiting()+"/cancel", key, nil), 200, "")
	kt2Conforms(t, doc, "Payment", canceled, "canceled while awaiting approval")

	api.sync()
	for _, typ := range []string{"payment.requires_approval", "payment.approved", "payment.denied"} {
		events := oaArray(oaCheck(t, doc, "GET", "/events", api.do("GET", "/v1/events?type="+typ, key, nil))["data"])
		if len(events) == 0 {
			t.Errorf("no %s event", typ)
		}
		for _, ev := range events {
			kt2Conforms(t, doc, "Payment", oaObj(oaObj(oaObj(ev)["data"])["object"]), typ+" data.object")
		}
	}

	for _, o := range []string{"/payments/{id}/approve", "/payments/{id}/deny"} {
		documented := oaObj(oapOp(doc, "POST", o)["responses"])
		for status := range documented {
			if n, _ := strconv.Atoi(status); n != http.StatusTooManyRequests && n < 500 && !c.seen["POST "+o][n] {
				t.Errorf("POST %s → %s is documented but this test did not see it", o, status)
			}
		}
		for n := range c.seen["POST "+o] {
			if documented[strconv.Itoa(n)] == nil {
				t.Errorf("POST %s → %d is not documented", o, n)
			}
		}
	}
}
