package http_test

import (
	"net/http"
	"testing"
	"time"
)

// TestRevenueShareEndpoint: the report matches its schema; a platform sees
// only its own money; the period's bounds (at most 366 days, from ≤ to,
// dates only) are 400s naming the parameter.
func TestRevenueShareEndpoint(t *testing.T) {
	api, idA, keyA := vaAPI(t)
	doc := oaDocument(t, api)
	idB, keyB := api.newPlatform("Other Payroll")
	for _, id := range []string{idA, idB} {
		vaRequire(t, api.do("PATCH", "/v1/operator/platforms/"+id, operatorKey,
			map[string]any{"revenue_share_rate": "0.5", "interest_rate": "0.05"}), http.StatusOK)
	}
	// Only B holds money: A's report must not show B's interest.
	vaCredit(t, api, keyB, vaOpenID(t, api, keyB, idB, "biz"), 100_000_000)
	api.sync()

	today := time.Now().UTC().Format("2006-01-02")
	path := "/v1/platform/revenue-share?from=" + today + "&to=" + today
	a := oaCheck(t, doc, "GET", "/platform/revenue-share", api.do("GET", path, keyA, nil))
	b := oaCheck(t, doc, "GET", "/platform/revenue-share", api.do("GET", path, keyB, nil))
	if a["total_gross"] != float64(0) || a["total_platform_share"] != float64(0) {
		t.Errorf("platform A, which holds nothing, reports %v gross, %v share", a["total_gross"], a["total_platform_share"])
	}
	if g, _ := b["total_gross"].(float64); g <= 0 {
		t.Errorf("platform B, holding $1,000,000 at 5%%, reports %v gross interest for today", b["total_gross"])
	}

	for _, tc := range []struct{ query, param string }{
		{"from=2025-01-01&to=2026-01-02", "to"}, // 367 days
		{"from=2025-01-02&to=2025-01-01", "to"}, // to before from
		{"to=2025-01-01", "from"},               // from missing
		{"from=2025-01-01&to=tomorrow", "to"},   // not a date
		{"from=2025-01-01T00:00:00Z&to=2025-01-02", "from"},
	} {
		r := api.do("GET", "/v1/platform/revenue-share?"+tc.query, keyA, nil)
		if m := requireError(t, r, http.StatusBadRequest, "invalid_request"); m["param"] != tc.param {
			t.Errorf("%s: param %v, want %s", tc.query, m["param"], tc.param)
		}
	}
	// 366 days, both ends included, is the longest period.
	vaRequire(t, api.do("GET", "/v1/platform/revenue-share?from=2024-01-01&to=2024-12-31", keyA, nil), http.StatusOK)
	vaRequire(t, api.do("GET", "/v1/platform/revenue-share?from=2025-01-01&to=2026-01-01", keyA, nil), http.StatusOK)
}
