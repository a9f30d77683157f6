package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

var leaseHeldLine = regexp.MustCompile(`(?m)^treasury_reader_lease_held\{reader="([^"]+)"\} ([01])$`)

// rpReplica is one `treasury serve` of several on one database.
type rpReplica struct {
	addr string
	env  []string
	proc *proc
}

func (r *rpReplica) base() string { return "http://" + r.addr }

// pid is the process id the replica's lease owner names carry.
func (r *rpReplica) pid() int { return r.proc.cmd.Process.Pid }

// ownerPID is the process id in a lease owner's name (host-pid-ulid).
func ownerPID(owner string) int {
	parts := strings.Split(owner, "-")
	if len(parts) < 3 {
		return 0
	}
	pid, _ := strconv.Atoi(parts[len(parts)-2])
	return pid
}

// rpStalls samples the readers' leases every 100 ms and keeps, for each,
// the longest time no live replica held it: from the instant its owner was
// killed (or it was given back) to the instant another replica took it.
type rpStalls struct {
	mu      sync.Mutex
	dead    map[int]bool // pids killed
	since   map[string]time.Time
	longest map[string]time.Duration
}

func (s *rpStalls) killed(pid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dead[pid] = true
}

func (s *rpStalls) sample(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, `SELECT name, coalesce(owner, ''), expires_at > now() FROM reader_leases`)
	if err != nil {
		return err
	}
	var name, owner string
	var valid bool
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err = pgx.ForEachRow(rows, []any{&name, &owner, &valid}, func() error {
		held := owner != "" && valid && !s.dead[ownerPID(owner)]
		start, stalled := s.since[name]
		switch {
		case held && stalled:
			s.longest[name] = max(s.longest[name], now.Sub(start))
			delete(s.since, name)
		case !held && !stalled:
			s.since[name] = now
		}
		return nil
	})
	return err
}

// TestReplicasKillEachOwner: three replicas of serve on one database, their
// readers split in three parts and spread over them by leases, under a
// payment load sent to all three. The owner of each reader is killed with
// SIGKILL in turn (and started again), until every reader has lost its
// owner once. Then: every acknowledged payment exists once and the
// balances, the ledger and `audit verify` account for each (ftCheckPayments);
// every event reached the webhook receiver at least once (the duplicates
// are counted and reported); no reader went without a live owner for
// longer than its lease allows (DefaultLeaseTTL + DefaultLeaseEvery, and a
// second for the sampling); and the NATS stream holds every public event
// once, in the log's order per platform.
func TestReplicasKillEachOwner(t *testing.T) {
	t.Parallel()
	started := time.Now()
	natsURL := startNATS(t)
	dbURL := emptyDatabase(t)
	shared := []string{"TREASURY_NATS_URL=" + natsURL, "TREASURY_READER_PARTITIONS=3"}
	r := ftStartWith(t, dbURL, shared...)
	replicas := []*rpReplica{{addr: r.addr, env: r.env, proc: r.proc}}
	for range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		rp := &rpReplica{addr: addr, env: serveEnv(dbURL, addr, append([]string{"TREASURY_RATE_LIMIT=off",
			"TREASURY_WEBHOOK_ALLOW_PRIVATE=true"}, shared...)...)}
		rp.proc = startTreasury(t, "", rp.env, "serve")
		waitStatus(t, rp.proc, 30*time.Second, rp.base()+"/readyz", "", http.StatusOK)
		replicas = append(replicas, rp)
	}
	rc := newFTReceiver(t)
	wh := r.webhook(rc, nil)
	r.openAccounts(4, 100_000_000)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	leasesOf := func() map[string]string { // reader → owner, for the leases held now
		rows, err := conn.Query(ctx, `SELECT name, owner FROM reader_leases WHERE owner IS NOT NULL AND expires_at > now()`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		var name, owner string
		if _, err := pgx.ForEachRow(rows, []any{&name, &owner}, func() error { out[name] = owner; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	var names []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(name ORDER BY name) FROM reader_leases`).Scan(&names); err != nil {
		t.Fatal(err)
	}
	// The three replicas share the readers: each holds some.
	eventually(t, 20*time.Second, "the readers spread over the three replicas", func() error {
		held := leasesOf()
		per := map[int]int{}
		for _, owner := range held {
			per[ownerPID(owner)]++
		}
		for _, rp := range replicas {
			if per[rp.pid()] == 0 {
				return fmt.Errorf("leases held %v: replica %d holds none", per, rp.pid())
			}
		}
		if len(held) != len(names) {
			return fmt.Errorf("%d of %d leases held", len(held), len(names))
		}
		return nil
	})

	// Each replica's /metrics agrees: every reader is run by one of them.
	eventually(t, 10*time.Second, "every reader held by exactly one replica, by their /metrics", func() error {
		count := map[string]int{}
		for _, rp := range replicas {
			body := string(mustCall(t, http.MethodGet, rp.base()+"/metrics", "", nil).Body)
			for _, m := range leaseHeldLine.FindAllStringSubmatch(body, -1) {
				if m[2] == "1" {
					count[m[1]]++
				}
			}
		}
		for _, name := range names {
			if count[name] != 1 {
				return fmt.Errorf("reader %s run by %d replicas (%v)", name, count[name], count)
			}
		}
		return nil
	})

	stalls := &rpStalls{dead: map[int]bool{}, since: map[string]time.Time{}, longest: map[string]time.Duration{}}
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		sconn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Error(err)
			return
		}
		defer sconn.Close(context.Background())
		for sampling.Err() == nil {
			if err := stalls.sample(sampling, sconn); err != nil && sampling.Err() == nil {
				t.Errorf("sample the leases: %v", err)
				return
			}
			select {
			case <-sampling.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()

	// The load: each payment to one replica after another until one answers
	// (a killed replica refuses connections until it is back); the same
	// idempotency key every time, so each request makes one payment.
	load := newFTLoad(r)
	var problems ftProblems
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				key, body := load.request(w, i)
				for try := 0; ; try++ {
					rp := replicas[(w+i+try)%len(replicas)]
					res, err := callWith(r.client, http.MethodPost, rp.base()+"/v1/payments", r.key, body)
					if err == nil && (res.Status == http.StatusCreated || res.Status == http.StatusOK) {
						load.answer(t, key, res)
						break
					}
					if err == nil && res.Status != http.StatusServiceUnavailable { // 503: a replica starting again
						problems.add("not 2xx", "payment %s at %s: %s", key, rp.addr, res)
					}
					if try > 200 {
						problems.add("never answered", "payment %s: %v", key, err)
						break
					}
					time.Sleep(20 * time.Millisecond) // poll interval: another replica, or this one back
				}
			}
		})
	}

	// Kill the owner of each reader in turn, until every reader has lost
	// its owner once.
	orphaned := map[string]bool{}
	kills := 0
	for _, name := range names {
		if orphaned[name] {
			continue
		}
		eventually(t, 20*time.Second, "the load going on", func() error {
			if n := load.answeredCount(); n < 40*(kills+1) {
				return fmt.Errorf("%d payments answered", n)
			}
			return nil
		})
		held := leasesOf()
		owner, ok := held[name]
		if !ok {
			t.Fatalf("reader %s has no owner before the kill: %v", name, held)
		}
		var victim *rpReplica
		for _, rp := range replicas {
			if rp.pid() == ownerPID(owner) {
				victim = rp
			}
		}
		if victim == nil {
			t.Fatalf("reader %s is held by %s, no running replica", name, owner)
		}
		var lost []string
		for n, o := range held {
			if o == owner {
				lost = append(lost, n)
				orphaned[n] = true
			}
		}
		slices.Sort(lost)
		stalls.killed(victim.pid())
		killedAt := time.Now()
		victim.proc.kill()
		kills++
		eventually(t, 15*time.Second, "the dead replica's readers taken over", func() error {
			now := leasesOf()
			for _, n := range lost {
				if o, ok := now[n]; !ok || o == owner {
					return fmt.Errorf("%s still without a live owner", n)
				}
			}
			return nil
		})
		t.Logf("kill %d: replica %d owned %v; taken over %s after the kill", kills, victim.pid(), lost,
			time.Since(killedAt).Round(10*time.Millisecond))
		victim.proc = startTreasury(t, "", victim.env, "serve")
		waitStatus(t, victim.proc, 30*time.Second, victim.base()+"/readyz", "", http.StatusOK)
	}
	stop.Store(true)
	wg.Wait()
	problems.report(t)

	// A replica stopped cleanly (SIGTERM) gives its leases back before it
	// exits: none is left to expire (without that, its rows still name it
	// as owner for 3 s, and nobody else may take them meanwhile).
	last := replicas[len(replicas)-1]
	pid := last.pid()
	var owner string
	eventually(t, 15*time.Second, "the last replica holding readers", func() error {
		for _, o := range leasesOf() {
			if ownerPID(o) == pid {
				owner = o
				return nil
			}
		}
		return fmt.Errorf("replica %d holds no reader yet", pid)
	})
	stopping := time.Now()
	last.proc.stop()
	if exited, err := last.proc.exited(); !exited || err != nil {
		t.Errorf("serve after SIGTERM: exited %v, %v", exited, err)
	}
	var kept []string
	if err := conn.QueryRow(ctx, `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM reader_leases WHERE owner = $1`, owner).
		Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if len(kept) > 0 {
		t.Errorf("a replica stopped with SIGTERM (in %s) left its leases %v to expire", time.Since(stopping).Round(10*time.Millisecond), kept)
	}
	replicas = replicas[:len(replicas)-1]
	t.Logf("%d kills; %d payments answered", kills, load.answeredCount())

	ftCheckPayments(t, load)
	r.waitProjected()
	events := r.waitAllDelivered(rc, wh.CreatedAt, 90*time.Second)
	stopSampling()
	<-sampled
	stalls.mu.Lock()
	for name, since := range stalls.since { // still without a live owner at the end
		stalls.longest[name] = max(stalls.longest[name], time.Since(since))
	}
	stalls.mu.Unlock()
	duplicates, extra := 0, 0
	rc.mu.Lock()
	for _, n := range rc.got {
		if n > 1 {
			duplicates++
			extra += n - 1
		}
	}
	rc.mu.Unlock()
	t.Logf("webhooks: %d events delivered, %d of them more than once (%d extra deliveries)", events, duplicates, extra)

	bound := eventstore.DefaultLeaseTTL + eventstore.DefaultLeaseEvery + time.Second
	worst, worstName := time.Duration(0), ""
	for name, d := range stalls.longest {
		if d > worst {
			worst, worstName = d, name
		}
		if d > bound {
			t.Errorf("reader %s went %s without a live owner, more than %s", name, d.Round(10*time.Millisecond), bound)
		}
	}
	t.Logf("longest time a reader went without a live owner: %s (%s)", worst.Round(10*time.Millisecond), worstName)

	// The log quiet first (every payment settled, the projections at its
	// head), so that the stream can be read to its end and nothing follows.
	eventually(t, 60*time.Second, "every payment settled", func() error {
		var open int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM payments WHERE status IN ('pending', 'submitted')`).Scan(&open); err != nil {
			return err
		}
		if open > 0 {
			return fmt.Errorf("%d payments not settled yet", open)
		}
		return nil
	})
	r.waitProjected()
	rpCheckNATS(t, ctx, conn, natsURL)
	t.Logf("total %s", time.Since(started).Round(time.Millisecond))
}

// rpCheckNATS: the stream holds every public event once, and each
// platform's in the log's order.
func rpCheckNATS(t *testing.T, ctx context.Context, conn *pgx.Conn, natsURL string) {
	t.Helper()
	type event struct{ id, platform string }
	var want []event
	js := jetStreamAt(t, natsURL)
	awaitStreamHolds(t, js, func() (int, error) {
		rows, err := conn.Query(ctx, `SELECT id, platform_id FROM public_events ORDER BY seq`)
		if err != nil {
			return 0, err
		}
		want = want[:0]
		var e event
		_, err = pgx.ForEachRow(rows, []any{&e.id, &e.platform}, func() error { want = append(want, e); return nil })
		return len(want), err
	})
	wantOrder := map[string][]string{} // platform → its events in the log's order
	for _, e := range want {
		wantOrder[e.platform] = append(wantOrder[e.platform], e.id)
	}
	got := map[string][]string{}
	seen := map[string]bool{}
	for i, msg := range streamMessages(t, js, len(want)) {
		var body struct {
			ID         string `json:"id"`
			PlatformID string `json:"platform_id"`
		}
		if err := json.Unmarshal(msg.Data, &body); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if seen[body.ID] {
			t.Fatalf("event %s twice in the stream", body.ID)
		}
		seen[body.ID] = true
		got[body.PlatformID] = append(got[body.PlatformID], body.ID)
	}
	for platform, ids := range wantOrder {
		if !slices.Equal(got[platform], ids) {
			t.Errorf("platform %s: the stream holds %d events, the log %d, or not in the log's order", platform, len(got[platform]), len(ids))
		}
	}
	t.Logf("NATS: %d public events, each once, in the log's order per platform", len(want))
}
