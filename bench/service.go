package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

const operatorKey = "op_bench_0123456789abcdefghijklmnopqrstuvwxyz"

// service is a running `treasury serve` and the platform set up in it.
type service struct {
	base      string
	pprofBase string // http://127.0.0.1:PORT of TREASURY_PPROF_ADDR; "" without -profile
	dbName    string
	cmd       *exec.Cmd
	logPath   string
	logFile   *os.File
	db        *pgxpool.Pool // only for SELECT count(*) FROM events

	parent   context.Context // done when the bench is interrupted
	ctx      context.Context // done when the server exits or the bench is interrupted
	cancel   context.CancelCauseFunc
	exited   chan struct{}
	stopping atomic.Bool
	exit     error

	// partitions is TREASURY_READER_PARTITIONS as the server got it (1
	// when unset): its split readers' checkpoints are NAME#i/P.
	partitions int

	platformID string
	auth       string   // "Bearer sk_sandbox_…"
	accounts   []string // the funded, approved accounts
}

var httpClient = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
	MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 90 * time.Second, DisableCompression: true,
	DialContext: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
}}

// startService starts `treasury serve` on a free port with its log in a
// temporary file, and waits until /readyz answers 200. With pprof, the
// service also serves net/http/pprof (TREASURY_PPROF_ADDR) on another
// free port. env is added to the server's environment (after the bench's
// own, so it wins).
func startService(parent context.Context, bin, dbURL string, pprof bool, env ...string) (*service, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	var pprofEnv []string
	pprofBase := ""
	if pprof {
		pport, err := freePort()
		if err != nil {
			return nil, err
		}
		pprofBase = fmt.Sprintf("http://127.0.0.1:%d", pport)
		pprofEnv = []string{fmt.Sprintf("TREASURY_PPROF_ADDR=127.0.0.1:%d", pport)}
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("treasury-bench-server-%d.log", time.Now().UnixNano()))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	s := &service{base: fmt.Sprintf("http://127.0.0.1:%d", port), pprofBase: pprofBase, logPath: logPath, logFile: logFile, exited: make(chan struct{})}
	s.parent = parent
	s.ctx, s.cancel = context.WithCancelCause(parent)
	s.db, err = pgxpool.New(parent, dbURL)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	s.cmd = exec.Command(bin, "serve")
	s.cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, fmt.Sprintf("TREASURY_ADDR=127.0.0.1:%d", port),
		"TREASURY_OPERATOR_KEY="+operatorKey, "TREASURY_RATE_LIMIT=off", "TREASURY_WEBHOOK_ALLOW_PRIVATE=true",
		"TREASURY_LOG_LEVEL=warn")
	s.cmd.Env = append(s.cmd.Env, pprofEnv...)
	s.cmd.Env = append(s.cmd.Env, env...)
	s.partitions = readerPartitions(s.cmd.Env)
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		s.db.Close()
		logFile.Close()
		return nil, err
	}
	logf("started treasury serve (pid %d) on %s; its log: %s", s.cmd.Process.Pid, s.base, logPath)
	if pprofBase != "" {
		logf("treasury serve profiles on %s/debug/pprof/", pprofBase)
	}
	go func() {
		err := s.cmd.Wait()
		if !s.stopping.Load() && parent.Err() == nil {
			s.exit = fmt.Errorf("treasury serve exited unexpectedly (%v); see %s", err, logPath)
			logf("%v", s.exit)
		}
		s.cancel(errors.New("treasury serve exited"))
		close(s.exited)
	}()
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := http.Get(s.base + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) || s.ctx.Err() != nil {
			s.close()
			return nil, fmt.Errorf("treasury serve did not become ready within 90 s; see %s", logPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *service) alive() bool { return s.ctx.Err() == nil }

// exitErr says why the server exited, if it did so unasked.
func (s *service) exitErr() error {
	select {
	case <-s.exited:
		return s.exit
	default:
		return nil
	}
}

// stop ends the server gracefully (SIGTERM; SIGKILL after 20 s).
func (s *service) stop() {
	if s.stopping.Swap(true) {
		<-s.exited
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(20 * time.Second):
		logf("treasury serve did not stop within 20 s of SIGTERM: killing it")
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

// close stops the server and releases what the service holds.
func (s *service) close() {
	s.stop()
	s.db.Close()
	s.logFile.Close()
}

// eventCount is SELECT count(*) FROM events.
func (s *service) eventCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, "SELECT count(*) FROM events").Scan(&n)
	return n, err
}

// settleMax bounds settle's wait: the sandbox settler may be minutes
// behind after a heavy load, and it works at its own pace under any load
// anyway, so a short wait only spares the next measurement's first seconds.
const settleMax = 10 * time.Second

// settle waits until the log stops growing (the sandbox completes payments
// asynchronously), at most settleMax. Only steps that need a still log use
// it (the audit, the rebuilds, the replays); no load measurement waits
// for it: each payments level runs right after the one before, its tail
// included, as a platform would live through it. It returns how long it
// waited.
func (s *service) settle(what string) time.Duration {
	start := time.Now()
	last, err := s.eventCount(s.ctx)
	if err != nil {
		return 0
	}
	stableSince := time.Now()
	for time.Since(start) < settleMax && s.alive() {
		time.Sleep(300 * time.Millisecond)
		n, err := s.eventCount(s.ctx)
		if err != nil {
			return time.Since(start)
		}
		if n != last {
			last, stableSince = n, time.Now()
		} else if time.Since(stableSince) >= 2*time.Second {
			break
		}
	}
	waited := time.Since(start)
	if waited >= settleMax {
		logf("the service was still appending events %s after the last load: starting %s anyway", settleMax, what)
	} else if waited > 3*time.Second {
		logf("waited %s for the service to settle before %s (the log was still growing)", waited.Round(100*time.Millisecond), what)
	}
	return waited
}

// outcome is one request's result: ok, or a class such as "409
// idempotency_in_progress", "500 internal_error" or "transport".
type outcome struct {
	ok     bool
	class  string
	detail string
}

// send sends one request with the platform's key; the body of a 2xx
// answer is discarded, that of any other answer read for its code.
func (s *service) send(ctx context.Context, method, path string, body []byte) outcome {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return outcome{class: "transport", detail: err.Error()}
	}
	req.Header.Set("Authorization", s.auth)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return outcome{class: "transport", detail: err.Error()}
	}
	defer res.Body.Close()
	if res.StatusCode/100 == 2 {
		_, _ = io.Copy(io.Discard, res.Body)
		return outcome{ok: true}
	}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	_, _ = io.Copy(io.Discard, res.Body)
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &e)
	class := strconv.Itoa(res.StatusCode)
	if e.Code != "" {
		class += " " + e.Code
	}
	detail := e.Message
	if detail == "" {
		detail = string(b)
	}
	if len(detail) > 200 {
		detail = detail[:200]
	}
	return outcome{class: class, detail: detail}
}

// sendID is send that also returns the id of a 2xx answer's JSON body.
func (s *service) sendID(ctx context.Context, method, path string, body []byte) (outcome, string) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, bytes.NewReader(body))
	if err != nil {
		return outcome{class: "transport", detail: err.Error()}, ""
	}
	req.Header.Set("Authorization", s.auth)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		return outcome{class: "transport", detail: err.Error()}, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var m struct {
		ID      string `json:"id"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &m)
	if res.StatusCode/100 == 2 {
		return outcome{ok: true}, m.ID
	}
	class := strconv.Itoa(res.StatusCode)
	if m.Code != "" {
		class += " " + m.Code
	}
	return outcome{class: class, detail: m.Message}, ""
}

// call sends a JSON request with a key and decodes the answer; a non-2xx
// answer is an error carrying its status.
func (s *service) call(method, path, auth string, body any) (map[string]any, int, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(s.ctx, method, s.base+path, rd)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	if res.StatusCode/100 != 2 {
		return m, res.StatusCode, fmt.Errorf("%s %s: %d %v", method, path, res.StatusCode, m)
	}
	return m, res.StatusCode, nil
}

// callRetry is call, tried again (up to 5 times) after a transport error,
// a 429 or a 5xx. accept may declare a non-2xx status a success.
func (s *service) callRetry(method, path string, body any, accept func(int) bool) (map[string]any, error) {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		var m map[string]any
		var status int
		m, status, err = s.call(method, path, s.auth, body)
		if err == nil || (accept != nil && accept(status)) {
			return m, nil
		}
		if s.ctx.Err() != nil || (status != 0 && status != http.StatusTooManyRequests && status < 500) {
			return m, err
		}
		time.Sleep(time.Duration(100*(attempt+1)) * time.Millisecond)
	}
	return nil, err
}

// setUp creates the platform and n accounts, each of its own business:
// opened, KYB submitted (an EIN the sandbox approves), funded by an rtp
// inbound transfer; then waits until every decision has landed.
func (s *service) setUp(n int, fund int64) error {
	p, _, err := s.call("POST", "/v1/platforms", "Bearer "+operatorKey, map[string]any{"name": "Bench", "contact_email": "bench@example.com"})
	if err != nil {
		return err
	}
	s.platformID, _ = p["id"].(string)
	a, _, err := s.call("POST", "/v1/operator/platforms/"+s.platformID+"/approve", "Bearer "+operatorKey, nil)
	if err != nil {
		return err
	}
	k, _ := a["sandbox_api_key"].(map[string]any)
	key, _ := k["secret"].(string)
	if key == "" {
		return fmt.Errorf("approving the platform returned no sandbox_api_key.secret: %v", a)
	}
	s.auth = "Bearer " + key

	logf("setup: opening, verifying and funding %d accounts", n)
	ids := make([]string, n)
	jobs := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     atomic.Int64
	)
	workers := min(32, n)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				id, err := s.setUpAccount(i, fund)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("account %d: %w", i, err)
					}
					mu.Unlock()
					continue
				}
				ids[i] = id
				if d := done.Add(1); d%250 == 0 {
					logf("setup: %d/%d accounts opened, KYB submitted, funded", d, n)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		mu.Lock()
		failed := firstErr != nil
		mu.Unlock()
		if failed || s.ctx.Err() != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := context.Cause(s.ctx); err != nil {
		return err
	}
	s.accounts = ids
	return s.waitReady(n, fund)
}

func (s *service) setUpAccount(i int, fund int64) (string, error) {
	va, err := s.callRetry("POST", "/v1/virtual-accounts", map[string]any{
		"platform_id": s.platformID, "entity_ref": fmt.Sprintf("bench_business_%05d", i), "type": "checking"}, nil)
	if err != nil {
		return "", err
	}
	id, _ := va["id"].(string)
	if id == "" {
		return "", fmt.Errorf("POST /v1/virtual-accounts returned no id: %v", va)
	}
	addr := map[string]any{"line1": "1 Main Street", "city": "Dover", "state": "DE", "postal_code": "19901", "country": "US"}
	// The sandbox approves any EIN not ending in 0000 or 1111 (API.md §6).
	ein := fmt.Sprintf("12-345%04d", 2000+i%5000)
	_, err = s.callRetry("POST", "/v1/kyb", map[string]any{
		"virtual_account_id": id,
		"business": map[string]any{"legal_name": fmt.Sprintf("Bench Business %d LLC", i), "ein": ein, "entity_type": "llc",
			"formation_date": "2015-03-01", "formation_state": "DE", "address": addr},
		"beneficial_owners": []any{map[string]any{"first_name": "Jane", "last_name": "Roe", "date_of_birth": "1980-05-17",
			"ssn_last4": "1234", "ownership_percentage": 100, "is_control_person": true, "address": addr}},
	}, func(status int) bool { return status == http.StatusConflict }) // a retry after a lost answer: already filed
	if err != nil {
		return "", err
	}
	_, err = s.callRetry("POST", "/v1/simulations/inbound-transfers", map[string]any{
		"virtual_account_id": id, "amount": fund, "rail": "rtp", "description": "bench funding",
		"originator": map[string]any{"name": "Bench Funding Co", "account_number": "987654321", "routing_number": "021000021"},
	}, nil)
	if err != nil {
		return "", err
	}
	return id, nil
}

// waitReady lists the platform's accounts until every one is approved and
// its available balance holds the funding.
func (s *service) waitReady(n int, fund int64) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		approved, funded, other := 0, 0, map[string]int{}
		cursor := ""
		for {
			path := "/v1/virtual-accounts?limit=100"
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			page, err := s.callRetry("GET", path, nil, nil)
			if err != nil {
				return err
			}
			data, _ := page["data"].([]any)
			for _, d := range data {
				va, _ := d.(map[string]any)
				switch st, _ := va["kyb_status"].(string); st {
				case "approved":
					approved++
				default:
					other[st]++
				}
				bal, _ := va["balance"].(map[string]any)
				if av, _ := bal["available"].(float64); int64(av) >= fund {
					funded++
				}
			}
			cursor, _ = page["next_cursor"].(string)
			if more, _ := page["has_more"].(bool); !more || cursor == "" {
				break
			}
		}
		if approved >= n && funded >= n {
			return nil
		}
		if other["rejected"] > 0 || other["pending_review"] > 0 {
			return fmt.Errorf("KYB: %d approved, others %v: the sandbox did not approve every business", approved, other)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after 2 minutes only %d/%d accounts KYB-approved (others %v) and %d/%d funded", approved, n, other, funded, n)
		}
		logf("setup: waiting for KYB decisions and funds: %d/%d approved, %d/%d funded", approved, n, funded, n)
		select {
		case <-s.ctx.Done():
			return context.Cause(s.ctx)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readerPartitions is TREASURY_READER_PARTITIONS of env (the last one
// set wins, as for exec), 1 when unset or unreadable (serve refuses those).
func readerPartitions(env []string) int {
	n := 1
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TREASURY_READER_PARTITIONS="); ok {
			n = 1
			if p, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && p > 1 {
				n = p
			}
		}
	}
	return n
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
