package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// bench runs the service's sections.
type bench struct {
	o     options
	svc   *service
	runID string

	sampleMu sync.Mutex
	samples  []string // idempotency keys of some created payments, to check they complete
}

// The payment every section sends: rtp (completes within 1 s in the
// sandbox) to an ordinary external account; $1.00–$9.99 plus the 50 ¢ fee,
// so a funded account ($1,000,000) never runs dry.
const (
	paymentRail        = "rtp"
	paymentDestination = `"destination":{"account_number":"123456789","routing_number":"021000021","name":"Initech LLC"}`
)

// paymentBody appends a payment request to buf.
func paymentBody(buf []byte, account string, amount int, keyPrefix string, client, seq int) []byte {
	buf = append(buf, `{"virtual_account_id":"`...)
	buf = append(buf, account...)
	buf = append(buf, `","amount":`...)
	buf = strconv.AppendInt(buf, int64(amount), 10)
	buf = append(buf, `,"rail":"`+paymentRail+`",`+paymentDestination+`,"idempotency_key":"`...)
	buf = append(buf, keyPrefix...)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(client), 10)
	buf = append(buf, '-')
	buf = strconv.AppendInt(buf, int64(seq), 10)
	return append(buf, `"}`...)
}

// paymentFn sends payments from random accounts of accounts.
func (b *bench) paymentFn(accounts []string, keyPrefix string) requestFunc {
	return func(ctx context.Context, w *worker) outcome {
		w.seq++
		w.buf = paymentBody(w.buf[:0], accounts[w.rng.IntN(len(accounts))], 100+w.rng.IntN(900), keyPrefix, w.id, w.seq)
		o := b.svc.send(ctx, "POST", "/v1/payments", w.buf)
		if o.ok && w.seq%101 == 7 {
			b.sampleMu.Lock()
			if len(b.samples) < 1000 {
				b.samples = append(b.samples, fmt.Sprintf("%s-%d-%d", keyPrefix, w.id, w.seq))
			}
			b.sampleMu.Unlock()
		}
		return o
	}
}

type paymentsResult struct {
	SourceAccounts int         `json:"source_accounts"`
	Rail           string      `json:"rail"`
	Levels         []loadStats `json:"levels"`
}

// profile profiles (with -profile) the measured window of a load that
// starts now, after the warm-up; the function it returns waits until the
// files are written.
func (b *bench) profile(name string) (wait func()) {
	return b.o.prof.start(b.svc.ctx, window{name: name, database: b.svc.dbName, pprofBase: b.svc.pprofBase,
		pid: b.svc.cmd.Process.Pid, warmup: b.o.warmup, duration: b.o.duration})
}

// payments measures POST /v1/payments from accounts at each concurrency.
func (b *bench) payments(accounts []string, kind string) (*paymentsResult, error) {
	res := &paymentsResult{SourceAccounts: len(accounts), Rail: paymentRail}
	section := kind
	if kind == "spread" {
		section = "payments"
	}
	for _, c := range b.o.clients {
		settled := b.svc.settle(fmt.Sprintf("%s payments at %s", kind, nClients(c)))
		logf("%s payments: %s from %d accounts: %s warm-up, then measuring %s", kind, nClients(c), len(accounts), b.o.warmup, b.o.duration)
		profiled := b.profile(fmt.Sprintf("%s-%d", section, c))
		st, err := closedLoop(b.svc.ctx, c, b.o.warmup, b.o.duration, httpConflict,
			b.paymentFn(accounts, fmt.Sprintf("bench-%s-%s-%d", b.runID, kind, c)))
		profiled()
		if err != nil {
			return res, err
		}
		st.SettleSeconds = settled.Seconds()
		res.Levels = append(res.Levels, st)
		logf("%s payments: %s: %.0f payments/s, p50 %.1f ms, p99 %.1f ms, max %.0f ms; non-2xx: %s",
			kind, nClients(c), st.PerSecond, st.P50ms, st.P99ms, st.MaxMs, classesString(st.FailedByClass))
	}
	return res, nil
}

type completionResult struct {
	Sampled        int            `json:"sampled"`
	Completed      int            `json:"completed"`
	Statuses       map[string]int `json:"statuses"`
	SecondsToAwait float64        `json:"seconds_waited"`
}

// checkCompleted checks that a sample of the payments created reached
// completed (GET /v1/payments?idempotency_key=…), waiting up to 30 s.
func (b *bench) checkCompleted() (*completionResult, error) {
	b.sampleMu.Lock()
	keys := append([]string(nil), b.samples...)
	b.sampleMu.Unlock()
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	keys = keys[:min(len(keys), 40)]
	res := &completionResult{Sampled: len(keys)}
	if len(keys) == 0 {
		return res, nil
	}
	start := time.Now()
	status := map[string]string{}
	for {
		res.Statuses, res.Completed = map[string]int{}, 0
		for _, k := range keys {
			if status[k] != "completed" {
				page, err := b.svc.callRetry("GET", "/v1/payments?limit=1&idempotency_key="+url.QueryEscape(k), nil, nil)
				if err != nil {
					return res, err
				}
				status[k] = "not found"
				if data, _ := page["data"].([]any); len(data) > 0 {
					p, _ := data[0].(map[string]any)
					status[k], _ = p["status"].(string)
				}
			}
			res.Statuses[status[k]]++
			if status[k] == "completed" {
				res.Completed++
			}
		}
		res.SecondsToAwait = time.Since(start).Seconds()
		if res.Completed == len(keys) || time.Since(start) > 30*time.Second || !b.svc.alive() {
			break
		}
		time.Sleep(time.Second)
	}
	logf("completion check: %d of %d sampled payments completed (%v) after %.1f s", res.Completed, res.Sampled, res.Statuses, res.SecondsToAwait)
	return res, nil
}

type webhookResult struct {
	EventTypes               []string       `json:"event_types"`
	Source                   string         `json:"event_source"`
	RequestsOfferedPerSecond int            `json:"requests_offered_per_second"`
	RequestsPerSecond        float64        `json:"requests_succeeded_per_second"`
	RequestsFailed           map[string]int `json:"requests_failed_by_status,omitempty"`
	RequestsSkipped          int            `json:"requests_skipped_sender_saturated"`
	EventsPerSecondInLog     float64        `json:"events_per_second_in_log"`
	Deliveries               int            `json:"first_attempts_measured"`
	DeliveriesPerSecond      float64        `json:"first_attempts_per_second"`
	P50ms                    float64        `json:"p50_ms"`
	P99ms                    float64        `json:"p99_ms"`
	MaxMs                    float64        `json:"max_ms"`
	Retries                  int            `json:"repeat_attempts_seen"`
	DrainSeconds             float64        `json:"waited_for_backlog_before_seconds"`
	Note                     string         `json:"note"`
}

// webhook measures first-attempt latency: a local receiver subscribed to
// virtual_account.created records, for each delivery id, when its first
// attempt arrived minus the event's created_at, while accounts are
// created at a steady rate (open loop).
func (b *bench) webhook() (*webhookResult, error) {
	// The event source is the one this bench has always used (so the
	// figures compare across its history): accounts opened at a steady
	// rate, each emitting virtual_account.created in its own command, with
	// no asynchronous step (unlike payment.submitted and .completed, which
	// wait for the sandbox settler) between the request and the event.
	types := []string{"virtual_account.created"}
	res := &webhookResult{EventTypes: types, Source: "POST /v1/virtual-accounts", RequestsOfferedPerSecond: b.o.webhookRate,
		Note: "latency = arrival of the first attempt at a local receiver − the event's created_at (millisecond precision)"}
	type arrival struct{ created, at time.Time }
	var (
		mu    sync.Mutex
		first = map[string]arrival{}
		last  time.Time
	)
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			ID        string    `json:"id"`
			CreatedAt time.Time `json:"created_at"`
		}
		_ = json.Unmarshal(body, &ev)
		id := r.Header.Get("webhook-id")
		if id == "" {
			id = ev.ID
		}
		mu.Lock()
		if _, seen := first[id]; seen {
			res.Retries++
		} else if !ev.CreatedAt.IsZero() {
			first[id] = arrival{ev.CreatedAt, at}
		}
		last = at
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return res, err
	}
	go func() { _ = recv.Serve(ln) }()
	defer recv.Close()

	ep, err := b.svc.callRetry("POST", "/v1/webhooks", map[string]any{"url": "http://" + ln.Addr().String() + "/hook",
		"events": types, "description": "bench receiver"}, nil)
	if err != nil {
		return res, err
	}
	epID, _ := ep["id"].(string)
	defer func() {
		if b.svc.alive() {
			if _, err := b.svc.callRetry("DELETE", "/v1/webhooks/"+epID, nil, nil); err != nil {
				logf("webhook: could not delete the endpoint: %v", err)
			}
		}
	}()

	b.svc.settle("the webhook measurement")
	res.DrainSeconds = b.svc.drain("the webhook measurement").Seconds()
	ctx := b.svc.ctx
	profiled := b.profile("webhook")
	from := time.Now().Add(b.o.warmup)
	to := from.Add(b.o.duration)
	logf("webhook: %d accounts opened per second (%s), %s warm-up, then measuring %s", b.o.webhookRate, strings.Join(types, ", "), b.o.warmup, b.o.duration)
	var (
		sendWG  sync.WaitGroup
		fmu     sync.Mutex
		created atomic.Int64
		failed  = map[string]int{}
		skipped atomic.Int64
	)
	sendWG.Add(1)
	go func() {
		defer sendWG.Done()
		// Open loop on a fixed schedule: the i-th request is due at
		// begin + i/rate whatever the answers take (a late sender catches up).
		begin, interval := time.Now(), time.Second/time.Duration(b.o.webhookRate)
		sem := make(chan struct{}, 256)
		seq := 0
		for i := 0; ; i++ {
			now := begin.Add(time.Duration(i) * interval)
			if !now.Before(to) {
				return
			}
			if d := time.Until(now); d > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(d):
				}
			}
			select {
			case sem <- struct{}{}:
			default:
				if !now.Before(from) {
					skipped.Add(1)
				}
				continue
			}
			seq++
			body := []byte(fmt.Sprintf(`{"platform_id":%q,"entity_ref":"bench_webhook_%d","type":"checking"}`, b.svc.platformID, seq))
			sendWG.Add(1)
			go func() {
				defer func() { <-sem; sendWG.Done() }()
				o := b.svc.send(ctx, "POST", "/v1/virtual-accounts", body)
				if now.Before(from) {
					return
				}
				if o.ok {
					created.Add(1)
				} else {
					fmu.Lock()
					failed[o.class]++
					fmu.Unlock()
				}
			}()
		}
	}()
	sleepUntil(ctx, from)
	n0, err0 := b.svc.eventCount(ctx)
	sleepUntil(ctx, to)
	n1, err1 := b.svc.eventCount(ctx)
	sendWG.Wait()
	profiled()
	if err := context.Cause(ctx); err != nil {
		return res, err
	}
	if err0 == nil && err1 == nil {
		res.EventsPerSecondInLog = float64(n1-n0) / b.o.duration.Seconds()
	}
	// Let the deliveries of events created before `to` arrive: until none
	// has come for 3 s (at most 60 s).
	for start := time.Now(); time.Since(start) < 60*time.Second; {
		time.Sleep(250 * time.Millisecond)
		mu.Lock()
		quiet := time.Since(last) > 3*time.Second && time.Since(to) > 3*time.Second
		mu.Unlock()
		if quiet {
			break
		}
	}
	mu.Lock()
	var lat []time.Duration
	for _, a := range first {
		if !a.created.Before(from) && a.created.Before(to) {
			lat = append(lat, a.at.Sub(a.created))
		}
	}
	mu.Unlock()
	res.Deliveries = len(lat)
	res.DeliveriesPerSecond = float64(len(lat)) / b.o.duration.Seconds()
	res.RequestsPerSecond = float64(created.Load()) / b.o.duration.Seconds()
	res.RequestsSkipped = int(skipped.Load())
	if len(failed) > 0 {
		res.RequestsFailed = failed
	}
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	logf("webhook: first attempt p50 %.1f ms, p99 %.1f ms, max %.0f ms over %d deliveries (%.0f/s; %.0f events/s in the log; %.0f accounts opened/s, failed: %s)",
		res.P50ms, res.P99ms, res.MaxMs, res.Deliveries, res.DeliveriesPerSecond, res.EventsPerSecondInLog, res.RequestsPerSecond, classesString(failed))
	return res, nil
}

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

// getAccount measures GET /v1/virtual-accounts/:id of random accounts.
func (b *bench) getAccount() (*loadStats, error) {
	settled := b.svc.settle("the GET measurement")
	c := b.o.getClients
	logf("get: GET /v1/virtual-accounts/:id at %s: %s warm-up, then measuring %s", nClients(c), b.o.warmup, b.o.duration)
	paths := make([]string, len(b.svc.accounts))
	for i, id := range b.svc.accounts {
		paths[i] = "/v1/virtual-accounts/" + id
	}
	profiled := b.profile(fmt.Sprintf("get-%d", c))
	st, err := closedLoop(b.svc.ctx, c, b.o.warmup, b.o.duration, httpConflict, func(ctx context.Context, w *worker) outcome {
		return b.svc.send(ctx, "GET", paths[w.rng.IntN(len(paths))], nil)
	})
	profiled()
	if err != nil {
		return nil, err
	}
	st.SettleSeconds = settled.Seconds()
	logf("get: %.0f requests/s, p50 %.2f ms, p99 %.2f ms, max %.0f ms; non-2xx: %s", st.PerSecond, st.P50ms, st.P99ms, st.MaxMs, classesString(st.FailedByClass))
	return &st, nil
}

type rebuildResult struct {
	Events              int64          `json:"events"`
	Seconds             float64        `json:"seconds"`
	EventsPerSecond     float64        `json:"events_per_second"`
	CLIEventsPerSecond  float64        `json:"cli_reported_events_per_second,omitempty"`
	CLIOutput           string         `json:"cli_output"`
	TopUpPayments       int64          `json:"top_up_payments"`
	TopUpSeconds        float64        `json:"top_up_seconds"`
	TopUpFailedByStatus map[string]int `json:"top_up_failed_by_status,omitempty"`
	Note                string         `json:"note"`
	Online              *onlineRebuild `json:"online,omitempty"`
}

var cliRate = regexp.MustCompile(`([0-9.]+) events/s`)

// rebuild tops the log up with payments until it holds the events wanted,
// lets the service settle, stops the server (so that neither the sandbox
// finishing earlier payments nor anything else of ours competes with the
// rebuild or appends to the log meanwhile) and times `treasury projections
// rebuild`.
func (b *bench) rebuild(bin, dbURL string) (*rebuildResult, error) {
	res := &rebuildResult{Note: "events_per_second = SELECT count(*) FROM events ÷ the wall time of `treasury projections rebuild`, run with the server stopped"}
	n, err := b.svc.eventCount(b.svc.ctx)
	if err != nil {
		return res, err
	}
	if want := int64(b.o.rebuildEvents); n < want {
		if err := b.topUp(n, want, res); err != nil {
			return res, err
		}
	}
	b.svc.settle("the rebuild")
	if res.Online, err = b.rebuildOnline(bin, dbURL); err != nil {
		return res, err
	}
	b.svc.settle("the rebuild")
	logf("rebuild: stopping treasury serve")
	b.svc.stop()
	ctx := b.svc.parent
	if n, err = b.svc.eventCount(ctx); err != nil {
		return res, err
	}
	res.Events = n
	logf("rebuild: treasury projections rebuild over %d events", n)
	rctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, bin, "projections", "rebuild")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "TREASURY_LOG_LEVEL=warn")
	start := time.Now()
	running := make(chan struct{})
	go func() {
		for {
			select {
			case <-running:
				return
			case <-time.After(30 * time.Second):
				logf("rebuild: still running after %s", time.Since(start).Round(time.Second))
			}
		}
	}()
	out, err := cmd.CombinedOutput()
	elapsed := time.Since(start)
	close(running)
	res.CLIOutput = strings.TrimSpace(string(out))
	if err != nil {
		return res, fmt.Errorf("treasury projections rebuild: %v: %s", err, res.CLIOutput)
	}
	res.Seconds = elapsed.Seconds()
	res.EventsPerSecond = float64(n) / elapsed.Seconds()
	if m := cliRate.FindStringSubmatch(res.CLIOutput); m != nil {
		res.CLIEventsPerSecond, _ = strconv.ParseFloat(m[1], 64)
	}
	logf("rebuild: %d events in %s: %.0f events/s (the CLI says: %s)", n, elapsed.Round(time.Millisecond), res.EventsPerSecond, res.CLIOutput)
	return res, nil
}

// topUp sends payments at the largest concurrency until the log holds want events.
func (b *bench) topUp(have, want int64, res *rebuildResult) error {
	clients := 0
	for _, c := range b.o.clients {
		clients = max(clients, c)
	}
	logf("rebuild: the log holds %d events; topping up with payments at %s until it holds %d", have, nClients(clients), want)
	ctx := b.svc.ctx
	var (
		stop   atomic.Bool // not a cancelled context: requests in flight finish
		wg     sync.WaitGroup
		sent   atomic.Int64
		mu     sync.Mutex
		failed = map[string]int{}
	)
	fn := b.paymentFn(b.svc.accounts, "bench-"+b.runID+"-topup")
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{id: c, rng: rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(c)))}
			for !stop.Load() && ctx.Err() == nil {
				o := fn(ctx, w)
				if o.ok {
					sent.Add(1)
				} else if ctx.Err() == nil {
					mu.Lock()
					failed[o.class]++
					mu.Unlock()
				}
			}
		}()
	}
	var err error
	lastLog := time.Now()
	for {
		time.Sleep(time.Second)
		var n int64
		if n, err = b.svc.eventCount(ctx); err != nil || n >= want {
			break
		}
		if time.Since(start) > 20*time.Minute {
			err = fmt.Errorf("after 20 minutes of top-up the log holds only %d events", n)
			break
		}
		if time.Since(lastLog) >= 10*time.Second {
			logf("rebuild: top-up: %d events, %d payments sent", n, sent.Load())
			lastLog = time.Now()
		}
	}
	stop.Store(true)
	wg.Wait()
	res.TopUpPayments, res.TopUpSeconds = sent.Load(), time.Since(start).Seconds()
	if len(failed) > 0 {
		res.TopUpFailedByStatus = failed
	}
	if err != nil {
		return err
	}
	logf("rebuild: top-up done: %d payments in %.1f s; non-2xx: %s", res.TopUpPayments, res.TopUpSeconds, classesString(failed))
	return context.Cause(b.svc.ctx)
}
