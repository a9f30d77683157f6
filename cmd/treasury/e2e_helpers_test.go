package main

// End-to-end helpers: the treasury binary, built once in TestMain and run
// as a subprocess, private PostgreSQL clusters, empty databases on the main
// server, HTTP calls and bounded polls.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pglocal"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// treasuryBin is the binary under test, built by TestMain.
var treasuryBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "treasury-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "mkdir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	treasuryBin = filepath.Join(dir, "treasury")
	args := []string{"build", "-o", treasuryBin}
	if raceEnabled {
		args = append(args, "-race") // the subprocesses report races too
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "go build ./cmd/treasury:", err)
		return 1
	}
	return m.Run()
}

// syncBuffer collects a subprocess's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a running treasury subprocess.
type proc struct {
	t       *testing.T
	name    string
	cmd     *exec.Cmd
	stdout  *syncBuffer
	stderr  *syncBuffer
	done    chan struct{}
	waitErr error
}

// treasuryEnv is the parent's environment without the variables treasury
// reads, plus env.
func treasuryEnv(env ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "DATABASE_URL" || name == "DATABASE_REPLICA_URL" || strings.HasPrefix(name, "TREASURY_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, env...)
}

// startTreasury runs `treasury args...` in dir (the test's working
// directory when empty). The process is stopped in t.Cleanup.
func startTreasury(t *testing.T, dir string, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: "treasury " + strings.Join(args, " "), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(treasuryBin, args...)
	p.cmd.Dir = dir
	p.cmd.Env = treasuryEnv(env...)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("%s stdout:\n%s", p.name, tail(p.stdout.String(), 4000))
			t.Logf("%s stderr:\n%s", p.name, tail(p.stderr.String(), 8000))
		}
		if strings.Contains(p.stderr.String(), "WARNING: DATA RACE") {
			t.Errorf("%s: the race detector reported a data race:\n%s", p.name, tail(p.stderr.String(), 8000))
		}
	})
	return p
}

// stop asks the process to shut down (SIGTERM), and kills it after 10 s.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Errorf("%s did not stop within 10 s of SIGTERM; killing it", p.name)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process with SIGKILL (no shutdown of any kind) and waits
// until it is gone.
func (p *proc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatalf("SIGKILL %s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("%s still running 10 s after SIGKILL", p.name)
	}
}

// exited reports whether the process ended, and how.
func (p *proc) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.waitErr
	default:
		return false, nil
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// freePort returns a TCP port that was free a moment ago on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newCluster initializes (but does not start) a private PostgreSQL cluster
// on a free port. Its directory is made traversable for the 'postgres'
// user, which runs the server when the tests run as root.
func newCluster(t *testing.T) *pglocal.Cluster {
	t.Helper()
	if _, err := pglocal.BinDir(); err != nil {
		t.Skipf("no PostgreSQL server programs: %v", err)
	}
	dir, err := os.MkdirTemp("", "treasury-pg-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c, err := pglocal.NewCluster(dir, freePort(t))
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("pglocal.NewCluster: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if reachable(c.URL()) {
			if err := c.Stop(ctx); err != nil {
				t.Errorf("stop cluster: %v", err)
			}
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "postgres.log")); err == nil {
				t.Logf("postgres.log:\n%s", tail(string(b), 4000))
			}
		}
		_ = os.RemoveAll(dir)
	})
	return c
}

func startCluster(t *testing.T, c *pglocal.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start cluster: %v", err)
	}
}

func stopCluster(t *testing.T, c *pglocal.Cluster) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop cluster: %v", err)
	}
}

func reachable(url string) bool {
	return pglocal.Reachable(context.Background(), url)
}

// emptyDatabase creates an empty database (no migrations) on the main test
// server and drops it when t ends.
func emptyDatabase(t *testing.T) string {
	t.Helper()
	admin := pgtest.AdminURL(t)
	name := "treasury_e2e_" + randomHex(6)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("connect %s: %v", admin, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	url, err := pglocal.WithDatabase(admin, name)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// response is one HTTP answer.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r response) String() string {
	return fmt.Sprintf("%d %s", r.Status, bytes.TrimSpace(r.Body))
}

// code is the "code" of an error body ("" when there is none).
func (r response) code() string {
	var b struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(r.Body, &b)
	return b.Code
}

var client = &http.Client{Timeout: 20 * time.Second}

// call makes one request; err is a transport error (no answer).
func call(method, url, key string, body any) (response, error) {
	return callWith(client, method, url, key, body)
}

// callWith is call with another client (its own timeout and connections).
func callWith(c *http.Client, method, url, key string, body any) (response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return response{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return response{}, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{Status: res.StatusCode, Header: res.Header, Body: b}, nil
}

// mustCall is call that fails the test on a transport error.
func mustCall(t *testing.T, method, url, key string, body any) response {
	t.Helper()
	r, err := call(method, url, key, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// eventually polls cond every 100 ms until it returns nil or the deadline
// passes, and then fails with cond's last error.
func eventually(t *testing.T, within time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitStatus polls GET url until it answers want.
func waitStatus(t *testing.T, p *proc, within time.Duration, url, key string, want int) {
	t.Helper()
	eventually(t, within, "GET "+url+" → "+fmt.Sprint(want), func() error {
		if done, err := p.exited(); done {
			t.Fatalf("%s exited: %v", p.name, err)
		}
		r, err := call(http.MethodGet, url, key, nil)
		if err != nil {
			return err
		}
		if r.Status != want {
			return fmt.Errorf("got %s", r)
		}
		return nil
	})
}

// platformJSON is the part of a platform body the tests look at.
type platformJSON struct {
	ID            string `json:"id"`
	Object        string `json:"object"`
	Name          string `json:"name"`
	Status        string `json:"status"`
	Environment   string `json:"environment"`
	SandboxAPIKey *struct {
		Secret string `json:"secret"`
	} `json:"sandbox_api_key"`
}

type platformList struct {
	Object string         `json:"object"`
	Data   []platformJSON `json:"data"`
}

func decodeJSON[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %s: %v", r, err)
	}
	return v
}

func (l platformList) ids() []string {
	var ids []string
	for _, p := range l.Data {
		ids = append(ids, p.ID)
	}
	return ids
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// wait waits for the process to exit by itself.
func (p *proc) wait(within time.Duration) error {
	p.t.Helper()
	select {
	case <-p.done:
		return p.waitErr
	case <-time.After(within):
		p.t.Fatalf("%s did not exit within %s", p.name, within)
		return nil
	}
}
