package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// replicasPartitions is TREASURY_READER_PARTITIONS of the replicas
// section's servers: each split reader in two parts, so that two replicas
// can share them.
const replicasPartitions = 2

// replicaRun is one payments load of the replicas section.
type replicaRun struct {
	Replicas int       `json:"replicas"`
	Load     loadStats `json:"load"`
	// Leases are the readers each replica held at the end of the run
	// (reader_leases, by replica: "a", "b"), to show they were shared.
	Leases map[string][]string `json:"reader_leases_by_replica"`
	Lag    *lagResult          `json:"subscriber_lag,omitempty"`
	// FreeConnections are PostgreSQL's connection slots left before the
	// run (max_connections − pg_stat_activity): a replica opens up to 44
	// (16 for the API, 28 for the readers with two parts). Other work on
	// the same server (tests) may take the slots a second replica needs;
	// its log then shows "too many clients" (ServerLogs).
	FreeConnections int `json:"free_connection_slots_before"`
}

// replicasResult is the same payments load against one replica, then two.
type replicasResult struct {
	Partitions     int          `json:"reader_partitions"`
	Clients        int          `json:"clients"`
	SourceAccounts int          `json:"source_accounts"`
	Runs           []replicaRun `json:"runs"`
	// Ratio is payments/s with two replicas ÷ with one.
	Ratio float64 `json:"two_to_one_payments_per_second"`
	Cores int     `json:"cores"`
	// ServerLogs summarize each replica's log (by replica: "a", "b"):
	// warnings there (connections refused, steps failed) bear on the figures.
	ServerLogs map[string]*logSummary `json:"server_logs"`
	LoadAvg    map[string]string      `json:"loadavg"`
	Note       string                 `json:"note"`
}

// replicas measures the payments load (the payments section's, at its
// largest concurrency) against one `treasury serve`, then against two on
// the same database, the clients spread over both round-robin, both with
// TREASURY_READER_PARTITIONS=2. It runs on a database of its own (set up
// like the service's), before the service's sections, with nothing else
// of the bench running.
func replicasSection(ctx context.Context, o options, adminURL, bin string, stamp int64, cores int) (*replicasResult, error) {
	clients := slices.Max(o.clients)
	res := &replicasResult{Partitions: replicasPartitions, Clients: clients, SourceAccounts: o.accounts, Cores: cores,
		ServerLogs: map[string]*logSummary{}, LoadAvg: map[string]string{},
		Note: fmt.Sprintf("POST /v1/payments (rtp) from random accounts of %d at %s, closed loop, as the payments section, against one "+
			"`treasury serve`, then two on the same database (the second started like the first, on another port; client i talks to "+
			"replica i mod 2), both with TREASURY_READER_PARTITIONS=%d and a database of their own; the lag of a split reader is that of "+
			"its part furthest behind. On this %d-core machine both replicas, PostgreSQL and the bench's clients share the cores: "+
			"the ratio shows what a second replica costs, not what it gains (a second replica only adds throughput on hardware of its own).",
			o.accounts, nClients(clients), replicasPartitions, cores)}
	dbName := fmt.Sprintf("treasury_bench_%d_replicas", stamp)
	dbURL, drop, err := createDatabase(ctx, adminURL, dbName)
	if err != nil {
		return res, err
	}
	if o.keepDatabase {
		defer logf("kept database %s (-keep-database): drop it by hand", dbName)
	} else {
		defer drop()
	}
	env := fmt.Sprintf("TREASURY_READER_PARTITIONS=%d", replicasPartitions)
	a, err := startService(ctx, bin, dbURL, false, env)
	if err != nil {
		return res, err
	}
	a.dbName = dbName
	defer a.close()
	defer func() { res.ServerLogs["a"] = summarizeLog(a.logPath) }()
	t := time.Now()
	if err := a.setUp(o.accounts, o.fund); err != nil {
		return res, fmt.Errorf("setup: %w", err)
	}
	logf("replicas: setup: %d accounts opened, KYB-approved and funded in %s", len(a.accounts), time.Since(t).Round(100*time.Millisecond))
	runID := fmt.Sprintf("%x", stamp)

	run := func(svcs []*service) error {
		n := len(svcs)
		// The payments section's request, each client on its replica.
		fns := make([]requestFunc, n)
		for i, s := range svcs {
			fns[i] = (&bench{o: o, svc: s, runID: runID}).paymentFn(a.accounts, fmt.Sprintf("bench-%s-replicas%d-%d", runID, n, clients))
		}
		fn := func(ctx context.Context, w *worker) outcome { return fns[w.id%n](ctx, w) }
		// Any replica's end ends the run.
		lctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		for _, s := range svcs {
			go func() {
				select {
				case <-s.ctx.Done():
					cancel(context.Cause(s.ctx))
				case <-lctx.Done():
				}
			}()
		}
		var free int
		if err := a.db.QueryRow(a.ctx, `SELECT current_setting('max_connections')::int - (SELECT count(*) FROM pg_stat_activity)`).Scan(&free); err != nil {
			return err
		}
		logf("replicas: %d replica(s), %s, TREASURY_READER_PARTITIONS=%d: %s warm-up, then measuring %s (%d connection slots free in PostgreSQL)",
			n, nClients(clients), replicasPartitions, o.warmup, o.duration, free)
		if free < 44 {
			logf("replicas: only %d connection slots free: a replica may open 44; its log will say if it was refused", free)
		}
		from := time.Now().Add(o.warmup)
		sampler := a.startLagSampler(from, clients)
		st, err := closedLoop(lctx, clients, o.warmup, o.duration, httpConflict, fn)
		end := time.Now()
		lag := sampler.finish()
		if err != nil {
			return err
		}
		r := replicaRun{Replicas: n, Load: st, Leases: map[string][]string{}, FreeConnections: free}
		res.LoadAvg[fmt.Sprintf("after_%d_replicas", n)] = loadAvg()
		// Who held which reader at the end of the run.
		owners := map[string]string{}
		for i, s := range svcs {
			if id, err := s.replicaID(); err == nil {
				owners[id] = string(rune('a' + i))
			}
		}
		rows, err := a.db.Query(a.ctx, `SELECT name, coalesce(owner, '') FROM reader_leases WHERE expires_at > now() ORDER BY name`)
		if err == nil {
			for rows.Next() {
				var name, owner string
				if rows.Scan(&name, &owner) == nil {
					who := owners[owner]
					if who == "" {
						who = "other: " + owner
					}
					r.Leases[who] = append(r.Leases[who], name)
				}
			}
			rows.Close()
		}
		if err := a.catchUp(lag, end, o.catchUpMax); err != nil {
			return fmt.Errorf("catch-up after the load: %w", err)
		}
		r.Lag = lag
		res.Runs = append(res.Runs, r)
		logf("replicas: %d replica(s): %.0f payments/s, p50 %.1f ms, p99 %.1f ms, max %.0f ms; non-2xx: %s",
			n, st.PerSecond, st.P50ms, st.P99ms, st.MaxMs, classesString(st.FailedByClass))
		var held []string
		for _, who := range namesOf(r.Leases) {
			held = append(held, fmt.Sprintf("%s: %d", who, len(r.Leases[who])))
		}
		logf("replicas: %d replica(s): readers held by replica: %s", n, strings.Join(held, ", "))
		logLag(lag)
		return nil
	}

	if err := run([]*service{a}); err != nil {
		return res, fmt.Errorf("one replica: %w", err)
	}
	b, err := startService(ctx, bin, dbURL, false, env)
	if err != nil {
		return res, fmt.Errorf("second replica: %w", err)
	}
	defer b.close()
	defer func() { res.ServerLogs["b"] = summarizeLog(b.logPath) }()
	b.dbName, b.platformID, b.auth, b.accounts = dbName, a.platformID, a.auth, a.accounts
	// The leases spread at the replicas' heartbeats (every second): wait
	// until the second holds its share before the warm-up starts.
	if err := waitLeasesShared(a, b, 15*time.Second); err != nil {
		logf("replicas: %v: measuring anyway", err)
	}
	// No settling first: the one-replica run's catch-up (measured above)
	// brought the readers to the head; what the sandbox still settles from
	// it, the two replicas carry as a platform's would.
	if err := run([]*service{a, b}); err != nil {
		return res, fmt.Errorf("two replicas: %w", err)
	}
	if one, two := res.Runs[0].Load.PerSecond, res.Runs[1].Load.PerSecond; one > 0 {
		res.Ratio = two / one
	}
	logf("replicas: two replicas ÷ one: %.2f of the payments/s (%d cores, shared by both replicas and PostgreSQL)", res.Ratio, cores)
	if err := a.exitErr(); err != nil {
		return res, err
	}
	return res, b.exitErr()
}

// loadAvg is /proc/loadavg's three averages ("" if unreadable).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return ""
}

// replicaID is the replica's id in replicas (its heartbeat): the lease
// owner whose connections are this server's process. The server's pid is
// in the id (eventstore.NewLeases: host-pid-ulid).
func (s *service) replicaID() (string, error) {
	var id string
	err := s.db.QueryRow(s.parent, `SELECT id FROM replicas WHERE id LIKE '%-' || $1 || '-%' ORDER BY seen_at DESC LIMIT 1`,
		fmt.Sprint(s.cmd.Process.Pid)).Scan(&id)
	return id, err
}

// waitLeasesShared waits until each of the two replicas holds a lease.
func waitLeasesShared(a, b *service, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for {
		ia, errA := a.replicaID()
		ib, errB := b.replicaID()
		var na, nb int
		if errA == nil && errB == nil {
			if err := a.db.QueryRow(a.ctx, `SELECT count(*) FILTER (WHERE owner = $1), count(*) FILTER (WHERE owner = $2)
                FROM reader_leases WHERE expires_at > now()`, ia, ib).Scan(&na, &nb); err != nil {
				return err
			}
			if na > 0 && nb > 0 {
				logf("replicas: the readers' leases are shared: %d and %d", na, nb)
				return nil
			}
		}
		if time.Now().After(deadline) || !a.alive() || !b.alive() {
			return fmt.Errorf("the leases were not shared within %s (%d and %d held)", bound, na, nb)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// namesOf are the keys of m, sorted.
func namesOf[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
