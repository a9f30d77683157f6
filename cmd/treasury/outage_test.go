package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/migrations"
)

const testOperatorKey = "op_e2e_0123456789abcdefghijklmnopqrstuv"

// unavailable checks the database-outage answer of API.md §2: 503, code
// "unavailable", Retry-After.
func unavailable(r response) error {
	if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" {
		return fmt.Errorf("want 503 unavailable, got %s", r)
	}
	if r.Header.Get("Retry-After") == "" {
		return fmt.Errorf("503 without Retry-After: %s", r)
	}
	return nil
}

// serveEnv is the environment of `treasury serve` on dbURL at addr.
func serveEnv(dbURL, addr string, extra ...string) []string {
	return append([]string{
		"DATABASE_URL=" + dbURL,
		"TREASURY_ADDR=" + addr,
		"TREASURY_OPERATOR_KEY=" + testOperatorKey,
	}, extra...)
}

// TestOutage: while PostgreSQL is down every database-backed request gets
// 503 unavailable with Retry-After (never 500), /readyz is 503 and /healthz
// 200; once it is back the same process serves again with the data intact.
func TestOutage(t *testing.T) {
	t.Parallel()
	cluster := newCluster(t)
	startCluster(t, cluster)

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + addr
	// Thousands of requests in 3 s: rate limits would answer 429 before the database is asked.
	p := startTreasury(t, "", serveEnv(cluster.URL(), addr, "TREASURY_RATE_LIMIT=off"), "serve")
	waitStatus(t, p, 30*time.Second, base+"/readyz", "", http.StatusOK)

	r := mustCall(t, http.MethodPost, base+"/v1/platforms", testOperatorKey,
		map[string]any{"name": "Before Outage", "contact_email": "before@example.com"})
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/platforms: %s", r)
	}
	before := decodeJSON[platformJSON](t, r).ID
	r = mustCall(t, http.MethodPost, base+"/v1/operator/platforms/"+before+"/approve", testOperatorKey, map[string]any{})
	if r.Status != http.StatusOK {
		t.Fatalf("approve: %s", r)
	}
	approved := decodeJSON[platformJSON](t, r)
	if approved.SandboxAPIKey == nil || approved.SandboxAPIKey.Secret == "" {
		t.Fatalf("approve returned no sandbox key: %s", r)
	}
	sandboxKey := approved.SandboxAPIKey.Secret
	if r := mustCall(t, http.MethodGet, base+"/v1/platform", sandboxKey, nil); r.Status != http.StatusOK {
		t.Fatalf("GET /v1/platform with the sandbox key: %s", r)
	}

	stopCluster(t, cluster)
	outageStart := time.Now()

	// Every answer while the database is down. The first rounds hit the
	// pool's connections that the shutdown broke, the later ones new
	// connection attempts that are refused.
	type probe struct {
		method, path, key string
		body              any
	}
	probes := []probe{
		{http.MethodPost, "/v1/platforms", testOperatorKey, map[string]any{"name": "During Outage", "contact_email": "during@example.com"}},
		{http.MethodGet, "/v1/operator/platforms", testOperatorKey, nil},
		{http.MethodGet, "/v1/operator/platforms/" + before, testOperatorKey, nil},
		{http.MethodGet, "/v1/platform", sandboxKey, nil}, // authentication itself needs the database
	}
	failures := map[string]string{}
	rounds := 0
	for rounds < 25 || time.Since(outageStart) < 3*time.Second {
		if time.Since(outageStart) > 10*time.Second {
			break
		}
		rounds++
		for _, pr := range probes {
			r, err := call(pr.method, base+pr.path, pr.key, pr.body)
			if err != nil {
				failures[pr.method+" "+pr.path] = "transport error: " + err.Error()
				continue
			}
			if err := unavailable(r); err != nil {
				if _, seen := failures[pr.method+" "+pr.path]; !seen {
					failures[pr.method+" "+pr.path] = fmt.Sprintf("round %d: %v", rounds, err)
				}
			}
		}
		if r, err := call(http.MethodGet, base+"/readyz", "", nil); err != nil || r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			failures["GET /readyz"] = fmt.Sprintf("round %d: want 503 with Retry-After, got %v %v", rounds, r, err)
		}
		if r, err := call(http.MethodGet, base+"/healthz", "", nil); err != nil || r.Status != http.StatusOK {
			failures["GET /healthz"] = fmt.Sprintf("round %d: want 200, got %v %v", rounds, r, err)
		}
	}
	for route, f := range failures {
		t.Errorf("database down, %s: %s", route, f)
	}
	t.Logf("outage: %d rounds of %d requests in %s", rounds, len(probes)+2, time.Since(outageStart).Round(time.Millisecond))
	if done, err := p.exited(); done {
		t.Fatalf("serve exited during the outage: %v", err)
	}

	startCluster(t, cluster)
	recoveryStart := time.Now()
	// Recovery without a restart: while connections heal an answer may
	// still be 503, but never anything else.
	var after string
	eventually(t, 30*time.Second, "POST /v1/platforms after the database is back", func() error {
		r, err := call(http.MethodPost, base+"/v1/platforms", testOperatorKey,
			map[string]any{"name": "After Outage", "contact_email": "after@example.com"})
		if err != nil {
			return err
		}
		if r.Status == http.StatusCreated {
			after = decodeJSON[platformJSON](t, r).ID
			return nil
		}
		if err := unavailable(r); err != nil {
			t.Errorf("recovering: %v", err)
		}
		return fmt.Errorf("got %s", r)
	})
	eventually(t, 30*time.Second, "GET /v1/operator/platforms after the database is back", func() error {
		r, err := call(http.MethodGet, base+"/v1/operator/platforms?limit=100", testOperatorKey, nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK {
			if err := unavailable(r); err != nil {
				t.Errorf("recovering: %v", err)
			}
			return fmt.Errorf("got %s", r)
		}
		ids := decodeJSON[platformList](t, r).ids()
		if !contains(ids, before) || !contains(ids, after) {
			return fmt.Errorf("want %s and %s listed, got %v", before, after, ids)
		}
		if len(ids) != 2 {
			t.Errorf("platforms after the outage: %v, want only %s and %s (a request answered 503 created one)", ids, before, after)
		}
		return nil
	})
	waitStatus(t, p, 30*time.Second, base+"/readyz", "", http.StatusOK)
	if r := mustCall(t, http.MethodGet, base+"/v1/platform", sandboxKey, nil); r.Status != http.StatusOK {
		t.Errorf("GET /v1/platform with the sandbox key after recovery: %s", r)
	}
	t.Logf("recovered %s after the cluster was back", time.Since(recoveryStart).Round(time.Millisecond))
	if done, err := p.exited(); done {
		t.Fatalf("serve exited: %v", err)
	}
}

// TestServeStartsWhileDatabaseDown: serve starts without a database,
// answers /healthz at once and /v1 with 503, and migrates and serves as
// soon as the database appears.
func TestServeStartsWhileDatabaseDown(t *testing.T) {
	t.Parallel()
	cluster := newCluster(t) // initialized on first start, not running yet

	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + addr
	p := startTreasury(t, "", serveEnv(cluster.URL(), addr), "serve")
	waitStatus(t, p, 30*time.Second, base+"/healthz", "", http.StatusOK)

	for i := 0; i < 3; i++ {
		for _, path := range []string{"/v1/operator/platforms", "/v1/platforms"} {
			method := http.MethodGet
			var body any
			if path == "/v1/platforms" {
				method, body = http.MethodPost, map[string]any{"name": "Too Early", "contact_email": "early@example.com"}
			}
			r := mustCall(t, method, base+path, testOperatorKey, body)
			if err := unavailable(r); err != nil {
				t.Errorf("database never started, %s %s: %v", method, path, err)
			}
		}
		if r := mustCall(t, http.MethodGet, base+"/readyz", "", nil); r.Status != http.StatusServiceUnavailable {
			t.Errorf("database never started, /readyz: want 503, got %s", r)
		}
		if r := mustCall(t, http.MethodGet, base+"/healthz", "", nil); r.Status != http.StatusOK {
			t.Errorf("database never started, /healthz: want 200, got %s", r)
		}
	}

	startCluster(t, cluster)
	started := time.Now()
	var id string
	eventually(t, 30*time.Second, "POST /v1/platforms once the database is up", func() error {
		if done, err := p.exited(); done {
			t.Fatalf("serve exited: %v", err)
		}
		r, err := call(http.MethodPost, base+"/v1/platforms", testOperatorKey,
			map[string]any{"name": "First Platform", "contact_email": "first@example.com"})
		if err != nil {
			return err
		}
		if r.Status == http.StatusCreated {
			id = decodeJSON[platformJSON](t, r).ID
			return nil
		}
		if err := unavailable(r); err != nil {
			t.Errorf("database starting: %v", err)
		}
		return fmt.Errorf("got %s", r)
	})
	t.Logf("migrated and serving %s after the cluster started", time.Since(started).Round(time.Millisecond))
	r := mustCall(t, http.MethodGet, base+"/v1/operator/platforms/"+id, testOperatorKey, nil)
	if r.Status != http.StatusOK {
		t.Errorf("GET the new platform: %s", r)
	}
	waitStatus(t, p, 10*time.Second, base+"/readyz", "", http.StatusOK)

	// The migrations really are applied, by serve.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if pending, err := migrations.Pending(ctx, pool); err != nil || pending {
		t.Errorf("migrations pending after serve started on the database: %v %v", pending, err)
	}
}
