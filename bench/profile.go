package main

// -profile DIR: during each measured window (after its warm-up) the bench
// takes, into DIR:
//
//   - <window>.cpu.pprof: the service's CPU profile over the window
//     (/debug/pprof/profile?seconds=N on TREASURY_PPROF_ADDR; read it with
//     `go tool pprof -top DIR/<window>.cpu.pprof`);
//   - <window>.allocs.pprof: what the service allocated over the window
//     (/debug/pprof/allocs?seconds=N, a delta profile; `go tool pprof
//     -sample_index=alloc_space -top DIR/<window>.allocs.pprof`);
//   - <window>.goroutines.txt: the service's goroutines half-way through
//     (/debug/pprof/goroutine?debug=1: where the handlers wait);
//   - <window>.pgwait.txt: pg_stat_activity sampled every 100 ms over the
//     window, as histograms of state and wait event (and of the queries
//     running), with the PostgreSQL settings that bear on commits, the
//     window's pg_stat_database and pg_stat_wal counters and the rows
//     each table and index gave (pg_stat_user_tables, _indexes);
//   - <window>.cpushare.txt: the CPU time the service, PostgreSQL, the
//     bench and everything else on the machine used over the window.
//
// A window is named after its section and clients: payments-64, hot-16,
// get-16, webhook, raw-64 (raw has no service: pgwait and cpushare only).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pglocal"
)

// profiler writes the profiles of -profile; a nil *profiler takes none.
type profiler struct {
	dir      string
	adminURL string // a connection of its own reads pg_stat_activity
}

// window is one measured window to profile.
type window struct {
	name      string // file name prefix: payments-64, raw-16, …
	database  string // the database whose backends the window is about
	pprofBase string // http://host:port of TREASURY_PPROF_ADDR; "" when there is no service
	pid       int    // the service's process id; 0 when there is none
	warmup    time.Duration
	duration  time.Duration
}

// start profiles w from now+warmup for duration, in the background; the
// function it returns waits until every file is written. Call it right
// before the load starts, with the load's warm-up and duration.
func (p *profiler) start(ctx context.Context, w window) (wait func()) {
	if p == nil {
		return func() {}
	}
	var wg sync.WaitGroup
	from := time.Now().Add(w.warmup)
	to := from.Add(w.duration)
	run := func(what string, f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sleepUntil(ctx, from)
			if ctx.Err() != nil {
				return
			}
			if err := f(); err != nil && ctx.Err() == nil {
				logf("profile %s: %s: %v", w.name, what, err)
			}
		}()
	}
	if w.pprofBase != "" {
		run("CPU profile", func() error { return p.cpuProfile(ctx, w) })
		run("allocations", func() error {
			return p.fetch(ctx, fmt.Sprintf("%s/debug/pprof/allocs?seconds=%d", w.pprofBase, wholeSeconds(w.duration)),
				filepath.Join(p.dir, w.name+".allocs.pprof"))
		})
		run("goroutines", func() error {
			sleepUntil(ctx, from.Add(w.duration/2))
			return p.fetch(ctx, w.pprofBase+"/debug/pprof/goroutine?debug=1", filepath.Join(p.dir, w.name+".goroutines.txt"))
		})
	}
	run("pg_stat_activity", func() error { return p.pgWait(ctx, w, to) })
	run("CPU shares", func() error { return p.cpuShare(ctx, w, to) })
	return func() {
		wg.Wait()
		logf("profile %s: written to %s", w.name, filepath.Join(p.dir, w.name+".*"))
	}
}

// cpuProfile fetches a CPU profile as long as the window.
func (p *profiler) cpuProfile(ctx context.Context, w window) error {
	return p.fetch(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", w.pprofBase, wholeSeconds(w.duration)),
		filepath.Join(p.dir, w.name+".cpu.pprof"))
}

// wholeSeconds is d in whole seconds (at least 1): what ?seconds= takes.
func wholeSeconds(d time.Duration) int {
	return max(1, int(d.Round(time.Second)/time.Second))
}

// pprofClient has no timeout of its own: a CPU profile answers after the
// window; ctx bounds it.
var pprofClient = &http.Client{}

func (p *profiler) fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := pprofClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 500))
		return fmt.Errorf("GET %s: %d %s", url, res.StatusCode, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// pgSettings are the settings that decide what a commit costs.
var pgSettings = []string{"synchronous_commit", "fsync", "wal_sync_method", "commit_delay", "commit_siblings",
	"full_page_writes", "wal_buffers", "wal_writer_delay", "shared_buffers", "max_connections", "checkpoint_timeout", "max_wal_size",
	"autovacuum"}

// pgCounters are the window's pg_stat_database (of w.database) and
// pg_stat_wal counters.
const pgCounters = `
SELECT d.xact_commit, d.xact_rollback, d.tup_returned, d.tup_fetched, d.tup_inserted, d.tup_updated, d.tup_deleted,
       d.blks_hit, d.blks_read, d.deadlocks, d.conflicts,
       w.wal_records, w.wal_fpi, w.wal_bytes::bigint, w.wal_buffers_full, w.wal_write, w.wal_sync
  FROM pg_stat_database d, pg_stat_wal w WHERE d.datname = $1`

var pgCounterNames = []string{"xact_commit", "xact_rollback", "tup_returned", "tup_fetched", "tup_inserted", "tup_updated", "tup_deleted",
	"blks_hit", "blks_read", "deadlocks", "conflicts",
	"wal_records", "wal_fpi", "wal_bytes", "wal_buffers_full", "wal_write", "wal_sync"}

func readCounters(ctx context.Context, conn *pgx.Conn, database string) ([]int64, error) {
	// Statistics are cached for the transaction unless cleared.
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return nil, err
	}
	v := make([]int64, len(pgCounterNames))
	ptrs := make([]any, len(v))
	for i := range v {
		ptrs[i] = &v[i]
	}
	return v, conn.QueryRow(ctx, pgCounters, database).Scan(ptrs...)
}

// activity is one row of pg_stat_activity.
type activity struct {
	database, backendType, app, state, wait, query string
}

// pgWait samples pg_stat_activity every 100 ms until `to` and writes the
// histograms.
func (p *profiler) pgWait(ctx context.Context, w window, to time.Time) error {
	conn, err := pgx.Connect(ctx, p.adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	settings := make([]string, 0, len(pgSettings))
	for _, s := range pgSettings {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", s).Scan(&v); err != nil {
			return err
		}
		settings = append(settings, s+"="+v)
	}
	// pg_stat_wal is PostgreSQL 14 or later: without it, no counters.
	before, err := readCounters(ctx, conn, w.database)
	if err != nil {
		logf("profile %s: no pg_stat_database/pg_stat_wal counters: %v", w.name, err)
		before = nil
	}
	// Table and index statistics are per database: a connection to w.database.
	dbURL, err := pglocal.WithDatabase(p.adminURL, w.database)
	if err != nil {
		return err
	}
	dbConn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer dbConn.Close(context.Background())
	tablesBefore, err := readRelStats(ctx, dbConn)
	if err != nil {
		return err
	}
	began := time.Now()
	var (
		samples int
		rows    []activity // every row of every sample
	)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(to) && ctx.Err() == nil {
		r, err := conn.Query(ctx, `
SELECT coalesce(datname, ''), coalesce(backend_type, ''), coalesce(application_name, ''), coalesce(state, ''),
       coalesce(wait_event_type || ':' || wait_event, ''), left(regexp_replace(query, '\s+', ' ', 'g'), 80)
  FROM pg_stat_activity WHERE pid <> pg_backend_pid()`)
		if err != nil {
			return err
		}
		for r.Next() {
			var a activity
			if err := r.Scan(&a.database, &a.backendType, &a.app, &a.state, &a.wait, &a.query); err != nil {
				r.Close()
				return err
			}
			rows = append(rows, a)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return err
		}
		samples++
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	elapsed := time.Since(began)
	var after []int64
	if before != nil {
		if after, err = readCounters(ctx, conn, w.database); err != nil {
			return err
		}
	}
	tablesAfter, err := readRelStats(ctx, dbConn)
	if err != nil {
		return err
	}

	f, err := os.Create(filepath.Join(p.dir, w.name+".pgwait.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "# pg_stat_activity during %s: %d samples every 100 ms over %.1f s; database %s\n", w.name, samples, elapsed.Seconds(), w.database)
	fmt.Fprintf(f, "# settings: %s\n", strings.Join(settings, " "))
	fmt.Fprintf(f, "# shares are of backend-samples (a backend seen in n samples counts n); state active with no wait = on CPU (or in a wait PostgreSQL does not instrument)\n")

	var client, active []activity
	others := map[string]int{}
	for _, a := range rows {
		if a.database == w.database && a.backendType == "client backend" {
			client = append(client, a)
			if a.state == "active" {
				active = append(active, a)
			}
			continue
		}
		if a.backendType == "client backend" {
			if a.state != "active" {
				continue // idle connections to other databases: not ours
			}
			a.backendType = "client backend of " + a.database
		}
		others[a.backendType+"  "+orDash(a.state)+"  "+orCPU(a.wait)]++
	}
	perSample := func(n int) float64 { return float64(n) / float64(max(samples, 1)) }
	states := map[string]int{}
	apps := map[string]int{}
	for _, a := range client {
		states[orDash(a.state)]++
		apps[orDash(a.app)]++
	}
	fmt.Fprintf(f, "# client backends of the database per sample: %.1f (by state: %s; by application_name: %s)\n\n",
		perSample(len(client)), meanString(states, samples), meanString(apps, samples))

	hist := func(title string, list []activity, key func(activity) string, limit int) {
		fmt.Fprintf(f, "## %s\n", title)
		m := map[string]int{}
		for _, a := range list {
			m[key(a)]++
		}
		writeHist(f, m, len(list), samples, limit)
		fmt.Fprintln(f)
	}
	hist("client backends of the database, by state and wait", client, func(a activity) string {
		return orDash(a.state) + "  " + orCPU(a.wait)
	}, 0)
	hist("active client backends, by wait", active, func(a activity) string { return orCPU(a.wait) }, 0)
	hist("active client backends, by query (first 80 characters) and wait (top 40)", active, func(a activity) string {
		return orCPU(a.wait) + "  " + a.query
	}, 40)
	hist("idle in transaction, by the last query (first 80 characters)", filter(client, func(a activity) bool {
		return strings.HasPrefix(a.state, "idle in transaction")
	}), func(a activity) string { return a.query }, 20)
	fmt.Fprintf(f, "## other processes (background workers; active backends of other databases), by type, state and wait\n")
	total := 0
	for _, n := range others {
		total += n
	}
	writeHist(f, others, total, samples, 0)

	if before != nil {
		writeCounters(f, w.database, before, after, elapsed)
	}
	writeRelStats(f, tablesBefore, tablesAfter, elapsed)
	return nil
}

// relStats are the cumulative counters of pg_stat_user_tables (kind
// "table") and pg_stat_user_indexes (kind "index"), by relation name.
type relStats map[string][]int64

var (
	tableCounterNames = []string{"seq_scan", "seq_tup_read", "idx_scan", "idx_tup_fetch", "n_tup_ins", "n_tup_upd", "n_tup_hot_upd", "n_tup_del"}
	indexCounterNames = []string{"idx_scan", "idx_tup_read", "idx_tup_fetch"}
)

func readRelStats(ctx context.Context, conn *pgx.Conn) (relStats, error) {
	if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
		return nil, err
	}
	out := relStats{}
	read := func(sql, prefix string, n int) error {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var name string
			v := make([]int64, n)
			ptrs := []any{&name}
			for i := range v {
				ptrs = append(ptrs, &v[i])
			}
			if err := rows.Scan(ptrs...); err != nil {
				return err
			}
			out[prefix+name] = v
		}
		return rows.Err()
	}
	if err := read(`SELECT relname, seq_scan, seq_tup_read, coalesce(idx_scan, 0), coalesce(idx_tup_fetch, 0),
        n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables`, "table ", len(tableCounterNames)); err != nil {
		return nil, err
	}
	if err := read(`SELECT relname || '.' || indexrelname, idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes`,
		"index ", len(indexCounterNames)); err != nil {
		return nil, err
	}
	return out, nil
}

// writeRelStats writes the window's per-table and per-index counters,
// the relations that read the most rows first.
func writeRelStats(w io.Writer, before, after relStats, elapsed time.Duration) {
	section := func(kind string, names []string, weight func(d []int64) int64) {
		type rel struct {
			name string
			d    []int64
		}
		var rels []rel
		for name, a := range after {
			n, ok := strings.CutPrefix(name, kind+" ")
			if !ok {
				continue
			}
			d := make([]int64, len(a))
			moved := false
			for i := range a {
				if b, ok := before[name]; ok && i < len(b) {
					d[i] = a[i] - b[i]
				} else {
					d[i] = a[i]
				}
				moved = moved || d[i] != 0
			}
			if moved {
				rels = append(rels, rel{n, d})
			}
		}
		sort.Slice(rels, func(i, j int) bool {
			wi, wj := weight(rels[i].d), weight(rels[j].d)
			return wi > wj || (wi == wj && rels[i].name < rels[j].name)
		})
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "%s\t", kind)
		for _, n := range names {
			fmt.Fprintf(tw, "%s/s\t", n)
		}
		fmt.Fprintf(tw, "\n")
		for i, r := range rels {
			if i == 25 {
				break
			}
			fmt.Fprintf(tw, "%s\t", r.name)
			for _, v := range r.d {
				fmt.Fprintf(tw, "%.1f\t", float64(v)/elapsed.Seconds())
			}
			fmt.Fprintf(tw, "\n")
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\n## tables over the window (pg_stat_user_tables), per second, by rows read (seq_tup_read + idx_tup_fetch)\n")
	section("table", tableCounterNames, func(d []int64) int64 { return d[1] + d[3] })
	fmt.Fprintf(w, "\n## indexes over the window (pg_stat_user_indexes), per second, by index entries read (idx_tup_read)\n")
	section("index", indexCounterNames, func(d []int64) int64 { return d[1] })
}

// writeCounters writes the window's pg_stat_database and pg_stat_wal deltas.
func writeCounters(f io.Writer, database string, before, after []int64, elapsed time.Duration) {
	fmt.Fprintf(f, "\n## counters over the window (pg_stat_database of %s; pg_stat_wal, the whole server)\n", database)
	tw := tabwriter.NewWriter(f, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "counter\tdelta\tper second\t\n")
	for i, name := range pgCounterNames {
		d := after[i] - before[i]
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", name, d, float64(d)/elapsed.Seconds())
	}
	tw.Flush()
	delta := func(name string) float64 {
		i := slices.Index(pgCounterNames, name)
		return float64(after[i] - before[i])
	}
	commits, syncs := delta("xact_commit"), delta("wal_sync")
	if syncs > 0 {
		fmt.Fprintf(f, "commits per WAL sync (group commit): %.2f; WAL writes per sync: %.2f\n", commits/syncs, delta("wal_write")/syncs)
	}
	if commits > 0 {
		fmt.Fprintf(f, "WAL bytes per commit: %.0f; WAL records per commit: %.1f\n", delta("wal_bytes")/commits, delta("wal_records")/commits)
	}
}

func filter(list []activity, keep func(activity) bool) []activity {
	var out []activity
	for _, a := range list {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orCPU(wait string) string {
	if wait == "" {
		return "(no wait: CPU)"
	}
	return wait
}

// meanString renders per-sample means, largest first.
func meanString(m map[string]int, samples int) string {
	keys := sortedKeys(m)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.1f", k, float64(m[k])/float64(max(samples, 1)))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	return keys
}

// writeHist writes count, share, mean per sample and key, largest first
// (limit rows when limit > 0).
func writeHist(w io.Writer, m map[string]int, total, samples, limit int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  count\tshare\tper sample\twhat\n")
	for i, k := range sortedKeys(m) {
		if limit > 0 && i == limit {
			fmt.Fprintf(tw, "  …\t\t\t%d more\n", len(m)-limit)
			break
		}
		fmt.Fprintf(tw, "  %d\t%.1f%%\t%.2f\t%s\n", m[k], 100*float64(m[k])/float64(max(total, 1)), float64(m[k])/float64(max(samples, 1)), k)
	}
	if len(m) == 0 {
		fmt.Fprintf(tw, "  0\t\t\t(none)\n")
	}
	tw.Flush()
}

// cpuTimes is CPU time in clock ticks: the machine's (/proc/stat) and per
// process (/proc/PID/stat).
type cpuTimes struct {
	host     []int64 // user nice system idle iowait irq softirq steal
	service  int64
	bench    int64
	postgres map[int]int64
}

const clockTicks = 100 // USER_HZ on Linux

func readCPUTimes(servicePID int) (cpuTimes, error) {
	var t cpuTimes
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return t, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	for _, f := range strings.Fields(line)[1:] {
		n, _ := strconv.ParseInt(f, 10, 64)
		t.host = append(t.host, n)
	}
	if servicePID != 0 {
		_, t.service, _ = procTicks(servicePID)
	}
	_, t.bench, _ = procTicks(os.Getpid())
	t.postgres = map[int]int64{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, ticks, err := procTicks(pid); err == nil && comm == "postgres" {
			t.postgres[pid] = ticks
		}
	}
	return t, nil
}

// procTicks returns a process's command name and utime+stime.
func procTicks(pid int) (string, int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", 0, err
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(s[closing+1:])
	if len(fields) < 13 {
		return "", 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return s[open+1 : closing], utime + stime, nil
}

// cpuShare writes how the machine's CPU time went over the window.
func (p *profiler) cpuShare(ctx context.Context, w window, to time.Time) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	load0, _ := os.ReadFile("/proc/loadavg")
	t0, err := readCPUTimes(w.pid)
	if err != nil {
		return err
	}
	began := time.Now()
	sleepUntil(ctx, to)
	t1, err := readCPUTimes(w.pid)
	if err != nil {
		return err
	}
	load1, _ := os.ReadFile("/proc/loadavg")
	secs := time.Since(began).Seconds()
	pct := func(ticks int64) float64 { return 100 * float64(ticks) / clockTicks / secs }
	var pg int64
	for pid, n := range t1.postgres {
		pg += n - t0.postgres[pid] // a process started in the window counts from 0
	}
	host := make([]int64, len(t1.host))
	var busy int64
	for i := range t1.host {
		if i >= len(t0.host) {
			break
		}
		host[i] = t1.host[i] - t0.host[i]
		if i < 8 && i != 3 && i != 4 { // not idle, not iowait; guest time is already in user
			busy += host[i]
		}
	}
	at := func(i int) int64 {
		if i < len(host) {
			return host[i]
		}
		return 0
	}
	ours := t1.service - t0.service + pg + t1.bench - t0.bench
	f, err := os.Create(filepath.Join(p.dir, w.name+".cpushare.txt"))
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "# CPU time over %s (%.1f s) on %d CPUs: 100%% = one CPU busy for the whole window, %d%% = the machine\n", w.name, secs, runtime.NumCPU(), 100*runtime.NumCPU())
	fmt.Fprintf(f, "# load average at start: %s# load average at end:   %s\n", string(load0), string(load1))
	tw := tabwriter.NewWriter(f, 0, 0, 2, ' ', 0)
	if w.pid != 0 {
		fmt.Fprintf(tw, "treasury serve (pid %d)\t%6.1f%%\n", w.pid, pct(t1.service-t0.service))
	}
	fmt.Fprintf(tw, "postgres (every process of the server)\t%6.1f%%\n", pct(pg))
	fmt.Fprintf(tw, "bench (the load generator, this process)\t%6.1f%%\n", pct(t1.bench-t0.bench))
	fmt.Fprintf(tw, "everything else on the machine\t%6.1f%%\n", pct(busy-ours))
	fmt.Fprintf(tw, "machine busy (user+nice+system+irq+softirq+steal)\t%6.1f%%\n", pct(busy))
	fmt.Fprintf(tw, "  of which system\t%6.1f%%\n", pct(at(2)))
	fmt.Fprintf(tw, "  of which steal\t%6.1f%%\n", pct(at(7)))
	fmt.Fprintf(tw, "machine idle\t%6.1f%%\n", pct(at(3)))
	fmt.Fprintf(tw, "machine iowait\t%6.1f%%\n", pct(at(4)))
	tw.Flush()
	return nil
}
