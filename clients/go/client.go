// Package treasury is the Go client of the Treasury API (an embedded-treasury
// HTTP API: platforms, virtual accounts, KYB, payments on four rails, a
// double-entry ledger, webhooks and events).
//
// The models and the low-level client are generated from the API's OpenAPI
// document by oapi-codegen (package api; every model is aliased here, so
// treasury.Payment is api.Payment). On top of it this package adds what the
// API's client contract asks of every client:
//
//   - resources named after the API: client.Platforms, client.Platform,
//     client.VirtualAccounts, client.Payments, client.BookTransfers,
//     client.Counterparties, client.KYB, client.Ledger, client.Webhooks, client.Events,
//     client.Simulations, client.Operator;
//   - an Idempotency-Key on every POST (the caller's, see WithIdempotencyKey,
//     or a random one), the same across the client's own retries; a payment's
//     and a book transfer's body idempotency_key defaults to it;
//   - retries (2 by default) on connection errors, 408, 429, 409
//     idempotency_in_progress and 5xx but 501, with exponential backoff from 0.5 s
//     capped at 8 s, honouring Retry-After; a server's x-should-retry header,
//     when present, decides instead;
//   - typed errors: every non-2xx answer is an *APIError whose Kind names its
//     class and which errors.Is matches against ErrBadRequest, ErrNotFound…;
//   - List methods returning an iter.Seq2 that walks every page;
//   - webhook signature verification in package webhooks.
//
// Quick start:
//
//	client, err := treasury.NewClient(os.Getenv("TREASURY_API_KEY"),
//		treasury.WithBaseURL("http://localhost:8080/v1"))
//	...
//	va, err := client.VirtualAccounts.Create(ctx, treasury.CreateVirtualAccountRequest{
//		PlatformId: platformID, EntityRef: "acme", Type: treasury.CreateVirtualAccountRequestTypeChecking,
//	})
//	for p, err := range client.Payments.List(ctx, nil) { ... }
package treasury

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opentreasury/treasury/clients/go/api"
)

// Version is this client's version, sent in the User-Agent header.
const Version = "0.1.0"

// DefaultBaseURL is the address of a local instance (`treasury dev`).
const DefaultBaseURL = "http://localhost:8080/v1"

// DefaultMaxRetries is how many times a request is retried by default.
const DefaultMaxRetries = 2

const (
	initialRetryDelay = 500 * time.Millisecond
	maxRetryDelay     = 8 * time.Second
	// A Retry-After longer than this is not waited for: the exponential
	// backoff applies instead.
	maxRetryAfter = 60 * time.Second
)

// Client is a Treasury API client. It is safe for concurrent use.
type Client struct {
	// Platforms: the operator's routes on platforms (operator key).
	Platforms *PlatformsService
	// Platform: the caller's own platform, its settings, API keys and revenue share.
	Platform *PlatformService
	// VirtualAccounts: accounts, their balances, transactions and statements.
	VirtualAccounts *VirtualAccountsService
	// Payments: payments out of virtual accounts.
	Payments *PaymentsService
	// BookTransfers: money moved at once between two of the platform's
	// virtual accounts.
	BookTransfers *BookTransfersService
	// Counterparties: saved bank accounts to pay, and their verification by
	// prenote.
	Counterparties *CounterpartiesService
	// KYB: business verifications.
	KYB *KYBService
	// Ledger: ledger accounts, entries (manual journal entries), journal entries and exports.
	Ledger *LedgerService
	// Webhooks: webhook endpoints and their deliveries.
	Webhooks *WebhooksService
	// Events: the event log.
	Events *EventsService
	// Simulations: sandbox-only simulations.
	Simulations *SimulationsService
	// Operator: the operator's other routes (KYB decisions, ACH files).
	Operator *OperatorService

	raw     *api.ClientWithResponses
	baseURL string
}

// Raw returns the generated low-level client (package api) behind c: it shares
// c's authentication, Idempotency-Keys and retries, and answers with the raw
// *http.Response besides the decoded model. Use it for what the typed methods
// cannot say, such as a JSON null that clears a setting:
//
//	c.Raw().ConfigurePlatformWithBodyWithResponse(ctx, id, &api.ConfigurePlatformParams{},
//		"application/json", strings.NewReader(`{"rate_limit":null}`))
func (c *Client) Raw() *api.ClientWithResponses { return c.raw }

// Option configures a Client.
type Option func(*config)

type config struct {
	baseURL    string
	httpClient *http.Client
	maxRetries int
	headers    http.Header
}

// WithBaseURL sets the API's address, for example http://localhost:8080/v1
// (DefaultBaseURL when not given).
func WithBaseURL(baseURL string) Option {
	return func(c *config) { c.baseURL = baseURL }
}

// WithHTTPClient sets the *http.Client that sends the requests
// (http.DefaultClient when not given); use it for timeouts and transports.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *config) { c.httpClient = hc }
}

// WithMaxRetries sets how many times a request is retried (2 by default; 0
// never retries).
func WithMaxRetries(n int) Option {
	return func(c *config) { c.maxRetries = max(n, 0) }
}

// WithHeader adds a header to every request.
func WithHeader(key, value string) Option {
	return func(c *config) { c.headers.Add(key, value) }
}

// NewClient returns a client that authenticates with apiKey (a platform key,
// sk_sandbox_… or sk_live_…, or the operator key).
func NewClient(apiKey string, opts ...Option) (*Client, error) {
	cfg := config{baseURL: DefaultBaseURL, httpClient: http.DefaultClient, maxRetries: DefaultMaxRetries, headers: http.Header{}}
	for _, o := range opts {
		o(&cfg)
	}
	if apiKey == "" {
		return nil, errors.New("treasury: an API key is required")
	}
	t := &transport{hc: cfg.httpClient, apiKey: apiKey, maxRetries: cfg.maxRetries, headers: cfg.headers}
	baseURL := strings.TrimRight(cfg.baseURL, "/")
	raw, err := api.NewClientWithResponses(baseURL, api.WithHTTPClient(t))
	if err != nil {
		return nil, fmt.Errorf("treasury: %w", err)
	}
	c := &Client{raw: raw, baseURL: baseURL}
	c.Platforms = &PlatformsService{c}
	c.Platform = &PlatformService{c: c, Settings: &PlatformSettingsService{c}, APIKeys: &APIKeysService{c}}
	c.VirtualAccounts = &VirtualAccountsService{c}
	c.Payments = &PaymentsService{c}
	c.BookTransfers = &BookTransfersService{c}
	c.Counterparties = &CounterpartiesService{c}
	c.KYB = &KYBService{c}
	c.Ledger = &LedgerService{c: c, Accounts: &LedgerAccountsService{c}, Entries: &LedgerEntriesService{c},
		JournalEntries: &LedgerJournalEntriesService{c}}
	c.Webhooks = &WebhooksService{c: c, Deliveries: &WebhookDeliveriesService{c}}
	c.Events = &EventsService{c}
	c.Simulations = &SimulationsService{c}
	c.Operator = &OperatorService{c: c, ACHFiles: &ACHFilesService{c}}
	return c, nil
}

// RequestOption configures one call.
type RequestOption func(*requestConfig)

type requestConfig struct {
	idempotencyKey string
	requestID      string
	maxRetries     *int
	headers        http.Header
}

// WithIdempotencyKey sets the call's Idempotency-Key header (a POST gets a
// random one otherwise). It is the same on every retry of the call.
func WithIdempotencyKey(key string) RequestOption {
	return func(r *requestConfig) { r.idempotencyKey = key }
}

// WithRequestID sets the call's X-Request-Id (at most 64 safe characters; the
// server answers with it and logs it).
func WithRequestID(id string) RequestOption {
	return func(r *requestConfig) { r.requestID = id }
}

// WithRetries sets how many times this call is retried, overriding the
// client's WithMaxRetries.
func WithRetries(n int) RequestOption {
	return func(r *requestConfig) { n = max(n, 0); r.maxRetries = &n }
}

// WithRequestHeader adds a header to this call.
func WithRequestHeader(key, value string) RequestOption {
	return func(r *requestConfig) {
		if r.headers == nil {
			r.headers = http.Header{}
		}
		r.headers.Add(key, value)
	}
}

type requestConfigKey struct{}

// prepare applies the call's options: the returned context carries them to the
// transport, and the editor sets their headers.
func prepare(ctx context.Context, opts []RequestOption) (context.Context, *requestConfig, api.RequestEditorFn) {
	rc := &requestConfig{}
	for _, o := range opts {
		o(rc)
	}
	editor := func(_ context.Context, req *http.Request) error {
		if rc.idempotencyKey != "" {
			req.Header.Set("Idempotency-Key", rc.idempotencyKey)
		}
		if rc.requestID != "" {
			req.Header.Set("X-Request-Id", rc.requestID)
		}
		for k, vs := range rc.headers {
			for _, v := range vs {
				req.Header.Add(k, v)
			}
		}
		return nil
	}
	return context.WithValue(ctx, requestConfigKey{}, rc), rc, editor
}

// newIdempotencyKey returns a random key.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "idk_" + hex.EncodeToString(b[:])
}

// transport is the generated client's HttpRequestDoer: it authenticates,
// gives every POST an Idempotency-Key and retries.
type transport struct {
	hc         *http.Client
	apiKey     string
	maxRetries int
	headers    http.Header
}

func (t *transport) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	retries := t.maxRetries
	if rc, ok := ctx.Value(requestConfigKey{}).(*requestConfig); ok && rc.maxRetries != nil {
		retries = *rc.maxRetries
	}
	req.Header.Set("Authorization", "Bearer "+t.apiKey)
	req.Header.Set("User-Agent", "treasury-go/"+Version)
	for k, vs := range t.headers {
		if req.Header.Get(k) == "" {
			req.Header[k] = vs
		}
	}
	if req.Method == http.MethodPost && req.Header.Get("Idempotency-Key") == "" {
		req.Header.Set("Idempotency-Key", newIdempotencyKey())
	}
	for attempt := 0; ; attempt++ {
		r := req
		if attempt > 0 {
			r = req.Clone(ctx)
			if req.GetBody != nil {
				body, err := req.GetBody()
				if err != nil {
					return nil, err
				}
				r.Body = body
			}
		}
		resp, err := t.hc.Do(r)
		if err != nil {
			if ctx.Err() != nil || attempt >= retries {
				return nil, err
			}
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return nil, err
			}
			continue
		}
		retry, err := shouldRetry(resp)
		if err != nil {
			return nil, err
		}
		if !retry || attempt >= retries {
			return resp, nil
		}
		delay := retryDelay(resp.Header, attempt)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
	}
}

// shouldRetry tells whether an answer is worth another attempt. The server's
// x-should-retry header decides when present; otherwise 408, 429, 409
// idempotency_in_progress and 5xx but 501 (not_implemented: the route is not
// served by this build, whenever asked) are retried. It leaves resp.Body readable.
func shouldRetry(resp *http.Response) (bool, error) {
	if resp.StatusCode < 400 {
		return false, nil
	}
	switch strings.ToLower(strings.TrimSpace(resp.Header.Get("X-Should-Retry"))) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	switch {
	case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests,
		resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
		return true, nil
	case resp.StatusCode == http.StatusConflict:
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if err != nil {
			return false, err
		}
		var e struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(body, &e)
		return e.Code == "idempotency_in_progress", nil
	}
	return false, nil
}

// backoff is the delay before retry number attempt+1: 0.5 s, 1 s, 2 s… capped at 8 s.
func backoff(attempt int) time.Duration {
	d := time.Duration(float64(initialRetryDelay) * math.Pow(2, float64(attempt)))
	return min(d, maxRetryDelay)
}

// retryDelay honours Retry-After (seconds, or an HTTP date) when the answer
// carries one, and falls back to the exponential backoff.
func retryDelay(h http.Header, attempt int) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
			if d := time.Duration(secs * float64(time.Second)); d <= maxRetryAfter {
				return d
			}
		} else if when, err := http.ParseTime(v); err == nil {
			if d := time.Until(when); d >= 0 && d <= maxRetryAfter {
				return d
			}
		}
	}
	return backoff(attempt)
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// result turns a generated response into its model or an *APIError.
func result[T any](hr *http.Response, body []byte, candidates ...*T) (*T, error) {
	if hr.StatusCode >= 300 {
		return nil, newAPIError(hr, body)
	}
	for _, c := range candidates {
		if c != nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("treasury: unexpected answer %d (%s) from %s %s",
		hr.StatusCode, hr.Header.Get("Content-Type"), hr.Request.Method, hr.Request.URL.Path)
}

// rawResult returns a non-JSON body (CSV) or an *APIError.
func rawResult(hr *http.Response, body []byte) ([]byte, error) {
	if hr.StatusCode >= 300 {
		return nil, newAPIError(hr, body)
	}
	return body, nil
}
