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
	"slices"
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

	adminURL string // the server's maintenance database, for the replay's scratch copy

	sampleMu sync.Mutex
	samples  []string // idempotency keys of some created payments, to check they complete

	track   *rtpTracker // during the largest payments run: payments whose completion is timed
	lag     *lagResult  // the subscribers' lag during the largest payments run
	rtp     *rtpResult  // created → completed during it
	loadEnd time.Time   // when the last payment load (payments or hot) ended
}

// The payment every section sends: rtp (completes within 1 s in the
// sandbox) to an ordinary external account; $1.00–$9.99 plus the 50 ¢ fee,
// so a funded account ($1,000,000) never runs dry.
const (
	rtpSampleEvery     = 8 // every 8th payment of each client in the largest run is timed to completion
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
		var o outcome
		if t := b.track; t.wants(w) {
			var id string
			o, id = b.svc.sendID(ctx, "POST", "/v1/payments", w.buf)
			if o.ok {
				t.add(id)
			}
		} else {
			o = b.svc.send(ctx, "POST", "/v1/payments", w.buf)
		}
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
// During the spread run at the largest concurrency it also samples the
// subscribers' lag, then times their catch-up after the run and the
// created → completed time of a sample of its payments.
func (b *bench) payments(accounts []string, kind string) (*paymentsResult, error) {
	res := &paymentsResult{SourceAccounts: len(accounts), Rail: paymentRail}
	section := kind
	if kind == "spread" {
		section = "payments"
	}
	top := slices.Max(b.o.clients)
	for _, c := range b.o.clients {
		logf("%s payments: %s from %d accounts: %s warm-up, then measuring %s", kind, nClients(c), len(accounts), b.o.warmup, b.o.duration)
		var sampler *lagSampler
		if kind == "spread" && c == top {
			from := time.Now().Add(b.o.warmup)
			b.track = &rtpTracker{from: from, to: from.Add(b.o.duration), every: rtpSampleEvery}
			sampler = b.svc.startLagSampler(from, c)
			logf("%s payments: %s: sampling the subscribers' lag every 100 ms, timing every %dth payment of each client to completion",
				kind, nClients(c), rtpSampleEvery)
		}
		profiled := b.profile(fmt.Sprintf("%s-%d", section, c))
		meter := b.svc.meterDB(b.svc.ctx, time.Now().Add(b.o.warmup), b.o.duration)
		st, err := closedLoop(b.svc.ctx, c, b.o.warmup, b.o.duration, httpConflict,
			b.paymentFn(accounts, fmt.Sprintf("bench-%s-%s-%d", b.runID, kind, c)))
		end := time.Now()
		st.DB = meter.result(st.OK)
		b.loadEnd = end
		if sampler != nil {
			b.lag = sampler.finish()
		}
		profiled()
		if err != nil {
			return res, err
		}
		if sampler != nil {
			tracker := b.track
			b.track = nil
			if err := b.svc.catchUp(b.lag, end, b.o.catchUpMax); err != nil {
				return res, fmt.Errorf("catch-up after the load: %w", err)
			}
			logLag(b.lag)
			if b.rtp, err = b.rtpCompletion(tracker, c, end, b.o.catchUpMax); err != nil {
				return res, err
			}
		}
		res.Levels = append(res.Levels, st)
		logf("%s payments: %s: %.0f payments/s, p50 %.1f ms, p99 %.1f ms, max %.0f ms; non-2xx: %s",
			kind, nClients(c), st.PerSecond, st.P50ms, st.P99ms, st.MaxMs, classesString(st.FailedByClass))
		if d := st.DB; d.Error != "" {
			logf("%s payments: %s: round trips and commits not measured: %s", kind, nClients(c), d.Error)
		} else {
			logf("%s payments: %s: per payment %.2f API round trips, %.2f in all (%s), %.2f commits",
				kind, nClients(c), d.APIRoundTripsPerPayment, d.AllRoundTripsPerPayment, d.byOrigin(), d.CommitsPerPayment)
		}
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
	PaymentsOfferedPerSecond int            `json:"payments_offered_per_second"`
	PaymentsPerSecond        float64        `json:"payments_succeeded_per_second"`
	RequestsFailed           map[string]int `json:"requests_failed_by_status,omitempty"`
	RequestsSkipped          int            `json:"requests_skipped_sender_saturated"`
	EventsPerSecondInLog     float64        `json:"events_per_second_in_log"`
	SecondsAfterLoads        float64        `json:"seconds_after_the_payment_loads"`
	Deliveries               int            `json:"first_attempts_measured"`
	DeliveriesByType         map[string]int `json:"first_attempts_by_type"`
	DeliveriesPerSecond      float64        `json:"first_attempts_per_second"`
	P50ms                    float64        `json:"p50_ms"`
	P99ms                    float64        `json:"p99_ms"`
	MaxMs                    float64        `json:"max_ms"`
	Expected                 int            `json:"expected_payment_created"`
	Missing                  int            `json:"missing_payment_created"`
	CompletedArrived         int            `json:"payment_completed_arrived"`
	GraceSeconds             float64        `json:"grace_seconds"`
	Retries                  int            `json:"repeat_attempts_seen"`
	Note                     string         `json:"note"`
}

// beyondGrace stands for a first attempt that did not arrive.
const beyondGrace = 1000 * time.Hour

// webhookTypes are the payment's state changes the receiver subscribes to.
var webhookTypes = []string{"payment.created", "payment.submitted", "payment.completed"}

// webhook measures first-attempt latency right after the payment loads,
// with no wait for the readers to catch up (a platform lives through the
// backlog too): a local receiver subscribed to the payments' state changes
// records, for each delivery, when its first attempt arrived minus the
// event's created_at, while rtp payments are created at a steady rate
// (open loop). A payment.created of a payment created in the window whose
// first attempt has not arrived within the grace after the window is
// missing.
func (b *bench) webhook() (*webhookResult, error) {
	res := &webhookResult{EventTypes: webhookTypes, Source: "POST /v1/payments (rtp) at a steady rate", PaymentsOfferedPerSecond: b.o.webhookRate,
		GraceSeconds: b.o.webhookGrace.Seconds(), DeliveriesByType: map[string]int{},
		Note: "latency = arrival of the first attempt at a local receiver − the event's created_at (millisecond precision), over the first attempts " +
			"of the window's payments' events, a missing payment.created counting as beyond the grace (-1 when a percentile falls on one); missing = the window's successful payments whose payment.created " +
			"did not arrive within the grace; started right after the payment loads, without waiting for the readers to catch up"}
	type arrival struct {
		typ         string
		created, at time.Time
	}
	var (
		mu    sync.Mutex
		first = map[string]arrival{} // webhook id → first attempt
		keyOf = map[string]string{}  // webhook id → the payment's idempotency key
	)
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			ID        string    `json:"id"`
			Type      string    `json:"type"`
			CreatedAt time.Time `json:"created_at"`
			Data      struct {
				Object struct {
					IdempotencyKey string `json:"idempotency_key"`
				} `json:"object"`
			} `json:"data"`
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
			first[id] = arrival{ev.Type, ev.CreatedAt, at}
			keyOf[id] = ev.Data.Object.IdempotencyKey
		}
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
		"events": webhookTypes, "description": "bench receiver"}, nil)
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

	if !b.loadEnd.IsZero() {
		res.SecondsAfterLoads = time.Since(b.loadEnd).Seconds()
	}
	ctx := b.svc.ctx
	profiled := b.profile("webhook")
	from := time.Now().Add(b.o.warmup)
	to := from.Add(b.o.duration)
	logf("webhook: %d rtp payments per second (%s), %.1f s after the payment loads, %s warm-up, then measuring %s",
		b.o.webhookRate, strings.Join(webhookTypes, ", "), res.SecondsAfterLoads, b.o.warmup, b.o.duration)
	prefix := "bench-" + b.runID + "-webhook"
	var (
		sendWG  sync.WaitGroup
		fmu     sync.Mutex
		created = map[string]bool{} // idempotency keys of the window's successful payments
		failed  = map[string]int{}
		skipped atomic.Int64
	)
	sendWG.Add(1)
	go func() {
		defer sendWG.Done()
		// Open loop on a fixed schedule: the i-th request is due at
		// begin + i/rate whatever the answers take (a late sender catches up).
		begin, interval := time.Now(), time.Second/time.Duration(b.o.webhookRate)
		rng := rand.New(rand.NewPCG(uint64(begin.UnixNano()), 7))
		sem := make(chan struct{}, 256)
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
			body := paymentBody(nil, b.svc.accounts[rng.IntN(len(b.svc.accounts))], 100+rng.IntN(900), prefix, 0, i)
			key := fmt.Sprintf("%s-0-%d", prefix, i)
			sendWG.Add(1)
			go func() {
				defer func() { <-sem; sendWG.Done() }()
				o := b.svc.send(ctx, "POST", "/v1/payments", body)
				if now.Before(from) {
					return
				}
				fmu.Lock()
				if o.ok {
					created[key] = true
				} else {
					failed[o.class]++
				}
				fmu.Unlock()
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
	// The grace: until every payment.created of the window has arrived,
	// at most webhookGrace after the window.
	arrivedCreated := func() int {
		n := 0
		for id, a := range first {
			if a.typ == "payment.created" && created[keyOf[id]] {
				n++
			}
		}
		return n
	}
	for time.Since(to) < b.o.webhookGrace && ctx.Err() == nil {
		mu.Lock()
		all := arrivedCreated() >= len(created)
		mu.Unlock()
		if all {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	mu.Lock()
	var lat []time.Duration
	for id, a := range first {
		if created[keyOf[id]] {
			lat = append(lat, a.at.Sub(a.created))
			res.DeliveriesByType[a.typ]++
		}
	}
	res.Expected = len(created)
	res.Missing = res.Expected - arrivedCreated()
	res.CompletedArrived = res.DeliveriesByType["payment.completed"]
	mu.Unlock()
	res.Deliveries = len(lat)
	res.DeliveriesPerSecond = float64(len(lat)) / b.o.duration.Seconds()
	res.PaymentsPerSecond = float64(res.Expected) / b.o.duration.Seconds()
	res.RequestsSkipped = int(skipped.Load())
	if len(failed) > 0 {
		res.RequestsFailed = failed
	}
	// A missing first attempt counts as later than any that arrived: the
	// percentiles cover them, and one that falls on a missing delivery is
	// reported as -1 (beyond the grace), never as the latency of the
	// deliveries that made it.
	for range res.Missing {
		lat = append(lat, beyondGrace)
	}
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	for _, v := range []*float64{&res.P50ms, &res.P99ms, &res.MaxMs} {
		if *v >= float64(beyondGrace.Microseconds())/1000 {
			*v = -1
		}
	}
	logf("webhook: first attempt p50 %.1f ms, p99 %.1f ms, max %.0f ms (-1: beyond the grace) over %d deliveries %v; missing %d of %d payment.created after a %s grace (%.0f payments/s, %.0f events/s in the log; failed: %s)",
		res.P50ms, res.P99ms, res.MaxMs, res.Deliveries, res.DeliveriesByType, res.Missing, res.Expected, b.o.webhookGrace,
		res.PaymentsPerSecond, res.EventsPerSecondInLog, classesString(failed))
	return res, nil
}

func logLag(l *lagResult) {
	for _, n := range allSubscribers {
		s := l.Subscribers[n]
		head := fmt.Sprintf("at the head %.1f s after the run", s.HeadAfterLoadS)
		if s.HeadAfterLoadS < 0 {
			head = fmt.Sprintf("not at the head within %.0f s", l.CatchUpBoundS)
		}
		logf("lag at %s: %-14s p50 %6.0f / p99 %6.0f / max %6.0f events, p50 %7.0f / p99 %7.0f / max %7.0f ms; %s",
			nClients(l.Clients), n, s.EventsP50, s.EventsP99, s.EventsMax, s.MsP50, s.MsP99, s.MsMax, head)
	}
	logf("lag: %d samples, the sampling query took p50 %.1f ms, p99 %.1f ms (busy %.1f%% of the window); its backend used %.2f s of CPU (%.1f%% of one core)",
		len(l.queryTimes), l.SampleQueryP50ms, l.SampleQueryP99ms, 100*l.SampleQueryShare, l.SamplerCPUSeconds, 100*l.SamplerCPUShare)
}

func sleepUntil(ctx context.Context, t time.Time) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(t)):
	}
}

// getAccount measures GET /v1/virtual-accounts/:id of random accounts.
func (b *bench) getAccount() (*loadStats, error) {
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

// fillLog tops the log up with payments until it holds -rebuild-events.
func (b *bench) fillLog(res *rebuildResult) error {
	n, err := b.svc.eventCount(b.svc.ctx)
	if err != nil {
		return err
	}
	if want := int64(b.o.rebuildEvents); n < want {
		return b.topUp(n, want, res)
	}
	return nil
}

// rebuild lets the service settle, stops the server (so that neither the
// sandbox finishing earlier payments nor anything else of ours competes
// with the rebuild or appends to the log meanwhile) and times `treasury
// projections rebuild`.
func (b *bench) rebuild(bin, dbURL string, res *rebuildResult) error {
	res.Note = "events_per_second = SELECT count(*) FROM events ÷ the wall time of `treasury projections rebuild`, run with the server stopped " +
		"after the top-up; online: the same beside the serving service, before the top-up"
	b.svc.settle("the rebuild")
	logf("rebuild: stopping treasury serve")
	b.svc.stop()
	ctx := b.svc.parent
	n, err := b.svc.eventCount(ctx)
	if err != nil {
		return err
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
		return fmt.Errorf("treasury projections rebuild: %v: %s", err, res.CLIOutput)
	}
	res.Seconds = elapsed.Seconds()
	res.EventsPerSecond = float64(n) / elapsed.Seconds()
	if m := cliRate.FindStringSubmatch(res.CLIOutput); m != nil {
		res.CLIEventsPerSecond, _ = strconv.ParseFloat(m[1], 64)
	}
	logf("rebuild: %d events in %s: %.0f events/s (the CLI says: %s)", n, elapsed.Round(time.Millisecond), res.EventsPerSecond, res.CLIOutput)
	return nil
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
