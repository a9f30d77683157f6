package main

// Process-level fault tests (issue #8): the real binary killed with SIGKILL
// under payment load and restarted, PostgreSQL restarted under payment load,
// a webhook receiver down for a while and then up. Helpers of this file
// start with "ft" so that they never clash with other files.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
)

// ftClient is a client of its own: a short timeout (an answer that takes
// longer is a hang) and enough connections for the load's workers.
func ftClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
}

// ftRig is a running `treasury serve` with an approved sandbox platform.
type ftRig struct {
	t        *testing.T
	dbURL    string
	addr     string
	base     string
	env      []string
	proc     *proc
	client   *http.Client
	platform string
	key      string
	accounts []string
	funded   int64 // credited to each account before the load
}

// ftStart starts serve on dbURL (rate limits off, private webhook targets
// allowed), waits until it is ready, and registers and approves a platform.
func ftStart(t *testing.T, dbURL string) *ftRig {
	t.Helper()
	return ftStartWith(t, dbURL)
}

// ftStartWith is ftStart with more environment for serve.
func ftStartWith(t *testing.T, dbURL string, env ...string) *ftRig {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r := &ftRig{t: t, dbURL: dbURL, addr: addr, base: "http://" + addr, client: ftClient(),
		env: serveEnv(dbURL, addr, append([]string{"TREASURY_RATE_LIMIT=off", "TREASURY_WEBHOOK_ALLOW_PRIVATE=true"}, env...)...)}
	r.serve()
	res := r.opMust(http.MethodPost, "/v1/platforms", map[string]any{"name": "Fault Payroll", "contact_email": "faults@example.com"}, http.StatusCreated)
	r.platform = decodeJSON[platformJSON](t, res).ID
	approved := decodeJSON[platformJSON](t, r.opMust(http.MethodPost, "/v1/operator/platforms/"+r.platform+"/approve", map[string]any{}, http.StatusOK))
	if approved.SandboxAPIKey == nil || approved.SandboxAPIKey.Secret == "" {
		t.Fatalf("approve returned no sandbox key")
	}
	r.key = approved.SandboxAPIKey.Secret
	return r
}

// serve starts (or restarts) the process and waits for /readyz.
func (r *ftRig) serve() {
	r.t.Helper()
	r.proc = startTreasury(r.t, "", r.env, "serve")
	waitStatus(r.t, r.proc, 30*time.Second, r.base+"/readyz", "", http.StatusOK)
}

func (r *ftRig) do(method, path string, body any) (response, error) {
	return callWith(r.client, method, r.base+path, r.key, body)
}

// must makes a platform request and requires the status.
func (r *ftRig) must(method, path string, body any, want int) response {
	r.t.Helper()
	res, err := r.do(method, path, body)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	if res.Status != want {
		r.t.Fatalf("%s %s: want %d, got %s", method, path, want, res)
	}
	return res
}

// opMust makes an operator request and requires the status.
func (r *ftRig) opMust(method, path string, body any, want int) response {
	r.t.Helper()
	res, err := callWith(r.client, method, r.base+path, testOperatorKey, body)
	if err != nil {
		r.t.Fatalf("%s %s: %v", method, path, err)
	}
	if res.Status != want {
		r.t.Fatalf("%s %s: want %d, got %s", method, path, want, res)
	}
	return res
}

// ftAddress is a valid US street address.
func ftAddress(line1 string) map[string]any {
	return map[string]any{"line1": line1, "city": "Austin", "state": "TX", "postal_code": "78701", "country": "US"}
}

// ftOriginator is a valid originator of a simulated inbound transfer.
var ftOriginator = map[string]any{"name": "Globex Corp", "account_number": "123456789", "routing_number": "021000021"}

type ftBalance struct {
	Posted          int64 `json:"posted"`
	PendingInbound  int64 `json:"pending_inbound"`
	PendingOutbound int64 `json:"pending_outbound"`
	Available       int64 `json:"available"`
}

type ftAccount struct {
	ID        string    `json:"id"`
	KYBStatus string    `json:"kyb_status"`
	Balance   ftBalance `json:"balance"`
}

// openAccounts opens n accounts of one business, has the business KYB
// approved (sandbox: an EIN not ending 0000 or 1111 is approved within a
// second), and credits each account over RTP (credited at once). ACH
// settles after 2 s (same day) and 3 s (standard) instead of 5 and 15.
func (r *ftRig) openAccounts(n int, funds int64) {
	r.t.Helper()
	r.must(http.MethodPatch, "/v1/platform/settings", map[string]any{
		"sandbox": map[string]any{"ach_same_day_delay_seconds": 2, "ach_standard_delay_seconds": 3}}, http.StatusOK)
	for i := 0; i < n; i++ {
		res := r.must(http.MethodPost, "/v1/virtual-accounts", map[string]any{
			"platform_id": r.platform, "entity_ref": "ft_business", "type": "checking"}, http.StatusCreated)
		r.accounts = append(r.accounts, decodeJSON[ftAccount](r.t, res).ID)
	}
	r.must(http.MethodPost, "/v1/kyb", map[string]any{
		"virtual_account_id": r.accounts[0],
		"business": map[string]any{"legal_name": "Fault Payroll Holdings LLC", "ein": "58-2046789", "entity_type": "llc",
			"formation_date": "2015-06-01", "formation_state": "DE", "address": ftAddress("500 Congress Ave")},
		"beneficial_owners": []any{map[string]any{"first_name": "Jane", "last_name": "Doe", "date_of_birth": "1980-04-12",
			"ssn_last4": "9876", "ownership_percentage": "60", "is_control_person": true, "address": ftAddress("12 Elm St")}},
	}, http.StatusCreated)
	for _, id := range r.accounts {
		eventually(r.t, 15*time.Second, "KYB approved for "+id, func() error {
			a := decodeJSON[ftAccount](r.t, r.must(http.MethodGet, "/v1/virtual-accounts/"+id, nil, http.StatusOK))
			if a.KYBStatus != "approved" {
				return fmt.Errorf("kyb_status %s", a.KYBStatus)
			}
			return nil
		})
		res := r.must(http.MethodPost, "/v1/simulations/inbound-transfers", map[string]any{
			"virtual_account_id": id, "amount": funds, "rail": "rtp", "originator": ftOriginator}, http.StatusCreated)
		if st := decodeJSON[map[string]any](r.t, res)["status"]; st != "completed" {
			r.t.Fatalf("an RTP inbound transfer is %v, want completed", st)
		}
	}
	r.funded = funds
}

// ftPayment is the part of a payment body the tests look at.
type ftPayment struct {
	ID               string `json:"id"`
	Object           string `json:"object"`
	VirtualAccountID string `json:"virtual_account_id"`
	Amount           int64  `json:"amount"`
	Fee              int64  `json:"fee"`
	Rail             string `json:"rail"`
	Status           string `json:"status"`
	IdempotencyKey   string `json:"idempotency_key"`
}

var ftRails = []string{"rtp", "ach_same_day", "fednow", "ach_standard"}

// ftLoad is a payment load's bookkeeping: every request sent, by its
// idempotency key, and the payment each key was answered with.
type ftLoad struct {
	rig      *ftRig
	prefix   string
	mu       sync.Mutex
	sent     map[string]map[string]any // idempotency key → request body
	answered map[string]string         // idempotency key → payment id of a 2xx answer
	noAnswer []string                  // keys whose request got no answer at all
}

func newFTLoad(r *ftRig) *ftLoad {
	return &ftLoad{rig: r, prefix: "ft-" + randomHex(4), sent: map[string]map[string]any{}, answered: map[string]string{}}
}

// request is worker w's i-th payment: accounts, rails and amounts vary.
func (l *ftLoad) request(w, i int) (string, map[string]any) {
	key := fmt.Sprintf("%s-w%d-%d", l.prefix, w, i)
	accounts := l.rig.accounts
	body := map[string]any{
		"virtual_account_id": accounts[(w+i)%len(accounts)],
		"amount":             100 + (w*7919+i*104729)%10000,
		"rail":               ftRails[(w+i)%len(ftRails)],
		"destination":        map[string]any{"account_number": "987654321", "routing_number": "021000021", "name": fmt.Sprintf("Vendor %d", w)},
		"description":        "fault load",
		"idempotency_key":    key,
	}
	l.mu.Lock()
	l.sent[key] = body
	l.mu.Unlock()
	return key, body
}

// answer records a 2xx answer to key, checking it is that request's payment
// (a replay names the same payment as the first answer).
func (l *ftLoad) answer(t *testing.T, key string, res response) {
	var p ftPayment
	if err := json.Unmarshal(res.Body, &p); err != nil {
		t.Errorf("payment %s: decode %s: %v", key, res, err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	body := l.sent[key]
	if !strings.HasPrefix(p.ID, "pay_") || p.IdempotencyKey != key || p.VirtualAccountID != body["virtual_account_id"] ||
		p.Amount != int64(body["amount"].(int)) || p.Rail != body["rail"] {
		t.Errorf("payment %s: the answer is not the request's payment: %s", key, res)
	}
	if prior, ok := l.answered[key]; ok && prior != p.ID {
		t.Errorf("idempotency key %s answered with two payments: %s and %s", key, prior, p.ID)
	}
	l.answered[key] = p.ID
}

func (l *ftLoad) answeredCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.answered)
}

// ftProblems collects what went wrong in a load's workers: a count and
// the first example of each kind, reported once at the end.
type ftProblems struct {
	mu    sync.Mutex
	count map[string]int
	first map[string]string
	order []string
}

func (p *ftProblems) add(kind, format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count == nil {
		p.count, p.first = map[string]int{}, map[string]string{}
	}
	if p.count[kind] == 0 {
		p.first[kind] = fmt.Sprintf(format, args...)
		p.order = append(p.order, kind)
	}
	p.count[kind]++
}

func (p *ftProblems) report(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, kind := range p.order {
		t.Errorf("%s: %d times, the first: %s", kind, p.count[kind], p.first[kind])
	}
}

// ftCheckPayments is what must hold after any fault once the load is over
// and every request was answered: each key has exactly one payment (the
// one it was answered with), each answered payment is readable, the
// accounts' balances account for every payment exactly once, the ledger
// balances, and `treasury audit verify` is clean.
func ftCheckPayments(t *testing.T, l *ftLoad) {
	t.Helper()
	r := l.rig
	for key := range l.sent {
		if l.answered[key] == "" {
			t.Errorf("request %s was never answered with a payment", key)
		}
	}

	// GET /payments/:id: every answered payment is there, as answered.
	ids := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for key := range ids {
				res, err := r.do(http.MethodGet, "/v1/payments/"+l.answered[key], nil)
				if err != nil || res.Status != http.StatusOK {
					t.Errorf("GET payment %s of key %s: %v %v", l.answered[key], key, res, err)
					continue
				}
				var p ftPayment
				_ = json.Unmarshal(res.Body, &p)
				if p.IdempotencyKey != key || p.Amount != int64(l.sent[key]["amount"].(int)) {
					t.Errorf("GET payment %s: not the payment of key %s: %s", p.ID, key, res)
				}
				switch p.Status {
				case "pending", "submitted", "completed":
				default:
					t.Errorf("payment %s is %s (a plain destination: it can only be pending, submitted or completed)", p.ID, p.Status)
				}
			}
		}()
	}
	for key := range l.answered {
		ids <- key
	}
	close(ids)
	wg.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())

	// The payments table: one payment per key, none that nobody asked for.
	type row struct {
		id, key, account, status string
		amount, fee              int64
	}
	rows, err := conn.Query(ctx, `SELECT id, idempotency_key, virtual_account_id, status, amount, fee FROM payments ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	payments, err := pgx.CollectRows(rows, func(c pgx.CollectableRow) (row, error) {
		var x row
		err := c.Scan(&x.id, &x.key, &x.account, &x.status, &x.amount, &x.fee)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string][]string{}
	held := map[string]int64{}
	for _, p := range payments {
		byKey[p.key] = append(byKey[p.key], p.id)
		if _, ok := l.sent[p.key]; !ok {
			t.Errorf("payment %s has key %q, which no request carried", p.id, p.key)
		}
		if p.status != "failed" && p.status != "canceled" {
			held[p.account] += p.amount + p.fee
		}
	}
	for key, list := range byKey {
		if len(list) != 1 {
			t.Errorf("idempotency key %s has %d payments: %v", key, len(list), list)
		} else if l.answered[key] != "" && l.answered[key] != list[0] {
			t.Errorf("idempotency key %s was answered with %s but its payment is %s", key, l.answered[key], list[0])
		}
	}
	if len(payments) != len(l.sent) {
		t.Errorf("%d payments for %d distinct requests", len(payments), len(l.sent))
	}

	// Balances: every payment held (or posted) once, nothing else moved.
	for _, id := range r.accounts {
		a := decodeJSON[ftAccount](t, r.must(http.MethodGet, "/v1/virtual-accounts/"+id, nil, http.StatusOK))
		b := a.Balance
		if b.Available != r.funded-held[id] || b.Available != b.Posted-b.PendingOutbound || b.PendingInbound != 0 {
			t.Errorf("account %s: balance %+v, want available = %d funded − %d payments and fees = %d, = posted − pending_outbound",
				id, b, r.funded, held[id], r.funded-held[id])
		}
	}

	// The ledger (an asynchronous projection): once it has every payment's
	// journal entry, Σ debits = Σ credits overall and in every entry.
	eventually(t, 30*time.Second, "the ledger to hold every payment's journal entry", func() error {
		var missing int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM payments p
            WHERE NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.journal_entry_id = p.journal_entry_id)`).Scan(&missing); err != nil {
			return err
		}
		if missing > 0 {
			return fmt.Errorf("%d payments without ledger entries", missing)
		}
		return nil
	})
	var debits, credits int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(sum(amount) FILTER (WHERE direction = 'debit'), 0),
            coalesce(sum(amount) FILTER (WHERE direction = 'credit'), 0) FROM ledger_entries`).Scan(&debits, &credits); err != nil {
		t.Fatal(err)
	}
	if debits != credits || debits == 0 {
		t.Errorf("ledger: Σ debits %d, Σ credits %d", debits, credits)
	}
	rows, err = conn.Query(ctx, `SELECT journal_entry_id || ' (' || status || '): ' ||
            sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) FROM ledger_entries
        GROUP BY journal_entry_id, status HAVING sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) <> 0 LIMIT 20`)
	if err != nil {
		t.Fatal(err)
	}
	unbalanced, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(unbalanced) > 0 {
		t.Errorf("unbalanced journal entries: %v", unbalanced)
	}
	t.Logf("%d payments, ledger Σ debits = Σ credits = %d", len(payments), debits)

	ftAuditClean(t, r.dbURL)
}

// ftAuditClean requires `treasury audit verify` to exit 0 with a clean
// report on its first run: the audit compares each asynchronous
// projection up to its own checkpoint in one snapshot, so it needs no
// waiting, and any failure is a bug. On failure it reports the gaps in the
// projections' seq columns (a replay numbers rows without gaps).
func ftAuditClean(t *testing.T, dbURL string) {
	t.Helper()
	verify := func() (string, error) {
		c := exec.Command(treasuryBin, "audit", "verify")
		c.Env = treasuryEnv("DATABASE_URL=" + dbURL)
		out, err := c.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), fmt.Errorf("exit %d", exit.ExitCode())
		}
		if err != nil {
			t.Fatalf("audit verify: %v", err)
		}
		if !strings.Contains(string(out), "audit:        clean") {
			return string(out), errors.New("exit 0 without a clean report")
		}
		return string(out), nil
	}
	out, err := verify()
	if err == nil {
		return
	}
	gaps := ""
	conn, err := pgx.Connect(context.Background(), dbURL)
	if err == nil {
		defer conn.Close(context.Background())
		for _, table := range []string{"journal_entries", "ledger_entries", "account_transactions", "public_events"} {
			var n, lo, hi, after int64
			if err := conn.QueryRow(context.Background(), fmt.Sprintf(`SELECT count(*), coalesce(min(seq), 0), coalesce(max(seq), 0),
                    (SELECT count(*) FROM %[1]s WHERE seq >= (SELECT min(a.seq) FROM %[1]s a
                        WHERE a.seq > (SELECT min(seq) FROM %[1]s) AND NOT EXISTS (SELECT 1 FROM %[1]s b WHERE b.seq = a.seq - 1)))
                FROM %[1]s`, table)).Scan(&n, &lo, &hi, &after); err == nil {
				gaps += fmt.Sprintf("\n  %s: %d rows, seq %d..%d: %d values skipped, %d rows after the first gap", table, n, lo, hi, hi-lo+1-n, after)
			}
		}
	}
	t.Errorf("treasury audit verify is not clean: %v:\n%s\nseq columns of the live asynchronous projections:%s", err, out, gaps)
}

// ftReceiver is a webhook endpoint: it records every attempt it answers
// (by delivery id) and every event it accepted. Its mode says how it
// answers: accept (200), refuse (503) or hang up (close the connection
// without an answer).
type ftReceiver struct {
	srv  *httptest.Server
	mode atomic.Int32
	mu   sync.Mutex
	got  map[string]int                 // event id → attempts it accepted
	seen map[string][]ftReceivedAttempt // delivery id (webhook-id) → its attempts, in order
}

const (
	ftAccept int32 = iota
	ftRefuse
	ftHangUp
)

const ftRefusal = "receiver down for maintenance"

type ftReceivedAttempt struct {
	event string
	mode  int32
}

func newFTReceiver(t *testing.T) *ftReceiver {
	rc := &ftReceiver{got: map[string]int{}, seen: map[string][]ftReceivedAttempt{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(body, &ev)
		mode := rc.mode.Load()
		rc.mu.Lock()
		delivery := req.Header.Get("webhook-id")
		rc.seen[delivery] = append(rc.seen[delivery], ftReceivedAttempt{event: ev.ID, mode: mode})
		if mode == ftAccept {
			rc.got[ev.ID]++
		}
		rc.mu.Unlock()
		switch mode {
		case ftAccept:
			_, _ = io.WriteString(w, "ok")
		case ftRefuse:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, ftRefusal)
		case ftHangUp:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close()
		}
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// missing lists the events not accepted yet.
func (rc *ftReceiver) missing(events []string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, id := range events {
		if rc.got[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

// attemptsOf counts, for each event, the attempts the receiver answered in mode.
func (rc *ftReceiver) attemptsOf(mode int32) map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := map[string]int{}
	for _, list := range rc.seen {
		for _, a := range list {
			if a.mode == mode {
				n[a.event]++
			}
		}
	}
	return n
}

type ftWebhook struct {
	ID          string `json:"id"`
	Secret      string `json:"secret"`
	CreatedAt   string `json:"created_at"`
	RetryPolicy struct {
		MaxAttempts         int `json:"max_attempts"`
		InitialDelaySeconds int `json:"initial_delay_seconds"`
		MaxDelaySeconds     int `json:"max_delay_seconds"`
	} `json:"retry_policy"`
	DeliveryStatus struct {
		State               string `json:"state"`
		LastStatusCode      *int   `json:"last_status_code"`
		ConsecutiveFailures int    `json:"consecutive_failures"`
		Pending             int    `json:"pending"`
		Failed              int    `json:"failed"`
	} `json:"delivery_status"`
}

// webhook registers an endpoint for every event type at the receiver.
func (r *ftRig) webhook(rc *ftReceiver, retryPolicy map[string]any) ftWebhook {
	r.t.Helper()
	body := map[string]any{"url": rc.srv.URL + "/hooks", "events": []string{"*"}}
	if retryPolicy != nil {
		body["retry_policy"] = retryPolicy
	}
	wh := decodeJSON[ftWebhook](r.t, r.must(http.MethodPost, "/v1/webhooks", body, http.StatusCreated))
	if !strings.HasPrefix(wh.ID, "wh_") || !strings.HasPrefix(wh.Secret, "whsec_") {
		r.t.Fatalf("webhook endpoint: %+v", wh)
	}
	return wh
}

// listAll follows a list's cursors and returns every item.
func (r *ftRig) listAll(path string) []json.RawMessage {
	r.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var all []json.RawMessage
	cursor := ""
	for page := 0; ; page++ {
		if page > 1000 {
			r.t.Fatalf("%s: the list does not end", path)
		}
		u := path + sep + "limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		list := decodeJSON[struct {
			Data       []json.RawMessage `json:"data"`
			HasMore    bool              `json:"has_more"`
			NextCursor *string           `json:"next_cursor"`
		}](r.t, r.must(http.MethodGet, u, nil, http.StatusOK))
		all = append(all, list.Data...)
		if !list.HasMore {
			return all
		}
		if list.NextCursor == nil || *list.NextCursor == "" {
			r.t.Fatalf("%s: has_more without next_cursor", u)
		}
		cursor = *list.NextCursor
	}
}

type ftEvent struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

// events lists the ids of every event created at or after since.
func (r *ftRig) events(since string) map[string]string {
	r.t.Helper()
	out := map[string]string{}
	for _, raw := range r.listAll("/v1/events?created_after=" + url.QueryEscape(since)) {
		var e ftEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			r.t.Fatalf("decode event %s: %v", raw, err)
		}
		out[e.ID] = e.Type
	}
	return out
}

// ftKeys is a map's keys, sorted.
func ftKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitProjected waits until the asynchronous projections (the ledger and
// the public events GET /v1/events lists) have applied every event the log
// holds now, so that a list read afterwards covers the log up to now.
func (r *ftRig) waitProjected() {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, r.dbURL)
	if err != nil {
		r.t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	head, err := eventstore.Head(ctx, conn)
	if err != nil {
		r.t.Fatal(err)
	}
	eventually(r.t, 30*time.Second, "the projections to reach the log's head", func() error {
		cp, err := eventstore.ReadSlowestCheckpoint(ctx, conn, projections.AsyncNames())
		if err != nil {
			return err
		}
		if cp.Less(head) {
			return fmt.Errorf("checkpoint %+v, head %+v", cp, head)
		}
		return nil
	})
}

// waitAllDelivered waits until the receiver accepted every event GET
// /v1/events lists since the endpoint was created. New events keep
// appearing while payments settle, so the list is read again once
// everything on the last one arrived, until a fresh list has nothing
// missing.
func (r *ftRig) waitAllDelivered(rc *ftReceiver, since string, within time.Duration) int {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		events := r.events(since)
		if len(events) == 0 {
			r.t.Fatalf("GET /v1/events lists no event since %s", since)
		}
		missing := rc.missing(ftKeys(events))
		if len(missing) == 0 {
			return len(events)
		}
		for len(missing) > 0 {
			if time.Now().After(deadline) {
				n := len(missing)
				if n > 10 {
					missing = missing[:10]
				}
				r.t.Fatalf("%d of %d events listed by GET /v1/events never reached the receiver within %s, e.g. %v",
					n, len(events), within, missing)
			}
			time.Sleep(100 * time.Millisecond)
			missing = rc.missing(missing)
		}
	}
}

// TestFaultKillDuringPayments: serve is killed with SIGKILL while 8
// clients send payments, and restarted on the same database and port.
// Every payment that was answered 2xx is there; the requests that got no
// answer, sent again with their idempotency keys, get one payment each
// (the one committed before the kill, or a new one); the balances and the
// ledger account for every payment exactly once; `audit verify` is clean;
// and the webhook receiver gets every event GET /v1/events lists.
func TestFaultKillDuringPayments(t *testing.T) {
	t.Parallel()
	started := time.Now()
	r := ftStart(t, pgtest.URL(t))
	rc := newFTReceiver(t)
	wh := r.webhook(rc, nil)
	r.openAccounts(4, 100_000_000)
	t.Logf("set up in %s", time.Since(started).Round(time.Millisecond))

	load := newFTLoad(r)
	var problems ftProblems
	var wg sync.WaitGroup
	var killed atomic.Bool
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				key, body := load.request(w, i)
				res, err := callWith(r.client, http.MethodPost, r.base+"/v1/payments", r.key, body)
				if err != nil {
					// The server died under this request (or before it):
					// whether it committed is what the restart must tell.
					load.mu.Lock()
					load.noAnswer = append(load.noAnswer, key)
					load.mu.Unlock()
					if !killed.Load() {
						problems.add("no answer before the kill", "payment %s: %v", key, err)
					}
					return
				}
				if res.Status != http.StatusCreated {
					problems.add("not 201 before the kill", "payment %s: %s", key, res)
					continue
				}
				load.answer(t, key, res)
			}
		}()
	}
	eventually(t, 30*time.Second, "80 payments answered under load", func() error {
		if n := load.answeredCount(); n < 80 {
			return fmt.Errorf("%d answered", n)
		}
		return nil
	})
	killed.Store(true)
	r.proc.kill()
	killedAt := time.Now()
	if _, err := r.proc.exited(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("serve after SIGKILL: %v, want killed", err)
	}
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	select {
	case <-workersDone:
	case <-time.After(15 * time.Second):
		t.Fatalf("the load's workers did not stop within 15 s of the kill")
	}
	problems.report(t)
	answeredBefore := load.answeredCount()
	t.Logf("killed after %d payments answered; %d requests without an answer", answeredBefore, len(load.noAnswer))

	// Restart on the same database and port, with fresh connections.
	r.client = ftClient()
	r.serve()
	t.Logf("ready again %s after the kill", time.Since(killedAt).Round(time.Millisecond))

	created, replayed := 0, 0
	for _, key := range load.noAnswer {
		// 201 when the killed process had not committed the payment, 200
		// (a replay of it) when it had.
		want := http.StatusCreated
		switch found := r.paymentsWithKey(key); len(found) {
		case 0:
		case 1:
			want = http.StatusOK
			replayed++
		default:
			t.Errorf("idempotency key %s has %d payments after the restart: %+v", key, len(found), found)
		}
		res := r.must(http.MethodPost, "/v1/payments", load.sent[key], want)
		if want == http.StatusCreated {
			created++
		} else if res.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("retry of %s: a 200 without Idempotent-Replayed", key)
		}
		load.answer(t, key, res)
	}
	t.Logf("requests without an answer, sent again: %d created now, %d had committed before the kill", created, replayed)
	// Answered ones replay the very payment they were answered with.
	n := 0
	for key, id := range load.answered {
		if n == 5 {
			break
		}
		n++
		res := r.must(http.MethodPost, "/v1/payments", load.sent[key], http.StatusOK)
		if res.Header.Get("Idempotent-Replayed") != "true" || decodeJSON[ftPayment](t, res).ID != id {
			t.Errorf("replay of %s after the restart: want %s with Idempotent-Replayed, got %v %s", key, id, res.Header, res)
		}
	}
	// GET /payments?idempotency_key= finds exactly the one payment.
	for _, key := range load.noAnswer {
		if found := r.paymentsWithKey(key); len(found) != 1 || found[0].ID != load.answered[key] {
			t.Errorf("GET /payments?idempotency_key=%s: want only %s, got %+v", key, load.answered[key], found)
		}
	}

	ftCheckPayments(t, load)

	// Deliveries claimed by the killed process wait out their lease
	// (webhooks.Lease, 30 s) before the new one sends them again.
	waitFrom := time.Now()
	r.waitProjected()
	events := r.waitAllDelivered(rc, wh.CreatedAt, 60*time.Second)
	t.Logf("all %d events delivered, %s after the checks, %s after the kill; total %s",
		events, time.Since(waitFrom).Round(time.Millisecond), time.Since(killedAt).Round(time.Millisecond),
		time.Since(started).Round(time.Millisecond))
}

// paymentsWithKey is GET /v1/payments?idempotency_key=key.
func (r *ftRig) paymentsWithKey(key string) []ftPayment {
	r.t.Helper()
	return decodeJSON[struct {
		Data []ftPayment `json:"data"`
	}](r.t, r.must(http.MethodGet, "/v1/payments?idempotency_key="+url.QueryEscape(key), nil, http.StatusOK)).Data
}

// TestFaultPostgresRestartDuringPayments: PostgreSQL is stopped for a few
// seconds and started again while 8 clients send payments (retrying a 503
// with the same idempotency key, as clients should). Every answer is a 2xx
// or 503 unavailable with Retry-After — never a 500, never no answer
// within the client's timeout, never a 2xx to a request sent while the
// database was down — and the same process serves payments again without a
// restart. Afterwards each key has exactly one payment, the balances and
// the ledger account for each once, and `audit verify` is clean.
func TestFaultPostgresRestartDuringPayments(t *testing.T) {
	t.Parallel()
	started := time.Now()
	cluster := newCluster(t)
	startCluster(t, cluster)
	r := ftStart(t, cluster.URL())
	r.openAccounts(4, 100_000_000)
	t.Logf("set up in %s", time.Since(started).Round(time.Millisecond))

	load := newFTLoad(r)
	var problems ftProblems
	var (
		down, stopping                  atomic.Bool
		recovering                      atomic.Bool
		unavailableDown, unavailableAll atomic.Int64
		replayedAfter503                atomic.Int64
		recovered                       [8]atomic.Bool // worker w had a 2xx after the database came back
		wg                              sync.WaitGroup
	)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stopping.Load(); i++ {
				key, body := load.request(w, i)
				deadline := time.Now().Add(45 * time.Second)
				for attempt := 0; ; attempt++ {
					sentDown := down.Load()
					res, err := callWith(r.client, http.MethodPost, r.base+"/v1/payments", r.key, body)
					switch {
					case err != nil:
						problems.add("no answer within the client's timeout", "payment %s (database down: %v): %v", key, sentDown, err)
					case res.Status == http.StatusCreated || res.Status == http.StatusOK:
						if sentDown {
							problems.add("2xx to a request sent while the database was down", "payment %s: %s", key, res)
						}
						if res.Status == http.StatusOK {
							if attempt == 0 {
								problems.add("a first request answered as a replay", "payment %s: %s", key, res)
							}
							replayedAfter503.Add(1) // committed, but the answer was lost to the outage
						}
						load.answer(t, key, res)
						if recovering.Load() {
							recovered[w].Store(true)
						}
					default:
						if err := unavailable(res); err != nil {
							problems.add("an answer neither 2xx nor 503 unavailable with Retry-After", "payment %s (database down: %v): %v", key, sentDown, err)
						}
						unavailableAll.Add(1)
						if sentDown {
							unavailableDown.Add(1)
						}
					}
					if err == nil && res.Status/100 == 2 {
						break
					}
					if time.Now().After(deadline) {
						problems.add("no 2xx within 45 s", "payment %s", key)
						return
					}
					time.Sleep(50 * time.Millisecond) // a client pausing before it retries
				}
			}
		}()
	}
	eventually(t, 30*time.Second, "30 payments answered under load", func() error {
		if n := load.answeredCount(); n < 30 {
			return fmt.Errorf("%d answered", n)
		}
		return nil
	})

	stopCluster(t, cluster)
	down.Store(true)
	outage := time.Now()
	// Down for at least 2 s and long enough that every worker was refused.
	for time.Since(outage) < 2*time.Second || unavailableDown.Load() < 16 {
		if time.Since(outage) > 15*time.Second {
			t.Fatalf("only %d answers within 15 s of the outage", unavailableDown.Load())
		}
		if done, err := r.proc.exited(); done {
			t.Fatalf("serve exited during the outage: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	down.Store(false)
	downFor := time.Since(outage)
	recovering.Store(true)
	startCluster(t, cluster)
	restarted := time.Now()
	eventually(t, 30*time.Second, "every worker's payments succeeding again", func() error {
		if done, err := r.proc.exited(); done {
			t.Fatalf("serve exited: %v", err)
		}
		for w := range recovered {
			if !recovered[w].Load() {
				return fmt.Errorf("worker %d had no 2xx since the database came back", w)
			}
		}
		return nil
	})
	recoveredIn := time.Since(restarted)
	stopping.Store(true)
	workersDone := make(chan struct{})
	go func() { wg.Wait(); close(workersDone) }()
	select {
	case <-workersDone:
	case <-time.After(50 * time.Second):
		t.Fatalf("the load's workers did not finish")
	}
	problems.report(t)
	t.Logf("database down %s: %d answers 503 while down (%d in all); payments again %s after it came back; "+
		"%d requests answered 503 had committed (replayed on retry)", downFor.Round(time.Millisecond),
		unavailableDown.Load(), unavailableAll.Load(), recoveredIn.Round(time.Millisecond), replayedAfter503.Load())
	if done, err := r.proc.exited(); done {
		t.Fatalf("serve exited: %v", err)
	}

	ftCheckPayments(t, load)
	t.Logf("total %s", time.Since(started).Round(time.Millisecond))
}

type ftDelivery struct {
	ID        string `json:"id"`
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	Status    string `json:"status"`
	Attempts  []struct {
		AttemptedAt  time.Time `json:"attempted_at"`
		StatusCode   *int      `json:"status_code"`
		Error        *string   `json:"error"`
		ResponseBody *string   `json:"response_body"`
	} `json:"attempts"`
}

// TestFaultReceiverDownThenUp: a webhook receiver answers 503, then hangs
// up without answering, then accepts, while events are produced. Every
// event arrives; every delivery ends succeeded, its attempts[] recording
// each failure the receiver served (503 with its body, or an error with no
// status code) in order, spaced by the endpoint's retry policy; the
// endpoint is healthy again.
func TestFaultReceiverDownThenUp(t *testing.T) {
	t.Parallel()
	started := time.Now()
	r := ftStart(t, pgtest.URL(t))
	rc := newFTReceiver(t)
	rc.mode.Store(ftRefuse)
	// The shortest backoff the API allows: 1 s, doubling, capped at 2 s.
	wh := r.webhook(rc, map[string]any{"max_attempts": 12, "initial_delay_seconds": 1, "max_delay_seconds": 2})
	if p := wh.RetryPolicy; p.MaxAttempts != 12 || p.InitialDelaySeconds != 1 || p.MaxDelaySeconds != 2 {
		t.Fatalf("retry_policy %+v", p)
	}

	// produce opens an account and credits it: virtual_account.created,
	// inbound_transfer.completed and ledger.entry.created events.
	produce := func() {
		res := r.must(http.MethodPost, "/v1/virtual-accounts", map[string]any{
			"platform_id": r.platform, "entity_ref": "ft_receiver_" + randomHex(3), "type": "checking"}, http.StatusCreated)
		id := decodeJSON[ftAccount](t, res).ID
		r.must(http.MethodPost, "/v1/simulations/inbound-transfers", map[string]any{
			"virtual_account_id": id, "amount": 5000, "rail": "rtp", "originator": ftOriginator}, http.StatusCreated)
	}
	// refusedAtLeast waits until every event listed so far got n attempts
	// the receiver answered in mode.
	refusedAtLeast := func(mode int32, n int, what string) {
		t.Helper()
		eventually(t, 20*time.Second, what, func() error {
			events := r.events(wh.CreatedAt)
			counts := rc.attemptsOf(mode)
			for id := range events {
				if counts[id] < n {
					return fmt.Errorf("event %s: %d such attempts", id, counts[id])
				}
			}
			if len(events) == 0 {
				return fmt.Errorf("no events yet")
			}
			return nil
		})
	}

	produce()
	produce()
	refusedAtLeast(ftRefuse, 2, "two 503s for each event")
	rc.mode.Store(ftHangUp)
	produce()
	refusedAtLeast(ftHangUp, 1, "a hang-up for each event")
	downFor := time.Since(started)
	rc.mode.Store(ftAccept)
	up := time.Now()

	r.waitProjected()
	events := r.waitAllDelivered(rc, wh.CreatedAt, 20*time.Second)
	t.Logf("receiver down for %s; all %d events delivered %s after it came up", downFor.Round(time.Millisecond),
		events, time.Since(up).Round(time.Millisecond))

	// The deliveries: each succeeded, with the failures before.
	var deliveries []ftDelivery
	eventually(t, 10*time.Second, "every delivery succeeded", func() error {
		deliveries = deliveries[:0]
		for _, raw := range r.listAll("/v1/webhooks/" + wh.ID + "/deliveries") {
			var d ftDelivery
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatalf("decode delivery %s: %v", raw, err)
			}
			deliveries = append(deliveries, d)
		}
		for _, d := range deliveries {
			if d.Status != "succeeded" {
				return fmt.Errorf("delivery %s of %s is %s", d.ID, d.EventID, d.Status)
			}
		}
		return nil
	})
	listed := r.events(wh.CreatedAt)
	byEvent := map[string]string{}
	refused, hungUp := 0, 0
	rc.mu.Lock()
	received := map[string][]ftReceivedAttempt{}
	for id, list := range rc.seen {
		received[id] = append([]ftReceivedAttempt(nil), list...)
	}
	rc.mu.Unlock()
	for _, d := range deliveries {
		if prior, ok := byEvent[d.EventID]; ok {
			t.Errorf("event %s has two deliveries to one endpoint: %s and %s", d.EventID, prior, d.ID)
		}
		byEvent[d.EventID] = d.ID
		if typ, ok := listed[d.EventID]; !ok || typ != d.EventType {
			t.Errorf("delivery %s: event %s (%s) is not listed by GET /v1/events as such (%q)", d.ID, d.EventID, d.EventType, typ)
		}
		seen := received[d.ID]
		if len(seen) != len(d.Attempts) {
			t.Errorf("delivery %s: %d attempts recorded, the receiver answered %d", d.ID, len(d.Attempts), len(seen))
			continue
		}
		for i, a := range d.Attempts {
			last := i == len(d.Attempts)-1
			if seen[i].event != d.EventID {
				t.Errorf("delivery %s attempt %d carried event %s, want %s", d.ID, i+1, seen[i].event, d.EventID)
			}
			switch seen[i].mode {
			case ftAccept:
				if a.StatusCode == nil || *a.StatusCode != http.StatusOK || !last {
					t.Errorf("delivery %s attempt %d of %d: accepted with 200, recorded %v (error %v)", d.ID, i+1, len(d.Attempts), a.StatusCode, a.Error)
				}
			case ftRefuse:
				refused++
				if a.StatusCode == nil || *a.StatusCode != http.StatusServiceUnavailable || a.ResponseBody == nil || *a.ResponseBody != ftRefusal || last {
					t.Errorf("delivery %s attempt %d of %d: refused with 503 %q, recorded %v %v", d.ID, i+1, len(d.Attempts), ftRefusal, a.StatusCode, a.ResponseBody)
				}
			case ftHangUp:
				hungUp++
				if a.StatusCode != nil || a.Error == nil || *a.Error == "" || last {
					t.Errorf("delivery %s attempt %d of %d: hung up on, recorded status %v error %v", d.ID, i+1, len(d.Attempts), a.StatusCode, a.Error)
				}
			}
			if i > 0 {
				// Backoff after n failures: 1 s × 2^(n−1), capped at 2 s, ±20 %;
				// the sender polls every 100 ms (slack for a loaded machine).
				base := time.Duration(min(1<<(i-1), 2)) * time.Second
				gap := a.AttemptedAt.Sub(d.Attempts[i-1].AttemptedAt)
				if gap < base*8/10-2*time.Millisecond || gap > base*12/10+2*time.Second {
					t.Errorf("delivery %s: attempt %d came %s after attempt %d; the policy says %s ± 20 %%", d.ID, i+1, gap, i, base)
				}
			}
		}
	}
	for id := range listed {
		if byEvent[id] == "" {
			t.Errorf("event %s (%s) has no delivery", id, listed[id])
		}
	}
	if refused < 2 || hungUp == 0 {
		t.Errorf("attempts refused: %d, hung up on: %d, over %d deliveries: the outage was not exercised", refused, hungUp, len(deliveries))
	}
	ep := decodeJSON[ftWebhook](t, r.must(http.MethodGet, "/v1/webhooks/"+wh.ID, nil, http.StatusOK))
	if s := ep.DeliveryStatus; s.State != "healthy" || s.ConsecutiveFailures != 0 || s.Pending != 0 || s.Failed != 0 ||
		s.LastStatusCode == nil || *s.LastStatusCode != http.StatusOK {
		t.Errorf("endpoint after the receiver is back: delivery_status %+v", s)
	}
	t.Logf("%d deliveries, %d attempts refused with 503 and %d hung up on before success; total %s",
		len(deliveries), refused, hungUp, time.Since(started).Round(time.Millisecond))
}
