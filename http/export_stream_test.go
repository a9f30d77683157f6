package http_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	apihttp "github.com/opentreasury/treasury/http"
)

// The export query, as pg_stat_activity shows it.
const exportQueryLike = `%OVER (PARTITION BY e.ledger_account_id ORDER BY e.seq) AS running%`

// A ledger export that fails after its first bytes must end so that the
// client sees a failure: here its database connection is terminated while
// rows stream, and a real HTTP client must get an error reading the body,
// not a clean end of a short CSV. The abort is logged as an error and
// counted under status "aborted".
func TestLedgerExportAbortsWhenItFailsMidway(t *testing.T) {
	api, logs := newSmallBufferAPI(t)
	key := fillLedger(t, api, journalsToOutgrowSendBuffer())
	client := smallBufferClient()

	full := exportWith(t, client, api, key)
	body, err := io.ReadAll(full.Body)
	full.Body.Close()
	if err != nil {
		t.Fatalf("an export that nothing interrupts: %v", err)
	}
	rows, err := csv.NewReader(bytes.NewReader(body)).ReadAll()
	if err != nil || len(rows) < 100 {
		t.Fatalf("an export that nothing interrupts: %d rows, %v", len(rows), err)
	}

	res := exportWith(t, client, api, key)
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("export: %s", res.Status)
	}
	// The client reads nothing more, so the server blocks writing, and the
	// database backend blocks sending rows: the export is mid-way.
	pid := waitForBackend(t, api.Pool, "wait_event = 'ClientWrite'")
	terminate(t, api.Pool, pid)

	got, err := io.ReadAll(res.Body)
	if err == nil {
		t.Fatalf("the body of an export that failed mid-way ended cleanly after %d of %d bytes", len(got), len(body))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("body read error: %v", err) // a reset is as good
	}
	if len(got) >= len(body) {
		t.Fatalf("the client read %d bytes, the whole export is %d: it did not fail mid-way", len(got), len(body))
	}

	line := logs.lineWith(`aborted=true`)
	for _, want := range []string{"level=ERROR", "route=/v1/ledger/exports", "request_id=req_", "status=200", "error="} {
		if !strings.Contains(line, want) {
			t.Errorf("the abort's log line lacks %q: %s", want, line)
		}
	}
	metrics := get(t, api.URL+"/metrics")
	if !strings.Contains(metrics, `treasury_http_requests_total{method="GET",route="/v1/ledger/exports",status="aborted"} 1`) {
		t.Errorf("the aborted export is not counted under status=\"aborted\"")
	}

	// The service goes on: the next export is whole.
	again := exportWith(t, client, api, key)
	defer again.Body.Close()
	if b, err := io.ReadAll(again.Body); err != nil || !bytes.Equal(b[:bytes.IndexByte(b, '\n')], body[:bytes.IndexByte(body, '\n')]) || len(b) != len(body) {
		t.Fatalf("the export after the abort: %d bytes, %v", len(b), err)
	}
}

// An export that fails before its first byte still answers a JSON error:
// the query waits on a lock, and its connection is terminated there.
func TestLedgerExportErrorBeforeTheFirstByteIsJSON(t *testing.T) {
	api, _ := newSmallBufferAPI(t)
	key := fillLedger(t, api, 1)

	ctx := context.Background()
	tx, err := api.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "LOCK TABLE ledger_accounts IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan response, 1)
	go func() { done <- api.do("GET", "/v1/ledger/exports", key, nil) }()
	terminate(t, api.Pool, waitForBackend(t, api.Pool, "wait_event_type = 'Lock'"))
	r := <-done
	requireError(t, r, http.StatusServiceUnavailable, "unavailable")
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want JSON", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); cd != "" {
		t.Errorf("an error answer carries Content-Disposition %q", cd)
	}
}

// newSmallBufferAPI serves the API with small socket buffers on its side of
// every connection — to clients and to PostgreSQL — so that a client that
// stops reading stalls an export after a few kilobytes, not megabytes. Its
// log is kept.
func newSmallBufferAPI(t *testing.T) (*testAPI, *logBuffer) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	dialer := &net.Dialer{Control: smallBuffer(syscall.SO_RCVBUF)}
	cfg.ConnConfig.DialFunc = dialer.DialContext
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	logs := &logBuffer{}
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(logs, nil)))
	api := apihttp.New(a, apihttp.Config{OperatorKey: operatorKey, RateLimitOff: true})
	srv := httptest.NewUnstartedServer(api)
	srv.Listener = smallSendBufferListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return &testAPI{t: t, URL: srv.URL, Pool: pool, App: a, API: api}, logs
}

func smallBufferClient() *http.Client {
	dialer := &net.Dialer{Control: smallBuffer(syscall.SO_RCVBUF)}
	return &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
}

func smallBuffer(option int) func(network, address string, c syscall.RawConn) error {
	return func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, option, 4096)
		}); cerr != nil {
			return cerr
		}
		return err
	}
}

type smallSendBufferListener struct{ net.Listener }

func (l smallSendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		err = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// journalsToOutgrowSendBuffer is how many journal entries of fillLedger
// make an export twice as large as the most PostgreSQL's socket can
// buffer (tcp_wmem's maximum): the export then cannot end inside the
// kernel while the client stalls.
func journalsToOutgrowSendBuffer() int {
	wmemMax := 4 << 20
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_wmem"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 3 {
			if n, err := strconv.Atoi(f[2]); err == nil {
				wmemMax = n
			}
		}
	}
	const perJournal = 70_000 // bytes of the export's rows on the wire
	return 2*wmemMax/perJournal + 1
}

// fillLedger posts journals journal entries of 100 lines with long
// descriptions (about 75 KiB of export each) and returns the sandbox key.
func fillLedger(t *testing.T, api *testAPI, journals int) string {
	t.Helper()
	platformID, key := api.newPlatform("Export Co")
	vaOpenID(t, api, key, platformID, "biz_export")
	accounts := vaLedgerAccounts(t, api, key)
	operating, _ := accounts["platform_operating"]["id"].(string)
	fees, _ := accounts["platform_fees"]["id"].(string)
	var lines []map[string]any
	for i := 0; i < 50; i++ {
		lines = append(lines,
			map[string]any{"ledger_account_id": operating, "direction": "debit", "amount": 1},
			map[string]any{"ledger_account_id": fees, "direction": "credit", "amount": 1})
	}
	for i := 0; i < journals; i++ {
		vaRequire(t, vaEntry(api, key, map[string]any{"type": "adjustment",
			"description": strings.Repeat("x", 500), "lines": lines}), http.StatusCreated)
	}
	api.sync()
	return key
}

func exportWith(t *testing.T, client *http.Client, api *testAPI, key string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", api.URL+"/v1/ledger/exports", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// waitForBackend polls until the export query runs in a backend in the
// given state, and returns its pid.
func waitForBackend(t *testing.T, pool *pgxpool.Pool, state string) int32 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var pid int32
		err := pool.QueryRow(context.Background(), `SELECT pid FROM pg_stat_activity
			WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE $1 AND `+state,
			exportQueryLike).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // the poll's interval
	}
	t.Fatalf("no export query in state %s within 20 s", state)
	return 0
}

func terminate(t *testing.T, pool *pgxpool.Pool, pid int32) {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(context.Background(), "SELECT pg_terminate_backend($1)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d): %v %v", pid, ok, err)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// logBuffer keeps a server's log lines; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) lineWith(s string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
