package http_test

import (
	"net/http"
	"testing"
)

// Webhook ports: 1..65535 everywhere; live endpoints only on 443 or from
// 1024 up (the well-known ports are services a webhook must not be aimed
// at); sandbox endpoints on any valid port, as they may target a
// developer's machine. The same rules hold when PATCH changes the url.
func TestWebhookURLPorts(t *testing.T) {
	api, platformID, sandboxKey := vaAPI(t)
	liveKey := api.enableLive(platformID)

	for _, tc := range []struct {
		key, env, url string
		ok            bool
	}{
		{sandboxKey, "sandbox", "http://localhost:0/hook", false},
		{sandboxKey, "sandbox", "http://localhost:65536/hook", false},
		{sandboxKey, "sandbox", "http://localhost:99999/hook", false},
		{sandboxKey, "sandbox", "http://:8080/hook", false},
		{sandboxKey, "sandbox", "http://localhost:1/hook", true},
		{sandboxKey, "sandbox", "http://localhost:25/hook", true},
		{sandboxKey, "sandbox", "http://localhost:6379/hook", true},
		{sandboxKey, "sandbox", "http://localhost:65535/hook", true},
		{sandboxKey, "sandbox", "http://localhost/hook", true},
		{liveKey, "live", "https://hooks.example.com:0/hook", false},
		{liveKey, "live", "https://hooks.example.com:99999/hook", false},
		{liveKey, "live", "https://hooks.example.com:25/hook", false},
		{liveKey, "live", "https://hooks.example.com:22/hook", false},
		{liveKey, "live", "https://hooks.example.com:80/hook", false},
		{liveKey, "live", "https://hooks.example.com:1023/hook", false},
		{liveKey, "live", "https://hooks.example.com/hook", true},
		{liveKey, "live", "https://hooks.example.com:443/hook", true},
		{liveKey, "live", "https://hooks.example.com:1024/hook", true},
		{liveKey, "live", "https://hooks.example.com:8443/hook", true},
		{liveKey, "live", "https://hooks.example.com:65535/hook", true},
	} {
		r := api.do("POST", "/v1/webhooks", tc.key, map[string]any{"url": tc.url})
		if tc.ok {
			if r.Status != http.StatusCreated {
				t.Errorf("%s POST %s: %d %s, want 201", tc.env, tc.url, r.Status, r.Body)
			}
			continue
		}
		requireURLRefused(t, r, tc.env+" POST "+tc.url)
	}

	for _, tc := range []struct{ key, env, from, to string }{
		{sandboxKey, "sandbox", "http://localhost:8080/hook", "http://localhost:0/hook"},
		{sandboxKey, "sandbox", "http://localhost:8080/hook", "http://localhost:70000/hook"},
		{liveKey, "live", "https://hooks.example.com/hook", "https://hooks.example.com:25/hook"},
		{liveKey, "live", "https://hooks.example.com/hook", "https://hooks.example.com:99999/hook"},
	} {
		id := vaRequire(t, api.do("POST", "/v1/webhooks", tc.key, map[string]any{"url": tc.from}), http.StatusCreated)["id"].(string)
		requireURLRefused(t, api.do("PATCH", "/v1/webhooks/"+id, tc.key, map[string]any{"url": tc.to}), tc.env+" PATCH "+tc.to)
		if got := vaGet(t, api, tc.key, "/v1/webhooks/"+id)["url"]; got != tc.from {
			t.Errorf("%s: a refused PATCH changed the url to %v", tc.env, got)
		}
	}
}

func requireURLRefused(t *testing.T, r response, what string) {
	t.Helper()
	m := r.JSON()
	if r.Status != http.StatusBadRequest || m["code"] != "invalid_request" || m["param"] != "url" || m["message"] == "" {
		t.Errorf("%s: %d %s, want 400 invalid_request param url", what, r.Status, r.Body)
	}
}
