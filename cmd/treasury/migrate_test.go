package main

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/migrations"
)

// migrationCount is the number of migration files embedded in the binary.
func migrationCount(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(migrations.FS(), "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	return len(files)
}

func openTestPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// schemaOf describes the public schema: tables and columns, indexes,
// triggers and functions, one line each, sorted.
func schemaOf(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable
		  FROM information_schema.columns WHERE table_schema = 'public'
		UNION ALL
		SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL
		SELECT 'trigger ' || event_object_table || '.' || trigger_name || ' ' || event_manipulation
		  FROM information_schema.triggers WHERE trigger_schema = 'public'
		UNION ALL
		SELECT 'function ' || p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname = 'public'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMigratedOnce checks that every migration is recorded exactly once
// and that the schema equals the one the test template was migrated to.
func checkMigratedOnce(t *testing.T, url string) {
	t.Helper()
	ctx := context.Background()
	pool := openTestPool(t, url)
	var versions, distinct int
	if err := pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT version_id) FROM goose_db_version WHERE version_id > 0 AND is_applied`).
		Scan(&versions, &distinct); err != nil {
		t.Fatalf("goose_db_version: %v", err)
	}
	if want := migrationCount(t); versions != want || distinct != want {
		t.Errorf("goose_db_version: %d applied rows for %d distinct versions, want %d of each", versions, distinct, want)
	}
	if pending, err := migrations.Pending(ctx, pool); err != nil || pending {
		t.Errorf("migrations pending after both migrators succeeded: %v %v", pending, err)
	}
	got := strings.Join(schemaOf(t, pool), "\n")
	want := strings.Join(schemaOf(t, openTestPool(t, pgtest.URL(t))), "\n")
	if got != want {
		t.Errorf("schema after concurrent migrations differs from a single migration run:\n--- got\n%s\n--- want\n%s", got, want)
	}
}

var appliedRe = regexp.MustCompile(`applied (\d+) migration\(s\)`)

// TestMigrateConcurrently: two `treasury migrate` processes started at once
// on one empty database both succeed and the schema is migrated once.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	url := emptyDatabase(t)
	var procs []*proc
	for i := 0; i < 2; i++ {
		procs = append(procs, startTreasury(t, "", []string{"DATABASE_URL=" + url}, "migrate"))
	}
	total := 0
	for i, p := range procs {
		if err := p.wait(60 * time.Second); err != nil {
			t.Errorf("migrate #%d failed: %v\nstdout: %s\nstderr: %s", i, err, p.stdout.String(), p.stderr.String())
			continue
		}
		m := appliedRe.FindStringSubmatch(p.stdout.String())
		if m == nil {
			t.Errorf("migrate #%d: unexpected output %q", i, p.stdout.String())
			continue
		}
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	if want := migrationCount(t); total != want {
		t.Errorf("the two migrators applied %d migrations in all, want %d (each exactly once)", total, want)
	}
	checkMigratedOnce(t, url)
}

// TestMigrateUpConcurrently is the same race, tighter: four migrations.Up
// calls on separate pools released at the same instant.
func TestMigrateUpConcurrently(t *testing.T) {
	t.Parallel()
	url := emptyDatabase(t)
	const replicas = 4
	pools := make([]*pgxpool.Pool, replicas)
	for i := range pools {
		pools[i] = openTestPool(t, url)
		if err := pools[i].Ping(context.Background()); err != nil { // connect before the race
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start := make(chan struct{})
	var wg sync.WaitGroup
	applied := make([]int, replicas)
	errs := make([]error, replicas)
	for i := range pools {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			applied[i], errs[i] = migrations.Up(ctx, pools[i])
		}()
	}
	close(start)
	wg.Wait()
	total := 0
	for i := range pools {
		if errs[i] != nil {
			t.Errorf("replica %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	if want := migrationCount(t); total != want {
		t.Errorf("replicas applied %v migrations, want %d in all", applied, want)
	}
	checkMigratedOnce(t, url)
}

// TestServeWithoutMigrate: with TREASURY_MIGRATE=false on a database that
// was never migrated, serve does not migrate it; /v1 answers 503
// unavailable and /readyz says the migrations are pending, without
// changing the database; once `treasury migrate` runs, /v1 works.
func TestServeWithoutMigrate(t *testing.T) {
	t.Parallel()
	url := emptyDatabase(t)
	db := openTestPool(t, url)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + addr
	p := startTreasury(t, "", serveEnv(url, addr, "TREASURY_MIGRATE=false"), "serve")
	waitStatus(t, p, 30*time.Second, base+"/healthz", "", http.StatusOK)

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{http.MethodPost, "/v1/platforms", map[string]any{"name": "Unmigrated", "contact_email": "x@example.com"}},
		{http.MethodGet, "/v1/operator/platforms", nil},
	} {
		r := mustCall(t, c.method, base+c.path, testOperatorKey, c.body)
		t.Logf("TREASURY_MIGRATE=false, unmigrated: %s %s → %d %s (Retry-After %q)", c.method, c.path, r.Status, r.code(), r.Header.Get("Retry-After"))
		if r.Status < 300 {
			t.Errorf("%s %s on an unmigrated database claims success: %s", c.method, c.path, r)
		}
		if r.Status != http.StatusServiceUnavailable || r.code() != "unavailable" || r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s on an unmigrated database: want 503 unavailable with Retry-After, got %s", c.method, c.path, r)
		}
	}
	if tables := publicTables(t, db); len(tables) != 0 {
		t.Errorf("serve created tables although TREASURY_MIGRATE=false: %v", tables)
	}

	r := mustCall(t, http.MethodGet, base+"/readyz", "", nil)
	if r.Status != http.StatusServiceUnavailable || !strings.Contains(string(r.Body), "migrations pending") {
		t.Errorf("/readyz on an unmigrated database: want 503 migrations pending, got %s", r)
	}
	t.Run("readyz_does_not_write_to_the_database", func(t *testing.T) {
		if tables := publicTables(t, db); len(tables) != 0 {
			t.Errorf("GET /readyz changed the schema of an unmigrated database (TREASURY_MIGRATE=false): it created %v", tables)
		}
	})

	m := startTreasury(t, "", serveEnv(url, addr), "migrate")
	<-m.done
	if m.waitErr != nil {
		t.Fatalf("treasury migrate: %v", m.waitErr)
	}
	waitStatus(t, p, 30*time.Second, base+"/v1/operator/platforms", testOperatorKey, http.StatusOK)
}

// publicTables lists the tables in the public schema.
func publicTables(t *testing.T, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestPostingAProjectedRowStaysOnItsPage: the projections' rows updated
// soon after they are inserted (a ledger entry posted, say) leave room on
// their pages (migration 00015), so the update is HOT — no new entry in
// any of the table's indexes — even once the pages are filled by inserts.
// At the default fillfactor the same updates found full pages.
func TestPostingAProjectedRowStaysOnItsPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openTestPool(t, emptyDatabase(t))
	if _, err := migrations.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	const rows = 2000 // many pages' worth
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO ledger_entries (seq, id, journal_entry_id, platform_id, environment,
                ledger_account_id, virtual_account_id, direction, amount, type, status, description, source_type, source_id,
                effective_at, created_at)
            SELECT g, 'le_' || g, 'je_' || g, 'plt_1', 'sandbox', 'la_1', 'va_' || (g % 50), 'debit', 100, 'payment',
                'pending', 'a payment to a vendor, held', 'payment', 'pay_' || g, now(), now() FROM generate_series(1, $1) g`, rows); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE ledger_entries SET status = 'posted', posted_at = now()`); err != nil {
			return err
		}
		var hot int
		if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_hot_updated('ledger_entries'::regclass)`).Scan(&hot); err != nil {
			return err
		}
		if hot < rows*9/10 {
			t.Errorf("%d of %d postings were HOT updates, want nearly all", hot, rows)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
