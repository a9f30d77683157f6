package http_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// Every POST that creates a resource takes an Idempotency-Key (API.md
// §12) with the semantics of payments (§5): the same key and body answer
// the first resource (200, Idempotent-Replayed) — a secret shown once is
// not shown again; another body is 409 idempotency_conflict naming it;
// concurrent duplicates make one resource.
func TestIdempotentCreates(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Idempotent Creates")
	va := api.do("POST", "/v1/virtual-accounts", key, map[string]any{"platform_id": platform, "entity_ref": "biz", "type": "checking"}).Str("id")
	address := map[string]any{"line1": "1 Main Street", "city": "Dover", "state": "DE", "postal_code": "19901", "country": "US"}
	kyb := func(name string) map[string]any {
		return map[string]any{"virtual_account_id": va,
			"business": map[string]any{"legal_name": name, "ein": "12-3456789", "entity_type": "llc", "formation_date": "2015-03-01",
				"formation_state": "DE", "address": address},
			"beneficial_owners": []any{map[string]any{"first_name": "Jane", "last_name": "Roe", "date_of_birth": "1980-05-17",
				"ssn_last4": "1234", "ownership_percentage": "60", "is_control_person": true, "address": address}}}
	}
	// A funded account of an approved business sends book transfers to va.
	funded := payAccount(t, api, key, platform, "funded", 100_000, true)
	// An endpoint to replay the platform's events to (its virtual account's, say).
	replayed := api.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/replayed"}).Str("id")
	cases := []struct {
		path         string
		body, other  map[string]any
		secret, list string // the field shown once; the list that must hold one
		// once: a second resource cannot be made at all (a business has one
		// verification in progress), so only the first key makes one.
		once bool
	}{
		{"/v1/virtual-accounts", map[string]any{"platform_id": platform, "entity_ref": "acme", "type": "checking"},
			map[string]any{"platform_id": platform, "entity_ref": "acme", "type": "savings"}, "", "/v1/virtual-accounts?limit=100", false},
		{"/v1/kyb", kyb("Acme Widgets LLC"), kyb("Acme Gadgets LLC"), "", "/v1/kyb?limit=100", true},
		{"/v1/webhooks", map[string]any{"url": "https://hooks.example.com/a"}, map[string]any{"url": "https://hooks.example.com/b"},
			"secret", "/v1/webhooks?limit=100", false},
		{"/v1/platform/api-keys", map[string]any{"name": "ci"}, map[string]any{"name": "deploy"}, "secret", "/v1/platform/api-keys?limit=100", false},
		{"/v1/simulations/inbound-transfers", map[string]any{"virtual_account_id": va, "amount": 1000, "rail": "rtp",
			"originator": map[string]any{"name": "Globex", "account_number": "123456789", "routing_number": "021000021"}},
			map[string]any{"virtual_account_id": va, "amount": 2000, "rail": "rtp",
				"originator": map[string]any{"name": "Globex", "account_number": "123456789", "routing_number": "021000021"}}, "", "", false},
		{"/v1/book-transfers", map[string]any{"from_virtual_account_id": funded, "to_virtual_account_id": va, "amount": 100},
			map[string]any{"from_virtual_account_id": funded, "to_virtual_account_id": va, "amount": 200}, "", "/v1/book-transfers?limit=100", false},
		{"/v1/webhooks/" + replayed + "/replay", map[string]any{"created_after": "2020-01-01T00:00:00Z", "created_before": "2100-01-01T00:00:00Z"},
			map[string]any{"created_after": "2020-01-01T00:00:00Z", "created_before": "2100-01-01T00:00:00Z", "types": []string{"payment.created"}},
			"", "", false},
		{"/v1/counterparties", cpBody("987654321"), cpBody("123456789"), "", "/v1/counterparties?limit=100", false},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			idem := "create-" + c.path
			before := countOf(t, api, key, c.list)
			first := api.do("POST", c.path, key, c.body, "Idempotency-Key", idem)
			if first.Status != http.StatusCreated || (c.secret != "" && first.Str(c.secret) == "") {
				t.Fatalf("first: %s", first.Body)
			}
			again := api.do("POST", c.path, key, c.body, "Idempotency-Key", idem)
			if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || again.Str("id") != first.Str("id") {
				t.Fatalf("replay: %d %s, want 200 and %s", again.Status, again.Body, first.Str("id"))
			}
			if c.secret != "" && again.Str(c.secret) != "" {
				t.Errorf("the replay showed the %s again: %s", c.secret, again.Body)
			}
			conflict := requireError(t, api.do("POST", c.path, key, c.other, "Idempotency-Key", idem), http.StatusConflict, "idempotency_conflict")
			if conflict["resource_id"] != first.Str("id") {
				t.Errorf("the conflict names %v, want %s", conflict["resource_id"], first.Str("id"))
			}
			if c.once {
				if after := countOf(t, api, key, c.list); after != before+1 {
					t.Errorf("%d new in %s, want 1", after-before, c.list)
				}
				return
			}
			// Twenty at once under a new key: one resource.
			idem += "-concurrent"
			ids := make(chan string, 20)
			var wg sync.WaitGroup
			for range 20 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if id, err := post(api.URL+c.path, key, idem, c.body); err == nil && id != "" {
						ids <- id
					}
				}()
			}
			wg.Wait()
			close(ids)
			seen := map[string]bool{}
			for id := range ids {
				seen[id] = true
			}
			if len(seen) != 1 {
				t.Errorf("20 concurrent requests under one key made %d resources: %v", len(seen), seen)
			}
			if c.list != "" {
				if after := countOf(t, api, key, c.list); after != before+2 {
					t.Errorf("%d new in %s, want 2 (one per key)", after-before, c.list)
				}
			}
		})
	}
}

// post sends one creating POST and returns the resource's id (2xx only;
// a concurrent duplicate may get 409 idempotency_in_progress).
func post(url, key, idem string, body any) (string, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idem)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var v struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&v); err != nil {
		return "", err
	}
	if res.StatusCode >= 300 {
		return "", fmt.Errorf("%d", res.StatusCode)
	}
	return v.ID, nil
}

func countOf(t *testing.T, api *testAPI, key, list string) int {
	t.Helper()
	if list == "" {
		return 0
	}
	r := api.do("GET", list, key, nil)
	data, _ := r.JSON()["data"].([]any)
	return len(data)
}

// A submission refused by screening is recorded (rejected) and answered
// 422 compliance_rejected; its replay under the same key answers the same,
// not 200: a client retrying after a lost answer learns what it would have.
func TestIdempotentKYBReplayOfAScreeningRefusal(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Screened Replay")
	va := api.do("POST", "/v1/virtual-accounts", key, map[string]any{"platform_id": platform, "entity_ref": "screened", "type": "checking"}).Str("id")
	body := kt2Submission(va, kt2EINFor("6789"))
	kt2Business(body)["legal_name"] = "Acme OFAC TEST Holdings"
	first := requireError(t, api.do("POST", "/v1/kyb", key, body, "Idempotency-Key", "screened-1"), http.StatusUnprocessableEntity, "compliance_rejected")
	again := requireError(t, api.do("POST", "/v1/kyb", key, body, "Idempotency-Key", "screened-1"), http.StatusUnprocessableEntity, "compliance_rejected")
	if first["resource_id"] == nil || again["resource_id"] != first["resource_id"] {
		t.Errorf("resource_id %v then %v", first["resource_id"], again["resource_id"])
	}
}
