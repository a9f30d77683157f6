package http_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	apihttp "github.com/opentreasury/treasury/http"
	"github.com/opentreasury/treasury/projections/queries"
)

// rpEvent is a past public event to seed.
type rpEvent struct {
	platformID, env, typ string
	at                   time.Time
}

// rpSeed appends public events straight into public_events (what the
// projection writes; no fan-out runs in these tests) and returns their ids.
func rpSeed(t *testing.T, api *testAPI, events []rpEvent) []string {
	t.Helper()
	ctx := context.Background()
	ids := make([]string, len(events))
	var platforms, envs, types []string
	var ats []time.Time
	for i, e := range events {
		ids[i] = domain.NewID(domain.PrefixEvent)
		platforms, envs, types, ats = append(platforms, e.platformID), append(envs, e.env), append(types, e.typ), append(ats, e.at)
	}
	if _, err := api.Pool.Exec(ctx, `INSERT INTO public_events (seq, id, type, platform_id, environment, created_at, data)
        SELECT m.seq + e.n, e.id, e.type, e.platform_id, e.environment, e.at, '{"object": {"id": "x", "object": "seeded"}}'
        FROM (SELECT coalesce(max(seq), 0) AS seq FROM public_events) m,
            unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::timestamptz[]) WITH ORDINALITY
                AS e (id, type, platform_id, environment, at, n)`, ids, types, platforms, envs, ats); err != nil {
		t.Fatal(err)
	}
	return ids
}

// rpReplayed is the ids of the events a replay queued, sorted.
func rpReplayed(t *testing.T, api *testAPI, replayID string) []string {
	t.Helper()
	rows, err := api.Pool.Query(context.Background(), `SELECT event_id FROM webhook_deliveries WHERE replay_id = $1 ORDER BY event_id`, replayID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func rpCount(t *testing.T, api *testAPI, query string, args ...any) int {
	t.Helper()
	var n int
	if err := api.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func rpWebhook(t *testing.T, api *testAPI, key string, events ...string) string {
	t.Helper()
	body := map[string]any{"url": "https://hooks.example.com/replay"}
	if len(events) > 0 {
		body["events"] = events
	}
	r := api.do("POST", "/v1/webhooks", key, body)
	if r.Status != http.StatusCreated {
		t.Fatalf("create webhook: %d %s", r.Status, r.Body)
	}
	return r.Str("id")
}

func rpTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// A replay sends exactly the events of [created_after, created_before) of
// the caller's platform and environment: of the named types, or else of
// the types the endpoint subscribes to.
func TestWebhookReplaySelectsTheWindowAndTypes(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Replay Window")
	otherPlatform, _ := api.newPlatform("Replay Other")
	some := rpWebhook(t, api, key, "payment.created", "kyb.approved")
	all := rpWebhook(t, api, key)

	t0 := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	ids := rpSeed(t, api, []rpEvent{
		{platform, "sandbox", "payment.created", t0},                           // 0: at the start: in
		{platform, "sandbox", "payment.completed", t0.Add(time.Minute)},        // 1: in, not subscribed by some
		{platform, "sandbox", "kyb.approved", t1.Add(-time.Microsecond)},       // 2: in, just before the end
		{platform, "sandbox", "payment.created", t1},                           // 3: at the end: out
		{platform, "sandbox", "payment.created", t0.Add(-time.Microsecond)},    // 4: just before the start: out
		{otherPlatform, "sandbox", "payment.created", t0.Add(2 * time.Minute)}, // 5: another platform's: out
		{platform, "live", "payment.created", t0.Add(3 * time.Minute)},         // 6: live: out
	})
	window := map[string]any{"created_after": rpTime(t0), "created_before": rpTime(t1)}
	sorted := func(s ...string) []string { slices.Sort(s); return s }
	for _, tc := range []struct {
		name     string
		endpoint string
		types    []string
		want     []string
	}{
		{"the endpoint's subscriptions", some, nil, sorted(ids[0], ids[2])},
		{"every type (\"*\")", all, nil, sorted(ids[0], ids[1], ids[2])},
		{"a named type the endpoint does not subscribe to", some, []string{"payment.completed"}, sorted(ids[1])},
		{"two named types", all, []string{"payment.created", "kyb.approved"}, sorted(ids[0], ids[2])},
		{"a named type with no event", all, []string{"payment.failed"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := map[string]any{"created_after": window["created_after"], "created_before": window["created_before"]}
			if tc.types != nil {
				body["types"] = tc.types
			}
			r := api.do("POST", "/v1/webhooks/"+tc.endpoint+"/replay", key, body)
			if r.Status != http.StatusCreated {
				t.Fatalf("replay: %d %s", r.Status, r.Body)
			}
			v := r.JSON()
			if !strings.HasPrefix(r.Str("id"), "rpl_") || v["object"] != "webhook_replay" || v["webhook_id"] != tc.endpoint ||
				v["created_after"] != t0.Format(queries.TimeFormat) || v["created_before"] != t1.Format(queries.TimeFormat) || v["created_at"] == nil {
				t.Errorf("replay %s", r.Body)
			}
			if n, _ := v["replayed"].(float64); int(n) != len(tc.want) {
				t.Errorf("replayed %v, want %d", v["replayed"], len(tc.want))
			}
			if tc.types == nil && v["types"] != nil {
				t.Errorf("types %v, want null", v["types"])
			} else if tc.types != nil && len(v["types"].([]any)) != len(tc.types) {
				t.Errorf("types %v, want %v", v["types"], tc.types)
			}
			if got := rpReplayed(t, api, r.Str("id")); !slices.Equal(got, tc.want) {
				t.Errorf("replayed events %v, want %v", got, tc.want)
			}
		})
	}

	// A window in the future: fine, nothing to send.
	r := api.do("POST", "/v1/webhooks/"+all+"/replay", key, map[string]any{
		"created_after": rpTime(time.Now().Add(time.Hour)), "created_before": rpTime(time.Now().Add(2 * time.Hour))})
	if r.Status != http.StatusCreated || r.JSON()["replayed"] != float64(0) {
		t.Errorf("future window: %d %s, want 201 and replayed 0", r.Status, r.Body)
	}

	// The deliveries show their replay; the fan-out's (here a test event) null.
	if r := api.do("POST", "/v1/webhooks/"+some+"/test", key, nil); r.Status != http.StatusAccepted {
		t.Fatalf("test: %d %s", r.Status, r.Body)
	}
	list := api.do("GET", "/v1/webhooks/"+some+"/deliveries?limit=100", key, nil).JSON()
	replays, nulls := 0, 0
	for _, item := range list["data"].([]any) {
		d := item.(map[string]any)
		rid, present := d["replay_id"]
		switch {
		case !present:
			t.Errorf("delivery without replay_id: %v", d)
		case rid == nil:
			nulls++
		case strings.HasPrefix(rid.(string), "rpl_"):
			replays++
		}
	}
	if replays != 3 || nulls != 1 {
		t.Errorf("deliveries: %d replayed, %d with replay_id null; want 3 and 1", replays, nulls)
	}
}

// At most 10,000 events: one more is 400 replay_too_large and queues
// nothing; exactly 10,000 are queued.
func TestWebhookReplayLimit(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Replay Limit")
	wh := rpWebhook(t, api, key)
	t0 := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	events := make([]rpEvent, 10_001)
	for i := range events {
		events[i] = rpEvent{platform, "sandbox", "payment.created", t0.Add(time.Duration(i) * time.Millisecond)}
	}
	rpSeed(t, api, events)

	r := api.do("POST", "/v1/webhooks/"+wh+"/replay", key, map[string]any{
		"created_after": rpTime(t0), "created_before": rpTime(t0.Add(10_001 * time.Millisecond))})
	e := requireError(t, r, http.StatusBadRequest, "replay_too_large")
	if msg, _ := e["message"].(string); !strings.Contains(msg, "10000") {
		t.Errorf("message %q does not tell the limit", msg)
	}
	if n := rpCount(t, api, `SELECT count(*) FROM webhook_deliveries WHERE replay_id IS NOT NULL`); n != 0 {
		t.Errorf("a refused replay queued %d deliveries", n)
	}
	if n := rpCount(t, api, `SELECT count(*) FROM webhook_replays`); n != 0 {
		t.Errorf("a refused replay recorded %d replays", n)
	}
	if n := rpCount(t, api, `SELECT count(*) FROM events WHERE event_type = 'webhook_endpoint.replay_requested'`); n != 0 {
		t.Errorf("a refused replay appended %d events", n)
	}

	r = api.do("POST", "/v1/webhooks/"+wh+"/replay", key, map[string]any{
		"created_after": rpTime(t0), "created_before": rpTime(t0.Add(10_000 * time.Millisecond))})
	if r.Status != http.StatusCreated || r.JSON()["replayed"] != float64(10_000) {
		t.Fatalf("10,000 events: %d %s", r.Status, r.Body)
	}
	if n := rpCount(t, api, `SELECT count(*) FROM webhook_deliveries WHERE replay_id = $1 AND status = 'pending'`, r.Str("id")); n != 10_000 {
		t.Errorf("%d deliveries queued, want 10000", n)
	}
}

// Another platform's endpoint, the other environment's, an unknown or
// deleted one: 404. A disabled one: 409 invalid_state. Bad bodies: 400.
func TestWebhookReplayRefusals(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Replay Refusals")
	_, otherKey := api.newPlatform("Replay Intruder")
	liveKey := api.enableLive(platform)
	wh := rpWebhook(t, api, key)
	window := map[string]any{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T16:00:00Z"}
	replay := func(key, id string, body any) response {
		return api.do("POST", "/v1/webhooks/"+id+"/replay", key, body)
	}
	requireError(t, replay(otherKey, wh, window), http.StatusNotFound, "not_found")
	requireError(t, replay(liveKey, wh, window), http.StatusNotFound, "not_found")
	requireError(t, replay(key, domain.NewID(domain.PrefixWebhook), window), http.StatusNotFound, "not_found")
	requireError(t, replay(key, "nope", window), http.StatusNotFound, "not_found")

	for _, tc := range []struct {
		body  any
		param string
	}{
		{map[string]any{"created_before": "2026-03-02T16:00:00Z"}, "created_after"},
		{map[string]any{"created_after": "2026-03-02T15:00:00Z"}, "created_before"},
		{map[string]any{"created_after": "yesterday", "created_before": "2026-03-02T16:00:00Z"}, "created_after"},
		{map[string]any{"created_after": "2026-03-02T16:00:00Z", "created_before": "2026-03-02T15:00:00Z"}, "created_before"},
		{map[string]any{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T15:00:00Z"}, "created_before"},
		{map[string]any{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T16:00:00Z", "types": []string{"payment.exploded"}}, "types[0]"},
		{map[string]any{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T16:00:00Z", "types": []string{}}, "types"},
		{map[string]any{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T16:00:00Z", "types": "payment.created"}, "types"},
		{map[string]any{"created_after": "2026-03-02T15:00:00Z", "created_before": "2026-03-02T16:00:00Z", "window": 1}, "window"},
	} {
		e := requireError(t, replay(key, wh, tc.body), http.StatusBadRequest, "invalid_request")
		if e["param"] != tc.param {
			t.Errorf("%v: param %v, want %s", tc.body, e["param"], tc.param)
		}
	}

	if r := api.do("PATCH", "/v1/webhooks/"+wh, key, map[string]any{"status": "disabled"}); r.Status != http.StatusOK {
		t.Fatalf("disable: %d %s", r.Status, r.Body)
	}
	requireError(t, replay(key, wh, window), http.StatusConflict, "invalid_state")
	if r := api.do("DELETE", "/v1/webhooks/"+wh, key, nil); r.Status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	requireError(t, replay(key, wh, window), http.StatusNotFound, "not_found")
	if n := rpCount(t, api, `SELECT count(*) FROM webhook_replays`); n != 0 {
		t.Errorf("refused replays recorded %d replays", n)
	}
}

// The same key and body answer the first replay and queue nothing again;
// the same key on another endpoint is another request.
func TestWebhookReplayIdempotency(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platform, key := api.newPlatform("Replay Idempotency")
	a, b := rpWebhook(t, api, key), rpWebhook(t, api, key)
	t0 := time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)
	rpSeed(t, api, []rpEvent{{platform, "sandbox", "payment.created", t0}, {platform, "sandbox", "payment.failed", t0}})
	window := map[string]any{"created_after": rpTime(t0), "created_before": rpTime(t0.Add(time.Second))}

	first := api.do("POST", "/v1/webhooks/"+a+"/replay", key, window, "Idempotency-Key", "replay-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	again := api.do("POST", "/v1/webhooks/"+a+"/replay", key, window, "Idempotency-Key", "replay-1")
	if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || again.Str("id") != first.Str("id") ||
		again.JSON()["replayed"] != float64(2) {
		t.Fatalf("again: %d %s", again.Status, again.Body)
	}
	if n := rpCount(t, api, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, a); n != 2 {
		t.Errorf("%d deliveries after a replayed request, want 2", n)
	}
	conflict := requireError(t, api.do("POST", "/v1/webhooks/"+b+"/replay", key, window, "Idempotency-Key", "replay-1"),
		http.StatusConflict, "idempotency_conflict")
	if conflict["resource_id"] != first.Str("id") {
		t.Errorf("conflict names %v, want %s", conflict["resource_id"], first.Str("id"))
	}
	if n := rpCount(t, api, `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`, b); n != 0 {
		t.Errorf("the conflicting request queued %d deliveries", n)
	}
}
