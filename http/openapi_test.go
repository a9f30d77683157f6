package http_test

import (
	"fmt"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

func TestOAProbe(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	id, key := api.newPlatform("Probe")
	show := func(label string, r response) { fmt.Printf("%s: %d %v %s\n", label, r.Status, r.Header, r.Body) }
	show("settings", api.do("GET", "/v1/platform/settings", key, nil))
	show("patch nested unknown", api.do("PATCH", "/v1/platform/settings", key, `{"sandbox":{"bogus":1}}`))
	show("patch nested type", api.do("PATCH", "/v1/platform/settings", key, `{"sandbox":{"auto_settle":"x"}}`))
	show("patch retry unknown", api.do("PATCH", "/v1/platform/settings", key, `{"webhook_retry_policy":{"x":1}}`))
	show("patch threshold str", api.do("PATCH", "/v1/platform/settings", key, `{"payment_approval_threshold":"x"}`))
	show("op rl unknown", api.do("PATCH", "/v1/operator/platforms/"+id, operatorKey, `{"rate_limit":{"per_second":5,"burst":5,"zzz":1}}`))
	show("op fee float", api.do("PATCH", "/v1/operator/platforms/"+id, operatorKey, `{"fee_schedule":{"rtp":1.5}}`))
	show("op rate num", api.do("PATCH", "/v1/operator/platforms/"+id, operatorKey, `{"interest_rate":0.3}`))
	show("op get", api.do("GET", "/v1/operator/platforms/"+id, operatorKey, nil))
	show("op list", api.do("GET", "/v1/operator/platforms?limit=1", operatorKey, nil))
	show("create key", api.do("POST", "/v1/platform/api-keys", key, `{"name":"k"}`))
	show("create key live", api.do("POST", "/v1/platform/api-keys", key, `{"name":"k","environment":"live"}`))
	show("create key badenv", api.do("POST", "/v1/platform/api-keys", key, `{"name":"k","environment":"prod"}`))
	show("platform", api.do("GET", "/v1/platform", key, nil))
	show("op on platform", api.do("GET", "/v1/platform", operatorKey, nil))
	show("unauth", api.do("GET", "/v1/platform", "sk_sandbox_xxx", nil))
	show("openapi", api.do("GET", "/v1/openapi.json", "", nil))
	show("approve twice", api.do("POST", "/v1/operator/platforms/"+id+"/approve", operatorKey, nil))
	show("404 route", api.do("GET", "/v1/nope", key, nil))
	show("405", api.do("PUT", "/v1/platform", key, nil))
	show("idem", api.do("POST", "/v1/platforms", operatorKey, `{"name":"a","contact_email":"a@b.co"}`, "Idempotency-Key", "k1"))
	show("idem replay", api.do("POST", "/v1/platforms", operatorKey, `{"contact_email":"a@b.co", "name":"a"}`, "Idempotency-Key", "k1"))
	show("idem conflict", api.do("POST", "/v1/platforms", operatorKey, `{"name":"b","contact_email":"a@b.co"}`, "Idempotency-Key", "k1"))
	show("live key settings", api.do("GET", "/v1/platform/settings", api.enableLive(id), nil))
}
