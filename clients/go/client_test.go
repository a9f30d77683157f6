package treasury

// Tests of the transport against local stub servers: what a real server
// cannot be made to do on demand (a 500, a 503 then a success, a dropped
// connection, x-should-retry).

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

type stubCall struct {
	at             time.Time
	method, path   string
	idempotencyKey string
	authorization  string
	header         http.Header
	query          string // the raw query string
	body           map[string]any
}

// stub answers the i-th request with answers[min(i, len-1)] and records the requests.
type stub struct {
	mu    sync.Mutex
	calls []stubCall
}

type answer struct {
	status int
	header map[string]string
	body   string
}

func newStub(t *testing.T, answers ...answer) (*stub, *Client) {
	t.Helper()
	s := &stub{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		_ = json.Unmarshal(raw, &body)
		s.mu.Lock()
		i := len(s.calls)
		s.calls = append(s.calls, stubCall{
			at: time.Now(), method: r.Method, path: r.URL.Path, idempotencyKey: r.Header.Get("Idempotency-Key"),
			authorization: r.Header.Get("Authorization"), header: r.Header.Clone(), query: r.URL.RawQuery, body: body,
		})
		s.mu.Unlock()
		a := answers[min(i, len(answers)-1)]
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_stub")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient("sk_sandbox_test", WithBaseURL(srv.URL+"/v1"))
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func (s *stub) snapshot() []stubCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]stubCall(nil), s.calls...)
}

const paymentJSON = `{"id":"pay_01jh3w5f6g7h8j9k0m1n2p3q4r","object":"payment","virtual_account_id":"va_01jh3v8x9q2w3e4r5t6y7v8k9m",
"amount":100,"currency":"USD","rail":"rtp","destination":{"name":"A","account_number":"123456789","routing_number":"021000021"},
"status":"pending","fee":50,"idempotency_key":"k","description":"","metadata":{},"journal_entry_id":"je_01jh3w5f6g7h8j9k0m1n2p3q4s","failure":null,
"expected_settlement_at":"2026-01-15T09:30:00.000Z","submitted_at":null,"completed_at":null,"failed_at":null,
"canceled_at":null,"environment":"sandbox","created_at":"2026-01-15T09:30:00.000Z"}`

func errorJSON(code string) string {
	return `{"code":"` + code + `","message":"stub says ` + code + `","request_id":"req_stub_body","param":"p","resource_id":"pay_x"}`
}

var paymentRequest = PaymentRequest{
	VirtualAccountId: "va_01jh3v8x9q2w3e4r5t6y7v8k9m", Amount: 100, Rail: PaymentRequestRailRtp,
	Destination: &Destination{Name: "A", AccountNumber: "123456789", RoutingNumber: "021000021"},
}

func TestRetryKeepsTheIdempotencyKey(t *testing.T) {
	s, c := newStub(t,
		answer{status: 503, body: errorJSON("unavailable")},
		answer{status: 201, body: paymentJSON})
	p, err := c.Payments.Create(context.Background(), paymentRequest)
	if err != nil {
		t.Fatal(err)
	}
	if p.Id != "pay_01jh3w5f6g7h8j9k0m1n2p3q4r" {
		t.Fatalf("payment %+v", p)
	}
	calls := s.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d attempts, want 2", len(calls))
	}
	key := calls[0].idempotencyKey
	if key == "" || calls[1].idempotencyKey != key {
		t.Fatalf("Idempotency-Key %q then %q", key, calls[1].idempotencyKey)
	}
	for _, call := range calls {
		if call.body["idempotency_key"] != key {
			t.Fatalf("body idempotency_key %v, header %q", call.body["idempotency_key"], key)
		}
		if call.authorization != "Bearer sk_sandbox_test" {
			t.Fatalf("Authorization %q", call.authorization)
		}
	}
	if gap := calls[1].at.Sub(calls[0].at); gap < 450*time.Millisecond {
		t.Fatalf("retried after %s, want the 0.5 s backoff", gap)
	}
}

func TestCallersIdempotencyKey(t *testing.T) {
	s, c := newStub(t, answer{status: 201, body: paymentJSON})
	if _, err := c.Payments.Create(context.Background(), paymentRequest, WithIdempotencyKey("mine")); err != nil {
		t.Fatal(err)
	}
	// A non-payment POST gets a key too, random when the caller gives none
	// (what the stub answers does not matter here).
	_, _ = c.VirtualAccounts.Freeze(context.Background(), "va_x")
	calls := s.snapshot()
	if calls[0].idempotencyKey != "mine" || calls[0].body["idempotency_key"] != "mine" {
		t.Fatalf("key %q, body %v", calls[0].idempotencyKey, calls[0].body["idempotency_key"])
	}
	if calls[1].idempotencyKey == "" || calls[1].idempotencyKey == "mine" {
		t.Fatalf("the freeze's key %q", calls[1].idempotencyKey)
	}
}

func TestRetryDecisions(t *testing.T) {
	inProgress := errorJSON("idempotency_in_progress")
	cases := []struct {
		name     string
		answer   answer
		attempts int
		kind     ErrorKind
	}{
		{"408", answer{status: 408, body: errorJSON("timeout")}, 3, KindAPI},
		{"429", answer{status: 429, body: errorJSON("rate_limited")}, 3, KindRateLimit},
		{"500", answer{status: 500, body: errorJSON("internal_error")}, 3, KindInternalServer},
		{"502 not JSON", answer{status: 502, body: "<html>bad gateway</html>"}, 3, KindInternalServer},
		{"503", answer{status: 503, body: errorJSON("unavailable")}, 3, KindInternalServer},
		{"409 in progress", answer{status: 409, body: inProgress}, 3, KindConflict},
		{"409 conflict", answer{status: 409, body: errorJSON("idempotency_conflict")}, 1, KindConflict},
		{"400", answer{status: 400, body: errorJSON("invalid_request")}, 1, KindBadRequest},
		{"401", answer{status: 401, body: errorJSON("unauthorized")}, 1, KindAuthentication},
		{"403", answer{status: 403, body: errorJSON("forbidden")}, 1, KindPermissionDenied},
		{"404", answer{status: 404, body: errorJSON("not_found")}, 1, KindNotFound},
		{"413", answer{status: 413, body: errorJSON("request_too_large")}, 1, KindAPI},
		{"422", answer{status: 422, body: errorJSON("insufficient_funds")}, 1, KindUnprocessableEntity},
		{"500 x-should-retry false", answer{status: 500, header: map[string]string{"X-Should-Retry": "false"}, body: errorJSON("internal_error")}, 1, KindInternalServer},
		{"409 in progress x-should-retry false", answer{status: 409, header: map[string]string{"x-should-retry": "false"}, body: inProgress}, 1, KindConflict},
		{"400 x-should-retry true", answer{status: 400, header: map[string]string{"x-should-retry": "true"}, body: errorJSON("invalid_request")}, 3, KindBadRequest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.answer.header = withHeader(tc.answer.header, "Retry-After", "0")
			s, c := newStub(t, tc.answer)
			_, err := c.Payments.Retrieve(context.Background(), "pay_x")
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("want an *APIError, got %v", err)
			}
			if apiErr.Kind != tc.kind || apiErr.Status != tc.answer.status {
				t.Fatalf("got %s %d, want %s %d", apiErr.Kind, apiErr.Status, tc.kind, tc.answer.status)
			}
			if n := len(s.snapshot()); n != tc.attempts {
				t.Fatalf("%d attempts, want %d", n, tc.attempts)
			}
		})
	}
}

func withHeader(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		out[hk] = hv
	}
	return out
}

func TestInternalServerError(t *testing.T) {
	s, c := newStub(t, answer{status: 500, body: errorJSON("internal_error")})
	_, err := c.Payments.Retrieve(context.Background(), "pay_x", WithRetries(0))
	if !errors.Is(err, ErrInternalServer) {
		t.Fatalf("want ErrInternalServer, got %v", err)
	}
	if errors.Is(err, ErrNotFound) {
		t.Fatal("an internal error is not a not-found")
	}
	var e *APIError
	errors.As(err, &e)
	if e.Kind != KindInternalServer || e.Status != 500 || e.Code != "internal_error" || e.Message != "stub says internal_error" ||
		e.Param != "p" || e.RequestID != "req_stub_body" || e.ResourceID != "pay_x" || len(e.Body) == 0 {
		t.Fatalf("error %+v", e)
	}
	if e.Error() != "treasury: InternalServerError 500 internal_error: stub says internal_error (param p) [request req_stub_body]" {
		t.Fatalf("message %q", e.Error())
	}
	if n := len(s.snapshot()); n != 1 {
		t.Fatalf("WithRetries(0): %d attempts", n)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	s, c := newStub(t,
		answer{status: 429, header: map[string]string{"Retry-After": "1"}, body: errorJSON("rate_limited")},
		answer{status: 200, body: paymentJSON})
	if _, err := c.Payments.Retrieve(context.Background(), "pay_x"); err != nil {
		t.Fatal(err)
	}
	calls := s.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d attempts", len(calls))
	}
	if gap := calls[1].at.Sub(calls[0].at); gap < 950*time.Millisecond || gap > 3*time.Second {
		t.Fatalf("retried after %s, Retry-After said 1 s", gap)
	}
}

func TestMaxRetriesOption(t *testing.T) {
	s, c := newStub(t, answer{status: 503, header: map[string]string{"Retry-After": "0"}, body: errorJSON("unavailable")})
	c, err := NewClient("sk_sandbox_test", WithBaseURL(c.baseURL), WithMaxRetries(4), WithHeader("X-Extra", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.Retrieve(context.Background(), "pay_x"); !errors.Is(err, ErrInternalServer) {
		t.Fatal(err)
	}
	if n := len(s.snapshot()); n != 5 {
		t.Fatalf("WithMaxRetries(4): %d attempts, want 5", n)
	}
	if _, err := c.Payments.Retrieve(context.Background(), "pay_x", WithRetries(1), WithRequestHeader("X-Other", "2")); !errors.Is(err, ErrInternalServer) {
		t.Fatal(err)
	}
	calls := s.snapshot()
	if len(calls) != 7 {
		t.Fatalf("WithRetries(1): %d attempts in all, want 7", len(calls))
	}
	if last := calls[6].header; last.Get("X-Extra") != "1" || last.Get("X-Other") != "2" || last.Get("User-Agent") != "treasury-go/"+Version {
		t.Fatalf("headers %v", last)
	}
}

// flaky fails its first RoundTrip with a connection error.
type flaky struct {
	mu     sync.Mutex
	failed bool
}

func (f *flaky) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func TestRetryOnConnectionError(t *testing.T) {
	s, c := newStub(t, answer{status: 201, body: paymentJSON})
	base := c.baseURL
	c, err := NewClient("sk_sandbox_test", WithBaseURL(base), WithHTTPClient(&http.Client{Transport: &flaky{}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Payments.Create(context.Background(), paymentRequest); err != nil {
		t.Fatalf("not retried after a connection error: %v", err)
	}
	if n := len(s.snapshot()); n != 1 {
		t.Fatalf("%d requests reached the server", n)
	}
	// Without retries the connection error is returned.
	c, _ = NewClient("sk_sandbox_test", WithBaseURL(base), WithHTTPClient(&http.Client{Transport: &flaky{}}), WithMaxRetries(0))
	var opErr *net.OpError
	if _, err := c.Payments.Retrieve(context.Background(), "pay_x"); !errors.As(err, &opErr) {
		t.Fatalf("want the connection error, got %v", err)
	}
}

func TestBackoff(t *testing.T) {
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, w := range want {
		if got := backoff(i); got != w {
			t.Fatalf("backoff(%d) = %s, want %s", i, got, w)
		}
	}
	h := http.Header{}
	h.Set("Retry-After", "3")
	if got := retryDelay(h, 0); got != 3*time.Second {
		t.Fatalf("Retry-After 3: %s", got)
	}
	h.Set("Retry-After", "3600")
	if got := retryDelay(h, 1); got != time.Second {
		t.Fatalf("an hour's Retry-After falls back to the backoff: %s", got)
	}
	h.Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
	if got := retryDelay(h, 0); got <= 0 || got > 2*time.Second {
		t.Fatalf("Retry-After as a date: %s", got)
	}
}

func TestContextCancelsTheWait(t *testing.T) {
	_, c := newStub(t, answer{status: 503, header: map[string]string{"Retry-After": "30"}, body: errorJSON("unavailable")})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Payments.Retrieve(ctx, "pay_x")
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("got %v after %s", err, time.Since(start))
	}
}

func TestKindOf(t *testing.T) {
	for status, kind := range map[int]ErrorKind{
		400: KindBadRequest, 401: KindAuthentication, 403: KindPermissionDenied, 404: KindNotFound,
		409: KindConflict, 422: KindUnprocessableEntity, 429: KindRateLimit, 500: KindInternalServer,
		503: KindInternalServer, 413: KindAPI, 418: KindAPI,
	} {
		if got := KindOf(status); got != kind {
			t.Fatalf("KindOf(%d) = %s, want %s", status, got, kind)
		}
	}
	if (&APIError{Kind: KindAPI}).Unwrap() != nil {
		t.Fatal("KindAPI has no sentinel")
	}
}

// TestMetadataFilterOnEveryPage checks the wire form of a list's metadata
// filter: metadata[key]=value, key and value URL-encoded, on every page.
func TestMetadataFilterOnEveryPage(t *testing.T) {
	page := func(more bool, next string) answer {
		n := "null"
		if next != "" {
			n = `"` + next + `"`
		}
		return answer{status: 200, body: `{"object":"list","data":[` + paymentJSON + `],"has_more":` +
			map[bool]string{true: "true", false: "false"}[more] + `,"next_cursor":` + n + `}`}
	}
	s, c := newStub(t, page(true, "cur_1"), page(true, "cur_2"), page(false, ""))
	filter := MetadataFilter{"order id": "A&B", "region": "east=1 [x]"}
	seq := c.Payments.List(context.Background(), &ListPaymentsParams{Metadata: &filter, Limit: Ptr(1)})
	filter["region"] = "changed after the call" // the list keeps the filter it was given
	got, err := Collect(seq)
	if err != nil || len(got) != 3 {
		t.Fatalf("listed %d, %v", len(got), err)
	}
	calls := s.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d requests, want 3", len(calls))
	}
	for i, call := range calls {
		if !strings.Contains(call.query, "metadata[order+id]=A%26B") {
			t.Errorf("page %d: raw query %q", i, call.query)
		}
		q, err := url.ParseQuery(call.query)
		if err != nil {
			t.Fatal(err)
		}
		want := url.Values{"metadata[order id]": {"A&B"}, "metadata[region]": {"east=1 [x]"}, "limit": {"1"}}
		if i > 0 {
			want["cursor"] = []string{[]string{"", "cur_1", "cur_2"}[i]}
		}
		if !reflect.DeepEqual(q, want) {
			t.Errorf("page %d: query %v, want %v", i, q, want)
		}
	}

	// A nil or empty filter sends no metadata parameter.
	s, c = newStub(t, answer{status: 200, body: `{"object":"list","data":[],"has_more":false,"next_cursor":null}`})
	for _, f := range []*MetadataFilter{nil, {}} {
		if _, err := Collect(c.VirtualAccounts.List(context.Background(), &ListVirtualAccountsParams{Metadata: f})); err != nil {
			t.Fatal(err)
		}
	}
	for i, call := range s.snapshot() {
		if call.query != "" {
			t.Errorf("request %d with an empty filter: query %q", i, call.query)
		}
	}
}

const bookTransferJSON = `{"id":"bt_01jh3v9a2b3c4d5e6f7g8h9j0n","object":"book_transfer",
"from_virtual_account_id":"va_01jh3v8x9q2w3e4r5t6y7v8k9m","to_virtual_account_id":"va_01jh3v8x9q2w3e4r5t6y7v8k9n",
"amount":100,"currency":"USD","description":"","status":"completed","idempotency_key":"k",
"journal_entry_id":"je_01jh3v9a2b3c4d5e6f7g8h9j0k","metadata":{},"environment":"sandbox",
"created_at":"2026-01-15T09:30:00.000Z"}`

var bookTransferRequest = BookTransferRequest{
	FromVirtualAccountId: "va_01jh3v8x9q2w3e4r5t6y7v8k9m", ToVirtualAccountId: "va_01jh3v8x9q2w3e4r5t6y7v8k9n", Amount: 100,
}

// TestBookTransferIdempotencyKey: the server requires a book transfer's key,
// so the client always sends one, in the header and the body alike, the same
// on a retry; the caller's (option or body) wins over a random one.
func TestBookTransferIdempotencyKey(t *testing.T) {
	s, c := newStub(t,
		answer{status: 503, header: map[string]string{"Retry-After": "0"}, body: errorJSON("unavailable")},
		answer{status: 201, body: bookTransferJSON})
	bt, err := c.BookTransfers.Create(context.Background(), bookTransferRequest)
	if err != nil {
		t.Fatal(err)
	}
	if bt.Id != "bt_01jh3v9a2b3c4d5e6f7g8h9j0n" || bt.Status != BookTransferStatusCompleted || bt.Object != BookTransferObjectBookTransfer {
		t.Fatalf("book transfer %+v", bt)
	}
	calls := s.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d attempts, want 2", len(calls))
	}
	key := calls[0].idempotencyKey
	if !strings.HasPrefix(key, "idk_") || calls[1].idempotencyKey != key {
		t.Fatalf("Idempotency-Key %q then %q", key, calls[1].idempotencyKey)
	}
	for i, call := range calls {
		if call.body["idempotency_key"] != key {
			t.Fatalf("attempt %d: body idempotency_key %v, header %q", i, call.body["idempotency_key"], key)
		}
	}
	if bookTransferRequest.IdempotencyKey != "" {
		t.Fatal("Create changed the caller's request")
	}

	// Two calls without a key get two keys.
	s, c = newStub(t, answer{status: 201, body: bookTransferJSON})
	for range 2 {
		if _, err := c.BookTransfers.Create(context.Background(), bookTransferRequest); err != nil {
			t.Fatal(err)
		}
	}
	if calls := s.snapshot(); calls[0].idempotencyKey == calls[1].idempotencyKey {
		t.Fatalf("two transfers sent with one key %q", calls[0].idempotencyKey)
	}

	// The caller's key, as an option or in the body; a replay (200) is the
	// transfer too.
	s, c = newStub(t, answer{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: bookTransferJSON})
	if _, err := c.BookTransfers.Create(context.Background(), bookTransferRequest, WithIdempotencyKey("mine")); err != nil {
		t.Fatal(err)
	}
	withBody := bookTransferRequest
	withBody.IdempotencyKey = "in-the-body"
	replayed, err := c.BookTransfers.Create(context.Background(), withBody)
	if err != nil || replayed.Id != "bt_01jh3v9a2b3c4d5e6f7g8h9j0n" {
		t.Fatalf("a replay: %+v, %v", replayed, err)
	}
	calls = s.snapshot()
	if calls[0].idempotencyKey != "mine" || calls[0].body["idempotency_key"] != "mine" {
		t.Fatalf("option: header %q, body %v", calls[0].idempotencyKey, calls[0].body["idempotency_key"])
	}
	if calls[1].idempotencyKey != "in-the-body" || calls[1].body["idempotency_key"] != "in-the-body" {
		t.Fatalf("body: header %q, body %v", calls[1].idempotencyKey, calls[1].body["idempotency_key"])
	}
}

// TestBookTransferListFilters checks that a list of book transfers sends its
// filters, the metadata's as metadata[key]=value, on every page.
func TestBookTransferListFilters(t *testing.T) {
	page := func(next string) answer {
		n, more := "null", "false"
		if next != "" {
			n, more = `"`+next+`"`, "true"
		}
		return answer{status: 200, body: `{"object":"list","data":[` + bookTransferJSON + `],"has_more":` + more + `,"next_cursor":` + n + `}`}
	}
	s, c := newStub(t, page("cur_1"), page(""))
	filter := MetadataFilter{"order id": "A&B"}
	got, err := Collect(c.BookTransfers.List(context.Background(), &ListBookTransfersParams{
		VirtualAccountId: Ptr("va_01jh3v8x9q2w3e4r5t6y7v8k9m"), CreatedAfter: Ptr("2026-01-01"),
		CreatedBefore: Ptr("2026-02-01T00:00:00Z"), Metadata: &filter, Limit: Ptr(1),
	}))
	if err != nil || len(got) != 2 {
		t.Fatalf("listed %d, %v", len(got), err)
	}
	calls := s.snapshot()
	if len(calls) != 2 {
		t.Fatalf("%d requests, want 2", len(calls))
	}
	for i, call := range calls {
		q, err := url.ParseQuery(call.query)
		if err != nil {
			t.Fatal(err)
		}
		want := url.Values{
			"virtual_account_id": {"va_01jh3v8x9q2w3e4r5t6y7v8k9m"}, "created_after": {"2026-01-01"},
			"created_before": {"2026-02-01T00:00:00Z"}, "metadata[order id]": {"A&B"}, "limit": {"1"},
		}
		if i == 1 {
			want["cursor"] = []string{"cur_1"}
		}
		if !reflect.DeepEqual(q, want) || !strings.Contains(call.query, "metadata[order+id]=A%26B") {
			t.Errorf("page %d: query %q, want %v", i, call.query, want)
		}
		if call.idempotencyKey != "" {
			t.Errorf("page %d: a GET with Idempotency-Key %q", i, call.idempotencyKey)
		}
	}
}

// A payment held for a second key, then approved, then denied: the fields of
// its approval (PaymentApproval), and a canceled one's cancellation_reason,
// which the server sets only after 7 days.
const (
	approvalPendingJSON = `{"created_by":"key_01jh3v9a2b3c4d5e6f7g8h9j0p","expires_at":"2026-01-22T09:30:00.000Z",
"approved_at":null,"approved_by":null,"denied_at":null,"denied_by":null,"denial_reason":null}`
	approvalApprovedJSON = `{"created_by":"key_01jh3v9a2b3c4d5e6f7g8h9j0p","expires_at":"2026-01-22T09:30:00.000Z",
"approved_at":"2026-01-15T10:00:00.000Z","approved_by":"key_01jh3v9a2b3c4d5e6f7g8h9j0q","denied_at":null,"denied_by":null,"denial_reason":null}`
	approvalDeniedJSON = `{"created_by":"key_01jh3v9a2b3c4d5e6f7g8h9j0p","expires_at":"2026-01-22T09:30:00.000Z",
"approved_at":null,"approved_by":null,"denied_at":"2026-01-15T10:00:00.000Z","denied_by":"key_01jh3v9a2b3c4d5e6f7g8h9j0p","denial_reason":"over budget"}`
)

// paymentWith is paymentJSON with its status, and extra fields added.
func paymentWith(status, extra string) string {
	s := strings.Replace(paymentJSON, `"status":"pending"`, `"status":"`+status+`"`, 1)
	if extra != "" {
		s = strings.TrimSuffix(s, "}") + "," + extra + "}"
	}
	return s
}

// TestPaymentApprovalRoutes checks what Approve and Deny send (the route, no
// fields for an approval, the reason only when given, an Idempotency-Key like
// every POST) and that the approval's fields and cancellation_reason decode.
func TestPaymentApprovalRoutes(t *testing.T) {
	s, c := newStub(t,
		answer{status: 200, body: paymentWith("pending", `"approval":`+approvalApprovedJSON)},
		answer{status: 200, body: paymentWith("denied", `"approval":`+approvalDeniedJSON)},
		answer{status: 200, body: paymentWith("denied", `"approval":`+approvalDeniedJSON)})
	ctx := context.Background()
	approved, err := c.Payments.Approve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
	if err != nil {
		t.Fatal(err)
	}
	a := approved.Approval
	if approved.Status != PaymentStatusPending || a == nil || a.CreatedBy != "key_01jh3v9a2b3c4d5e6f7g8h9j0p" ||
		a.ApprovedBy == nil || *a.ApprovedBy != "key_01jh3v9a2b3c4d5e6f7g8h9j0q" || a.ApprovedAt == nil ||
		!a.ApprovedAt.Equal(time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)) ||
		!a.ExpiresAt.Equal(time.Date(2026, 1, 22, 9, 30, 0, 0, time.UTC)) ||
		a.DeniedAt != nil || a.DeniedBy != nil || a.DenialReason != nil || approved.CancellationReason != nil {
		t.Fatalf("approved: %+v, approval %+v", approved, a)
	}
	denied, err := c.Payments.Deny(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r", DenyPaymentRequest{Reason: Ptr("over budget")})
	if err != nil {
		t.Fatal(err)
	}
	if d := denied.Approval; denied.Status != PaymentStatusDenied || d == nil || d.DeniedBy == nil ||
		*d.DeniedBy != d.CreatedBy || d.DenialReason == nil || *d.DenialReason != "over budget" || d.ApprovedAt != nil {
		t.Fatalf("denied: %+v, approval %+v", denied, d)
	}
	if _, err := c.Payments.Deny(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r", DenyPaymentRequest{}); err != nil {
		t.Fatal(err)
	}
	calls := s.snapshot()
	want := []struct {
		path string
		body map[string]any
	}{
		{"/v1/payments/pay_01jh3w5f6g7h8j9k0m1n2p3q4r/approve", map[string]any{}},
		{"/v1/payments/pay_01jh3w5f6g7h8j9k0m1n2p3q4r/deny", map[string]any{"reason": "over budget"}},
		{"/v1/payments/pay_01jh3w5f6g7h8j9k0m1n2p3q4r/deny", map[string]any{}},
	}
	if len(calls) != len(want) {
		t.Fatalf("%d requests, want %d", len(calls), len(want))
	}
	for i, call := range calls {
		if call.method != http.MethodPost || call.path != want[i].path || !reflect.DeepEqual(call.body, want[i].body) {
			t.Errorf("request %d: %s %s %v, want POST %s %v", i, call.method, call.path, call.body, want[i].path, want[i].body)
		}
		if !strings.HasPrefix(call.idempotencyKey, "idk_") {
			t.Errorf("request %d: Idempotency-Key %q", i, call.idempotencyKey)
		}
	}

	// A payment without an approval has neither field; one canceled by the
	// expiry carries its reason.
	s, c = newStub(t,
		answer{status: 200, body: paymentJSON},
		answer{status: 200, body: paymentWith("canceled", `"approval":`+approvalPendingJSON+`,"cancellation_reason":"approval_expired"`)})
	plain, err := c.Payments.Retrieve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
	if err != nil || plain.Approval != nil || plain.CancellationReason != nil {
		t.Fatalf("a payment without approval: %+v, %v", plain, err)
	}
	expired, err := c.Payments.Retrieve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
	if err != nil || expired.Status != PaymentStatusCanceled || expired.CancellationReason == nil ||
		*expired.CancellationReason != PaymentCancellationReasonApprovalExpired || expired.Approval == nil ||
		expired.Approval.ApprovedAt != nil || expired.Approval.DeniedAt != nil {
		t.Fatalf("an expired approval: %+v, %v", expired, err)
	}

	// The server's refusals are typed errors: the creating key's approval
	// (403), a payment in another status (409).
	_, c = newStub(t,
		answer{status: 403, body: errorJSON("forbidden")},
		answer{status: 409, body: errorJSON("invalid_state")})
	_, err = c.Payments.Approve(ctx, "pay_x")
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Kind != KindPermissionDenied || apiErr.Code != "forbidden" || !errors.Is(err, ErrPermissionDenied) {
		t.Fatalf("a 403: %v", err)
	}
	_, err = c.Payments.Deny(ctx, "pay_x", DenyPaymentRequest{})
	if !errors.As(err, &apiErr) || apiErr.Kind != KindConflict || apiErr.Code != "invalid_state" {
		t.Fatalf("a 409: %v", err)
	}
}

// ledgerEntryJSON is a ledger entry of a payment's journal entry.
const ledgerEntryJSON = `{"id":"le_01jh3w5f6g7h8j9k0m1n2p3q4t","object":"ledger_entry","journal_entry_id":"je_01jh3w5f6g7h8j9k0m1n2p3q4s",
"ledger_account_id":"la_01jh3w5f6g7h8j9k0m1n2p3q4v","virtual_account_id":"va_01jh3v8x9q2w3e4r5t6y7v8k9m","direction":"debit",
"amount":100,"currency":"USD","type":"payment","status":"pending","description":"","environment":"sandbox",
"effective_at":"2026-01-15T09:30:00.000Z","created_at":"2026-01-15T09:30:00.000Z",
"source":{"type":"payment","id":"pay_01jh3w5f6g7h8j9k0m1n2p3q4r"}}`

// TestLinkFields: a payment's journal_entry_id (a journal entry's id, or
// null) and a ledger entry's source decode, in a list, in a journal entry's
// lines and in an event.
func TestLinkFields(t *testing.T) {
	ctx := context.Background()
	s, c := newStub(t,
		answer{status: 200, body: paymentJSON},
		answer{status: 200, body: strings.Replace(paymentJSON, `"je_01jh3w5f6g7h8j9k0m1n2p3q4s"`, "null", 1)},
		answer{status: 200, body: `{"object":"list","data":[` + ledgerEntryJSON + `],"has_more":false,"next_cursor":null}`},
		answer{status: 200, body: `{"id":"je_01jh3w5f6g7h8j9k0m1n2p3q4s","object":"journal_entry","type":"payment","status":"pending",
"description":"","metadata":{},"environment":"sandbox","reverses":null,"reversed_by":null,"effective_at":"2026-01-15T09:30:00.000Z",
"created_at":"2026-01-15T09:30:00.000Z","source":{"type":"payment","id":"pay_01jh3w5f6g7h8j9k0m1n2p3q4r"},"entries":[` + ledgerEntryJSON + `]}`},
		answer{status: 200, body: `{"id":"evt_01jh3w5f6g7h8j9k0m1n2p3q4t","object":"event","type":"ledger.entry.created",
"created_at":"2026-01-15T09:30:00.000Z","data":{"object":` + ledgerEntryJSON + `}}`})
	want := Source{Type: SourceTypePayment, Id: "pay_01jh3w5f6g7h8j9k0m1n2p3q4r"}

	p, err := c.Payments.Retrieve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
	if err != nil || p.JournalEntryId == nil || *p.JournalEntryId != "je_01jh3w5f6g7h8j9k0m1n2p3q4s" {
		t.Fatalf("a payment's journal_entry_id: %+v, %v", p, err)
	}
	p, err = c.Payments.Retrieve(ctx, "pay_01jh3w5f6g7h8j9k0m1n2p3q4r")
	if err != nil || p.JournalEntryId != nil {
		t.Fatalf("a null journal_entry_id: %+v, %v", p, err)
	}
	entries, err := Collect(c.Ledger.Entries.List(ctx, nil))
	if err != nil || len(entries) != 1 || entries[0].Source != want {
		t.Fatalf("listed ledger entries: %+v, %v", entries, err)
	}
	je, err := c.Ledger.JournalEntries.Retrieve(ctx, "je_01jh3w5f6g7h8j9k0m1n2p3q4s")
	if err != nil || je.Source != want || len(je.Entries) != 1 || je.Entries[0].Source != want {
		t.Fatalf("a journal entry's lines: %+v, %v", je, err)
	}
	ev, err := c.Events.Retrieve(ctx, "evt_01jh3w5f6g7h8j9k0m1n2p3q4t")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ev.Data.Object)
	var le LedgerEntry
	if err := json.Unmarshal(raw, &le); err != nil || le.Source != want || le.JournalEntryId != je.Id {
		t.Fatalf("a ledger.entry.created event's object: %s, %v", raw, err)
	}
	if calls := s.snapshot(); len(calls) != 5 || calls[2].path != "/v1/ledger/entries" ||
		calls[3].path != "/v1/ledger/journal-entries/je_01jh3w5f6g7h8j9k0m1n2p3q4s" {
		t.Fatalf("requests: %+v", calls)
	}
}

// A scheduled payment (no hold, no journal entry, its date), released, and
// one the rules refused on its date (a rule's code, network_code null).
func scheduledPayment(status, journalEntry, failure string) string {
	s := paymentWith(status, `"scheduled_for":"2026-01-16"`)
	s = strings.Replace(s, `"journal_entry_id":"je_01jh3w5f6g7h8j9k0m1n2p3q4s"`, `"journal_entry_id":`+journalEntry, 1)
	return strings.Replace(s, `"failure":null`, `"failure":`+failure, 1)
}

// TestScheduledPaymentRoutes checks what a scheduled Create and
// Simulations.ReleasePayment send (scheduled_for as YYYY-MM-DD only when set,
// the release's route with no fields and an Idempotency-Key like every POST),
// that ScheduledFor, a nil JournalEntryId and a nil Failure.NetworkCode
// decode, and the status filter's wire form.
func TestScheduledPaymentRoutes(t *testing.T) {
	const id = "pay_01jh3w5f6g7h8j9k0m1n2p3q4r"
	s, c := newStub(t,
		answer{status: 201, body: scheduledPayment("scheduled", "null", "null")},
		answer{status: 201, body: paymentJSON},
		answer{status: 200, body: scheduledPayment("pending", `"je_01jh3w5f6g7h8j9k0m1n2p3q4s"`, "null")},
		answer{status: 200, body: scheduledPayment("failed", "null",
			`{"code":"insufficient_funds","network_code":null,"reason":"available balance too low","retry_recommendation":{"action":"retry_later"}}`)},
		answer{status: 200, body: scheduledPayment("canceled", "null", "null")},
		answer{status: 200, body: `{"object":"list","data":[` + scheduledPayment("scheduled", "null", "null") + `],"has_more":false,"next_cursor":null}`})
	ctx := context.Background()
	req := PaymentRequest{
		VirtualAccountId: "va_01jh3v8x9q2w3e4r5t6y7v8k9m", Amount: 100, Rail: PaymentRequestRailRtp,
		Destination: &Destination{Name: "A", AccountNumber: "123456789", RoutingNumber: "021000021"},
	}
	scheduled := req
	scheduled.ScheduledFor = Ptr(NewDate(2026, time.January, 16))
	p, err := c.Payments.Create(ctx, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status != PaymentStatusScheduled || p.ScheduledFor == nil || p.ScheduledFor.String() != "2026-01-16" ||
		p.JournalEntryId != nil || p.Failure != nil {
		t.Fatalf("scheduled: %+v", p)
	}
	plain, err := c.Payments.Create(ctx, req)
	if err != nil || plain.ScheduledFor != nil {
		t.Fatalf("a payment not scheduled: %+v, %v", plain, err)
	}
	released, err := c.Simulations.ReleasePayment(ctx, id)
	if err != nil || released.Status != PaymentStatusPending || released.JournalEntryId == nil ||
		released.ScheduledFor == nil || released.ScheduledFor.String() != "2026-01-16" {
		t.Fatalf("released: %+v, %v", released, err)
	}
	refused, err := c.Simulations.ReleasePayment(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if f := refused.Failure; refused.Status != PaymentStatusFailed || f == nil || f.Code != PaymentFailureCodeInsufficientFunds ||
		f.NetworkCode != nil || f.RetryRecommendation.Action != RetryRecommendationActionRetryLater || refused.JournalEntryId != nil {
		t.Fatalf("released without funds: %+v, failure %+v", refused, f)
	}
	canceled, err := c.Payments.Cancel(ctx, id)
	if err != nil || canceled.Status != PaymentStatusCanceled || canceled.ScheduledFor == nil {
		t.Fatalf("canceled while scheduled: %+v, %v", canceled, err)
	}
	listed, err := Collect(c.Payments.List(ctx, &ListPaymentsParams{Status: Ptr(ListPaymentsParamsStatusScheduled)}))
	if err != nil || len(listed) != 1 || listed[0].Status != PaymentStatusScheduled {
		t.Fatalf("listed: %+v, %v", listed, err)
	}

	calls := s.snapshot()
	if len(calls) != 6 {
		t.Fatalf("%d requests, want 6", len(calls))
	}
	if calls[0].path != "/v1/payments" || calls[0].body["scheduled_for"] != "2026-01-16" {
		t.Errorf("a scheduled create sent %s %v", calls[0].path, calls[0].body)
	}
	if _, ok := calls[1].body["scheduled_for"]; ok {
		t.Errorf("a create without a date sent scheduled_for: %v", calls[1].body)
	}
	for _, i := range []int{2, 3} {
		call := calls[i]
		if call.method != http.MethodPost || call.path != "/v1/simulations/payments/"+id+"/release" ||
			!reflect.DeepEqual(call.body, map[string]any{}) || !strings.HasPrefix(call.idempotencyKey, "idk_") {
			t.Errorf("release %d: %s %s %v, key %q", i, call.method, call.path, call.body, call.idempotencyKey)
		}
	}
	if calls[4].path != "/v1/payments/"+id+"/cancel" || calls[5].query != "status=scheduled" {
		t.Errorf("cancel %s, list query %q", calls[4].path, calls[5].query)
	}

	// The server's refusals are typed errors: a bad date (400, param
	// scheduled_for), a release of a payment not scheduled (409), a live key
	// (403).
	_, c = newStub(t,
		answer{status: 400, body: `{"code":"invalid_request","message":"scheduled_for must be after today","request_id":"req_x","param":"scheduled_for"}`},
		answer{status: 409, body: errorJSON("invalid_state")},
		answer{status: 403, body: errorJSON("forbidden")})
	_, err = c.Payments.Create(ctx, scheduled)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Kind != KindBadRequest || apiErr.Param != "scheduled_for" || !errors.Is(err, ErrBadRequest) {
		t.Fatalf("a 400: %v", err)
	}
	_, err = c.Simulations.ReleasePayment(ctx, id)
	if !errors.As(err, &apiErr) || apiErr.Kind != KindConflict || apiErr.Code != "invalid_state" {
		t.Fatalf("a 409: %v", err)
	}
	_, err = c.Simulations.ReleasePayment(ctx, id)
	if !errors.As(err, &apiErr) || apiErr.Kind != KindPermissionDenied || apiErr.Code != "forbidden" {
		t.Fatalf("a 403: %v", err)
	}
}

const webhookReplayJSON = `{"id":"rpl_01jh3w5f6g7h8j9k0m1n2p3q4w","object":"webhook_replay","webhook_id":"we_01jh3w5f6g7h8j9k0m1n2p3q4x",
"created_after":"2026-01-15T00:00:00.000Z","created_before":"2026-01-16T00:00:00.000Z","types":["payment.completed"],
"replayed":3,"created_at":"2026-01-16T09:30:00.000Z"}`

// TestWebhookReplayRoute checks what Webhooks.Replay sends (the route, the
// window as RFC 3339 times, types only when given, an Idempotency-Key like
// every creating POST, the same across a retry, or the caller's), that the
// replay decodes from a 201 and from an idempotent 200, that a delivery's
// replay_id decodes (and a null one), and that the refusals are typed errors,
// replay_too_large a BadRequestError.
func TestWebhookReplayRoute(t *testing.T) {
	const endpoint = "we_01jh3w5f6g7h8j9k0m1n2p3q4x"
	untyped := strings.Replace(webhookReplayJSON, `["payment.completed"]`, "null", 1)
	s, c := newStub(t,
		answer{status: 201, body: webhookReplayJSON},
		answer{status: 503, body: errorJSON("unavailable")},
		answer{status: 201, body: untyped},
		answer{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: untyped},
		answer{status: 200, body: `{"object":"list","data":[
{"id":"msg_2","object":"webhook_delivery","webhook_endpoint_id":"` + endpoint + `","event_id":"evt_1","event_type":"payment.completed",
"status":"succeeded","attempts":[],"next_attempt_at":null,"replay_id":"rpl_01jh3w5f6g7h8j9k0m1n2p3q4w","created_at":"2026-01-16T09:30:00.000Z"},
{"id":"msg_1","object":"webhook_delivery","webhook_endpoint_id":"` + endpoint + `","event_id":"evt_1","event_type":"payment.completed",
"status":"succeeded","attempts":[],"next_attempt_at":null,"replay_id":null,"created_at":"2026-01-15T09:30:00.000Z"}],
"has_more":false,"next_cursor":null}`})
	ctx := context.Background()
	after := time.Date(2026, time.January, 15, 0, 0, 0, 0, time.UTC)
	before := after.Add(24 * time.Hour)
	typed := WebhookReplayRequest{CreatedAfter: after, CreatedBefore: before,
		Types: &[]WebhookReplayRequestTypes{WebhookReplayRequestTypesPaymentCompleted}}
	r, err := c.Webhooks.Replay(ctx, endpoint, typed)
	if err != nil {
		t.Fatal(err)
	}
	if r.Id != "rpl_01jh3w5f6g7h8j9k0m1n2p3q4w" || r.Object != WebhookReplayObjectWebhookReplay || r.WebhookId != endpoint ||
		!r.CreatedAfter.Equal(after) || !r.CreatedBefore.Equal(before) || r.Replayed != 3 ||
		r.Types == nil || !reflect.DeepEqual(*r.Types, []string{"payment.completed"}) || r.CreatedAt.IsZero() {
		t.Fatalf("replay: %+v", r)
	}
	// Without types, retried after a 503: one key for both attempts.
	plain := WebhookReplayRequest{CreatedAfter: after, CreatedBefore: before}
	r, err = c.Webhooks.Replay(ctx, endpoint, plain)
	if err != nil || r.Types != nil || r.Replayed != 3 {
		t.Fatalf("a replay without types: %+v, %v", r, err)
	}
	again, err := c.Webhooks.Replay(ctx, endpoint, plain, WithIdempotencyKey("replay-1"))
	if err != nil || !reflect.DeepEqual(again, r) {
		t.Fatalf("the idempotent replay: %+v, %v", again, err)
	}
	deliveries, err := Collect(c.Webhooks.Deliveries.List(ctx, endpoint, nil))
	if err != nil || len(deliveries) != 2 || deliveries[0].ReplayId == nil || *deliveries[0].ReplayId != r.Id ||
		deliveries[1].ReplayId != nil || deliveries[0].EventId != deliveries[1].EventId {
		t.Fatalf("deliveries: %+v, %v", deliveries, err)
	}

	calls := s.snapshot()
	if len(calls) != 5 {
		t.Fatalf("%d requests, want 5", len(calls))
	}
	for i := range 4 {
		if calls[i].method != http.MethodPost || calls[i].path != "/v1/webhooks/"+endpoint+"/replay" {
			t.Errorf("replay %d: %s %s", i, calls[i].method, calls[i].path)
		}
	}
	if want := map[string]any{"created_after": "2026-01-15T00:00:00Z", "created_before": "2026-01-16T00:00:00Z",
		"types": []any{"payment.completed"}}; !reflect.DeepEqual(calls[0].body, want) {
		t.Errorf("typed replay sent %v, want %v", calls[0].body, want)
	}
	if want := map[string]any{"created_after": "2026-01-15T00:00:00Z", "created_before": "2026-01-16T00:00:00Z"}; !reflect.DeepEqual(calls[1].body, want) {
		t.Errorf("a replay without types sent %v, want %v", calls[1].body, want)
	}
	if !strings.HasPrefix(calls[0].idempotencyKey, "idk_") || !strings.HasPrefix(calls[1].idempotencyKey, "idk_") ||
		calls[1].idempotencyKey != calls[2].idempotencyKey || calls[0].idempotencyKey == calls[1].idempotencyKey {
		t.Errorf("keys %q %q %q: one per call, the same across its retry", calls[0].idempotencyKey, calls[1].idempotencyKey, calls[2].idempotencyKey)
	}
	if calls[3].idempotencyKey != "replay-1" {
		t.Errorf("the caller's key: %q", calls[3].idempotencyKey)
	}
	if calls[4].path != "/v1/webhooks/"+endpoint+"/deliveries" {
		t.Errorf("deliveries path %s", calls[4].path)
	}

	// The refusals.
	_, c = newStub(t,
		answer{status: 400, body: `{"code":"invalid_request","message":"created_before must be after created_after","request_id":"req_x","param":"created_before"}`},
		answer{status: 400, body: `{"code":"invalid_request","message":"unknown event type","request_id":"req_x","param":"types[0]"}`},
		answer{status: 400, body: `{"code":"replay_too_large","message":"the window holds 10001 events, more than 10000: split it","request_id":"req_x"}`},
		answer{status: 404, body: errorJSON("not_found")},
		answer{status: 409, body: errorJSON("invalid_state")},
		answer{status: 409, body: errorJSON("idempotency_conflict")})
	for _, want := range []struct {
		kind        ErrorKind
		sentinel    error
		code, param string
	}{
		{KindBadRequest, ErrBadRequest, "invalid_request", "created_before"},
		{KindBadRequest, ErrBadRequest, "invalid_request", "types[0]"},
		{KindBadRequest, ErrBadRequest, "replay_too_large", ""},
		{KindNotFound, ErrNotFound, "not_found", "p"},
		{KindConflict, ErrConflict, "invalid_state", "p"},
		{KindConflict, ErrConflict, "idempotency_conflict", "p"},
	} {
		_, err := c.Webhooks.Replay(ctx, endpoint, plain)
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, want.sentinel) || apiErr.Kind != want.kind ||
			apiErr.Code != want.code || apiErr.Param != want.param {
			t.Errorf("want %s %s (param %q), got %v", want.kind, want.code, want.param, err)
		}
	}
}

// journalEntryJSON is a manual journal entry with metadata and two lines.
func journalEntryJSON(id string) string {
	return `{"id":"` + id + `","object":"journal_entry","type":"adjustment","status":"posted",
"description":"","metadata":{"order id":"A&B"},"environment":"sandbox","reverses":null,"reversed_by":null,"effective_at":"2026-01-15T09:30:00.000Z",
"created_at":"2026-01-15T09:30:00.000Z","source":{"type":"journal_entry","id":"` + id + `"},"entries":[` + ledgerEntryJSON + `]}`
}

// TestJournalEntriesListRoute checks that Ledger.JournalEntries.List sends every
// filter (the metadata's as metadata[key]=value) on every page, walks the
// pages, decodes the entries with their lines, and that a bad filter is a
// BadRequestError naming it.
func TestJournalEntriesListRoute(t *testing.T) {
	page := func(id, next string) answer {
		n, more := "null", "false"
		if next != "" {
			n, more = `"`+next+`"`, "true"
		}
		return answer{status: 200, body: `{"object":"list","data":[` + journalEntryJSON(id) + `],"has_more":` + more + `,"next_cursor":` + n + `}`}
	}
	s, c := newStub(t, page("je_1", "cur_1"), page("je_2", ""),
		answer{status: 400, body: `{"code":"invalid_request","message":"type must be one of …","request_id":"req_x","param":"type"}`})
	ctx := context.Background()
	filter := MetadataFilter{"order id": "A&B", "region": "east"}
	params := &ListJournalEntriesParams{
		Type: Ptr(ListJournalEntriesParamsTypeAdjustment), Status: Ptr(ListJournalEntriesParamsStatusPosted),
		VirtualAccountId: Ptr("va_01jh3v8x9q2w3e4r5t6y7v8k9m"), SourceType: Ptr(ListJournalEntriesParamsSourceTypeJournalEntry),
		SourceId: Ptr("je_1"), CreatedAfter: Ptr("2026-01-01"), CreatedBefore: Ptr("2026-02-01T00:00:00Z"),
		Metadata: &filter, Limit: Ptr(1),
	}
	got, err := Collect(c.Ledger.JournalEntries.List(ctx, params))
	if err != nil || len(got) != 2 || got[0].Id != "je_1" || got[1].Id != "je_2" ||
		got[0].Source != (Source{Type: SourceTypeJournalEntry, Id: "je_1"}) || len(got[0].Entries) != 1 ||
		got[0].Metadata["order id"] != "A&B" {
		t.Fatalf("listed %+v, %v", got, err)
	}
	filter["region"] = "west" // the list copied the filter when called
	_, err = Collect(c.Ledger.JournalEntries.List(ctx, &ListJournalEntriesParams{Type: Ptr(ListJournalEntriesParamsType("payment_fee"))}))
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Kind != KindBadRequest || apiErr.Param != "type" {
		t.Fatalf("a bad type: %v", err)
	}
	calls := s.snapshot()
	if len(calls) != 3 {
		t.Fatalf("%d requests, want 3", len(calls))
	}
	for i, call := range calls[:2] {
		q, err := url.ParseQuery(call.query)
		if err != nil {
			t.Fatal(err)
		}
		want := url.Values{
			"type": {"adjustment"}, "status": {"posted"}, "virtual_account_id": {"va_01jh3v8x9q2w3e4r5t6y7v8k9m"},
			"source_type": {"journal_entry"}, "source_id": {"je_1"}, "created_after": {"2026-01-01"},
			"created_before": {"2026-02-01T00:00:00Z"}, "metadata[order id]": {"A&B"}, "metadata[region]": {"east"}, "limit": {"1"},
		}
		if i == 1 {
			want["cursor"] = []string{"cur_1"}
		}
		if call.method != http.MethodGet || call.path != "/v1/ledger/journal-entries" || !reflect.DeepEqual(q, want) ||
			!strings.Contains(call.query, "metadata[order+id]=A%26B") || call.idempotencyKey != "" {
			t.Errorf("page %d: %s %s?%s, want %v", i, call.method, call.path, call.query, want)
		}
	}
	if calls[2].query != "type=payment_fee" {
		t.Errorf("the bad type's query %q", calls[2].query)
	}
}

// counterpartyJSON is a counterparty with the verification given.
func counterpartyJSON(id, verification string) string {
	return `{"id":"` + id + `","object":"counterparty","name":"Initech LLC","account_number_last4":"4321",
"routing_number":"021000021","account_type":"checking","verification":` + verification + `,
"metadata":{"vendor id":"A&B"},"environment":"sandbox","created_at":"2026-01-15T09:30:00.000Z"}`
}

const (
	counterpartyID      = "cp_01jh3v9a2b3c4d5e6f7g8h9j0p"
	unverifiedJSON      = `{"status":"unverified","method":null}`
	pendingJSON         = `{"status":"pending","method":"prenote"}`
	failedVerification  = `{"status":"failed","method":"prenote","failure_code":"R03"}`
	notImplementedJSON  = `{"code":"not_implemented","message":"this route is not served by this build","request_id":"req_x"}`
	notVerifiedJSON     = `{"code":"counterparty_not_verified","message":"the counterparty is not verified","request_id":"req_x","param":"counterparty_id","resource_id":"` + counterpartyID + `"}`
	deletedCounterparty = `{"id":"` + counterpartyID + `","object":"counterparty","deleted":true}`
)

// TestCounterpartyRoutes checks what the counterparties' methods send (routes,
// bodies, an Idempotency-Key on create kept across a retry, the caller's key,
// every list filter on every page, verify's default method), that the models
// decode (a null method, a failure code, the deleted answer), and that the
// refusals are typed errors: a 501 not_implemented (a route this build does
// not serve, faked here on verify) an InternalServerError that is not
// retried, with or without x-should-retry: false.
func TestCounterpartyRoutes(t *testing.T) {
	ctx := context.Background()
	page := func(id, next string) answer {
		n, more := "null", "false"
		if next != "" {
			n, more = `"`+next+`"`, "true"
		}
		return answer{status: 200, body: `{"object":"list","data":[` + counterpartyJSON(id, pendingJSON) + `],"has_more":` + more + `,"next_cursor":` + n + `}`}
	}
	s, c := newStub(t,
		answer{status: 503, body: errorJSON("unavailable")},
		answer{status: 201, body: counterpartyJSON(counterpartyID, unverifiedJSON)},
		answer{status: 200, header: map[string]string{"Idempotent-Replayed": "true"}, body: counterpartyJSON(counterpartyID, unverifiedJSON)},
		answer{status: 200, body: counterpartyJSON(counterpartyID, failedVerification)},
		page("cp_1", "cur_1"), page("cp_2", ""),
		answer{status: 200, body: counterpartyJSON(counterpartyID, pendingJSON)},
		answer{status: 200, body: deletedCounterparty})
	req := CounterpartyRequest{Name: "Initech LLC", AccountNumber: "987654321", RoutingNumber: "021000021",
		AccountType: CounterpartyRequestAccountTypeChecking, Metadata: &Metadata{"vendor id": "A&B"}}
	cp, err := c.Counterparties.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Id != counterpartyID || cp.Object != CounterpartyObjectCounterparty || cp.AccountNumberLast4 != "4321" ||
		cp.AccountType != CounterpartyAccountTypeChecking || cp.Verification.Status != CounterpartyVerificationStatusUnverified ||
		cp.Verification.Method != nil || cp.Verification.FailureCode != nil || cp.Environment != CounterpartyEnvironmentSandbox ||
		cp.Metadata["vendor id"] != "A&B" || cp.CreatedAt.IsZero() {
		t.Fatalf("created %+v", cp)
	}
	again, err := c.Counterparties.Create(ctx, req, WithIdempotencyKey("cp-1"))
	if err != nil || !reflect.DeepEqual(again, cp) {
		t.Fatalf("the idempotent create: %+v, %v", again, err)
	}
	got, err := c.Counterparties.Retrieve(ctx, counterpartyID)
	if err != nil || got.Verification.Status != CounterpartyVerificationStatusFailed || got.Verification.Method == nil ||
		*got.Verification.Method != CounterpartyVerificationMethodPrenote || got.Verification.FailureCode == nil ||
		*got.Verification.FailureCode != "R03" {
		t.Fatalf("retrieved %+v, %v", got, err)
	}
	filter := MetadataFilter{"vendor id": "A&B"}
	listed, err := Collect(c.Counterparties.List(ctx, &ListCounterpartiesParams{
		VerificationStatus: Ptr(ListCounterpartiesParamsVerificationStatusPending), Metadata: &filter,
		CreatedAfter: Ptr("2026-01-01"), CreatedBefore: Ptr("2026-02-01T00:00:00Z"), Limit: Ptr(1),
	}))
	if err != nil || len(listed) != 2 || listed[0].Id != "cp_1" || listed[1].Id != "cp_2" {
		t.Fatalf("listed %+v, %v", listed, err)
	}
	verifying, err := c.Counterparties.Verify(ctx, counterpartyID, VerifyCounterpartyRequest{})
	if err != nil || verifying.Verification.Status != CounterpartyVerificationStatusPending {
		t.Fatalf("verify: %+v, %v", verifying, err)
	}
	deleted, err := c.Counterparties.Delete(ctx, counterpartyID)
	if err != nil || deleted.Id != counterpartyID || deleted.Object != DeletedCounterpartyObjectCounterparty ||
		deleted.Deleted != DeletedCounterpartyDeletedTrue {
		t.Fatalf("deleted %+v, %v", deleted, err)
	}

	calls := s.snapshot()
	if len(calls) != 8 {
		t.Fatalf("%d requests, want 8", len(calls))
	}
	wantBody := map[string]any{"name": "Initech LLC", "account_number": "987654321", "routing_number": "021000021",
		"account_type": "checking", "metadata": map[string]any{"vendor id": "A&B"}}
	for i := range 3 {
		if calls[i].method != http.MethodPost || calls[i].path != "/v1/counterparties" || !reflect.DeepEqual(calls[i].body, wantBody) {
			t.Errorf("create %d: %s %s %v", i, calls[i].method, calls[i].path, calls[i].body)
		}
	}
	if !strings.HasPrefix(calls[0].idempotencyKey, "idk_") || calls[0].idempotencyKey != calls[1].idempotencyKey {
		t.Errorf("keys %q %q: generated, the same across the retry", calls[0].idempotencyKey, calls[1].idempotencyKey)
	}
	if calls[2].idempotencyKey != "cp-1" {
		t.Errorf("the caller's key: %q", calls[2].idempotencyKey)
	}
	if calls[3].method != http.MethodGet || calls[3].path != "/v1/counterparties/"+counterpartyID {
		t.Errorf("retrieve: %s %s", calls[3].method, calls[3].path)
	}
	for i, call := range calls[4:6] {
		q, err := url.ParseQuery(call.query)
		if err != nil {
			t.Fatal(err)
		}
		want := url.Values{"verification_status": {"pending"}, "metadata[vendor id]": {"A&B"},
			"created_after": {"2026-01-01"}, "created_before": {"2026-02-01T00:00:00Z"}, "limit": {"1"}}
		if i == 1 {
			want["cursor"] = []string{"cur_1"}
		}
		if call.method != http.MethodGet || call.path != "/v1/counterparties" || !reflect.DeepEqual(q, want) ||
			!strings.Contains(call.query, "metadata[vendor+id]=A%26B") {
			t.Errorf("page %d: %s %s?%s, want %v", i, call.method, call.path, call.query, want)
		}
	}
	if calls[6].method != http.MethodPost || calls[6].path != "/v1/counterparties/"+counterpartyID+"/verify" ||
		!reflect.DeepEqual(calls[6].body, map[string]any{"method": "prenote"}) {
		t.Errorf("verify: %s %s %v", calls[6].method, calls[6].path, calls[6].body)
	}
	if calls[7].method != http.MethodDelete || calls[7].path != "/v1/counterparties/"+counterpartyID {
		t.Errorf("delete: %s %s", calls[7].method, calls[7].path)
	}

	// The refusals; the 501s are sent once each.
	s, c = newStub(t,
		answer{status: 501, header: map[string]string{"X-Should-Retry": "false"}, body: notImplementedJSON},
		answer{status: 501, body: notImplementedJSON},
		answer{status: 409, body: errorJSON("invalid_state")},
		answer{status: 404, body: errorJSON("not_found")},
		answer{status: 400, body: `{"code":"invalid_request","message":"routing_number fails the ABA checksum","request_id":"req_x","param":"routing_number"}`})
	for i, want := range []struct {
		kind        ErrorKind
		sentinel    error
		status      int
		code, param string
	}{
		{KindInternalServer, ErrInternalServer, 501, "not_implemented", ""},
		{KindInternalServer, ErrInternalServer, 501, "not_implemented", ""},
		{KindConflict, ErrConflict, 409, "invalid_state", "p"},
		{KindNotFound, ErrNotFound, 404, "not_found", "p"},
		{KindBadRequest, ErrBadRequest, 400, "invalid_request", "routing_number"},
	} {
		var err error
		if i < 4 {
			_, err = c.Counterparties.Verify(ctx, counterpartyID, VerifyCounterpartyRequest{Method: VerifyCounterpartyRequestMethodPrenote})
		} else {
			_, err = c.Counterparties.Create(ctx, req)
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, want.sentinel) || apiErr.Kind != want.kind || apiErr.Status != want.status ||
			apiErr.Code != want.code || apiErr.Param != want.param {
			t.Errorf("want %s %d %s (param %q), got %v", want.kind, want.status, want.code, want.param, err)
		}
	}
	if n := len(s.snapshot()); n != 5 {
		t.Errorf("%d requests, want 5: a 501 is not retried", n)
	}
}

// TestPaymentToACounterparty checks that a payment to a counterparty sends
// counterparty_id and no destination, that the payment's counterparty_id
// decodes (nil on a payment to a raw destination), that the settings carry
// require_verified_counterparty both ways, and that counterparty_not_verified
// is an UnprocessableEntityError naming the counterparty.
func TestPaymentToACounterparty(t *testing.T) {
	ctx := context.Background()
	settings := `{"object":"platform_settings","require_verified_counterparty":true}`
	s, c := newStub(t,
		answer{status: 201, body: paymentWith("pending", `"counterparty_id":"`+counterpartyID+`"`)},
		answer{status: 201, body: paymentJSON},
		answer{status: 200, body: settings},
		answer{status: 422, body: notVerifiedJSON})
	req := PaymentRequest{VirtualAccountId: "va_01jh3v8x9q2w3e4r5t6y7v8k9m", Amount: 100, Rail: PaymentRequestRailRtp,
		CounterpartyId: Ptr(counterpartyID)}
	p, err := c.Payments.Create(ctx, req)
	if err != nil || p.CounterpartyId == nil || *p.CounterpartyId != counterpartyID || p.Destination.AccountNumber != "123456789" {
		t.Fatalf("a payment to a counterparty: %+v, %v", p, err)
	}
	p, err = c.Payments.Create(ctx, paymentRequest)
	if err != nil || p.CounterpartyId != nil {
		t.Fatalf("a payment to a destination: %+v, %v", p, err)
	}
	_, _ = c.Platform.Settings.Update(ctx, UpdateSettingsRequest{RequireVerifiedCounterparty: Ptr(true)})
	_, err = c.Payments.Create(ctx, req)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrUnprocessableEntity) || apiErr.Code != "counterparty_not_verified" ||
		apiErr.Param != "counterparty_id" || apiErr.ResourceID != counterpartyID {
		t.Fatalf("an unverified counterparty: %v", err)
	}
	calls := s.snapshot()
	if _, has := calls[0].body["destination"]; has || calls[0].body["counterparty_id"] != counterpartyID {
		t.Errorf("a payment to a counterparty sent %v", calls[0].body)
	}
	if _, has := calls[1].body["counterparty_id"]; has || calls[1].body["destination"] == nil {
		t.Errorf("a payment to a destination sent %v", calls[1].body)
	}
	if calls[2].method != http.MethodPatch || !reflect.DeepEqual(calls[2].body, map[string]any{"require_verified_counterparty": true}) {
		t.Errorf("the settings update sent %s %v", calls[2].method, calls[2].body)
	}
}
