package http_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	apihttp "github.com/opentreasury/treasury/http"
)

// Slow and greedy clients against the server as serve runs it: the API's
// *http.Server over a capped listener on 127.0.0.1. Names in this file
// start with "sc" so that they never clash with other test files.

// scStart serves the API the way cmd/treasury does and returns its address.
func scStart(t *testing.T, cfg apihttp.Config, limits apihttp.ConnLimits) (*testAPI, string) {
	t.Helper()
	pool := pgtest.Pool(t)
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	cfg.OperatorKey = operatorKey
	api := apihttp.New(a, cfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := api.HTTPServer()
	go func() { _ = srv.Serve(apihttp.WrapListener(ln, limits, nil)) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := ln.Addr().String()
	return &testAPI{t: t, URL: "http://" + addr, Pool: pool, App: a, API: api}, addr
}

// scDial opens a raw connection to addr from the loopback address from.
func scDial(t testing.TB, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// scClient is an HTTP client whose connections come from the loopback
// address from, one fresh connection per request.
func scClient(from string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// scRead reads one response from c within limit.
func scRead(t testing.TB, c net.Conn, limit time.Duration) (*http.Response, []byte) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer within %s: %v", limit, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read the answer's body: %v", err)
	}
	return res, b
}

// scRequireJSONError asserts an error answer: status, JSON body with code,
// message and request_id, and the same id in X-Request-Id.
func scRequireJSONError(t testing.TB, res *http.Response, body []byte, status int, code string) {
	t.Helper()
	if res.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", res.StatusCode, status, body)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("Content-Type %q, want application/json: %s", ct, body)
	}
	var e struct {
		Code      string `json:"code"`
		Message   string `json:"message"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("body is not JSON: %q", body)
	}
	if e.Code != code || e.Message == "" || e.RequestID == "" {
		t.Fatalf("body %s, want code %s with a message and a request_id", body, code)
	}
	if got := res.Header.Get("X-Request-Id"); got != e.RequestID {
		t.Fatalf("X-Request-Id %q, want the body's request_id %q", got, e.RequestID)
	}
}

// scClosedWithin asserts that the server closes c within limit.
func scClosedWithin(t testing.TB, c net.Conn, limit time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(limit))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the connection was still open after %s", limit)
	}
}

// TestStalledBodyWithoutKeyIsRefusedAtOnce: a body announced and never
// sent, without a key, gets its 401 at once and the connection is closed
// soon after: the server does not wait for a body it will not read.
func TestStalledBodyWithoutKeyIsRefusedAtOnce(t *testing.T) {
	_, addr := scStart(t, apihttp.Config{}, apihttp.ConnLimits{})
	c := scDial(t, "127.0.0.1", addr)
	start := time.Now()
	if _, err := io.WriteString(c, "POST /v1/ledger/entries HTTP/1.1\r\nHost: treasury\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	res, body := scRead(t, c, 3*time.Second)
	if took := time.Since(start); took > 3*time.Second { // 0.5 s drain, then the answer; roomy for -race on 2 busy cores
		t.Fatalf("the 401 took %s", took)
	}
	scRequireJSONError(t, res, body, http.StatusUnauthorized, "unauthorized")
	if !res.Close {
		t.Fatalf("the 401 keeps the connection open (Connection: %q) with 99 bytes of body unread", res.Header.Get("Connection"))
	}
	scClosedWithin(t, c, 3*time.Second)
}

// TestDripFedBodyIsCutOff: a body dripped a byte at a time, far below the
// minimum rate, is cut off after the grace with 408 request_timeout.
func TestDripFedBodyIsCutOff(t *testing.T) {
	api, addr := scStart(t, apihttp.Config{BodyReadGrace: time.Second}, apihttp.ConnLimits{})
	_, key := api.newPlatform("Drip Co")
	c := scDial(t, "127.0.0.1", addr)
	start := time.Now()
	if _, err := io.WriteString(c, "POST /v1/ledger/entries HTTP/1.1\r\nHost: treasury\r\nAuthorization: Bearer "+key+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // 10 bytes a second, while the server still reads
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				if _, err := io.WriteString(c, " "); err != nil {
					return
				}
			}
		}
	}()
	res, body := scRead(t, c, 10*time.Second)
	took := time.Since(start)
	scRequireJSONError(t, res, body, http.StatusRequestTimeout, "request_timeout")
	if took < time.Second || took > 6*time.Second {
		t.Fatalf("cut off after %s, want just past the 1 s grace", took)
	}
	if !res.Close {
		t.Fatal("the 408 keeps the connection open")
	}
	scClosedWithin(t, c, 3*time.Second)
}

// TestStalledConnectionsLeaveOthersServed: one address opens its whole
// quota of connections and stalls them (headers dripped, or a body
// announced and not sent), then a hundred more. The hundred are closed at
// once; a client from another address gets /healthz and an authenticated
// request answered within its usual latency; the stalled ones are cut off
// after their deadlines, and their slots come back.
func TestStalledConnectionsLeaveOthersServed(t *testing.T) {
	const perIP, excess = 200, 100
	api, addr := scStart(t, apihttp.Config{BodyReadGrace: 2 * time.Second, ReadHeaderTimeout: 2 * time.Second, RateLimitOff: true},
		apihttp.ConnLimits{MaxConns: 1000, MaxConnsPerIP: perIP})
	_, key := api.newPlatform("Patient Co")
	other := scClient("127.0.0.2")
	served := func(path, key string) time.Duration {
		t.Helper()
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, api.URL+path, nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		start := time.Now()
		res, err := other.Do(req)
		if err != nil {
			t.Fatalf("GET %s from another address: %v", path, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s from another address: %d", path, res.StatusCode)
		}
		return time.Since(start)
	}
	usual := max(served("/healthz", ""), served("/v1/platform", key))

	stalled := make([]net.Conn, perIP)
	for i := range stalled {
		c := scDial(t, "127.0.0.1", addr)
		head := "POST /v1/ledger/entries HTTP/1.1\r\nHost: treasury\r\n" // and never the end of the header
		if i%2 == 0 {
			head += "Authorization: Bearer " + key + "\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
		}
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		stalled[i] = c
	}
	var wg sync.WaitGroup
	var refusedLate atomic.Int32
	for range excess {
		c := scDial(t, "127.0.0.1", addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second)) // refused at accept: closed long before
			if _, err := io.Copy(io.Discard, c); isTimeout(err) {
				refusedLate.Add(1)
			}
		}()
	}
	for range 5 {
		for _, path := range []string{"/healthz", "/v1/platform"} {
			if took := served(path, key); took > 2*time.Second {
				t.Fatalf("GET %s from another address took %s during the flood (usually %s)", path, took, usual)
			}
		}
	}
	wg.Wait()
	if n := refusedLate.Load(); n > 0 {
		t.Fatalf("%d of the %d connections over the per-address cap were still open after 1 s", n, excess)
	}

	// The stalled ones: a 408 for a body, a close for a header.
	for i, c := range stalled {
		if i%2 == 0 {
			res, body := scRead(t, c, 5*time.Second)
			scRequireJSONError(t, res, body, http.StatusRequestTimeout, "request_timeout")
		}
		scClosedWithin(t, c, 5*time.Second)
	}
	// Their slots are free again: the address is served.
	again := scClient("127.0.0.1")
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := again.Get(api.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("127.0.0.1 still refused after its stalled connections were closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestOverallConnectionCap: at the overall cap a new connection, from any
// address, is closed at once; when connections close, new ones are served.
func TestOverallConnectionCap(t *testing.T) {
	const capacity = 50
	api, addr := scStart(t, apihttp.Config{}, apihttp.ConnLimits{MaxConns: capacity})
	held := make([]net.Conn, capacity)
	for i := range held {
		held[i] = scDial(t, "127.0.0.1", addr)
		if _, err := io.WriteString(held[i], "GET /healthz HTTP/1.1\r\nHost: treasury\r\n"); err != nil {
			t.Fatal(err)
		}
	}
	// The server accepts in order: once the last held one is answered, the
	// cap is reached (a complete request proves the connection was taken).
	if _, err := io.WriteString(held[capacity-1], "\r\n"); err != nil {
		t.Fatal(err)
	}
	if res, _ := scRead(t, held[capacity-1], 3*time.Second); res.StatusCode != http.StatusOK {
		t.Fatalf("a held connection's /healthz: %d", res.StatusCode)
	}
	over := scDial(t, "127.0.0.2", addr)
	scClosedWithin(t, over, 3*time.Second)

	for _, c := range held[:10] {
		_ = c.Close()
	}
	client := scClient("127.0.0.2")
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, err := client.Get(api.URL + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("still refused after 10 connections closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestParserErrorsAreJSON: what net/http refuses before any handler runs
// (a NUL in a header, a bad %-escape, a 2 MiB header, …) is answered like
// every other error: JSON {code, message, request_id} and X-Request-Id.
func TestParserErrorsAreJSON(t *testing.T) {
	_, addr := scStart(t, apihttp.Config{}, apihttp.ConnLimits{})
	for _, tc := range []struct {
		name, request string
		status        int
		code          string
	}{
		{"NUL in Authorization", "GET /v1/platform HTTP/1.1\r\nHost: treasury\r\nAuthorization: Bearer sk_\x00x\r\n\r\n", 400, "invalid_request"},
		{"bad %-escape in the path", "GET /v1/payments/pay_%zz HTTP/1.1\r\nHost: treasury\r\n\r\n", 400, "invalid_request"},
		{"2 MiB header", "GET /healthz HTTP/1.1\r\nHost: treasury\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n", 431, "request_too_large"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "invalid_request"},
		{"garbage request line", "HELLO\r\n\r\n", 400, "invalid_request"},
		{"unsupported transfer encoding", "POST /v1/ledger/entries HTTP/1.1\r\nHost: treasury\r\nTransfer-Encoding: gzip\r\n\r\n", 501, "invalid_request"},
		{"HTTP/3.0 over TCP", "GET /healthz HTTP/3.0\r\nHost: treasury\r\n\r\n", 505, "invalid_request"},
		{"unknown expectation", "POST /v1/ledger/entries HTTP/1.1\r\nHost: treasury\r\nExpect: tea\r\nContent-Length: 2\r\n\r\n{}", 417, "invalid_request"},
		{"no such route", "GET /v2/nothing HTTP/1.1\r\nHost: treasury\r\n\r\n", 404, "not_found"},
		{"method not allowed", "DELETE /healthz HTTP/1.1\r\nHost: treasury\r\n\r\n", 404, "not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := scDial(t, "127.0.0.1", addr)
			go func() { _, _ = io.WriteString(c, tc.request) }() // the 431 comes while the header is still being sent
			res, body := scRead(t, c, 5*time.Second)
			scRequireJSONError(t, res, body, tc.status, tc.code)
		})
	}
}
