package http_test

import (
	"net/http"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

func TestPlatformLifecycleSmoke(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	id, key := api.newPlatform("Acme Payroll")
	r := api.do("GET", "/v1/platform", key, nil)
	if r.Status != http.StatusOK || r.Str("id") != id || r.Str("environment") != "sandbox" {
		t.Fatalf("GET /platform: %d %s", r.Status, r.Body)
	}
}
