package http_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/webhook"
	apihttp "github.com/opentreasury/treasury/http"
)

// TestOpenAPIWebhookReplayResponsesMatchSchemas causes every documented
// status of POST /webhooks/{id}/replay (but 429 and 5xx) and checks each
// answer, and the deliveries it makes, against the document.
func TestOpenAPIWebhookReplayResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	check := c.check
	wh := rpWebhook(t, api, key)
	disabled := rpWebhook(t, api, key)
	if r := api.do("PATCH", "/v1/webhooks/"+disabled, key, map[string]any{"status": "disabled"}); r.Status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	t0 := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	events := make([]rpEvent, 10_001)
	for i := range events {
		events[i] = rpEvent{platformID, "sandbox", "payment.created", t0.Add(time.Duration(i) * time.Millisecond)}
	}
	events[0].typ = "kyb.approved"
	rpSeed(t, api, events)

	p := "/webhooks/{id}/replay"
	post := func(k, id string, body any, headers ...string) response {
		return api.do("POST", "/v1/webhooks/"+id+"/replay", k, body, headers...)
	}
	body := map[string]any{"created_after": rpTime(t0), "created_before": rpTime(t0.Add(5 * time.Millisecond)), "types": []string{"kyb.approved", "payment.created"}}
	first := check("POST", p, post(key, wh, body, "Idempotency-Key", "oa-replay"), 201, "")
	if first["replayed"] != float64(5) {
		t.Errorf("replayed %v, want 5", first["replayed"])
	}
	r := post(key, wh, body, "Idempotency-Key", "oa-replay")
	if check("POST", p, r, 200, "")["id"] != first["id"] || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %v %s", r.Header, r.Body)
	}
	other := map[string]any{"created_after": rpTime(t0), "created_before": rpTime(t0.Add(6 * time.Millisecond))}
	if e := check("POST", p, post(key, wh, other, "Idempotency-Key", "oa-replay"), 409, "idempotency_conflict"); e["resource_id"] != first["id"] {
		t.Errorf("idempotency_conflict names %v, want %v", e["resource_id"], first["id"])
	}
	check("POST", p, post(key, wh, map[string]any{"created_after": rpTime(t0)}), 400, "invalid_request")
	check("POST", p, post(key, wh, `{"created_after": 1}`), 400, "invalid_request")
	check("POST", p, post(key, wh, map[string]any{"created_after": rpTime(t0), "created_before": rpTime(t0.Add(time.Hour))}), 400, "replay_too_large")
	check("POST", p, post("", wh, body), 401, "unauthorized")
	check("POST", p, post(operatorKey, wh, body), 403, "forbidden")
	check("POST", p, post(liveKey, wh, body), 404, "not_found")
	check("POST", p, post(key, "nope", body), 404, "not_found")
	check("POST", p, post(key, disabled, body), 409, "invalid_state")
	check("POST", p, post(key, wh, strings.Repeat(" ", apihttp.MaxBodyBytes+1)), 413, "request_too_large")

	// The deliveries it made, with their replay_id, conform too.
	list := oaCheck(t, doc, "GET", "/webhooks/{id}/deliveries", api.do("GET", "/v1/webhooks/"+wh+"/deliveries", key, nil))
	if data := oaArray(list["data"]); len(data) != 5 {
		t.Errorf("%d deliveries, want 5", len(data))
	} else {
		for _, d := range data {
			if oaObj(d)["replay_id"] != first["id"] {
				t.Errorf("delivery %v: replay_id, want %v", d, first["id"])
			}
		}
	}

	documented := oaObj(oapOp(doc, "POST", p)["responses"])
	for status := range documented {
		if n, _ := strconv.Atoi(status); n != http.StatusTooManyRequests && n < 500 && !c.seen["POST "+p][n] {
			t.Errorf("POST %s → %s is documented but this test did not see it", p, status)
		}
	}
	for n := range c.seen["POST "+p] {
		if documented[strconv.Itoa(n)] == nil {
			t.Errorf("POST %s → %d is not documented", p, n)
		}
	}
}

// Every list of event types in the document is the service's: each schema
// or parameter that enumerates them names exactly webhook.EventTypes (an
// endpoint's subscription adds "*"; a replay leaves out webhook.test, which
// is never in the log). A type added on one side only fails here.
func TestOpenAPIEventTypeEnumsAreTheService(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(apihttp.OpenAPIDocument(), &doc); err != nil {
		t.Fatal(err)
	}
	var want []string
	for typ := range webhook.EventTypes {
		want = append(want, typ)
	}
	without := func(list []string, drop string) []string {
		return slices.DeleteFunc(slices.Clone(list), func(s string) bool { return s == drop })
	}
	found := 0
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, child := range x {
				walk(path+"/"+k, child)
			}
		case []any:
			var enum []string
			for _, item := range x {
				if s, ok := item.(string); ok {
					enum = append(enum, s)
				}
				walk(path+"/[]", item)
			}
			if !slices.Contains(enum, "payment.created") || !strings.HasSuffix(path, "/enum") {
				return
			}
			found++
			expect := want
			switch {
			case strings.Contains(path, "WebhookReplayRequest"):
				expect = without(want, "webhook.test")
			case slices.Contains(enum, "*"):
				expect = append(slices.Clone(want), "*")
			}
			slices.Sort(enum)
			expect = slices.Sorted(slices.Values(expect))
			if !slices.Equal(enum, expect) {
				t.Errorf("%s lists %v; the service has %v", path, enum, expect)
			}
		}
	}
	walk("#", doc)
	if found < 6 {
		t.Fatalf("found %d lists of event types in the document, expected the six or more it has", found)
	}
}
