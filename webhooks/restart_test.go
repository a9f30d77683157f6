package webhooks_test

import (
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
)

// TestDeliveriesDueSurviveARestart: deliveries that were due while no
// sender ran, and one a sender claimed and then died with (its lease is
// left to lapse), are all delivered by a sender started afterwards, each
// exactly once.
func TestDeliveriesDueSurviveARestart(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	ids := []string{e.test(t, wh.ID), e.test(t, wh.ID), e.test(t, wh.ID)}

	// A sender claimed the first one and died before sending: its lease
	// holds the delivery back. Let the lease lapse (as time would).
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() + interval '30 seconds' WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}

	s := e.sender(true) // the restarted process
	for _, id := range ids {
		if d := e.sendUntil(t, s, wh.ID, id, 15*time.Second); d.Status != "succeeded" || len(d.Attempts) != 1 {
			t.Fatalf("delivery %s after the restart: %+v", id, d)
		}
	}
	if n, err := s.SendDue(e.ctx); err != nil || n != 0 {
		t.Fatalf("a second pass sent %d (%v); every delivery was already done", n, err)
	}
	got := map[string]int{}
	for _, r := range rcv.requests() {
		got[r.id]++
	}
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("delivery %s arrived %d times, want once", id, got[id])
		}
	}
}

// TestWebhookEndpointRules: live endpoints must be https; event types
// must be known; another platform's endpoint does not exist.
func TestWebhookEndpointRules(t *testing.T) {
	e := setup(t)
	url := func(s string) *string { return &s }
	live := app.Caller{PlatformID: e.c.PlatformID, Environment: e.c.Environment}
	if _, err := e.app.EnableLive(e.ctx, app.Meta{}, e.c.PlatformID); err != nil {
		t.Fatal(err)
	}
	live.Environment = liveEnv()
	if _, err := e.app.CreateWebhook(e.ctx, app.Meta{}, nil, live, app.WebhookInput{URL: url("http://example.com/hook")}); paramOf(err) != "url" {
		t.Fatalf("live http endpoint: %v, want invalid url", err)
	}
	if _, err := e.app.CreateWebhook(e.ctx, app.Meta{}, nil, live, app.WebhookInput{URL: url("https://example.com/hook")}); err != nil {
		t.Fatalf("live https endpoint: %v", err)
	}
	if _, err := e.app.CreateWebhook(e.ctx, app.Meta{}, nil, e.c, app.WebhookInput{URL: url("http://example.com/hook"), Events: []string{"payment.nope"}}); paramOf(err) != "events[0]" {
		t.Fatalf("unknown event type: %v, want invalid events[0]", err)
	}
	wh := e.createWebhook(t, "http://example.com/hook", nil)
	if err := e.app.UpdateWebhook(e.ctx, app.Meta{}, app.Caller{PlatformID: "plt_other", Environment: e.c.Environment}, wh.ID, app.WebhookInput{}); codeOf(err) != "not_found" {
		t.Fatalf("another platform's endpoint: %v, want not_found", err)
	}
}

func liveEnv() domain.Environment { return domain.Live }

func paramOf(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		return de.Param
	}
	return ""
}

func codeOf(err error) string { return string(domain.CodeOf(err)) }

// TestManualRetryResendsAFailedDelivery: a delivery that failed for good
// goes back to pending on retry and is sent again, under the same id.
func TestManualRetryResendsAFailedDelivery(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{500, 200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	e.setPolicy(t, wh.ID, 1, 1, 1)
	id := e.test(t, wh.ID)
	if d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second); d.Status != "failed" || len(d.Attempts) != 1 {
		t.Fatalf("with max_attempts 1 and a 500: %+v", d)
	}
	if err := e.app.RetryDelivery(e.ctx, app.Meta{}, e.c, wh.ID, id); err != nil {
		t.Fatal(err)
	}
	if d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second); d.Status != "succeeded" || len(d.Attempts) != 2 {
		t.Fatalf("after the manual retry: %+v", d)
	}
	reqs := rcv.requests()
	if len(reqs) != 2 || reqs[0].id != id || reqs[1].id != id {
		t.Fatalf("requests: %+v", reqs)
	}
	if err := e.app.RetryDelivery(e.ctx, app.Meta{}, e.c, wh.ID, "msg_01hzzzzzzzzzzzzzzzzzzzzzzz"); codeOf(err) != "not_found" {
		t.Fatalf("retry of an unknown delivery: %v", err)
	}
}
