package app_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// The payment's hot path runs pipelined (two round trips): these tests pin
// what that must keep — nothing stored by a payment that fails at any
// point, a cached API key checked in the command, the balance lock held
// for one round trip, exact balances under 64 concurrent clients.

// paySmallEnv is an env whose pool has two connections (the KYB decider
// needs both): a connection left in a transaction by a failed payment
// would soon break a later one.
func paySmallEnv(t *testing.T) *env {
	t.Helper()
	return payEnv(t, 2)
}

// payLeftNothing asserts that the key claimed nothing and that the
// account's balance and the log are as they were.
func payLeftNothing(t *testing.T, e *env, c app.Caller, va, key string, events int, before any) {
	t.Helper()
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM idempotency_keys WHERE scope = $1 AND key = $2`, c.PlatformID, key); n != 0 {
		t.Errorf("the failed payment left its idempotency key claimed")
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`); n != events {
		t.Errorf("%d events after the failed payment, want %d", n, events)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM payments WHERE virtual_account_id = $1`, va); n != 0 {
		t.Errorf("the failed payment left %d payment rows", n)
	}
	if b := e.balance(va); fmt.Sprint(b) != fmt.Sprint(before) {
		t.Errorf("balance %+v after the failed payment, want %+v", b, before)
	}
}

// A payment refused after the first round trip (insufficient funds, a
// decision made in Go) rolls back: no claim, no event, and the one
// connection is clean for the next payment, which may reuse the key.
func TestRefusedPipelinedPaymentStoresNothing(t *testing.T) {
	e := paySmallEnv(t)
	c, va := payReady(e, 500)
	events := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`)
	before := e.balance(va)
	for range 3 { // the pool's connections, again and again
		_, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "refused", "h1"), c, payRequest(va, 1_000, "rtp"))
		if domain.CodeOf(err) != domain.CodeInsufficientFunds {
			t.Fatalf("payment over the balance: %v, want insufficient_funds", err)
		}
	}
	payLeftNothing(t, e, c, va, "refused", events, before)
	// The key was never claimed: the same key with an affordable request is a new payment.
	res, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "refused", "h2"), c, payRequest(va, 100, "rtp"))
	if err != nil || res.Replayed || res.Payment == nil {
		t.Fatalf("payment after the refusals: %+v, %v", res, err)
	}
}

// A statement that fails in the middle of the second round trip (here an
// inline projection's insert, made to fail by a trigger) leaves nothing:
// PostgreSQL skips COMMIT, the runner rolls back, the connection is clean.
func TestPipelinedPaymentFailingInItsLastBatchStoresNothing(t *testing.T) {
	e := paySmallEnv(t)
	c, va := payReady(e, 100_000)
	for _, sql := range []string{
		`CREATE FUNCTION test_refuse_payment() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.amount = 4242 THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER test_refuse_payment BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION test_refuse_payment()`,
	} {
		if _, err := e.pool.Exec(e.ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	events := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`)
	before := e.balance(va)
	_, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "doomed", "doomed"), c, payRequest(va, 4242, "rtp"))
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("payment whose projection fails: %v", err)
	}
	payLeftNothing(t, e, c, va, "doomed", events, before)
	if _, err := payCreate(e, c, payRequest(va, 100, "rtp")); err != nil {
		t.Fatalf("the next payment on the same connection: %v", err)
	}
}

// apiKeyOf is the id of the platform's sandbox key (approval made one).
func apiKeyOf(e *env, c app.Caller) string {
	e.t.Helper()
	var id string
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM api_keys WHERE platform_id = $1 AND environment = $2`,
		c.PlatformID, c.Environment.String()).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// A caller whose key the API found in its cache carries the key's id; the
// payment checks it in its first round trip: revoked, the payment is
// unauthorized and stores nothing.
func TestPipelinedPaymentChecksACachedKey(t *testing.T) {
	e := paySmallEnv(t)
	c, va := payReady(e, 100_000)
	c.VerifyKeyID = apiKeyOf(e, c)
	if _, err := payCreate(e, c, payRequest(va, 100, "rtp")); err != nil {
		t.Fatalf("payment with a usable key: %v", err)
	}
	if err := e.a.RevokeAPIKey(e.ctx, app.Meta{}, c.PlatformID, c.Environment, c.VerifyKeyID); err != nil {
		t.Fatal(err)
	}
	events := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`)
	before := e.balance(va)
	_, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "revoked", "revoked"), c, payRequest(va, 100, "rtp"))
	if !errors.Is(err, app.ErrKeyNotUsable) || domain.CodeOf(err) != domain.CodeUnauthorized {
		t.Fatalf("payment with a revoked key: %v, want unauthorized", err)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM idempotency_keys WHERE key = 'revoked'`); n != 0 {
		t.Errorf("the refused payment claimed its key")
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`); n != events {
		t.Errorf("the refused payment appended %d events", n-events)
	}
	if b := e.balance(va); b != before {
		t.Errorf("balance %+v, want %+v", b, before)
	}
}

// tripLog records, for each round trip a pool makes, the statements it
// carried.
type tripLog struct {
	mu    sync.Mutex
	trips [][]string
}

func (l *tripLog) start(sql string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.trips = append(l.trips, []string{sql})
}

func (l *tripLog) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	l.start(d.SQL)
	return ctx
}
func (l *tripLog) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (l *tripLog) TraceBatchStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	var sqls []string
	for _, q := range d.Batch.QueuedQueries {
		sqls = append(sqls, q.SQL)
	}
	l.trips = append(l.trips, sqls)
	return ctx
}
func (l *tripLog) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (l *tripLog) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// find is the index of the first trip since from with a statement that
// match accepts, or -1.
func (l *tripLog) find(from int, match func(sql string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := from; i < len(l.trips); i++ {
		for _, sql := range l.trips[i] {
			if match(strings.ToUpper(strings.TrimSpace(sql))) {
				return i
			}
		}
	}
	return -1
}

// count is the number of trips with a statement that match accepts.
func (l *tripLog) count(match func(sql string) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, trip := range l.trips {
		for _, sql := range trip {
			if match(strings.ToUpper(sql)) {
				n++
				break
			}
		}
	}
	return n
}

func (l *tripLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.trips)
}

// Item 4 of issue #15: a payment locks and writes only in the round trip
// that commits. Its first round trip (the reads its decision needs) takes
// no lock and writes nothing, so its transaction takes no id while it
// decides: the balance row is held across one round trip, and the log's
// readers never wait for a payment's decision.
func TestPaymentLocksAndWritesOnlyInTheRoundTripThatCommits(t *testing.T) {
	log := &tripLog{}
	pool := pgtest.TracedPool(t, log, 2)
	e := &env{t: t, ctx: testCtx(t), pool: pool, a: newApp(t, pool)}
	c, va := payReady(e, 100_000)
	if _, err := payCreate(e, c, payRequest(va, 100, "rtp")); err != nil { // warms the statement cache
		t.Fatal(err)
	}
	from := log.len()
	if _, err := payCreate(e, c, payRequest(va, 100, "rtp")); err != nil {
		t.Fatal(err)
	}
	writes := func(sql string) bool {
		return strings.Contains(sql, "FOR UPDATE") || strings.HasPrefix(sql, "INSERT") || strings.HasPrefix(sql, "UPDATE") ||
			strings.HasPrefix(sql, "WITH") || strings.HasPrefix(sql, "DELETE") || strings.HasPrefix(sql, "COPY")
	}
	first := log.find(from, writes)
	lock := log.find(from, func(sql string) bool { return strings.Contains(sql, "FOR UPDATE") })
	commit := log.find(from, func(sql string) bool { return sql == "COMMIT" })
	if lock < 0 || commit < 0 {
		t.Fatalf("no lock (%d) or no COMMIT (%d) in the payment's round trips", lock, commit)
	}
	if trips := log.len() - from; trips != 2 || first != commit || lock != commit {
		t.Fatalf("of %d round trips, the first write is in %d, the lock in %d and COMMIT in %d: want all three in the last of 2",
			trips, first-from+1, lock-from+1, commit-from+1)
	}
}

// Item 4 of issue #15 under load: 64 clients pay from 10 hot accounts at
// once. No deadlock, no lost update: every account's pending outbound is
// exactly the sum of its accepted payments and fees, and the ledger
// balances (Σ debits = Σ credits).
func TestSixtyFourClientsOnTenHotAccounts(t *testing.T) {
	const (
		clients  = 64
		accounts = 10
		each     = 8 // payments per client
		amount   = 100
		fee      = 50 // rtp's default
		funds    = clients * each * (amount + fee)
	)
	e := payEnv(t, 24)
	c := e.platform("Hot")
	vas := make([]string, accounts)
	for i := range vas {
		vas[i] = e.openVA(c)
	}
	payApprove(e, c, vas[0]) // one business: every account is approved
	for _, va := range vas {
		e.fund(c, va, funds)
	}
	var accepted [accounts]atomic.Int64
	errs := make(chan error, clients*each)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := range each {
				a := (i + j) % accounts
				if _, err := payCreate(e, c, payRequest(vas[a], amount, "rtp")); err != nil {
					errs <- err
					continue
				}
				accepted[a].Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("payment: %v", err)
	}
	for i, va := range vas {
		b := e.balance(va)
		if want := accepted[i].Load() * (amount + fee); b.PendingOutbound != want || b.Posted != funds {
			t.Errorf("account %d: posted %d, pending outbound %d; want %d, %d", i, b.Posted, b.PendingOutbound, funds, want)
		}
	}
	payCheckLedger(e)
}

// A read that fails in Go after the last batch was sent (here: no row, as
// a test trigger skips the payment's projected row) does not stop
// PostgreSQL from running the COMMIT queued after it: the payment exists,
// so CreatePayment succeeds without its read (Payment nil, for the caller
// to read afresh) instead of failing a payment that was made.
func TestPipelinedPaymentReadFailingAfterCommitStillSucceeds(t *testing.T) {
	e := paySmallEnv(t)
	c, va := payReady(e, 100_000)
	for _, sql := range []string{
		`CREATE FUNCTION test_skip_payment_row() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF NEW.amount = 4343 THEN RETURN NULL; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER test_skip_payment_row BEFORE INSERT ON payments FOR EACH ROW EXECUTE FUNCTION test_skip_payment_row()`,
	} {
		if _, err := e.pool.Exec(e.ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	events := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`)
	res, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "unread", "unread"), c, payRequest(va, 4343, "rtp"))
	if err != nil {
		t.Fatalf("a payment that committed answered %v", err)
	}
	if res.ID == "" || res.Payment != nil {
		t.Fatalf("result %+v: want the payment's id and no read", res)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM events`); n != events+2 {
		t.Errorf("%d events appended, want the payment's and its entry's (2)", n-events)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM idempotency_keys WHERE key = 'unread'`); n != 1 {
		t.Errorf("the committed payment's key claimed %d times, want 1", n)
	}
	if _, err := payCreate(e, c, payRequest(va, 100, "rtp")); err != nil {
		t.Fatalf("the next payment on the same connection: %v", err)
	}
}

// A revoked key stops the payment's first batch at the key check: the
// claim and the balance lock queued after it never run, so the refusal
// does not wait on the account's lock held by another transaction.
func TestRevokedCachedKeyStopsBeforeTheLock(t *testing.T) {
	e := paySmallEnv(t)
	c, va := payReady(e, 100_000)
	c.VerifyKeyID = apiKeyOf(e, c)
	if err := e.a.RevokeAPIKey(e.ctx, app.Meta{}, c.PlatformID, c.Environment, c.VerifyKeyID); err != nil {
		t.Fatal(err)
	}
	holder, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback(e.ctx)
	if _, err := holder.Exec(e.ctx, `SELECT 1 FROM account_balances WHERE virtual_account_id = $1 FOR UPDATE`, va); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Second)
	defer cancel()
	_, err = e.a.CreatePayment(ctx, app.Meta{}, payIdem(c, "revoked-locked", "revoked-locked"), c, payRequest(va, 100, "rtp"))
	if !errors.Is(err, app.ErrKeyNotUsable) {
		t.Fatalf("payment with a revoked key while its account is locked: %v, want unauthorized at once", err)
	}
}

// xidWatch is a tracer that, when a statement it is told to watch for
// starts, reads the transaction id of the connection that sends it as
// PostgreSQL sees it (pg_stat_activity.backend_xid, through a pool of its
// own): NULL while the transaction has written and locked nothing.
type xidWatch struct {
	observer *pgxpool.Pool
	at       func(sql string) bool
	mu       sync.Mutex
	seen     []*string
	err      error
}

func (w *xidWatch) TraceQueryStart(ctx context.Context, conn *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.observer == nil || !w.at(d.SQL) {
		return ctx
	}
	var xid *string
	if err := w.observer.QueryRow(ctx, `SELECT backend_xid::text FROM pg_stat_activity WHERE pid = $1`,
		conn.PgConn().PID()).Scan(&xid); err != nil {
		w.err = err
	}
	w.seen = append(w.seen, xid)
	return ctx
}
func (w *xidWatch) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// taken empties what the watch saw and says how many of its sightings had
// a transaction id and how many had none.
func (w *xidWatch) taken(t *testing.T) (withID, without int) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatal(w.err)
	}
	for _, x := range w.seen {
		if x != nil {
			withID++
		} else {
			without++
		}
	}
	w.seen = nil
	return withID, without
}

// The point of deciding before claiming and locking: while the service
// decides, the payment's transaction has no id, so no reader of the log
// waits for it. With a daily limit the payment reads the day's sum in a
// round trip of its own between its first batch and its last; at that
// moment PostgreSQL must show its connection without a transaction id.
func TestAPaymentTakesNoTransactionIdWhileItDecides(t *testing.T) {
	watch := &xidWatch{at: func(sql string) bool { return strings.Contains(sql, "sum(amount)") }}
	pool := pgtest.TracedPool(t, watch, 4)
	e := &env{t: t, ctx: testCtx(t), pool: pool, a: newApp(t, pool)}
	c, va := payReady(e, 100_000)
	if err := e.a.UpdateSettings(e.ctx, app.Meta{}, c.PlatformID, c.Environment,
		platform.SettingsPatch{DailyPaymentLimit: domain.Some(int64(50_000))}); err != nil {
		t.Fatal(err)
	}
	observer, err := pgxpool.New(e.ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer observer.Close()
	watch.mu.Lock()
	watch.observer = observer
	watch.mu.Unlock()

	// The watch sees a transaction id where there is one: a transaction
	// that took one, then sends the statement watched for.
	err = pgx.BeginFunc(e.ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.ctx, `SELECT pg_current_xact_id()`); err != nil {
			return err
		}
		_, err := tx.Exec(e.ctx, `SELECT coalesce(sum(amount), 0) FROM payments`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if withID, without := watch.taken(t); withID != 1 || without != 0 {
		t.Fatalf("the watch saw %d transactions with an id and %d without: want 1 with", withID, without)
	}

	if _, err := payCreate(e, c, payRequest(va, 100, "rtp")); err != nil {
		t.Fatal(err)
	}
	if withID, without := watch.taken(t); withID != 0 || without != 1 {
		t.Fatalf("while the payment decided, %d of %d sightings had a transaction id: want none of 1", withID, withID+without)
	}
}

// holdBalanceRow locks va's balance row in a transaction of the test's own,
// runs start (which sends payments), and waits until n statements queue
// behind the lock: payments that have read and decided and now wait, in
// the round trip that commits, for the lock. change then runs in that
// transaction, which commits when it returns. The transaction holds an id
// that every reader of the log on this server waits for, so a payment that
// does not come to wait ends the test at once (its error arrives on done).
func holdBalanceRow(e *env, va string, n int, start func(), done <-chan error, change func(tx pgx.Tx)) {
	e.t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback(e.ctx)
	if _, err := tx.Exec(e.ctx, `SELECT 1 FROM account_balances WHERE virtual_account_id = $1 FOR UPDATE`, va); err != nil {
		e.t.Fatal(err)
	}
	start()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting int
		if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()`).Scan(&waiting); err != nil {
			e.t.Fatal(err)
		}
		if waiting >= n {
			break
		}
		select {
		case err := <-done:
			e.t.Fatalf("a payment ended (%v) before %d waited for the balance lock", err, n)
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%d of %d payments wait for the balance lock after 10 s", waiting, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if change != nil {
		change(tx)
	}
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// A payment decides on reads made without the balance lock, so what it
// read may change before its last round trip takes the lock. It must then
// decide again, on what the change left: each case changes one input of
// the rules (in the projections the payment reads, behind the log's back:
// only the check is under test) while the payment waits for the lock.
func TestAPaymentDecidesAgainWhenItsInputsChangedBeforeTheLock(t *testing.T) {
	cases := []struct {
		name   string
		change string
		want   domain.Code // "": accepted at the first attempt
	}{
		{"the funds were spent", `UPDATE account_balances SET pending_outbound = posted - 149 WHERE virtual_account_id = $1`, domain.CodeInsufficientFunds},
		{"what is left is the hold, exactly", `UPDATE account_balances SET pending_outbound = posted - 150 WHERE virtual_account_id = $1`, ""},
		{"the account was frozen", `UPDATE virtual_accounts SET status = 'frozen' WHERE id = $1`, domain.CodeAccountNotActive},
		{"the business was rejected", `UPDATE kyb_entities k SET status = 'rejected' FROM virtual_accounts v
            WHERE v.id = $1 AND k.platform_id = v.platform_id AND k.environment = v.environment AND k.entity_ref = v.entity_ref`, domain.CodeKYBNotApproved},
		{"nothing it relied on (money came in)", `UPDATE account_balances SET posted = posted + 1 WHERE virtual_account_id = $1`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			log := &tripLog{}
			pool := pgtest.TracedPool(t, log, 6)
			e := &env{t: t, ctx: testCtx(t), pool: pool, a: newApp(t, pool)}
			cl, va := payReady(e, 10_000)
			done := make(chan error, 1)
			pay := func() { go func() { _, err := payCreate(e, cl, payRequest(va, 100, "rtp")); done <- err }() } // holds 100 + 50
			holdBalanceRow(e, va, 1, pay, done, func(tx pgx.Tx) {
				if _, err := tx.Exec(e.ctx, c.change, va); err != nil {
					t.Fatal(err)
				}
			})
			err := <-done
			if c.want == "" {
				if err != nil {
					t.Fatalf("the payment failed: %v", err)
				}
				checks := log.count(func(sql string) bool { return strings.Contains(sql, "DECISION_INPUTS_CHANGED") })
				if checks != 1 {
					t.Fatalf("the payment ran its check at commit %d times: want 1 (its decision still stood)", checks)
				}
				return
			}
			wantCode(t, err, c.want)
			var n int
			if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM payments WHERE virtual_account_id = $1`, va).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d payments stored (%v): want none", n, err)
			}
		})
	}
}

// Two identical requests both find their key free in their first round
// trip; the one whose claim comes second in the last round trip waits for
// the first to commit, rolls back, and answers with the first's payment.
func TestIdenticalPaymentsRacingPastTheKeyLookUpMakeOnePayment(t *testing.T) {
	e := payEnv(t, 6) // the test's lock, its poll, two payments, room to spare
	cl, va := payReady(e, 10_000)
	idem := payIdem(cl, "same-key", "same-request")
	results := make(chan app.Result, 2)
	errs := make(chan error, 2)
	pay := func() {
		for range 2 {
			go func() {
				r, err := e.a.CreatePayment(e.ctx, app.Meta{}, idem, cl, payRequest(va, 100, "rtp"))
				results <- r
				errs <- err
			}()
		}
	}
	// One waits for the balance lock, the other for the first's claim.
	holdBalanceRow(e, va, 2, pay, errs, nil)
	a, b := <-results, <-results
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if a.ID != b.ID || a.Replayed == b.Replayed {
		t.Fatalf("results %s (replayed %v) and %s (replayed %v): want one payment, once made and once replayed", a.ID, a.Replayed, b.ID, b.Replayed)
	}
	var n int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM payments WHERE virtual_account_id = $1`, va).Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d payments stored (%v): want 1", n, err)
	}
}
