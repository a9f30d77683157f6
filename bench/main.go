// Command bench measures the service as its users load it. `make bench`
// runs it: it builds `treasury`, measures the raw PostgreSQL transfer rate
// in a scratch database, starts `treasury serve` against a fresh database,
// creates one platform with 1,000 funded, KYB-approved virtual accounts
// and measures, each after a warm-up:
//
//   - payments:  POST /v1/payments from a random account of the 1,000 at
//     1, 16 and 64 closed-loop clients (rtp, which completes in the sandbox).
//     During the 64-client run (the largest of -clients) it also samples,
//     every 100 ms, each log subscriber's lag (projections, hash_chain,
//     sandbox, kyb_decider; webhook_fanout against public_events): in
//     events committed after its checkpoint and in ms (now − recorded_at of
//     the oldest event it has not handled), p50/p99/max; then the time from
//     the end of the run until each passes the head as it was then (at most
//     -catch-up-max, else "not within"); and created → completed of every
//     8th payment of each client of the run (GET /v1/payments/:id,
//     completed_at − created_at; unfinished ones counted). The sampling
//     query's own cost is reported beside it;
//   - hot:       the same from only 10 accounts (no lag sampling);
//   - webhook:   right after the payment loads, with no wait for the readers
//     to catch up: first-attempt latency (event created_at → arrival at a
//     local receiver subscribed to payment.created, .submitted, .completed)
//     while 200 rtp payments per second are created (open loop); a
//     payment.created of the window that has not arrived -webhook-grace
//     after it is missing;
//   - ryw:       right after those, read-your-writes: 8 clients each post
//     125 fee entries on an account of their own and list that account's
//     ledger entries at once; a list without the entry just written is a
//     miss;
//   - get:       GET /v1/virtual-accounts/:id at 16 clients, as the
//     readers finish what the loads left (no wait for them);
//   - audit:     `treasury audit verify` once the readers have caught up
//     with the loads, before any rebuild touches the projections: the hash
//     chain, every projection against its replay, the ledger's balance
//     (runs with payments or hot);
//   - rebuild:   `treasury projections rebuild` beside the serving service
//     over the log the loads left, then, with the server stopped, over the
//     log topped up with payments to ≥ 500,000 events (-rebuild-events);
//   - replay:    each subscriber alone, in a scratch copy of that database
//     (CREATE DATABASE … TEMPLATE, the server stopped), with `treasury
//     subscriptions replay NAME`: its checkpoint reset, what it writes
//     emptied, its own code run to the head; events/s each. Then each
//     part of the readers serve splits (sandbox, kyb_decider,
//     webhook_fanout) with TREASURY_READER_PARTITIONS=2, alone, one after
//     the other, each from the start of the log (`treasury subscriptions
//     replay NAME --partitions 2`): the events of the log (public_events
//     for the fan-out, split by platform) it passed over per second, and
//     those of its part it handled. The bench's one platform puts all its
//     public events in one part of the fan-out;
//   - replicas:  before the service starts, on a database and servers of
//     its own (the same platform and accounts set up in it): the
//     payments load of the payments section at its largest concurrency
//     (64 clients) against one `treasury serve`, then against two on the
//     same database (the second started like the first, on another port;
//     client i talks to replica i mod 2), both with
//     TREASURY_READER_PARTITIONS=2 (issue #20): payments/s, p50/p99, the
//     ratio of two to one, the readers each replica held (reader_leases)
//     and each subscriber's lag (a split reader's: its part furthest
//     behind), PostgreSQL's free connection slots before each run (a
//     replica may open 44) and each replica's log warnings. Not profiled.
//     On a machine of few cores both replicas and PostgreSQL share them:
//     the ratio shows the overhead of a second replica, not a gain;
//   - raw:       two UPDATEs and one INSERT per transaction over pgx, the
//     limit the database sets, at the same concurrencies.
//
// It prints one table (figure, value, target) and writes bench/results.json.
// Targets are reported as met or not; the bench never waits for the system
// to look good (issue #13): per-subscriber replay (the whole reader, and
// each part of a split one over the log it passes) and rebuild ≥ 50,000
// events/s; lag p99 of the slowest subscriber at 64 clients ≤ 250 ms; the
// slowest at the head ≤ 1 s after the load; webhook first attempt p99
// ≤ 50 ms with 0 missing; rtp created → completed p99 ≤ 1 s; payments/s at
// 64 clients ≥ 780 (the floor) and ≥ 3,000 (the goal).
//
// The bench drives the service through the HTTP API and the CLI only; it
// reads the database for SELECT count(*) FROM events, the lag sampling
// (subscription_checkpoints against events and public_events, by index;
// with TREASURY_READER_PARTITIONS=P set, the checkpoints NAME#i/P of the
// split readers, a split reader's lag being its part furthest behind),
// the readers' leases and the scratch copy of the replay, so the server
// may change underneath it.
//
// -profile DIR also profiles each measured window (after its warm-up):
// the bench starts the service with TREASURY_PPROF_ADDR on a free port
// and writes into DIR, per window (payments-64, hot-16, get-16, webhook,
// raw-64, …):
//
//   - <window>.cpu.pprof: the service's CPU profile over the window
//     (`go tool pprof -top DIR/payments-64.cpu.pprof`);
//   - <window>.allocs.pprof: what the service allocated over the window;
//   - <window>.goroutines.txt: its goroutines half-way through;
//   - <window>.pgwait.txt: pg_stat_activity sampled every 100 ms (state
//     and wait-event histograms, the queries running), the settings that
//     bear on commits, pg_stat_database and pg_stat_wal deltas, and the
//     rows each table and index gave;
//   - <window>.cpushare.txt: the CPU time of the service, PostgreSQL, the
//     bench and the rest of the machine.
//
// raw has no service: pgwait and cpushare only. Profiling costs a little
// (CPU sampling at 100 Hz, one query every 100 ms): compare throughput
// figures taken without it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The sections, in the order they run. raw runs first, before the server
// starts, so that nothing else of ours competes with it; replicas next,
// on servers and a database of its own, before the service starts.
var allSections = []string{"raw", "replicas", "payments", "hot", "webhook", "ryw", "get", "rebuild", "replay"}

type options struct {
	keepDatabase  bool
	duration      time.Duration
	warmup        time.Duration
	clients       []int
	accounts      int
	hotAccounts   int
	fund          int64
	webhookRate   int
	webhookGrace  time.Duration
	catchUpMax    time.Duration
	replayTimeout time.Duration
	getClients    int
	rebuildEvents int
	only          map[string]bool
	out           string
	prof          *profiler // -profile; nil when off
}

func (o options) want(section string) bool { return o.only[section] }

// needsServer reports whether any selected section talks to the service
// (replicas starts servers of its own).
func (o options) needsServer() bool {
	for _, s := range allSections {
		if s != "raw" && s != "replicas" && o.want(s) {
			return true
		}
	}
	return false
}

// needsBinary reports whether any selected section runs `treasury`.
func (o options) needsBinary() bool { return o.needsServer() || o.want("replicas") }

func main() {
	var o options
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long each measurement runs, after its warm-up")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "warm-up before each measurement (load runs, nothing is counted)")
	clients := flag.String("clients", "1,16,64", "comma list of closed-loop client counts for payments, hot and raw")
	only := flag.String("only", "", "comma list of sections to run, of "+strings.Join(allSections, ",")+" (default: all)")
	flag.IntVar(&o.accounts, "accounts", 1000, "funded, KYB-approved virtual accounts to create")
	flag.IntVar(&o.hotAccounts, "hot-accounts", 10, "source accounts of the hot-account workload")
	flag.Int64Var(&o.fund, "fund", 100_000_000, "cents credited to each account (rtp inbound transfer)")
	flag.IntVar(&o.webhookRate, "webhook-rate", 200, "rtp payments per second during the webhook measurement (each emitting payment.created, .submitted and .completed)")
	flag.DurationVar(&o.webhookGrace, "webhook-grace", 30*time.Second, "how long after the webhook window a payment.created delivery may still arrive before it counts as missing")
	flag.DurationVar(&o.catchUpMax, "catch-up-max", 120*time.Second, "how long after the largest payments run the bench waits for each subscriber to reach the head (and for the timed payments to complete)")
	flag.DurationVar(&o.replayTimeout, "replay-timeout", 10*time.Minute, "bound of each subscriber's replay (replay section)")
	flag.IntVar(&o.getClients, "get-clients", 16, "clients of the GET /v1/virtual-accounts/:id measurement")
	flag.IntVar(&o.rebuildEvents, "rebuild-events", 500_000, "events the log must hold before the rebuild and the replays are timed (topped up with payments)")
	flag.BoolVar(&o.keepDatabase, "keep-database", false, "keep the service's database after the run (to profile a replay or a rebuild over it by hand)")
	flag.StringVar(&o.out, "out", "", "where to write the results (default bench/results.json in the repository)")
	profile := flag.String("profile", "", "`DIR` to write, for each measured window, the service's CPU profile (<window>.cpu.pprof, from TREASURY_PPROF_ADDR),\n"+
		"its allocations (<window>.allocs.pprof), its goroutines (<window>.goroutines.txt), a pg_stat_activity wait histogram sampled every 100 ms (<window>.pgwait.txt)\n"+
		"and the CPU time of the service, PostgreSQL and the rest of the machine (<window>.cpushare.txt);\n"+
		"windows are named payments-64, hot-16, get-16, webhook, raw-64, … (default: no profiling)")
	flag.Parse()

	fail := func(format string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
		os.Exit(2)
	}
	for _, f := range strings.Split(*clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail("-clients: %q is not a positive number", f)
		}
		o.clients = append(o.clients, n)
	}
	o.only = map[string]bool{}
	if strings.TrimSpace(*only) == "" {
		for _, s := range allSections {
			o.only[s] = true
		}
	} else {
		known := map[string]bool{}
		for _, s := range allSections {
			known[s] = true
		}
		for _, s := range strings.Split(*only, ",") {
			s = strings.TrimSpace(s)
			if !known[s] {
				fail("-only: unknown section %q (sections: %s)", s, strings.Join(allSections, ","))
			}
			o.only[s] = true
		}
	}
	if o.duration <= 0 || o.warmup < 0 {
		fail("-duration must be positive and -warmup not negative")
	}
	if o.accounts < 1 || o.hotAccounts < 1 || o.hotAccounts > o.accounts {
		fail("-accounts must be ≥ 1 and -hot-accounts between 1 and -accounts")
	}
	if o.webhookRate < 1 || o.getClients < 1 {
		fail("-webhook-rate and -get-clients must be ≥ 1")
	}
	if o.webhookGrace <= 0 || o.catchUpMax <= 0 || o.replayTimeout <= 0 {
		fail("-webhook-grace, -catch-up-max and -replay-timeout must be positive")
	}
	if *profile != "" {
		dir, err := filepath.Abs(*profile)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			fail("-profile: %v", err)
		}
		o.prof = &profiler{dir: dir}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// logf writes a progress line to stderr.
func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, a...))
}
