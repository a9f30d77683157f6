package http_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// oawFakeWebhookID is a well-formed webhook endpoint id no one has.
const oawFakeWebhookID = "wh_01jh3x2a3b4c5d6e7f8g9h0j1k"

// oawFakeDeliveryID is a well-formed delivery id no one has.
const oawFakeDeliveryID = "msg_01jh3x4m5n6p7q8r9s0t1v2w3x"

// TestOpenAPIWebhookResponsesMatchSchemas checks real responses of the
// webhook routes against the document's schemas.
func TestOpenAPIWebhookResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	doc := oaDocument(t, api)
	_, key := api.newPlatform("Webhooks OpenAPI")
	check := func(method, path string, r response) map[string]any {
		t.Helper()
		return oaCheck(t, doc, method, path, r)
	}
	checkEndpoint := func(label string, v map[string]any) {
		t.Helper()
		oaCheckObject(t, doc, oaComponent("WebhookEndpoint"), v, label)
		oaCheckObject(t, doc, oaComponent("WebhookRetryPolicy"), oaObj(v["retry_policy"]), label+" retry_policy")
		oaCheckObject(t, doc, oaComponent("WebhookDeliveryStatus"), oaObj(v["delivery_status"]), label+" delivery_status")
	}

	r := api.do("POST", "/v1/webhooks", key, map[string]any{
		"url": "https://hooks.example.com/treasury", "events": []string{"payment.completed", "payment.failed"},
		"description": "payments", "retry_policy": map[string]any{"max_attempts": 3, "initial_delay_seconds": 2, "max_delay_seconds": 60}})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	body := check("POST", "/webhooks", r)
	checkEndpoint("POST /webhooks", body)
	id, _ := body["id"].(string)
	if secret, _ := body["secret"].(string); !strings.HasPrefix(secret, "whsec_") {
		t.Errorf("create: secret %q, want whsec_…", secret)
	}
	r = api.do("POST", "/v1/webhooks", key, map[string]any{"url": "http://hooks.example.com/all"})
	checkEndpoint("POST /webhooks (defaults)", check("POST", "/webhooks", r))

	list := check("GET", "/webhooks", api.do("GET", "/v1/webhooks?limit=1", key, nil))
	for i, w := range oaArray(list["data"]) {
		checkEndpoint(fmt.Sprintf("GET /webhooks data[%d]", i), oaObj(w))
	}
	body = check("GET", "/webhooks/{id}", api.do("GET", "/v1/webhooks/"+id, key, nil))
	checkEndpoint("GET /webhooks/{id}", body)
	if _, ok := body["secret"]; ok {
		t.Errorf("GET /webhooks/{id} shows the secret")
	}
	r = api.do("PATCH", "/v1/webhooks/"+id, key, map[string]any{"status": "disabled", "events": []string{"*"}, "retry_policy": map[string]any{"max_attempts": 25}})
	if r.Status != http.StatusOK {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	checkEndpoint("PATCH /webhooks/{id}", check("PATCH", "/webhooks/{id}", r))
	r = api.do("PATCH", "/v1/webhooks/"+id, key, map[string]any{"status": "enabled"})
	checkEndpoint("PATCH /webhooks/{id} (enable)", check("PATCH", "/webhooks/{id}", r))

	r = api.do("POST", "/v1/webhooks/"+id+"/rotate-secret", key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("rotate: %d %s", r.Status, r.Body)
	}
	body = check("POST", "/webhooks/{id}/rotate-secret", r)
	checkEndpoint("POST /webhooks/{id}/rotate-secret", body)

	r = api.do("POST", "/v1/webhooks/"+id+"/test", key, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	deliveryID, _ := check("POST", "/webhooks/{id}/test", r)["id"].(string)

	// One failed attempt, as the sender records it, so that the attempt
	// schema is checked against a real row.
	if _, err := api.Pool.Exec(context.Background(), `INSERT INTO webhook_attempts
        (delivery_id, attempted_at, status_code, duration_ms, error, response_body)
        VALUES ($1, now(), 500, 12, NULL, 'try again')`, deliveryID); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "?status=pending", "?status=failed&limit=1"} {
		list = check("GET", "/webhooks/{id}/deliveries", api.do("GET", "/v1/webhooks/"+id+"/deliveries"+q, key, nil))
		if q != "?status=failed&limit=1" && (len(oaArray(list["data"])) == 0 || len(oaArray(oaObj(oaArray(list["data"])[0])["attempts"])) == 0) {
			t.Fatalf("GET /webhooks/{id}/deliveries%s: want the test delivery with its attempt, got %v", q, list)
		}
		for i, dv := range oaArray(list["data"]) {
			label := fmt.Sprintf("GET /webhooks/{id}/deliveries%s data[%d]", q, i)
			oaCheckObject(t, doc, oaComponent("WebhookDelivery"), oaObj(dv), label)
			for j, a := range oaArray(oaObj(dv)["attempts"]) {
				oaCheckObject(t, doc, oaComponent("WebhookAttempt"), oaObj(a), fmt.Sprintf("%s attempts[%d]", label, j))
			}
		}
	}
	r = api.do("POST", "/v1/webhooks/"+id+"/deliveries/"+deliveryID+"/retry", key, nil)
	if r.Status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", r.Status, r.Body)
	}
	check("POST", "/webhooks/{id}/deliveries/{delivery_id}/retry", r)

	// Errors.
	for _, c := range []struct {
		method, path, url, key string
		body                   any
		status                 int
		code                   string
	}{
		{"POST", "/webhooks", "/v1/webhooks", "", nil, http.StatusUnauthorized, "unauthorized"},
		{"GET", "/webhooks", "/v1/webhooks", operatorKey, nil, http.StatusForbidden, "forbidden"},
		{"POST", "/webhooks", "/v1/webhooks", key, map[string]any{"url": "ftp://x.example"}, http.StatusBadRequest, "invalid_request"},
		{"POST", "/webhooks", "/v1/webhooks", key, map[string]any{"url": "https://x.example", "events": []string{"nope"}}, http.StatusBadRequest, "invalid_request"},
		{"POST", "/webhooks", "/v1/webhooks", key, map[string]any{"url": "https://x.example", "retry_policy": map[string]any{"max_attempts": 26}}, http.StatusBadRequest, "invalid_request"},
		{"POST", "/webhooks", "/v1/webhooks", key, strings.Repeat(" ", apihttp.MaxBodyBytes+1), http.StatusRequestEntityTooLarge, "request_too_large"},
		{"GET", "/webhooks", "/v1/webhooks?limit=0", key, nil, http.StatusBadRequest, "invalid_request"},
		{"GET", "/webhooks/{id}", "/v1/webhooks/" + oawFakeWebhookID, key, nil, http.StatusNotFound, "not_found"},
		{"GET", "/webhooks/{id}", "/v1/webhooks/nope", key, nil, http.StatusNotFound, "not_found"},
		{"PATCH", "/webhooks/{id}", "/v1/webhooks/" + id, key, map[string]any{"foo": 1}, http.StatusBadRequest, "invalid_request"},
		{"PATCH", "/webhooks/{id}", "/v1/webhooks/" + oawFakeWebhookID, key, map[string]any{"status": "enabled"}, http.StatusNotFound, "not_found"},
		{"POST", "/webhooks/{id}/rotate-secret", "/v1/webhooks/" + id + "/rotate-secret", key, map[string]any{"foo": 1}, http.StatusBadRequest, "invalid_request"},
		{"POST", "/webhooks/{id}/test", "/v1/webhooks/" + oawFakeWebhookID + "/test", key, nil, http.StatusNotFound, "not_found"},
		{"GET", "/webhooks/{id}/deliveries", "/v1/webhooks/" + id + "/deliveries?status=lost", key, nil, http.StatusBadRequest, "invalid_request"},
		{"GET", "/webhooks/{id}/deliveries", "/v1/webhooks/" + oawFakeWebhookID + "/deliveries", key, nil, http.StatusNotFound, "not_found"},
		{"POST", "/webhooks/{id}/deliveries/{delivery_id}/retry", "/v1/webhooks/" + id + "/deliveries/" + oawFakeDeliveryID + "/retry", key, nil, http.StatusNotFound, "not_found"},
		{"DELETE", "/webhooks/{id}", "/v1/webhooks/" + oawFakeWebhookID, key, nil, http.StatusNotFound, "not_found"},
	} {
		r := api.do(c.method, c.url, c.key, c.body)
		if got := check(c.method, c.path, r); r.Status != c.status || got["code"] != c.code {
			t.Errorf("%s %s: %d %v, want %d %s", c.method, c.url, r.Status, got["code"], c.status, c.code)
		}
	}

	r = api.do("DELETE", "/v1/webhooks/"+id, key, nil)
	if body := check("DELETE", "/webhooks/{id}", r); r.Status != http.StatusOK || body["deleted"] != true {
		t.Errorf("delete: %d %s", r.Status, r.Body)
	}
	if r := api.do("GET", "/v1/webhooks/"+id, key, nil); r.Status != http.StatusNotFound {
		t.Errorf("GET after delete: %d, want 404", r.Status)
	} else {
		check("GET", "/webhooks/{id}", r)
	}
}
