package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	apihttp "github.com/opentreasury/treasury/http"
	"github.com/opentreasury/treasury/projections"
)

const operatorKey = "op_test_operator_key_0123456789"

// testAPI is the API over a fresh database, served on a real listener.
type testAPI struct {
	t    testing.TB
	URL  string
	Pool *pgxpool.Pool
	App  *app.App
	API  *apihttp.Server
}

func newTestAPI(t testing.TB, cfg apihttp.Config) *testAPI {
	t.Helper()
	pool := pgtest.Pool(t)
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if cfg.OperatorKey == "" {
		cfg.OperatorKey = operatorKey
	}
	api := apihttp.New(a, cfg)
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &testAPI{t: t, URL: srv.URL, Pool: pool, App: a, API: api}
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a map.
func (r response) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Str returns a top-level string field of the body.
func (r response) Str(field string) string {
	s, _ := r.JSON()[field].(string)
	return s
}

// do sends a request. body may be nil, a string (sent as is) or a value
// (sent as JSON). headers are name, value pairs.
func (a *testAPI) do(method, path, key string, body any, headers ...string) response {
	a.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewBufferString(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, a.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// sync waits until the asynchronous projections have applied every event
// committed so far (lists of transactions and ledger entries read them).
func (a *testAPI) sync() {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	head, err := eventstore.Head(ctx, a.Pool)
	if err != nil {
		a.t.Fatal(err)
	}
	if err := projections.CatchUp(ctx, a.Pool, head, nil); err != nil {
		a.t.Fatalf("catch up projections: %v", err)
	}
}

// newPlatform registers and approves a platform and returns its id and sandbox key.
func (a *testAPI) newPlatform(name string) (platformID, sandboxKey string) {
	a.t.Helper()
	r := a.do("POST", "/v1/platforms", operatorKey, map[string]any{"name": name, "contact_email": "ops@example.com"})
	if r.Status != http.StatusCreated {
		a.t.Fatalf("create platform: %d %s", r.Status, r.Body)
	}
	id := r.Str("id")
	r = a.do("POST", "/v1/operator/platforms/"+id+"/approve", operatorKey, nil)
	if r.Status != http.StatusOK {
		a.t.Fatalf("approve platform: %d %s", r.Status, r.Body)
	}
	key, _ := r.JSON()["sandbox_api_key"].(map[string]any)
	secret, _ := key["secret"].(string)
	if secret == "" {
		a.t.Fatalf("approve platform: no sandbox key secret in %s", r.Body)
	}
	return id, secret
}

// enableLive enables live for a platform and returns the live key.
func (a *testAPI) enableLive(platformID string) string {
	a.t.Helper()
	r := a.do("POST", "/v1/operator/platforms/"+platformID+"/enable-live", operatorKey, nil)
	if r.Status != http.StatusOK {
		a.t.Fatalf("enable live: %d %s", r.Status, r.Body)
	}
	key, _ := r.JSON()["live_api_key"].(map[string]any)
	secret, _ := key["secret"].(string)
	return secret
}

// requireError asserts an error response's status and code.
func requireError(t testing.TB, r response, status int, code string) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	m := r.JSON()
	if m["code"] != code {
		t.Fatalf("code %v, want %s: %s", m["code"], code, r.Body)
	}
	if m["message"] == "" || m["request_id"] == "" {
		t.Fatalf("error body lacks message or request_id: %s", r.Body)
	}
	// The retry verdict of every error answer (API.md §11): retry what did
	// not run, never a refusal the same request meets again.
	retry := code == "idempotency_in_progress" || status == http.StatusRequestTimeout ||
		status == http.StatusTooManyRequests || status >= 500 && status != http.StatusNotImplemented
	if got := r.Header.Get("x-should-retry"); got != fmt.Sprint(retry) {
		t.Fatalf("x-should-retry %q on %d %s, want %v", got, status, code, retry)
	}
	return m
}
