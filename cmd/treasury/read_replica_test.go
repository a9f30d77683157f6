package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pglocal"
)

// replicated is a private primary and its streaming replica (a hot
// standby), each with the database "treasury".
type replicated struct {
	primary, standby       *pglocal.Cluster
	primaryURL, standbyURL string
}

// startReplicated starts a primary cluster and a standby that follows it
// over streaming replication (pg_basebackup -R), both on free ports. The
// server programs are required: without them the test fails, it does not
// skip.
func startReplicated(t *testing.T) replicated {
	t.Helper()
	if _, err := pglocal.BinDir(); err != nil {
		t.Fatalf("streaming replication needs PostgreSQL's server programs: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := func(name string) string {
		d, err := os.MkdirTemp("", "treasury-"+name+"-")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil { // the postgres user runs the server
			t.Fatal(err)
		}
		return d
	}
	primaryDir, standbyDir := dir("primary"), dir("standby")
	var r replicated
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, c := range []*pglocal.Cluster{r.standby, r.primary} {
			if c != nil && reachable(c.URL()) {
				if err := c.Stop(ctx); err != nil {
					t.Errorf("stop %s: %v", c.Dir, err)
				}
			}
			if c != nil && t.Failed() {
				if b, err := os.ReadFile(filepath.Join(c.Dir, "postgres.log")); err == nil {
					t.Logf("%s/postgres.log:\n%s", c.Dir, tail(string(b), 3000))
				}
			}
		}
		_ = os.RemoveAll(primaryDir)
		_ = os.RemoveAll(standbyDir)
	})
	var err error
	if r.primary, err = pglocal.NewCluster(primaryDir, freePort(t)); err != nil {
		t.Fatalf("primary: %v", err)
	}
	// The projections commit asynchronously: the WAL writer flushes their
	// commits (and so ships them to the standby) every wal_writer_delay.
	r.primary.Settings = []string{"wal_level=replica", "max_wal_senders=4", "wal_writer_delay=10ms"}
	if err := r.primary.Start(ctx); err != nil {
		t.Fatalf("start primary: %v", err)
	}
	conn, err := pgx.Connect(ctx, r.primary.URL())
	if err != nil {
		t.Fatal(err)
	}
	_, err = conn.Exec(ctx, "CREATE DATABASE treasury")
	conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.standby, err = r.primary.NewStandby(ctx, standbyDir, freePort(t)); err != nil {
		t.Fatalf("standby: %v", err)
	}
	if err := r.standby.Start(ctx); err != nil {
		t.Fatalf("start standby: %v", err)
	}
	if r.primaryURL, err = pglocal.WithDatabase(r.primary.URL(), "treasury"); err != nil {
		t.Fatal(err)
	}
	if r.standbyURL, err = pglocal.WithDatabase(r.standby.URL(), "treasury"); err != nil {
		t.Fatal(err)
	}
	var inRecovery bool
	if err := queryOn(r.standbyURL, `SELECT pg_is_in_recovery()`, &inRecovery); err != nil || !inRecovery {
		t.Fatalf("the standby is not in recovery (%v, %v)", inRecovery, err)
	}
	return r
}

// queryOn runs one single-row query on url.
func queryOn(url, sql string, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.QueryRow(ctx, sql).Scan(dest...)
}

// replicaReads reads treasury_replica_reads_total by outcome from /metrics.
func (r *ftRig) replicaReads() map[string]float64 {
	r.t.Helper()
	res, err := callWith(r.client, http.MethodGet, r.base+"/metrics", "", nil)
	if err != nil || res.Status != http.StatusOK {
		r.t.Fatalf("GET /metrics: %v %s", err, res)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(res.Body))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), `treasury_replica_reads_total{outcome="`)
		if !ok {
			continue
		}
		outcome, value, _ := strings.Cut(line, `"} `)
		out[outcome], _ = strconv.ParseFloat(value, 64)
	}
	return out
}

// TestReadReplica runs serve with DATABASE_REPLICA_URL on a real primary
// and streaming standby. Several clients write and at once list what they
// wrote, 1,000 times: no list misses its write, and the replica serves
// them. With the standby's replay paused, then with the standby stopped,
// every list still answers 200 with the newest writes (the primary
// answers); once the standby is back, it serves again.
func TestReadReplica(t *testing.T) {
	db := startReplicated(t)
	r := ftStartWith(t, db.primaryURL, "DATABASE_REPLICA_URL="+db.standbyURL,
		// A long bound on the projections' wait: a pause of the machine
		// must not count as a miss (the replica's own bound is what is tested).
		"TREASURY_READ_YOUR_WRITES_WAIT=1m")
	const workers, rounds = 8, 125
	r.openAccounts(workers, 100_000_000)
	ready := decodeJSON[map[string]any](t, r.must(http.MethodGet, "/readyz", nil, http.StatusOK))
	if ready["read_replica"] != "standby" {
		t.Errorf("/readyz read_replica = %v, want standby", ready["read_replica"])
	}

	misses := newRYWMisses(t)
	miss, created := misses.miss, r.created
	// newest lists path and returns the ids its items carry under field
	// (a dotted path: "source.id").
	newest := func(path, field string) []string {
		res, err := r.do(http.MethodGet, path, nil)
		if err != nil || res.Status != http.StatusOK {
			t.Errorf("GET %s: %v %s", path, err, res)
			return nil
		}
		var l struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(res.Body, &l); err != nil {
			t.Errorf("GET %s: %v", path, err)
		}
		var ids []string
		for _, item := range l.Data {
			var v any = item
			for _, k := range strings.Split(field, ".") {
				m, _ := v.(map[string]any)
				v = m[k]
			}
			ids = append(ids, fmt.Sprint(v))
		}
		return ids
	}
	// writeAndList writes a journal entry (projected asynchronously) or a
	// payment (its list written with it) and lists it at once.
	writeAndList := func(w, i int, va string) (lists int) {
		if i%2 == 0 {
			je := created("/v1/ledger/entries", map[string]any{"type": "fee", "description": "replica",
				"virtual_account_id": va, "direction": "debit", "amount": 1})
			if je == "" {
				return 0
			}
			if ids := newest("/v1/ledger/entries?limit=1&virtual_account_id="+va, "journal_entry_id"); len(ids) == 0 || ids[0] != je {
				miss("journal entry", "%s is not the newest ledger entry of %s: %v", je, va, ids)
			}
			return 1
		}
		pay := created("/v1/payments", map[string]any{"virtual_account_id": va, "amount": 100, "rail": "rtp",
			"idempotency_key": fmt.Sprintf("replica-%s-%d-%d", va, w, i), "description": "replica",
			"destination": map[string]any{"account_number": "987654321", "routing_number": "021000021", "name": "Vendor"}})
		if pay == "" {
			return 0
		}
		if ids := newest("/v1/payments?limit=1&virtual_account_id="+va, "id"); len(ids) == 0 || ids[0] != pay {
			miss("payment", "%s is not the newest payment of %s: %v", pay, va, ids)
		}
		if ids := newest("/v1/virtual-accounts/"+va+"/transactions?limit=10", "source.id"); !contains(ids, pay) {
			miss("payment transaction", "%s is not among %s's transactions: %v", pay, va, ids)
		}
		return 2
	}

	t.Run("read your writes from the replica", func(t *testing.T) {
		before := r.replicaReads()
		var wg sync.WaitGroup
		var lists sync.Map
		for w := range workers {
			wg.Go(func() {
				n := 0
				for i := range rounds {
					n += writeAndList(w, i, r.accounts[w])
				}
				lists.Store(w, n)
			})
		}
		wg.Wait()
		total := 0
		lists.Range(func(_, n any) bool { total += n.(int); return true })
		after := r.replicaReads()
		served := after["served"] - before["served"]
		t.Logf("%d writes, %d lists: %v served by the replica; by the primary: lagging %v, unavailable %v, read failed %v",
			workers*rounds, total, served, after["lagging"]-before["lagging"], after["unavailable"]-before["unavailable"],
			after["read_failed"]-before["read_failed"])
		if m := misses.counts(); len(m) > 0 {
			t.Errorf("lists that missed the write just made: %v of %d writes", m, workers*rounds)
		}
		// The replica must do the work: most lists are served there (the
		// rest waited past the replica's bound on a busy machine).
		if served < float64(total)/2 {
			t.Errorf("the replica served %v of %d lists, want most", served, total)
		}
	})

	// lastWrites writes and lists a few times from one client: every list
	// answers 200 and shows its write.
	lastWrites := func(t *testing.T, outcome string, from int) {
		before := r.replicaReads()
		for i := range 10 {
			writeAndList(0, from+i, r.accounts[0])
		}
		after := r.replicaReads()
		if after[outcome] <= before[outcome] {
			t.Errorf("no list counted as %s: before %v, after %v", outcome, before, after)
		}
		if after["served"] != before["served"] {
			t.Errorf("the replica served %v lists it could not have shown the writes in", after["served"]-before["served"])
		}
		if m := misses.counts(); len(m) > 0 {
			t.Errorf("lists that missed the write just made: %v", m)
		}
	}

	t.Run("replay paused: the primary answers", func(t *testing.T) {
		var ok any
		if err := queryOn(db.standbyURL, `SELECT pg_wal_replay_pause()`, &ok); err != nil {
			t.Fatalf("pause replay: %v", err)
		}
		lastWrites(t, "lagging", 10_000)
		if err := queryOn(db.standbyURL, `SELECT pg_wal_replay_resume()`, &ok); err != nil {
			t.Fatalf("resume replay: %v", err)
		}
	})

	t.Run("standby stopped: the primary answers", func(t *testing.T) {
		stopCluster(t, db.standby)
		lastWrites(t, "unavailable", 11_000)
		ready := decodeJSON[map[string]any](t, r.must(http.MethodGet, "/readyz", nil, http.StatusOK))
		if s, _ := ready["read_replica"].(string); !strings.HasPrefix(s, "unavailable") {
			t.Errorf("/readyz read_replica = %q with the standby stopped, want unavailable…", s)
		}
	})

	t.Run("standby back: it serves again", func(t *testing.T) {
		startCluster(t, db.standby)
		before := r.replicaReads()
		i := 20_000
		eventually(t, 20*time.Second, "a list served by the replica again", func() error {
			i++
			writeAndList(1, i, r.accounts[1])
			if after := r.replicaReads(); after["served"] <= before["served"] {
				return fmt.Errorf("none yet: %v", after)
			}
			return nil
		})
		if m := misses.counts(); len(m) > 0 {
			t.Errorf("lists that missed the write just made: %v", m)
		}
	})

	// Promoted, the standby is a primary of its own that the writes never
	// reach (its last replay position still answers): it is not read.
	t.Run("standby promoted: the primary answers", func(t *testing.T) {
		var ok bool
		if err := queryOn(db.standbyURL, `SELECT pg_promote(true, 30)`, &ok); err != nil || !ok {
			t.Fatalf("promote: %v %v", ok, err)
		}
		lastWrites(t, "unavailable", 30_000)
		ready := decodeJSON[map[string]any](t, r.must(http.MethodGet, "/readyz", nil, http.StatusOK))
		if s, _ := ready["read_replica"].(string); !strings.HasPrefix(s, "unavailable") {
			t.Errorf("/readyz read_replica = %q with the standby promoted, want unavailable…", s)
		}
	})
}

// TestReplicaURLSetting: unset is no replica; a connection string pgx
// cannot parse, or the primary's own, stops serve at its start with a
// message that names the variable.
func TestReplicaURLSetting(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	t.Setenv("DATABASE_URL", "postgres://app@primary:5432/treasury")
	for _, tc := range []struct {
		value   string
		refused bool
	}{
		{"", false},
		{"postgres://app@replica:5432/treasury?sslmode=require", false},
		{"host=replica port=5432 dbname=treasury", false},
		{"postgres://app@replica:99999999/treasury", true},
		{"not a url", true},
		{"postgres://[::1/treasury", true},
		{"postgres://app@primary:5432/treasury", true},
	} {
		t.Setenv("DATABASE_REPLICA_URL", tc.value)
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("DATABASE_REPLICA_URL=%q: error %v, want refused %v", tc.value, err, tc.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "DATABASE_REPLICA_URL") {
			t.Errorf("DATABASE_REPLICA_URL=%q: the error %q does not name the variable", tc.value, err)
		}
		if err == nil && c.ReplicaURL != tc.value {
			t.Errorf("DATABASE_REPLICA_URL=%q: ReplicaURL %q", tc.value, c.ReplicaURL)
		}
	}

	// The binary refuses to start, before it listens or connects.
	p := startTreasury(t, "", []string{"DATABASE_URL=postgres://app@127.0.0.1:1/treasury",
		"DATABASE_REPLICA_URL=postgres://app@replica:99999999/treasury", "TREASURY_ADDR=127.0.0.1:0"}, "serve")
	if err := p.wait(10 * time.Second); err == nil {
		t.Fatal("serve started with an unparsable DATABASE_REPLICA_URL")
	}
	if out := p.stderr.String(); !strings.Contains(out, "DATABASE_REPLICA_URL must be a PostgreSQL connection string") {
		t.Errorf("serve's message does not say what is wrong:\n%s", out)
	}
}
