// Command bench measures the service as its users load it. `make bench`
// runs it: it builds and starts `treasury serve` against a fresh database
// and reports each figure, writing them to bench/results.json.
//
// Measured now: webhook first-attempt latency — from the commit of a state
// change (the event's created_at) to the request arriving at a local
// receiver — while virtual accounts are opened at a steady rate (each one
// emits virtual_account.created).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pglocal"
)

func main() {
	rate := flag.Int("rate", 250, "events per second to generate")
	duration := flag.Duration("duration", 20*time.Second, "how long to measure (after a 3 s warm-up)")
	flag.Parse()
	if err := run(*rate, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

const operatorKey = "op_bench_0123456789abcdefghijklmnopqrstuvwxyz"

func run(rate int, duration time.Duration) error {
	ctx := context.Background()
	root := pglocal.RepoRoot()
	found, err := pglocal.Ensure(ctx, os.Getenv("TEST_DATABASE_URL"), filepath.Join(root, ".data"))
	if err != nil {
		return err
	}
	dbName := fmt.Sprintf("treasury_bench_%d", time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, found.AdminURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+dbName); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+dbName+" WITH (FORCE)")
	dbURL, _ := pglocal.WithDatabase(found.AdminURL, dbName)

	bin := filepath.Join(os.TempDir(), "treasury-bench")
	build := exec.Command("go", "build", "-o", bin, "./cmd/treasury")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	srv := exec.Command(bin, "serve")
	srv.Env = append(os.Environ(), "DATABASE_URL="+dbURL, fmt.Sprintf("TREASURY_ADDR=127.0.0.1:%d", port),
		"TREASURY_OPERATOR_KEY="+operatorKey, "TREASURY_RATE_LIMIT=off", "TREASURY_WEBHOOK_ALLOW_PRIVATE=true", "TREASURY_LOG_LEVEL=warn")
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	if err := waitReady(base); err != nil {
		return err
	}

	// The receiver: arrival time minus the event's created_at.
	var mu sync.Mutex
	var latencies []time.Duration
	measuring := time.Time{}
	recv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		body, _ := io.ReadAll(r.Body)
		var ev struct {
			CreatedAt time.Time `json:"created_at"`
		}
		_ = json.Unmarshal(body, &ev)
		mu.Lock()
		if !measuring.IsZero() && ev.CreatedAt.After(measuring) {
			latencies = append(latencies, arrived.Sub(ev.CreatedAt))
		}
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go recv.Serve(ln)
	defer recv.Close()

	platformID, key, err := setUp(base)
	if err != nil {
		return err
	}
	if _, err := call(base, "POST", "/v1/webhooks", key, map[string]any{"url": "http://" + ln.Addr().String() + "/hook",
		"events": []string{"virtual_account.created"}}); err != nil {
		return err
	}

	// Load: open accounts at a steady rate; 3 s warm-up, then measure.
	stop := time.Now().Add(3*time.Second + duration)
	warm := time.Now().Add(3 * time.Second)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	sent, failed := 0, 0
	var fmu sync.Mutex
	for now := range tick.C {
		if now.After(stop) {
			break
		}
		if measuring.IsZero() && now.After(warm) {
			mu.Lock()
			measuring = now
			mu.Unlock()
		}
		sent++
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			if _, err := call(base, "POST", "/v1/virtual-accounts", key, map[string]any{"platform_id": platformID,
				"entity_ref": fmt.Sprintf("bench_%d", i), "type": "checking"}); err != nil {
				fmu.Lock()
				failed++
				fmu.Unlock()
			}
		}(sent)
	}
	wg.Wait()
	time.Sleep(2 * time.Second) // the last deliveries are in flight
	mu.Lock()
	defer mu.Unlock()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) float64 {
		if len(latencies) == 0 {
			return 0
		}
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds()) / 1000
	}
	measured := time.Since(measuring) - 2*time.Second
	results := map[string]any{
		"webhook_first_attempt": map[string]any{
			"events_per_second_offered": rate, "events_measured": len(latencies),
			"events_per_second_delivered": float64(len(latencies)) / measured.Seconds(),
			"p50_ms":                      pct(0.50), "p99_ms": pct(0.99), "max_ms": pct(1.0), "requests_failed": failed,
		},
	}
	fmt.Println("figure                                   value")
	fmt.Printf("webhook first attempt p50 (ms)           %.1f\n", pct(0.50))
	fmt.Printf("webhook first attempt p99 (ms)           %.1f\n", pct(0.99))
	fmt.Printf("webhook first attempt max (ms)           %.1f\n", pct(1.0))
	fmt.Printf("events delivered per second              %.0f (offered %d/s, %d measured, %d requests failed)\n",
		float64(len(latencies))/measured.Seconds(), rate, len(latencies), failed)
	b, _ := json.MarshalIndent(results, "", "  ")
	return os.WriteFile(filepath.Join(root, "bench", "results.json"), append(b, '\n'), 0o644)
}

func setUp(base string) (platformID, key string, err error) {
	p, err := call(base, "POST", "/v1/platforms", operatorKey, map[string]any{"name": "Bench", "contact_email": "bench@example.com"})
	if err != nil {
		return "", "", err
	}
	platformID, _ = p["id"].(string)
	a, err := call(base, "POST", "/v1/operator/platforms/"+platformID+"/approve", operatorKey, nil)
	if err != nil {
		return "", "", err
	}
	k, _ := a["sandbox_api_key"].(map[string]any)
	key, _ = k["secret"].(string)
	return platformID, key, nil
}

var client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 128}}

func call(base, method, path, key string, body any) (map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, base+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	if res.StatusCode >= 300 {
		return m, fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, m)
	}
	return m, nil
}

func waitReady(base string) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("treasury serve did not become ready")
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
