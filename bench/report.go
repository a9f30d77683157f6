package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
)

// report gathers every figure, prints the table and writes results.json.
type report struct {
	o       options
	env     map[string]any
	elapsed time.Duration

	setup      map[string]any
	raw        *rawResult
	spread     *paymentsResult
	hot        *paymentsResult
	completion *completionResult
	webhook    *webhookResult
	get        *loadStats
	rebuild    *rebuildResult
	lag        *lagResult
	rtp        *rtpResult
	replay     *replaysResult
	replicas   *replicasResult
	audit      *auditResult
	ryw        *rywResult

	failures         []string
	serverLog        string
	serverLogSummary *logSummary
}

func newReport(o options) *report { return &report{o: o, env: map[string]any{}} }

func (r *report) sectionDone(name string, err error) {
	if err != nil {
		r.failures = append(r.failures, name+": "+err.Error())
		logf("%s FAILED: %v", name, err)
	}
}

// environment records the machine, PostgreSQL, the date and the commit.
func (r *report) environment(ctx context.Context, root, adminURL string) {
	machine := map[string]any{"nproc": runtime.NumCPU(), "gomaxprocs": runtime.GOMAXPROCS(0),
		"goos": runtime.GOOS, "goarch": runtime.GOARCH, "go_version": runtime.Version()}
	if v := os.Getenv("GOMAXPROCS"); v != "" {
		machine["gomaxprocs_env"] = v
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				machine["cpu"] = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		machine["loadavg_at_start"] = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	r.env["machine"] = machine
	r.env["date"] = time.Now().UTC().Format(time.RFC3339)
	if out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output(); err == nil {
		r.env["git_commit"] = strings.TrimSpace(string(out))
	}
	// Read-only: GIT_OPTIONAL_LOCKS=0 keeps `git status` from refreshing the index.
	st := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no")
	st.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	if out, err := st.Output(); err == nil {
		r.env["git_dirty"] = len(strings.TrimSpace(string(out))) > 0
	}
	pg := map[string]any{}
	if conn, err := pgx.Connect(ctx, adminURL); err == nil {
		for _, setting := range []string{"server_version", "shared_buffers", "synchronous_commit", "max_connections", "autovacuum"} {
			var v string
			if conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&v) == nil {
				pg[setting] = v
			}
		}
		var v string
		if conn.QueryRow(ctx, "SELECT version()").Scan(&v) == nil {
			pg["version"] = v
		}
		conn.Close(ctx)
	}
	r.env["postgresql"] = pg
	r.env["settings"] = map[string]any{"duration_seconds": r.o.duration.Seconds(), "warmup_seconds": r.o.warmup.Seconds(),
		"clients": r.o.clients, "accounts": r.o.accounts, "hot_accounts": r.o.hotAccounts, "webhook_payments_per_second_offered": r.o.webhookRate, "webhook_grace_seconds": r.o.webhookGrace.Seconds(),
		"catch_up_max_seconds": r.o.catchUpMax.Seconds(), "replay_timeout_seconds": r.o.replayTimeout.Seconds(),
		"get_clients": r.o.getClients, "rebuild_min_events": r.o.rebuildEvents, "sections": r.o.selected()}
	if r.o.prof != nil {
		r.env["settings"].(map[string]any)["profile_dir"] = r.o.prof.dir
	}
}

type row struct {
	Figure string `json:"figure"`
	Value  string `json:"value"`
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

func met(ok bool) *bool { return &ok }

func (r *report) rawAt(clients int) float64 {
	if r.raw == nil {
		return 0
	}
	for _, l := range r.raw.Levels {
		if l.Clients == clients {
			return l.PerSecond
		}
	}
	return 0
}

// ratios: payments/s ÷ raw transfers/s at the same concurrency.
func (r *report) ratios() map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for kind, p := range map[string]*paymentsResult{"spread": r.spread, "hot": r.hot} {
		if p == nil {
			continue
		}
		for _, l := range p.Levels {
			if raw := r.rawAt(l.Clients); raw > 0 {
				if out[kind] == nil {
					out[kind] = map[string]float64{}
				}
				out[kind][strconv.Itoa(l.Clients)] = l.PerSecond / raw
			}
		}
	}
	return out
}

func (r *report) rows() []row {
	var rows []row
	if r.setup != nil {
		rows = append(rows, row{Figure: "setup: accounts opened, KYB-approved, funded",
			Value: fmt.Sprintf("%v in %.1f s", r.setup["accounts"], r.setup["seconds"])})
	}
	ratios := r.ratios()
	for _, k := range []struct {
		kind, label string
		p           *paymentsResult
	}{{"spread", "payments", r.spread}, {"hot", "hot payments", r.hot}} {
		if k.p == nil {
			continue
		}
		conflicts, other := 0, map[string]int{}
		for _, l := range k.p.Levels {
			x := row{Figure: fmt.Sprintf("%s/s, %s (%d accounts)", k.label, nClients(l.Clients), k.p.SourceAccounts),
				Value: fmt.Sprintf("%.0f", l.PerSecond)}
			if l.Clients == 64 && k.kind == "spread" {
				x.Target, x.Met = "≥ 3,000", met(l.PerSecond >= 3000)
				rows = append(rows, x)
				x = row{Figure: "  payments/s, 64 clients: the floor (issue #13)", Value: fmt.Sprintf("%.0f", l.PerSecond), Target: "≥ 780", Met: met(l.PerSecond >= 780)}
			}
			if l.Clients == 64 && k.kind == "hot" {
				x.Target, x.Met = "≥ 1,000", met(l.PerSecond >= 1000)
			}
			rows = append(rows, x)
			y := row{Figure: fmt.Sprintf("%s p50 / p99, %s", k.label, nClients(l.Clients)), Value: fmt.Sprintf("%.1f / %.1f ms", l.P50ms, l.P99ms)}
			if l.Clients == 64 && k.kind == "spread" {
				y.Target, y.Met = "p99 ≤ 50 ms", met(l.P99ms <= 50 && l.OK > 0)
			}
			rows = append(rows, y)
			rows = append(rows, dbRows(k.label, k.kind, l)...)
			if v, ok := ratios[k.kind][strconv.Itoa(l.Clients)]; ok {
				rows = append(rows, row{Figure: fmt.Sprintf("%s ÷ raw transfers, %s", k.label, nClients(l.Clients)), Value: fmt.Sprintf("%.3f", v)})
			}
			conflicts += l.Conflicts
			for c, n := range l.FailedByClass {
				if !httpConflict(c) {
					other[c] += n
				}
			}
		}
		if k.kind == "hot" {
			rows = append(rows, row{Figure: "hot payments: deadlock/conflict errors (5xx, 409)", Value: strconv.Itoa(conflicts), Target: "0", Met: met(conflicts == 0)})
			rows = append(rows, row{Figure: "hot payments: other non-2xx", Value: classesString(other)})
		} else {
			all := map[string]int{}
			for _, l := range k.p.Levels {
				for c, n := range l.FailedByClass {
					all[c] += n
				}
			}
			rows = append(rows, row{Figure: "payments: non-2xx answers (all levels)", Value: classesString(all)})
		}
	}
	if p := r.replicas; p != nil {
		rows = append(rows, replicasRows(p)...)
	}
	if c := r.completion; c != nil && c.Sampled > 0 {
		rows = append(rows, row{Figure: "sampled payments completed after the loads", Value: fmt.Sprintf("%d / %d in %.0f s", c.Completed, c.Sampled, c.SecondsToAwait),
			Target: "all", Met: met(c.Completed == c.Sampled)})
	}
	if l := r.lag; l != nil {
		rows = append(rows, r.lagRows(l)...)
	}
	if p := r.rtp; p != nil {
		rows = append(rows,
			row{Figure: fmt.Sprintf("rtp created → completed p99, %s (%d sampled)", nClients(p.Clients), p.Sampled),
				Value: fmt.Sprintf("%.0f ms (p50 %.0f, max %.0f)", p.P99ms, p.P50ms, p.MaxMs), Target: "≤ 1 s", Met: met(p.P99ms <= 1000 && p.Completed > 0 && p.Unfinished == 0)},
			row{Figure: fmt.Sprintf("  rtp payments not completed %.0f s after the run", p.WaitedS), Value: fmt.Sprintf("%d of %d", p.Unfinished, p.Sampled), Target: "0", Met: met(p.Unfinished == 0)})
	}
	if w := r.webhook; w != nil {
		ms := func(v float64) string {
			if v < 0 {
				return fmt.Sprintf("> %.0f s (missing)", w.GraceSeconds)
			}
			return fmt.Sprintf("%.1f ms", v)
		}
		rows = append(rows,
			row{Figure: "webhook first attempt p50 (right after the loads)", Value: ms(w.P50ms)},
			row{Figure: "webhook first attempt p99", Value: fmt.Sprintf("%s (max %s)", ms(w.P99ms), ms(w.MaxMs)), Target: "≤ 50 ms",
				Met: met(w.P99ms >= 0 && w.P99ms <= 50 && w.Deliveries > 0 && w.Missing == 0)},
			row{Figure: fmt.Sprintf("  webhook payment.created missing after %.0f s", w.GraceSeconds), Value: fmt.Sprintf("%d of %d", w.Missing, w.Expected), Target: "0", Met: met(w.Missing == 0 && w.Expected > 0)},
			row{Figure: "  while payments/s (offered; first attempts/s; events/s in the log)",
				Value: fmt.Sprintf("%.0f (%d; %.0f; %.0f)", w.PaymentsPerSecond, w.PaymentsOfferedPerSecond, w.DeliveriesPerSecond, w.EventsPerSecondInLog)},
		)
	}
	if y := r.ryw; y != nil {
		rows = append(rows, row{Figure: fmt.Sprintf("list right after a 2xx write (%d writes, %d clients; list p99 %.1f ms)", y.Writes, y.Clients, y.ListP99ms),
			Value: fmt.Sprintf("%d missed, %d failed requests", y.Misses, y.Failed), Target: "0 missed", Met: met(y.Misses == 0 && y.Failed == 0)})
	}
	if g := r.get; g != nil {
		rows = append(rows,
			row{Figure: fmt.Sprintf("GET /v1/virtual-accounts/:id, %s", nClients(g.Clients)), Value: fmt.Sprintf("%.0f req/s, p50 %.2f ms", g.PerSecond, g.P50ms)},
			row{Figure: "GET /v1/virtual-accounts/:id p99", Value: fmt.Sprintf("%.2f ms", g.P99ms), Target: "≤ 5 ms", Met: met(g.P99ms <= 5 && g.OK > 0)},
		)
		if g.Failed > 0 {
			rows = append(rows, row{Figure: "GET non-2xx", Value: classesString(g.FailedByClass)})
		}
	}
	if a := r.audit; a != nil {
		v := "clean"
		if !a.Clean {
			v = "NOT clean: " + a.Output
		}
		rows = append(rows, row{Figure: fmt.Sprintf("treasury audit verify after the loads (%.1f s)", a.Seconds), Value: v, Target: "clean", Met: met(a.Clean)})
	}
	if b := r.rebuild; b != nil && b.Seconds > 0 {
		rows = append(rows, row{Figure: fmt.Sprintf("projections rebuild (%d events, %.1f s)", b.Events, b.Seconds),
			Value: fmt.Sprintf("%.0f events/s", b.EventsPerSecond), Target: "≥ 50,000", Met: met(b.EventsPerSecond >= 50000)})
	}
	if b := r.rebuild; b != nil && b.Online != nil && b.Online.Seconds > 0 {
		o := b.Online
		rows = append(rows,
			row{Figure: fmt.Sprintf("rebuild beside the service (%.1f s), %d payments/s offered meanwhile", o.Seconds, o.Rate),
				Value: fmt.Sprintf("%d ok, p99 %.0f ms, max %.0f ms, non-2xx %s", o.Payments, o.P99ms, o.MaxMs, classesString(o.Failed))},
			row{Figure: "  the CLI's account of it", Value: pauseOf(o.CLIOutput)})
	}
	if p := r.replay; p != nil {
		for _, run := range p.Runs {
			f := fmt.Sprintf("replay %s alone (%d %s, %.1f s)", run.Subscription, run.Events, run.Source, run.Seconds)
			v := fmt.Sprintf("%.0f events/s", run.EventsPerSecond)
			if run.Error != "" {
				f, v = fmt.Sprintf("replay %s alone", run.Subscription), run.Error
			}
			rows = append(rows, row{Figure: f, Value: v, Target: "≥ 50,000", Met: met(run.Error == "" && run.EventsPerSecond >= 50000)})
		}
		for _, run := range p.Parts {
			if run.Error != "" {
				rows = append(rows, row{Figure: fmt.Sprintf("replay %s, each of %d parts alone", run.Subscription, p.Partitions), Value: run.Error,
					Target: "≥ 50,000", Met: met(false)})
				continue
			}
			f := fmt.Sprintf("  replay %s part %s alone (%d %s passed, %d of its part handled, %.1f s)",
				run.Subscription, run.Partition, run.Events, run.Source, run.Handled, run.Seconds)
			if run.Handled == 0 && run.Seconds == 0 {
				rows = append(rows, row{Figure: f, Value: "its part holds none: nothing to time"})
				continue
			}
			rows = append(rows, row{Figure: f, Value: fmt.Sprintf("%.0f events/s (%.0f handled/s)", run.EventsPerSecond, run.HandledPerSecond),
				Target: "≥ 50,000", Met: met(run.EventsPerSecond >= 50000)})
		}
	}
	if r.raw != nil {
		for _, l := range r.raw.Levels {
			v := fmt.Sprintf("%.0f (p50 %.2f / p99 %.2f ms)", l.PerSecond, l.P50ms, l.P99ms)
			if l.Failed > 0 {
				v += "; errors " + classesString(l.FailedByClass)
			}
			rows = append(rows, row{Figure: fmt.Sprintf("raw pgx transfers/s, %s", nClients(l.Clients)), Value: v})
		}
	}
	return rows
}

func (r *report) print(w io.Writer) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\ttarget\tmet")
	for _, x := range r.rows() {
		m := ""
		if x.Met != nil {
			m = "yes"
			if !*x.Met {
				m = "NO"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", x.Figure, x.Value, x.Target, m)
	}
	tw.Flush()
	machine, _ := r.env["machine"].(map[string]any)
	pg, _ := r.env["postgresql"].(map[string]any)
	fmt.Fprintf(w, "\n%v cores, GOMAXPROCS %v, PostgreSQL %v, commit %.12v (dirty: %v), %s; took %s\n",
		machine["nproc"], machine["gomaxprocs"], pg["server_version"], r.env["git_commit"], r.env["git_dirty"], r.env["date"], r.elapsed.Round(time.Second))
	if s := r.serverLogSummary; s != nil && (s.Levels["ERROR"] > 0 || s.Levels["WARN"] > 0) {
		fmt.Fprintf(w, "server log %s: %v\n", r.serverLog, s.Levels)
		for _, m := range s.Top {
			fmt.Fprintf(w, "  %6d × %s %s\n", m.Count, m.Level, m.Msg)
		}
	}
	for _, f := range r.failures {
		fmt.Fprintf(w, "FAILED: %s\n", f)
	}
}

func (r *report) write(path string) error {
	out := map[string]any{}
	for k, v := range r.env {
		out[k] = v
	}
	out["runtime_seconds"] = r.elapsed.Seconds()
	out["table"] = r.rows()
	out["ratios_payments_to_raw"] = r.ratios()
	if r.setup != nil {
		out["setup"] = r.setup
	}
	if r.spread != nil {
		out["payments_spread"] = r.spread
	}
	if r.hot != nil {
		out["payments_hot"] = r.hot
	}
	if r.completion != nil {
		out["payments_completion_check"] = r.completion
	}
	if r.webhook != nil {
		out["webhook_first_attempt"] = r.webhook
	}
	if r.get != nil {
		out["get_virtual_account"] = r.get
	}
	if r.rebuild != nil {
		out["projections_rebuild"] = r.rebuild
	}
	if r.raw != nil {
		out["raw_transfer"] = r.raw
	}
	if r.lag != nil {
		out["subscriber_lag"] = r.lag
	}
	if r.rtp != nil {
		out["rtp_created_to_completed"] = r.rtp
	}
	if r.ryw != nil {
		out["read_your_writes"] = r.ryw
	}
	if r.audit != nil {
		out["audit_verify"] = r.audit
	}
	if r.replay != nil {
		out["subscriber_replay"] = r.replay
	}
	if r.replicas != nil {
		out["replicas"] = r.replicas
	}
	if r.serverLogSummary != nil {
		out["server_log"] = map[string]any{"path": r.serverLog, "summary": r.serverLogSummary}
	}
	if len(r.failures) > 0 {
		out["failures"] = r.failures
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if m, ok := r.env["machine"].(map[string]any); ok {
			m["loadavg_at_end"] = strings.Join(strings.Fields(string(b))[:3], " ")
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

type logMsg struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Count int    `json:"count"`
}

type logSummary struct {
	Levels map[string]int `json:"lines_by_level"`
	Top    []logMsg       `json:"top_messages"`
}

// summarizeLog counts the server's (JSON) log lines by level and its most
// frequent warnings and errors.
func summarizeLog(path string) *logSummary {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	s := &logSummary{Levels: map[string]int{}}
	counts := map[[2]string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Error  string `json:"error"`
			Err    string `json:"err"`
			Method string `json:"method"`
			Route  string `json:"route"`
			Status int    `json:"status"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Level == "" {
			s.Levels["other"]++
			line := sc.Text()
			if len(line) > 160 {
				line = line[:160]
			}
			counts[[2]string{"other", line}]++
			continue
		}
		s.Levels[l.Level]++
		if l.Level == "ERROR" || l.Level == "WARN" {
			msg := l.Msg
			if l.Route != "" {
				msg += fmt.Sprintf(" %s %s → %d", l.Method, l.Route, l.Status)
			}
			if e := l.Error + l.Err; e != "" {
				if len(e) > 160 {
					e = e[:160]
				}
				msg += ": " + e
			}
			counts[[2]string{l.Level, msg}]++
		}
	}
	for k, n := range counts {
		s.Top = append(s.Top, logMsg{Level: k[0], Msg: k[1], Count: n})
	}
	sort.Slice(s.Top, func(i, j int) bool { return s.Top[i].Count > s.Top[j].Count })
	s.Top = s.Top[:min(len(s.Top), 8)]
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }

// nClients is "1 client" or "n clients".
func nClients(n int) string {
	if n == 1 {
		return "1 client"
	}
	return strconv.Itoa(n) + " clients"
}

var pausedRe = regexp.MustCompile(`commands paused [^;]*`)

// pauseOf picks the pause out of the rebuild CLI's line.
func pauseOf(cli string) string {
	if m := pausedRe.FindString(cli); m != "" {
		return m
	}
	return cli
}

// lagRows: each subscriber's lag during the largest payments run and its
// catch-up after it, then the slowest against the targets.
func (r *report) lagRows(l *lagResult) []row {
	var rows []row
	for _, n := range allSubscribers {
		s := l.Subscribers[n]
		head := fmt.Sprintf("head after %.1f s", s.HeadAfterLoadS)
		if s.HeadAfterLoadS < 0 {
			head = fmt.Sprintf("not at the head within %.0f s", l.CatchUpBoundS)
		}
		rows = append(rows, row{Figure: fmt.Sprintf("  lag of %s, %s (p50 / p99 / max)", n, nClients(l.Clients)),
			Value: fmt.Sprintf("%.0f / %.0f / %.0f ms; %.0f / %.0f / %.0f events; %s", s.MsP50, s.MsP99, s.MsMax, s.EventsP50, s.EventsP99, s.EventsMax, head)})
	}
	if s := l.Subscribers[l.Slowest]; s != nil && s.Samples > 0 {
		rows = append(rows, row{Figure: fmt.Sprintf("lag p99 of the slowest subscriber (%s), %s", l.Slowest, nClients(l.Clients)),
			Value: fmt.Sprintf("%.0f ms", s.MsP99), Target: "≤ 250 ms", Met: met(s.MsP99 <= 250)})
	} else {
		rows = append(rows, row{Figure: "lag p99 of the slowest subscriber", Value: "no samples", Target: "≤ 250 ms", Met: met(false)})
	}
	if s := l.Subscribers[l.SlowestToHead]; s != nil {
		v := fmt.Sprintf("%.1f s", s.HeadAfterLoadS)
		if s.HeadAfterLoadS < 0 {
			v = fmt.Sprintf("not within %.0f s", l.CatchUpBoundS)
		}
		rows = append(rows, row{Figure: fmt.Sprintf("slowest subscriber (%s) at the head after the load", l.SlowestToHead),
			Value: v, Target: "≤ 1 s", Met: met(s.HeadAfterLoadS >= 0 && s.HeadAfterLoadS <= 1)})
	}
	cpu := "CPU unknown (PostgreSQL not local)"
	if l.SamplerCPUSeconds >= 0 {
		cpu = fmt.Sprintf("backend CPU %.1f%% of one core", 100*l.SamplerCPUShare)
	}
	rows = append(rows, row{Figure: "  cost of the lag sampling query (wall p50 / p99; its backend's CPU)",
		Value: fmt.Sprintf("%.1f / %.1f ms; %s", l.SampleQueryP50ms, l.SampleQueryP99ms, cpu)})
	return rows
}

// replicasRows: payments/s and p50/p99 with one replica and with two,
// the ratio, and the slowest reader's lag in each.
func replicasRows(p *replicasResult) []row {
	var rows []row
	for _, run := range p.Runs {
		l := run.Load
		rows = append(rows, row{Figure: fmt.Sprintf("payments/s, %d replica(s), %s, %d reader parts", run.Replicas, nClients(l.Clients), p.Partitions),
			Value: fmt.Sprintf("%.0f (p50 %.1f / p99 %.1f ms)", l.PerSecond, l.P50ms, l.P99ms)})
		if l.Failed > 0 {
			rows = append(rows, row{Figure: fmt.Sprintf("  non-2xx, %d replica(s)", run.Replicas), Value: classesString(l.FailedByClass)})
		}
		var held []string
		for _, who := range namesOf(run.Leases) {
			held = append(held, fmt.Sprintf("%s %d", who, len(run.Leases[who])))
		}
		rows = append(rows, row{Figure: fmt.Sprintf("  readers held per replica, %d replica(s)", run.Replicas), Value: strings.Join(held, ", ")})
		if lag := run.Lag; lag != nil {
			if s := lag.Subscribers[lag.Slowest]; s != nil && s.Samples > 0 {
				rows = append(rows, row{Figure: fmt.Sprintf("  lag p99 of the slowest subscriber (%s), %d replica(s)", lag.Slowest, run.Replicas),
					Value: fmt.Sprintf("%.0f ms", s.MsP99)})
			}
			if s := lag.Subscribers[lag.SlowestToHead]; s != nil {
				v := fmt.Sprintf("%.1f s", s.HeadAfterLoadS)
				if s.HeadAfterLoadS < 0 {
					v = fmt.Sprintf("not within %.0f s", lag.CatchUpBoundS)
				}
				rows = append(rows, row{Figure: fmt.Sprintf("  slowest subscriber (%s) at the head after the load, %d replica(s)", lag.SlowestToHead, run.Replicas), Value: v})
			}
		}
	}
	for _, who := range namesOf(p.ServerLogs) {
		l := p.ServerLogs[who]
		if l == nil || l.Levels["WARN"]+l.Levels["ERROR"] == 0 {
			continue
		}
		v := fmt.Sprintf("%d WARN, %d ERROR", l.Levels["WARN"], l.Levels["ERROR"])
		if len(l.Top) > 0 {
			v += fmt.Sprintf("; most: %d × %.120s", l.Top[0].Count, l.Top[0].Msg)
		}
		rows = append(rows, row{Figure: fmt.Sprintf("  replica %s's log", who), Value: v})
	}
	if len(p.Runs) == 2 {
		rows = append(rows, row{Figure: fmt.Sprintf("payments/s, 2 replicas ÷ 1 (%d cores shared by both and PostgreSQL: the overhead, not a gain)", p.Cores),
			Value: fmt.Sprintf("%.2f", p.Ratio)})
	}
	return rows
}

// dbRows: the database's work per payment of a payments run, the round
// trips against the target of two (one for the lock and reads, one for
// the writes and COMMIT) and at most two commits at 64 clients.
func dbRows(label, kind string, l loadStats) []row {
	d := l.DB
	if d == nil {
		return nil
	}
	figure := fmt.Sprintf("  %s: API round trips / commits per payment, %s", label, nClients(l.Clients))
	if d.Error != "" {
		return []row{{Figure: figure, Value: "not measured: " + d.Error}}
	}
	x := row{Figure: figure, Value: fmt.Sprintf("%.2f / %.2f", d.APIRoundTripsPerPayment, d.CommitsPerPayment)}
	if l.Clients == 64 && kind == "spread" {
		x.Target = "2 / ≤ 2"
		x.Met = met(d.Payments > 0 && d.APIRoundTripsPerPayment <= 2 && d.CommitsPerPayment <= 2)
	}
	return []row{x, {Figure: fmt.Sprintf("  %s: all round trips per payment (API + readers), %s", label, nClients(l.Clients)),
		Value: fmt.Sprintf("%.2f (%s)", d.AllRoundTripsPerPayment, d.byOrigin())}}
}
