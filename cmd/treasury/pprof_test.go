package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPprofListener: startPprof serves the index, the named profiles and
// a CPU profile on its own listener, refuses an address already taken,
// and its stop function closes it at once, even while a profile is being
// taken.
func TestPprofListener(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	stop, err := startPprof(addr, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if stop != nil {
			stop()
		}
	}()
	base := "http://" + addr
	for path, want := range map[string]string{
		"/debug/pprof/":                  "goroutine",
		"/debug/pprof/cmdline":           "",
		"/debug/pprof/heap?debug=1":      "heap profile",
		"/debug/pprof/goroutine?debug=1": "goroutine profile",
		"/debug/pprof/profile?seconds=1": "", // a gzipped protobuf
	} {
		r := mustCall(t, http.MethodGet, base+path, "", nil)
		if r.Status != http.StatusOK || !strings.Contains(string(r.Body), want) || len(r.Body) == 0 {
			t.Errorf("GET %s: %d, %d bytes, want 200 with %q", path, r.Status, len(r.Body), want)
		}
	}
	if _, err := startPprof(addr, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "TREASURY_PPROF_ADDR") {
		t.Errorf("a second listener on %s: error %v, want one naming TREASURY_PPROF_ADDR", addr, err)
	}

	// A 30 s profile in flight does not hold up stop.
	inFlight := make(chan error, 1)
	go func() {
		_, err := call(http.MethodGet, base+"/debug/pprof/profile?seconds=30", "", nil)
		inFlight <- err
	}()
	time.Sleep(300 * time.Millisecond)
	began := time.Now()
	stop()
	stop = nil
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("stop took %s with a profile in flight", d)
	}
	select {
	case <-inFlight:
	case <-time.After(5 * time.Second):
		t.Error("the profile request in flight did not end when the listener stopped")
	}
	if _, err := call(http.MethodGet, base+"/debug/pprof/", "", nil); err == nil {
		t.Error("the pprof listener still answers after stop")
	}
}

// TestPprofServe: `treasury serve` with TREASURY_PPROF_ADDR answers
// /debug/pprof/ there and not on the API's port; without it there is no
// profiler; with a profile in flight, SIGTERM still ends the process
// cleanly and promptly.
func TestPprofServe(t *testing.T) {
	t.Parallel()
	url := emptyDatabase(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	pprofAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p := startTreasury(t, "", serveEnv(url, addr, "TREASURY_PPROF_ADDR="+pprofAddr), "serve")
	waitStatus(t, p, 30*time.Second, "http://"+addr+"/healthz", "", http.StatusOK)

	r := mustCall(t, http.MethodGet, "http://"+pprofAddr+"/debug/pprof/cmdline", "", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), "serve") {
		t.Errorf("GET /debug/pprof/cmdline on TREASURY_PPROF_ADDR: %s, want 200 naming serve", r)
	}
	if !strings.Contains(p.stderr.String(), "pprof listening") {
		t.Error("serve does not log the pprof listener's address")
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/pprof/heap"} {
		if r := mustCall(t, http.MethodGet, "http://"+addr+path, testOperatorKey, nil); r.Status == http.StatusOK {
			t.Errorf("GET %s on the API's port (TREASURY_ADDR) answers 200: the profiler must not be there", path)
		}
	}

	inFlight := make(chan error, 1)
	go func() {
		_, err := call(http.MethodGet, "http://"+pprofAddr+"/debug/pprof/profile?seconds=30", "", nil)
		inFlight <- err
	}()
	time.Sleep(500 * time.Millisecond)
	began := time.Now()
	p.stop()
	if done, err := p.exited(); !done || err != nil {
		t.Errorf("serve with a profile in flight: after SIGTERM exited %v, error %v; want a clean exit", done, err)
	}
	if d := time.Since(began); d > 8*time.Second {
		t.Errorf("serve took %s to stop with a profile in flight", d)
	}
	select {
	case <-inFlight:
	case <-time.After(5 * time.Second):
		t.Error("the profile request in flight did not end with the service")
	}

	// Unset: no profiler anywhere.
	addr2 := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p2 := startTreasury(t, "", serveEnv(url, addr2), "serve")
	waitStatus(t, p2, 30*time.Second, "http://"+addr2+"/healthz", "", http.StatusOK)
	if strings.Contains(p2.stderr.String(), "pprof listening") {
		t.Error("serve without TREASURY_PPROF_ADDR started a pprof listener")
	}
	if r := mustCall(t, http.MethodGet, "http://"+addr2+"/debug/pprof/", "", nil); r.Status == http.StatusOK {
		t.Error("GET /debug/pprof/ on the API's port answers 200 without TREASURY_PPROF_ADDR")
	}

	// An address that does not parse: serve refuses to start, and says why.
	p3 := startTreasury(t, "", serveEnv(url, fmt.Sprintf("127.0.0.1:%d", freePort(t)), "TREASURY_PPROF_ADDR=6060"), "serve")
	if err := p3.wait(20 * time.Second); err == nil || !strings.Contains(p3.stderr.String(), "TREASURY_PPROF_ADDR must be HOST:PORT") {
		t.Errorf("serve with TREASURY_PPROF_ADDR=6060: exit %v, stderr %q; want a refusal naming the variable", err, tail(p3.stderr.String(), 500))
	}
}
