package http_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// Lists of payments and virtual accounts filter on metadata (API.md §12):
// metadata[key]=value, several all matching; a key given twice, a bare
// metadata parameter, a key too long, NUL or bad UTF-8 are 400.
func TestMetadataFilters(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Metadata Filters")
	open := func(md map[string]string) string {
		return api.do("POST", "/v1/virtual-accounts", key, map[string]any{"platform_id": platform, "entity_ref": "biz",
			"type": "checking", "metadata": md}).Str("id")
	}
	a := open(map[string]string{"region": "east", "tier": "gold"})
	b := open(map[string]string{"region": "east", "tier": "silver"})
	open(map[string]string{"region": "west"})
	open(nil)
	ids := func(query string) []string {
		t.Helper()
		r := api.do("GET", "/v1/virtual-accounts?"+query, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d %s", query, r.Status, r.Body)
		}
		var out []string
		for _, v := range r.JSON()["data"].([]any) {
			out = append(out, v.(map[string]any)["id"].(string))
		}
		slices.Sort(out)
		return out
	}
	both := []string{a, b}
	slices.Sort(both)
	for query, want := range map[string][]string{
		"metadata[region]=east":                         both,
		"metadata[region]=east&metadata[tier]=gold":     {a},
		"metadata[region]=east&metadata[tier]=bronze":   nil,
		"metadata[region]=east&limit=1&status=active":   {b}, // newest first, one page
		url.Values{"metadata[tier]": {"gold"}}.Encode(): {a},
		"metadata[nope]=east":                           nil,
	} {
		if got := ids(query); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", query, got, want)
		}
	}
	// Payments, the same way.
	acct := payAccount(t, api, key, platform, "payer", 100_000, true)
	pay := func(md map[string]string) string {
		body := payBody(acct, 100, "rtp", "123456789")
		body["metadata"] = md
		return payCreated(t, api, key, body)["id"].(string)
	}
	inv := pay(map[string]string{"invoice": "42", "customer": "c1"})
	pay(map[string]string{"invoice": "43", "customer": "c1"})
	pay(nil)
	r := api.do("GET", "/v1/payments?metadata[invoice]=42&metadata[customer]=c1", key, nil)
	if data, _ := r.JSON()["data"].([]any); len(data) != 1 || data[0].(map[string]any)["id"] != inv {
		t.Errorf("payments with invoice 42 of c1: %s", r.Body)
	}
	if data, _ := api.do("GET", "/v1/payments?metadata[customer]=c1&virtual_account_id="+acct, key, nil).JSON()["data"].([]any); len(data) != 2 {
		t.Errorf("payments of c1: %d, want 2", len(data))
	}
	for _, bad := range []string{"metadata=east", "metadata[region]=east&metadata[region]=west", "metadata[]=x",
		"metadata[" + strings.Repeat("k", 41) + "]=x", "metadata[a]=%00", "metadata[a]=%ff"} {
		for _, path := range []string{"/v1/virtual-accounts?", "/v1/payments?"} {
			e := requireError(t, api.do("GET", path+bad, key, nil), http.StatusBadRequest, "invalid_request")
			if p, _ := e["param"].(string); p != "metadata" && len(p) < 9 {
				t.Errorf("%s%s: param %v", path, bad, e["param"])
			}
		}
	}
}
