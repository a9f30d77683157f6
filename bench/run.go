package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pglocal"
)

// run runs every selected section. A section that fails is reported and
// the others still run; the databases it created are dropped whatever
// happens.
func run(ctx context.Context, o options) error {
	began := time.Now()
	root := pglocal.RepoRoot()
	out := o.out
	if out == "" {
		out = filepath.Join(root, "bench", "results.json")
	}
	found, err := pglocal.Ensure(ctx, os.Getenv("TEST_DATABASE_URL"), filepath.Join(root, ".data"))
	if err != nil {
		return err
	}
	logf("PostgreSQL: %s; sections: %s; %s per measurement after a %s warm-up", found.Source, o.selected(), o.duration, o.warmup)
	if o.prof != nil {
		o.prof.adminURL = found.AdminURL
		logf("profiling each measured window into %s", o.prof.dir)
	}
	rep := newReport(o)
	rep.environment(ctx, root, found.AdminURL)
	stamp := time.Now().UnixNano()

	var bin string
	if o.needsBinary() {
		if bin, err = buildBinary(ctx, root, stamp); err != nil {
			return err
		}
		defer os.Remove(bin)
	}
	if o.want("raw") {
		rep.raw, err = runRaw(ctx, found.AdminURL, fmt.Sprintf("treasury_bench_raw_%d", stamp), o)
		rep.sectionDone("raw", err)
	}
	if o.want("replicas") && ctx.Err() == nil {
		rep.replicas, err = replicasSection(ctx, o, found.AdminURL, bin, stamp, runtime.NumCPU())
		rep.sectionDone("replicas", err)
	}
	if o.needsServer() && ctx.Err() == nil {
		rep.sectionDone("service", runService(ctx, o, found.AdminURL, bin, stamp, rep))
	}
	rep.elapsed = time.Since(began)
	rep.print(os.Stdout)
	if err := rep.write(out); err != nil {
		return err
	}
	logf("wrote %s; the whole run took %s", out, rep.elapsed.Round(time.Second))
	if ctx.Err() != nil {
		return errors.New("interrupted")
	}
	if len(rep.failures) > 0 {
		return fmt.Errorf("%d section(s) failed: %s", len(rep.failures), strings.Join(rep.failures, "; "))
	}
	return nil
}

func (o options) selected() string {
	var s []string
	for _, n := range allSections {
		if o.want(n) {
			s = append(s, n)
		}
	}
	return strings.Join(s, ",")
}

// runService starts the service on a fresh database, sets up the
// platform and its accounts, and runs the service's sections.
func runService(ctx context.Context, o options, adminURL, bin string, stamp int64, rep *report) error {
	dbName := fmt.Sprintf("treasury_bench_%d", stamp)
	dbURL, drop, err := createDatabase(ctx, adminURL, dbName)
	if err != nil {
		return err
	}
	if o.keepDatabase {
		defer logf("kept database %s (-keep-database): drop it by hand", dbName)
	} else {
		defer drop()
	}
	svc, err := startService(ctx, bin, dbURL, o.prof != nil)
	if err != nil {
		return err
	}
	svc.dbName = dbName
	defer svc.close()
	rep.serverLog = svc.logPath
	defer func() { rep.serverLogSummary = summarizeLog(svc.logPath) }()

	setupStart := time.Now()
	if err := svc.setUp(o.accounts, o.fund); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	rep.setup = map[string]any{"accounts": len(svc.accounts), "funded_cents_each": o.fund, "seconds": time.Since(setupStart).Seconds()}
	analyzeCtx, stopAnalyze := context.WithCancel(svc.ctx)
	defer stopAnalyze()
	go analyzeEvery(analyzeCtx, svc.db, time.Minute)
	logf("setup: %d accounts opened, KYB-approved and funded in %s", len(svc.accounts), time.Since(setupStart).Round(100*time.Millisecond))

	b := &bench{o: o, svc: svc, runID: fmt.Sprintf("%x", stamp), adminURL: adminURL}
	if o.want("payments") {
		rep.spread, err = b.payments(svc.accounts, "spread")
		rep.lag, rep.rtp = b.lag, b.rtp
		rep.sectionDone("payments", err)
	}
	if o.want("hot") && svc.alive() {
		rep.hot, err = b.payments(svc.accounts[:o.hotAccounts], "hot")
		rep.sectionDone("hot", err)
	}
	// Right after the loads: no wait for the readers to catch up.
	if o.want("webhook") && svc.alive() {
		rep.webhook, err = b.webhook()
		rep.sectionDone("webhook", err)
	}
	if o.want("ryw") && svc.alive() {
		rep.ryw, err = b.readYourWrites()
		rep.sectionDone("read-your-writes", err)
	}
	if (o.want("payments") || o.want("hot")) && svc.alive() {
		rep.completion, err = b.checkCompleted()
		rep.sectionDone("completion check", err)
	}
	if o.want("get") && svc.alive() {
		rep.get, err = b.getAccount()
		rep.sectionDone("get", err)
	}
	if (o.want("payments") || o.want("hot")) && svc.alive() {
		rep.audit, err = b.audit(bin, dbURL)
		rep.sectionDone("audit", err)
	}
	if o.want("rebuild") || o.want("replay") {
		rep.rebuild = &rebuildResult{}
	}
	// The rebuild beside the service runs over the log the loads left
	// (≥ 200,000 events in a full run): over the topped-up log, chasing
	// the payments sent meanwhile, it would take most of the bench's time.
	if o.want("rebuild") && svc.alive() {
		rep.rebuild.Online, err = b.rebuildOnline(bin, dbURL)
		rep.sectionDone("rebuild beside the service", err)
	}
	if (o.want("rebuild") || o.want("replay")) && svc.alive() {
		err = b.fillLog(rep.rebuild)
		rep.sectionDone("top-up", err)
	}
	if o.want("rebuild") && svc.alive() {
		err = b.rebuild(bin, dbURL, rep.rebuild)
		rep.sectionDone("rebuild", err)
	}
	if o.want("replay") && ctx.Err() == nil {
		rep.replay, err = b.replays(bin)
		rep.sectionDone("replay", err)
	}
	return svc.exitErr()
}

// buildBinary builds cmd/treasury into a temporary file.
func buildBinary(ctx context.Context, root string, stamp int64) (string, error) {
	bin := filepath.Join(os.TempDir(), fmt.Sprintf("treasury-bench-%d", stamp))
	logf("building %s", bin)
	t := time.Now()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/treasury")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/treasury: %w", err)
	}
	logf("built in %s", time.Since(t).Round(100*time.Millisecond))
	return bin, nil
}

// createDatabase creates a database and returns its URL and a function
// that drops it (with a fresh connection, whatever state ctx is in).
func createDatabase(ctx context.Context, adminURL, name string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return "", nil, fmt.Errorf("create database %s: %w", name, err)
	}
	logf("created database %s", name)
	url, err := pglocal.WithDatabase(adminURL, name)
	drop := func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(dctx, adminURL)
		if err == nil {
			defer c.Close(dctx)
			_, err = c.Exec(dctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
		if err != nil {
			logf("could not drop database %s: %v (drop it by hand)", name, err)
			return
		}
		logf("dropped database %s", name)
	}
	if err != nil {
		drop()
		return "", nil, err
	}
	return url, drop, nil
}
