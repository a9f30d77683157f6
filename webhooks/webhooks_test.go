package webhooks_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/webhooks"
)

type env struct {
	ctx  context.Context
	pool *pgxpool.Pool
	app  *app.App
	c    app.Caller
	log  *slog.Logger
}

func setup(t *testing.T) env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool := pgtest.Pool(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	a := app.New(pool, nil, log)
	res, err := a.RegisterPlatform(ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Acme", ContactEmail: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApprovePlatform(ctx, app.Meta{}, res.ID); err != nil {
		t.Fatal(err)
	}
	return env{ctx: ctx, pool: pool, app: a, c: app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}, log: log}
}

func (e env) catchUp(t *testing.T) {
	t.Helper()
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := projections.CatchUp(e.ctx, e.pool, head, nil); err != nil {
		t.Fatal(err)
	}
}

func (e env) openAccount(t *testing.T) {
	t.Helper()
	if _, err := e.app.OpenVirtualAccount(e.ctx, app.Meta{}, nil, e.c, app.OpenVirtualAccount{PlatformID: e.c.PlatformID, EntityRef: "biz", Type: "checking"}); err != nil {
		t.Fatal(err)
	}
}

func (e env) createWebhook(t *testing.T, url string, events []string) app.Result {
	t.Helper()
	res, err := e.app.CreateWebhook(e.ctx, app.Meta{}, nil, e.c, app.WebhookInput{URL: &url, Events: events})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Secret, webhooks.SecretPrefix) {
		t.Fatalf("secret %q", res.Secret)
	}
	return res
}

func (e env) setPolicy(t *testing.T, id string, maxAttempts, initial, maxDelay int) {
	t.Helper()
	if err := e.app.UpdateWebhook(e.ctx, app.Meta{}, e.c, id, app.WebhookInput{RetryPolicy: &platform.RetryPolicyPatch{
		MaxAttempts: &maxAttempts, InitialDelaySeconds: &initial, MaxDelaySeconds: &maxDelay}}); err != nil {
		t.Fatal(err)
	}
}

func (e env) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(e.ctx, query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds, failing after limit.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startRouter runs a fresh feed and router until the returned stop is called.
func (e env) startRouter(t *testing.T) (stop func()) {
	t.Helper()
	r, err := webhooks.NewRouter([]*webhooks.FeedSubscriber{{Pool: e.pool, Poll: 20 * time.Millisecond, Log: e.log}},
		&webhooks.Fanout{Pool: e.pool}, e.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("router: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Error("router did not stop")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func (e env) deliveries(t *testing.T, endpointID string) []queries.DeliveryView {
	t.Helper()
	l, err := queries.ListDeliveries(e.ctx, e.pool, queries.Scope{PlatformID: e.c.PlatformID, Environment: e.c.Environment},
		endpointID, "", queries.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return l.Data
}

func (e env) delivery(t *testing.T, endpointID, id string) queries.DeliveryView {
	t.Helper()
	for _, d := range e.deliveries(t, endpointID) {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("delivery %s of %s not found", id, endpointID)
	return queries.DeliveryView{}
}

// sendUntil calls SendDue until the delivery leaves pending (bounded).
func (e env) sendUntil(t *testing.T, s *webhooks.Sender, endpointID, id string, limit time.Duration) queries.DeliveryView {
	t.Helper()
	var d queries.DeliveryView
	waitFor(t, limit, "delivery "+id+" to finish", func() bool {
		if _, err := s.SendDue(e.ctx); err != nil {
			t.Logf("SendDue: %v", err)
		}
		d = e.delivery(t, endpointID, id)
		return d.Status != "pending"
	})
	return d
}

func TestFanoutExactlyOnceAcrossRestart(t *testing.T) {
	e := setup(t)
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	all := e.createWebhook(t, srv.URL, nil)
	payments := e.createWebhook(t, srv.URL, []string{"payment.completed"})

	for range 3 {
		e.openAccount(t)
	}
	e.catchUp(t)
	const vaCreated = `SELECT count(*) FROM public_events WHERE platform_id = $1 AND environment = 'sandbox' AND type = 'virtual_account.created'`
	if n := e.count(t, vaCreated, e.c.PlatformID); n != 3 {
		t.Fatalf("%d virtual_account.created public events, want 3", n)
	}
	const mine = `SELECT count(*) FROM public_events WHERE platform_id = $1 AND environment = 'sandbox'`
	const delivered = `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1`
	want := e.count(t, mine, e.c.PlatformID)

	stop := e.startRouter(t)
	waitFor(t, 15*time.Second, "first fan-out", func() bool { return e.count(t, delivered, all.ID) >= want })
	stop()

	e.startRouter(t)
	e.openAccount(t)
	e.catchUp(t)
	want = e.count(t, mine, e.c.PlatformID)
	waitFor(t, 15*time.Second, "fan-out after restart", func() bool { return e.count(t, delivered, all.ID) >= want })

	const vaDelivered = `SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = $1 AND event_type = 'virtual_account.created'`
	if n := e.count(t, vaDelivered, all.ID); n != 4 {
		t.Errorf("%d virtual_account.created deliveries, want 4", n)
	}
	if n := e.count(t, delivered, all.ID); n != want {
		t.Errorf("%d deliveries, want %d (one per public event)", n, want)
	}
	if n := e.count(t, `SELECT count(*) FROM (SELECT event_id FROM webhook_deliveries WHERE endpoint_id = $1
        GROUP BY event_id HAVING count(*) > 1) d`, all.ID); n != 0 {
		t.Errorf("%d events delivered more than once", n)
	}
	if n := e.count(t, `SELECT count(*) FROM public_events p WHERE platform_id = $1 AND environment = 'sandbox'
        AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.endpoint_id = $2 AND d.event_id = p.id)`, e.c.PlatformID, all.ID); n != 0 {
		t.Errorf("%d public events without a delivery", n)
	}
	if n := e.count(t, delivered, payments.ID); n != 0 {
		t.Errorf("the payment.completed endpoint got %d deliveries", n)
	}
}

type received struct {
	id, ts, sig string
	body        []byte
}

// receiver answers with the codes in turn (the last one thereafter) and
// records each request.
type receiver struct {
	mu    sync.Mutex
	codes []int
	body  string
	got   []received
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.got = append(r.got, received{req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp"), req.Header.Get("webhook-signature"), b})
	code := r.codes[min(len(r.got), len(r.codes))-1]
	r.mu.Unlock()
	w.WriteHeader(code)
	_, _ = io.WriteString(w, r.body)
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// verify reports whether one of the request's signatures is valid for secret.
func verify(t *testing.T, rq received, secret string) bool {
	t.Helper()
	ts, err := strconv.ParseInt(rq.ts, 10, 64)
	if err != nil {
		t.Fatalf("webhook-timestamp %q: %v", rq.ts, err)
	}
	if d := time.Since(time.Unix(ts, 0)); d < -time.Minute || d > time.Minute {
		t.Errorf("webhook-timestamp %d is %s from now", ts, d)
	}
	want, err := webhooks.Sign(secret, rq.id, ts, rq.body)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strings.Fields(rq.sig) {
		if s == want {
			return true
		}
	}
	return false
}

func (e env) sender(private bool) *webhooks.Sender {
	// A round waits for every answer, however slow the machine: the tests
	// that call SendDue check its outcome right after.
	return &webhooks.Sender{Pool: e.pool, App: e.app, Log: e.log, AllowPrivate: private, RoundWait: time.Minute}
}

func (e env) test(t *testing.T, endpointID string) string {
	t.Helper()
	res, err := e.app.TestWebhook(e.ctx, app.Meta{}, e.c, endpointID)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

func TestSenderSuccessSigned(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{200}, body: strings.Repeat("x", 10000)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	id := e.test(t, wh.ID)

	d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second)
	if d.Status != "succeeded" || len(d.Attempts) != 1 {
		t.Fatalf("delivery %+v", d)
	}
	a := d.Attempts[0]
	if a.StatusCode == nil || *a.StatusCode != 200 || a.Error != nil {
		t.Errorf("attempt status %v error %v", a.StatusCode, a.Error)
	}
	if a.ResponseBody == nil || len(*a.ResponseBody) > webhooks.MaxResponseBody || len(*a.ResponseBody) == 0 {
		t.Errorf("stored response body: %v bytes, want 1..%d", func() int {
			if a.ResponseBody == nil {
				return -1
			}
			return len(*a.ResponseBody)
		}(), webhooks.MaxResponseBody)
	}
	got := rcv.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests, want 1", len(got))
	}
	if got[0].id != id {
		t.Errorf("webhook-id %q, want the delivery id %q", got[0].id, id)
	}
	if !verify(t, got[0], wh.Secret) {
		t.Errorf("signature %q not valid for the endpoint's secret", got[0].sig)
	}
}

func TestSenderRetriesThenSucceeds(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{500, 500, 200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	e.setPolicy(t, wh.ID, 5, 1, 2)
	id := e.test(t, wh.ID)

	d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second)
	if d.Status != "succeeded" {
		t.Fatalf("status %s", d.Status)
	}
	var codes []int
	for _, a := range d.Attempts {
		if a.StatusCode == nil {
			codes = append(codes, 0)
		} else {
			codes = append(codes, *a.StatusCode)
		}
	}
	if len(codes) != 3 || codes[0] != 500 || codes[1] != 500 || codes[2] != 200 {
		t.Fatalf("attempt codes %v, want [500 500 200]", codes)
	}
	got := rcv.requests()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for i, rq := range got {
		if rq.id != id {
			t.Errorf("request %d: webhook-id %q, want %q (stable across retries)", i, rq.id, id)
		}
		if !verify(t, rq, wh.Secret) {
			t.Errorf("request %d: bad signature", i)
		}
	}
}

func TestSenderFailsAfterMaxAttempts(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{500}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	e.setPolicy(t, wh.ID, 2, 1, 1)
	id := e.test(t, wh.ID)

	d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second)
	if d.Status != "failed" || len(d.Attempts) != 2 || len(rcv.requests()) != 2 {
		t.Fatalf("status %s, %d attempts, %d requests; want failed after 2", d.Status, len(d.Attempts), len(rcv.requests()))
	}
	if d.NextAttemptAt != nil {
		t.Errorf("failed delivery still has next_attempt_at %v", d.NextAttemptAt)
	}
}

func TestSender410DisablesEndpoint(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{410}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	id := e.test(t, wh.ID)

	d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second)
	if d.Status != "failed" || len(d.Attempts) != 1 {
		t.Fatalf("status %s, %d attempts; want failed after 1", d.Status, len(d.Attempts))
	}
	v, err := queries.GetWebhook(e.ctx, e.pool, queries.Scope{PlatformID: e.c.PlatformID, Environment: e.c.Environment}, wh.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != "disabled" || v.DeliveryStatus.State != "disabled" {
		t.Errorf("endpoint status %s, state %s; want disabled", v.Status, v.DeliveryStatus.State)
	}
}

func TestRotateSecretSignsWithBoth(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	rot, err := e.app.RotateWebhookSecret(e.ctx, app.Meta{}, e.c, wh.ID)
	if err != nil {
		t.Fatal(err)
	}
	if rot.Secret == wh.Secret || !strings.HasPrefix(rot.Secret, webhooks.SecretPrefix) {
		t.Fatalf("rotated secret %q", rot.Secret)
	}
	id := e.test(t, wh.ID)
	if d := e.sendUntil(t, e.sender(true), wh.ID, id, 15*time.Second); d.Status != "succeeded" {
		t.Fatalf("status %s", d.Status)
	}
	got := rcv.requests()
	if len(got) != 1 {
		t.Fatalf("%d requests", len(got))
	}
	if n := len(strings.Fields(got[0].sig)); n != 2 {
		t.Errorf("webhook-signature %q has %d signatures, want 2", got[0].sig, n)
	}
	if !verify(t, got[0], wh.Secret) {
		t.Error("no signature valid for the old secret")
	}
	if !verify(t, got[0], rot.Secret) {
		t.Error("no signature valid for the new secret")
	}
}

func TestSenderBlocksPrivateAddress(t *testing.T) {
	e := setup(t)
	rcv := &receiver{codes: []int{200}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	id := e.test(t, wh.ID)

	if _, err := e.sender(false).SendDue(e.ctx); err != nil {
		t.Fatal(err)
	}
	d := e.delivery(t, wh.ID, id)
	if len(d.Attempts) != 1 {
		t.Fatalf("%d attempts, want 1", len(d.Attempts))
	}
	a := d.Attempts[0]
	if a.Error == nil || !strings.Contains(*a.Error, webhooks.ErrBlockedAddress.Error()) {
		t.Errorf("attempt error %v, want one mentioning %q", a.Error, webhooks.ErrBlockedAddress)
	}
	if a.StatusCode != nil {
		t.Errorf("attempt status code %d", *a.StatusCode)
	}
	if d.Status == "succeeded" {
		t.Error("delivery succeeded")
	}
	if n := len(rcv.requests()); n != 0 {
		t.Errorf("%d requests reached the receiver", n)
	}
}

// TestSenderKeepsAnotherSendersOutcome: an attempt that outlived its lease
// (another sender took the delivery over and succeeded meanwhile) records
// its attempt but does not put the delivery back to pending.
func TestSenderKeepsAnotherSendersOutcome(t *testing.T) {
	e := setup(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The other sender's success, committed while this request is in flight.
		if _, err := e.pool.Exec(r.Context(), `UPDATE webhook_deliveries SET status = 'succeeded', attempt_count = attempt_count + 1,
            next_attempt_at = NULL WHERE id = $1`, r.Header.Get("webhook-id")); err != nil {
			t.Error(err)
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	wh := e.createWebhook(t, srv.URL, nil)
	e.setPolicy(t, wh.ID, 5, 1, 2)
	id := e.test(t, wh.ID)

	if _, err := e.sender(true).SendDue(e.ctx); err != nil {
		t.Fatal(err)
	}
	d := e.delivery(t, wh.ID, id)
	if d.Status != "succeeded" {
		t.Errorf("delivery %s after the late attempt, want succeeded (the other sender's outcome)", d.Status)
	}
	if len(d.Attempts) != 1 || d.Attempts[0].StatusCode == nil || *d.Attempts[0].StatusCode != 500 {
		t.Errorf("attempts %+v, want the late 500 recorded", d.Attempts)
	}
}

// TestSlowEndpointDoesNotHoldTheOthers: a round waits at most RoundWait
// for its requests; one to an endpoint that hangs is recorded when it
// answers, and that endpoint gets nothing more meanwhile, while every
// other endpoint's deliveries are sent and recorded (a round used to wait
// for its slowest request: a hanging endpoint held them all up to the
// client's 10 s).
func TestSlowEndpointDoesNotHoldTheOthers(t *testing.T) {
	e := setup(t)
	slow := newHangingEndpoint(t)
	unblock, slowRequests := slow.release, &slow.requests
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer fast.Close()
	slowWH, fastWH := e.createWebhook(t, slow.URL, nil), e.createWebhook(t, fast.URL, nil)
	var slowIDs, fastIDs []string
	for range 10 { // older than the fast ones: the first round is all slow
		slowIDs = append(slowIDs, e.test(t, slowWH.ID))
	}
	for range 6 {
		fastIDs = append(fastIDs, e.test(t, fastWH.ID))
	}

	s := e.sender(true)
	s.Concurrency = 4 // rounds of 8
	s.RoundWait = webhooks.DefaultRoundWait
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); s.Run(ctx) }()
	defer func() { unblock(); cancel(); <-stopped }()

	waitFor(t, s.RoundWait+4*time.Second, "the fast endpoint's deliveries to succeed while the slow one hangs", func() bool {
		for _, id := range fastIDs {
			if e.delivery(t, fastWH.ID, id).Status != "succeeded" {
				return false
			}
		}
		return true
	})
	if n := slowRequests.Load(); n != 8 {
		t.Errorf("%d requests reached the hanging endpoint, want the first round's 8 and no more", n)
	}
	for _, id := range slowIDs {
		if st := e.delivery(t, slowWH.ID, id).Status; st != "pending" {
			t.Errorf("slow delivery %s is %s while its endpoint hangs", id, st)
		}
	}
	unblock()
	waitFor(t, 15*time.Second, "the slow endpoint's deliveries to succeed once it answers", func() bool {
		for _, id := range slowIDs {
			if e.delivery(t, slowWH.ID, id).Status != "succeeded" {
				return false
			}
		}
		return true
	})
}

// TestRoundsOverlap: a delivery that comes due while a round waits for its
// answers goes out at once, in a round of its own, not after the waiting
// round (Run keeps up to MaxRounds rounds going).
func TestRoundsOverlap(t *testing.T) {
	e := setup(t)
	waits := newHangingEndpoint(t)
	unblock, waiting := waits.release, waits.arrived
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer fast.Close()
	waitsWH, fastWH := e.createWebhook(t, waits.URL, nil), e.createWebhook(t, fast.URL, nil)
	first := e.test(t, waitsWH.ID)

	s := e.sender(true)
	s.RoundWait = time.Minute // a round that waits, for longer than the test
	wake, stop := runSender(e, s)
	defer func() { unblock(); stop() }()

	<-waiting // the first round's request is out, unanswered
	second := e.test(t, fastWH.ID)
	wake <- struct{}{}
	waitFor(t, 5*time.Second, "the delivery that came due during the waiting round to succeed", func() bool {
		return e.delivery(t, fastWH.ID, second).Status == "succeeded"
	})
	if st := e.delivery(t, waitsWH.ID, first).Status; st != "pending" {
		t.Errorf("the waiting round's delivery is %s before its endpoint answered", st)
	}
	unblock()
	waitFor(t, 5*time.Second, "the waiting round's delivery to succeed once answered", func() bool {
		return e.delivery(t, waitsWH.ID, first).Status == "succeeded"
	})
}

// TestAHangingEndpointIsHeldBack: an endpoint whose request has gone
// unanswered for longer than HoldBackAfter gets no new deliveries while
// rounds go on at once, so the rounds do not all end up waiting for it;
// the other endpoints' deliveries still go out at once.
//
// The claim that follows the first one's at once may still take the
// hanging endpoint's deliveries (its request is not yet HoldBackAfter
// old), so the second delivery is made only after a delivery to the other
// endpoint went out: claims run one after the other, so that one is over
// by then. A delivery made after the second and sent proves that a later
// claim has looked at the second.
func TestAHangingEndpointIsHeldBack(t *testing.T) {
	e := setup(t)
	hangs := newHangingEndpoint(t)
	unblock, requests, out := hangs.release, &hangs.requests, hangs.arrived
	fast := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer fast.Close()
	hangsWH, fastWH := e.createWebhook(t, hangs.URL, nil), e.createWebhook(t, fast.URL, nil)
	first := e.test(t, hangsWH.ID)

	s := e.sender(true)
	s.RoundWait = time.Minute
	s.HoldBackAfter = time.Nanosecond
	wake, stop := runSender(e, s)
	defer func() { unblock(); stop() }()

	sendToFast := func(what string) {
		t.Helper()
		id := e.test(t, fastWH.ID)
		select {
		case wake <- struct{}{}:
		default:
		}
		waitFor(t, 5*time.Second, what, func() bool {
			return e.delivery(t, fastWH.ID, id).Status == "succeeded"
		})
	}
	<-out // the first request hangs
	sendToFast("the other endpoint's delivery to succeed while the first request hangs")
	second := e.test(t, hangsWH.ID)
	sendToFast("the other endpoint's next delivery to succeed")
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests reached the hanging endpoint, want 1 while its first is unanswered", n)
	}
	unblock()
	waitFor(t, 5*time.Second, "the hanging endpoint's deliveries to succeed once it answers", func() bool {
		return e.delivery(t, hangsWH.ID, first).Status == "succeeded" && e.delivery(t, hangsWH.ID, second).Status == "succeeded"
	})
}

// runSender runs s until stop, woken by sends on wake.
func runSender(e env, s *webhooks.Sender) (wake chan struct{}, stop func()) {
	wake = make(chan struct{}, 1)
	s.Wake = wake
	ctx, cancel := context.WithCancel(e.ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); s.Run(ctx) }()
	return wake, func() { cancel(); <-stopped }
}

// hangingEndpoint is a webhook receiver whose requests wait until release
// is called (or their request ends). It counts them, and signals each on
// arrived (buffered; one past its room is not signalled).
type hangingEndpoint struct {
	*httptest.Server
	requests atomic.Int32
	arrived  chan struct{}
	release  func()
}

func newHangingEndpoint(t *testing.T) *hangingEndpoint {
	h := &hangingEndpoint{arrived: make(chan struct{}, 64)}
	released := make(chan struct{})
	var once sync.Once
	h.release = func() { once.Do(func() { close(released) }) }
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		select {
		case h.arrived <- struct{}{}:
		default:
		}
		select {
		case <-released:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { h.release(); h.Server.Close() })
	return h
}
