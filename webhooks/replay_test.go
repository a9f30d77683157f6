package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/webhooks"
)

// seedPublicEvents appends n public events of the caller's scope created
// at at, straight into public_events (what the projection writes), and
// moves the fan-out's checkpoint past them: they are past events, which
// only a replay sends.
func (e env) seedPublicEvents(t *testing.T, n int, at time.Time) {
	t.Helper()
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO public_events (seq, id, type, platform_id, environment, created_at, data)
        SELECT m.seq + i, 'evt_seed' || lpad(i::text, 22, '0'), 'virtual_account.created', $2, $3, $4,
            '{"object": {"id": "va_seed' || i || '", "object": "virtual_account"}}'
        FROM (SELECT coalesce(max(seq), 0) AS seq FROM public_events) m, generate_series(1, $1) AS i`,
		n, e.c.PlatformID, e.c.Environment.String(), at); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO subscription_checkpoints (name, global_position)
        VALUES ($1, (SELECT max(seq) FROM public_events))
        ON CONFLICT (name) DO UPDATE SET global_position = excluded.global_position, updated_at = now()`, webhooks.FanoutName); err != nil {
		t.Fatal(err)
	}
}

func (e env) replay(t *testing.T, endpointID string, r webhook.ReplayRequest) string {
	t.Helper()
	res, err := e.app.ReplayWebhook(e.ctx, app.Meta{}, nil, e.c, endpointID, r)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

// A replayed delivery is sent like the fan-out's: signed with the
// endpoint's secret, its own webhook-id, and the event's body as first
// sent (its original id) — beside the fan-out's delivery of the same event.
func TestReplaySendsTheEventAgainSigned(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, []string{"virtual_account.created"})
	e.startRouter(t)
	e.openAccount(t)
	e.openAccount(t)
	e.catchUp(t)
	const normal = `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND replay_id IS NULL`
	waitFor(t, 15*time.Second, "the fan-out's deliveries", func() bool { return e.count(t, normal, wh.ID) == 2 })

	replayID := e.replay(t, wh.ID, webhook.ReplayRequest{CreatedAfter: time.Now().Add(-time.Hour), CreatedBefore: time.Now().Add(time.Hour)})
	replayed := map[string]string{} // delivery id → event id
	for _, d := range e.deliveries(t, wh.ID) {
		if d.ReplayID != nil && *d.ReplayID == replayID {
			replayed[d.ID] = d.EventID
		} else if d.ReplayID != nil {
			t.Errorf("delivery %s carries replay %s, want %s", d.ID, *d.ReplayID, replayID)
		}
	}
	if len(replayed) != 2 {
		t.Fatalf("%d replayed deliveries, want 2", len(replayed))
	}
	if n := e.count(t, `SELECT count(*) FROM webhook_deliveries r JOIN webhook_deliveries f
            ON f.endpoint_id = r.endpoint_id AND f.event_id = r.event_id AND f.replay_id IS NULL AND f.payload = r.payload
        WHERE r.replay_id = $1`, replayID); n != 2 {
		t.Errorf("%d replayed deliveries carry the fan-out's body of their event, want 2", n)
	}

	s := e.sender(true)
	for id := range replayed {
		if d := e.sendUntil(t, s, wh.ID, id, 15*time.Second); d.Status != "succeeded" {
			t.Errorf("replayed delivery %s: %s", id, d.Status)
		}
	}
	seen := 0
	for _, rq := range rcv.requests() {
		eventID, ok := replayed[rq.id]
		if !ok {
			continue
		}
		seen++
		if !verify(t, rq, wh.Secret) {
			t.Errorf("replayed delivery %s: signature %q not valid for the endpoint's secret", rq.id, rq.sig)
		}
		var body struct{ ID, Object, Type string }
		if err := json.Unmarshal(rq.body, &body); err != nil || body.ID != eventID || body.Object != "event" || body.Type != "virtual_account.created" {
			t.Errorf("replayed delivery %s: body %s, want the event %s (%v)", rq.id, rq.body, eventID, err)
		}
	}
	if seen != 2 {
		t.Errorf("the endpoint received %d replayed deliveries, want 2", seen)
	}
}

// A replay of 10,000 events drains behind new events: a new event reaches
// the replay's endpoint and another one while most of the replay waits.
func TestReplayDoesNotHoldBackNewEvents(t *testing.T) {
	e := setup(t)
	past := time.Now().Add(-24 * time.Hour)
	e.seedPublicEvents(t, webhook.MaxReplayEvents, past)

	// The receiver takes 20 ms over a replayed event (a slow consumer);
	// it notes when each endpoint gets a new one.
	var mu sync.Mutex
	fresh := map[string]bool{}
	receive := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct{ ID string }
			_ = json.NewDecoder(r.Body).Decode(&body)
			if strings.HasPrefix(body.ID, "evt_seed") {
				time.Sleep(20 * time.Millisecond)
				return
			}
			mu.Lock()
			fresh[name] = true
			mu.Unlock()
		})
	}
	same := httptest.NewServer(receive("same"))
	defer same.Close()
	other := httptest.NewServer(receive("other"))
	defer other.Close()
	wh := e.createWebhook(t, same.URL, nil)
	e.createWebhook(t, other.URL, nil)

	replayID := e.replay(t, wh.ID, webhook.ReplayRequest{CreatedAfter: past.Add(-time.Minute), CreatedBefore: past.Add(time.Minute)})
	const queued = `SELECT count(*) FROM webhook_deliveries WHERE replay_id = $1 AND status = 'pending'`
	if n := e.count(t, queued, replayID); n != webhook.MaxReplayEvents {
		t.Fatalf("%d replayed deliveries queued, want %d", n, webhook.MaxReplayEvents)
	}

	e.startRouter(t)
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	s := &webhooks.Sender{Pool: e.pool, App: e.app, Log: e.log, AllowPrivate: true, Concurrency: 4}
	go func() { defer close(stopped); s.Run(ctx) }()
	defer func() { cancel(); <-stopped }()
	waitFor(t, 15*time.Second, "the replay to start", func() bool { return e.count(t, queued, replayID) < webhook.MaxReplayEvents })

	e.openAccount(t) // a new event, for both endpoints
	e.catchUp(t)
	waitFor(t, 15*time.Second, "the new event at both endpoints", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return fresh["same"] && fresh["other"]
	})
	if n := e.count(t, queued, replayID); n < webhook.MaxReplayEvents/2 {
		t.Errorf("only %d of %d replayed deliveries still queued when the new event arrived: it waited behind the replay",
			n, webhook.MaxReplayEvents)
	}
}
