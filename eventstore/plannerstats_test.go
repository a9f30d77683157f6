package eventstore_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// Given a statement prepared on a connection while its table was tiny
// (its cached plan a sequential scan), when the table grows a
// thousandfold, then the plan stays a sequential scan until the keeper
// steps; the keeper analyzes the table (not before it holds Growth times
// its rows plus MinRows), and the statement's next plan uses the index.
func TestStatisticsKeeperReplansGrownTables(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	w := writer(t, pool)
	exec(t, w, `CREATE TABLE grows (id text PRIMARY KEY, v int NOT NULL)`+noAutovacuum)
	exec(t, w, `INSERT INTO grows SELECT 'k' || i, i FROM generate_series(1, 10) i`)
	exec(t, w, `ANALYZE grows`)

	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// The plan a pooled connection ends up keeping: the generic one.
	exec(t, conn, `SET plan_cache_mode = force_generic_plan`)
	exec(t, conn, `PREPARE by_id(text) AS SELECT v FROM grows WHERE id = $1`)
	if plan := explain(t, conn); !strings.Contains(plan, "Seq Scan") {
		t.Fatalf("plan over 10 rows = %q; want a sequential scan (else this test proves nothing)", plan)
	}

	keeper := &eventstore.StatisticsKeeper{DB: pool}
	exec(t, w, `INSERT INTO grows SELECT 'k' || i, i FROM generate_series(11, 15) i`)
	awaitLiveRows(t, pool, "grows", 15)
	if analyzed := step(t, keeper); slices.Contains(analyzed, "grows") {
		t.Fatalf("analyzed %v with 15 rows after 10: want no ANALYZE before %d rows", analyzed, eventstore.MinRows+eventstore.Growth*10)
	}

	exec(t, w, `INSERT INTO grows SELECT 'k' || i, i FROM generate_series(16, 20000) i`)
	awaitLiveRows(t, pool, "grows", 20000)
	if plan := explain(t, conn); !strings.Contains(plan, "Seq Scan") {
		t.Fatalf("plan before the keeper = %q; want the cached sequential scan", plan)
	}
	if analyzed := step(t, keeper); !slices.Contains(analyzed, "grows") {
		t.Fatalf("analyzed %v; want grows (20,000 rows, analyzed at 10)", analyzed)
	}
	if plan := explain(t, conn); !strings.Contains(plan, "Index") {
		t.Fatalf("plan after the keeper = %q; want the primary key's index", plan)
	}
	if analyzed := step(t, keeper); slices.Contains(analyzed, "grows") {
		t.Fatalf("analyzed %v again with no rows added", analyzed)
	}
}

// Given a small table whose rows are updated many times over, then the
// keeper leaves it alone: analyzing it would throw away every plan that
// reads it, for nothing.
func TestStatisticsKeeperLeavesChurningTablesAlone(t *testing.T) {
	pool := pgtest.Pool(t)
	w := writer(t, pool)
	exec(t, w, `CREATE TABLE churns (id int PRIMARY KEY, v int NOT NULL)`+noAutovacuum)
	exec(t, w, `INSERT INTO churns SELECT i, 0 FROM generate_series(1, 100) i`)
	exec(t, w, `ANALYZE churns`)
	for range 20 {
		exec(t, w, `UPDATE churns SET v = v + 1`)
	}
	exec(t, w, `INSERT INTO churns VALUES (101, 0)`) // counted once the 2,000 updates before it are
	awaitLiveRows(t, pool, "churns", 101)
	if analyzed := step(t, &eventstore.StatisticsKeeper{DB: pool}); slices.Contains(analyzed, "churns") {
		t.Fatalf("analyzed %v: want no ANALYZE of a table that only changed in place", analyzed)
	}
}

// Given keepers of several replicas stepping at once over grown tables,
// then none fails and every table ends up analyzed.
func TestStatisticsKeepersOfSeveralReplicas(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	w := writer(t, pool)
	tables := []string{"g1", "g2", "g3", "g4"}
	for _, name := range tables {
		exec(t, w, `CREATE TABLE `+name+` (id int PRIMARY KEY)`+noAutovacuum)
		exec(t, w, `INSERT INTO `+name+` SELECT generate_series(1, 5000)`)
	}
	for _, name := range tables {
		awaitLiveRows(t, pool, name, 5000)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := (&eventstore.StatisticsKeeper{DB: pool}).Step(ctx)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a keeper failed: %v", err)
		}
	}
	for _, name := range tables {
		var reltuples float64
		if err := pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, name).Scan(&reltuples); err != nil {
			t.Fatal(err)
		}
		if reltuples != 5000 {
			t.Fatalf("%s: reltuples %v after the keepers; want 5000 (analyzed)", name, reltuples)
		}
	}
}

// Given a grown table another session holds the lock ANALYZE takes on
// (as a keeper of another replica analyzing it would), when the keeper
// steps, then it skips that table at once, without waiting for the lock,
// and analyzes the others; the skipped one is analyzed at a later step.
func TestStatisticsKeeperSkipsATableBeingAnalyzed(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	w := writer(t, pool)
	for _, name := range []string{"busy", "free"} {
		exec(t, w, `CREATE TABLE `+name+` (id int PRIMARY KEY)`+noAutovacuum)
		exec(t, w, `INSERT INTO `+name+` SELECT generate_series(1, 5000)`)
		awaitLiveRows(t, pool, name, 5000)
	}
	holder, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(ctx)
	if _, err := holder.Exec(ctx, `LOCK TABLE busy IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	analyzed, err := (&eventstore.StatisticsKeeper{DB: pool}).Step(sctx)
	if err != nil {
		t.Fatalf("a step beside a held lock: %v (waiting for it, without SKIP_LOCKED?)", err)
	}
	reltuples := func(table string) (n float64) {
		if err := pool.QueryRow(ctx, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if !slices.Contains(analyzed, "free") || reltuples("free") != 5000 || reltuples("busy") == 5000 {
		t.Fatalf("step analyzed %v: free has %v rows estimated, busy %v; want free analyzed, busy skipped",
			analyzed, reltuples("free"), reltuples("busy"))
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	step(t, &eventstore.StatisticsKeeper{DB: pool})
	if n := reltuples("busy"); n != 5000 {
		t.Fatalf("busy has %v rows estimated after the lock was released and the keeper stepped; want 5000", n)
	}
}

// Given a keeper connected as a role that owns one grown table and has no
// privileges of the owner of another, when it steps, then it analyzes its
// own and leaves the other out (ANALYZE would only skip it with a
// warning, at every step).
func TestStatisticsKeeperAnalyzesOnlyWhatItMay(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	w := writer(t, pool)
	role := "keeper_" + strings.ToLower(domain.NewID(""))
	exec(t, w, `CREATE ROLE `+role+` LOGIN`)
	// Roles are the server's, not the test database's: this one goes when
	// the test ends, after its connections (closed by a later defer).
	defer func() {
		if _, err := w.Exec(ctx, `DROP OWNED BY `+role+`; DROP ROLE `+role); err != nil {
			t.Errorf("dropping role %s: %v", role, err)
		}
	}()
	for _, name := range []string{"mine", "theirs"} {
		exec(t, w, `CREATE TABLE `+name+` (id int PRIMARY KEY)`+noAutovacuum)
		exec(t, w, `INSERT INTO `+name+` SELECT generate_series(1, 5000)`)
		awaitLiveRows(t, pool, name, 5000)
	}
	exec(t, w, `ALTER TABLE mine OWNER TO `+role)

	cfg := pool.Config()
	cfg.ConnConfig.User = role
	cfg.ConnConfig.Password = ""
	as, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	analyzed := step(t, &eventstore.StatisticsKeeper{DB: as})
	if !slices.Equal(analyzed, []string{"mine"}) {
		t.Fatalf("the keeper as %s analyzed %v; want only its own table, mine", role, analyzed)
	}
}

// noAutovacuum keeps autovacuum (on by default, off on some CI servers)
// from analyzing a test's tables behind the keeper's back.
const noAutovacuum = ` WITH (autovacuum_enabled = off)`

// exec runs sql on db, then has the connection report its counts to the
// statistics system as soon as it is idle (else up to ten seconds later).
func exec(t *testing.T, db eventstore.DB, sql string) {
	t.Helper()
	if _, err := db.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if _, err := db.Exec(context.Background(), `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
}

// writer is a connection of its own for a test's writes: exec has it
// report them at once.
func writer(t *testing.T, pool *pgxpool.Pool) *pgxpool.Conn {
	t.Helper()
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Release)
	return conn
}

// explain is the plan by_id runs with on db, one line.
func explain(t *testing.T, db eventstore.DB) string {
	t.Helper()
	rows, err := db.Query(context.Background(), `EXPLAIN EXECUTE by_id('k5')`)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, " / ")
}

func step(t *testing.T, k *eventstore.StatisticsKeeper) []string {
	t.Helper()
	analyzed, err := k.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return analyzed
}

// awaitLiveRows polls until the statistics system counts n live rows in
// table: a backend reports its counts once idle.
func awaitLiveRows(t *testing.T, db eventstore.DB, table string, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var live int64
		err := db.QueryRow(context.Background(), `SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = $1`, table).Scan(&live)
		if err != nil {
			t.Fatal(err)
		}
		if live >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d live rows counted after 30 s; want %d", table, live, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Given a keeper whose database is gone, then it does not warn at every
// tick: it waits twice as long after each failure (10, 20, 40, … ms here:
// a handful of warnings in 400 ms, not forty).
func TestStatisticsKeeperBacksOffWhileFailing(t *testing.T) {
	pool := pgtest.Pool(t)
	pool.Close() // every query now fails
	var warnings countingWriter
	keeper := &eventstore.StatisticsKeeper{DB: pool, Every: 10 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(&warnings, nil))}
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	keeper.Run(ctx) // returns when ctx ends
	if n := warnings.lines(); n < 2 || n > 8 {
		t.Fatalf("%d warnings in 400 ms at a 10 ms tick; want 2-8 (backing off)", n)
	}
}

// countingWriter counts the lines written to it, from any goroutine.
type countingWriter struct {
	mu sync.Mutex
	n  int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += strings.Count(string(p), "\n")
	return len(p), nil
}

func (w *countingWriter) lines() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}
