package projections_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pglocal"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/projections/rebuild"
)

// ---- helpers -----------------------------------------------------------------------

type env struct {
	t    testing.TB
	ctx  context.Context
	pool *pgxpool.Pool
	a    *app.App
}

func newEnvOn(t testing.TB, pool *pgxpool.Pool) *env {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return &env{t: t, ctx: ctx, pool: pool, a: app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))}
}

func newEnv(t testing.TB) *env { return newEnvOn(t, pgtest.Pool(t)) }

func (e *env) platform(name string) app.Caller {
	e.t.Helper()
	res, err := e.a.RegisterPlatform(e.ctx, app.Meta{}, nil, app.RegisterPlatform{Name: name, ContactEmail: "ops@example.com"})
	if err != nil {
		e.t.Fatalf("register platform: %v", err)
	}
	if _, err := e.a.ApprovePlatform(e.ctx, app.Meta{}, res.ID); err != nil {
		e.t.Fatalf("approve platform: %v", err)
	}
	return app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}
}

func (e *env) openVA(c app.Caller, ref string) string {
	e.t.Helper()
	res, err := e.a.OpenVirtualAccount(e.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: ref, Type: "checking",
		Metadata: map[string]string{"ref": ref}})
	if err != nil {
		e.t.Fatalf("open virtual account: %v", err)
	}
	return res.ID
}

var originator = inbound.Originator{Name: "Payer Inc", AccountNumber: "000123456789", RoutingNumber: "021000021"}

func (e *env) inbound(c app.Caller, va string, amount int64, rail string) (string, error) {
	res, err := e.a.SimulateInboundTransfer(e.ctx, app.Meta{}, nil, c, app.SimulateInboundTransfer{
		VirtualAccountID: va, Amount: amount, Rail: rail, Originator: originator})
	return res.ID, err
}

func (e *env) must(id string, err error) string {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func amt(n int64) *int64 { return &n }

func (e *env) manual(c app.Caller, typ, va, dir string, amount int64) (string, error) {
	res, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{
		Type: typ, Description: typ + " " + dir, VirtualAccountID: va, Direction: dir, Amount: amt(amount),
		Metadata: map[string]string{"n": fmt.Sprint(amount)}})
	return res.ID, err
}

func (e *env) transfer(c app.Caller, from, to string, amount int64) (string, error) {
	res, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Type: ledger.TypeAdjustment, Description: "move",
		Lines: []app.JournalLine{{VirtualAccountID: from, Direction: "debit", Amount: amt(amount)},
			{VirtualAccountID: to, Direction: "credit", Amount: amt(amount)}}})
	return res.ID, err
}

func (e *env) reverse(c app.Caller, je string) (string, error) {
	res, err := e.a.PostJournalEntry(e.ctx, app.Meta{}, nil, c, app.PostJournalEntry{Reverses: je})
	return res.ID, err
}

// sync brings the asynchronous projections up to the head of the log.
func (e *env) sync() {
	e.t.Helper()
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	if err := projections.CatchUp(ctx, e.pool, head, nil); err != nil {
		e.t.Fatalf("catch up projections: %v", err)
	}
}

// allowed are the refusals a random workload may meet.
func allowed(err error) bool {
	switch domain.CodeOf(err) {
	case domain.CodeInsufficientFunds, domain.CodeInvalidState:
		return true
	}
	return err == nil
}

// workload is a mixed workload over two platforms: inbound transfers
// (instant, pending and settled ACH), fees, adjustments both ways,
// transfers, reversals, freezes, a closed account. It runs workers
// goroutines and returns the ids of the ACH transfers it left pending.
func (e *env) workload(workers, ops int, seed uint64) (pending []string) {
	e.t.Helper()
	type platformVAs struct {
		c   app.Caller
		vas []string
	}
	var ps []platformVAs
	for p := range 2 {
		c := e.platform(fmt.Sprintf("Platform %d-%d", seed, p))
		var vas []string
		for i := range 3 {
			va := e.openVA(c, fmt.Sprintf("biz_%d", i))
			e.must(e.inbound(c, va, 20_000, "rtp"))
			vas = append(vas, va)
		}
		// One account opened and closed, one ACH settled, one left pending.
		closed := e.openVA(c, "closing")
		if err := e.a.CloseVirtualAccount(e.ctx, app.Meta{}, c, closed); err != nil {
			e.t.Fatal(err)
		}
		settled := e.must(e.inbound(c, vas[0], 1234, "ach_same_day"))
		if err := e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, settled); err != nil {
			e.t.Fatal(err)
		}
		pending = append(pending, e.must(e.inbound(c, vas[1], 4321, "ach_standard")))
		ps = append(ps, platformVAs{c, vas})
	}
	var mu sync.Mutex
	var entries []string
	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for range ops {
				p := ps[r.IntN(len(ps))]
				va, to := p.vas[r.IntN(len(p.vas))], p.vas[r.IntN(len(p.vas))]
				n := int64(1 + r.IntN(3000))
				var id string
				var err error
				switch r.IntN(9) {
				case 0:
					_, err = e.inbound(p.c, va, n, "rtp")
				case 1:
					id, err = e.inbound(p.c, va, n, "ach_same_day")
					if err == nil && r.IntN(2) == 0 {
						err = e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, id)
					}
					id = ""
				case 2:
					id, err = e.manual(p.c, ledger.TypeFee, va, "debit", n)
				case 3:
					id, err = e.manual(p.c, ledger.TypeAdjustment, va, "credit", n)
				case 4:
					id, err = e.manual(p.c, ledger.TypeCorrection, va, "debit", n)
				case 5, 6:
					id, err = e.transfer(p.c, va, to, n)
				case 7:
					mu.Lock()
					var je string
					if len(entries) > 0 {
						je = entries[r.IntN(len(entries))]
					}
					mu.Unlock()
					if je != "" {
						_, err = e.reverse(p.c, je)
						if domain.CodeOf(err) == domain.CodeNotFound {
							err = nil // another platform's entry
						}
					}
				case 8:
					if r.IntN(2) == 0 {
						err = e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, p.c, va)
					} else {
						err = e.a.UnfreezeVirtualAccount(e.ctx, app.Meta{}, p.c, va)
					}
				}
				if !allowed(err) {
					errs <- err
				}
				if err == nil && id != "" {
					mu.Lock()
					entries = append(entries, id)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.t.Errorf("workload: %v", err)
	}
	return pending
}

// snapshot reads every table of every projection, each row as text, in
// primary key order.
func snapshot(t testing.TB, ctx context.Context, db *pgxpool.Pool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range projections.AllTables() {
		var pk []string
		rows, err := db.Query(ctx, `SELECT a.attname FROM pg_index i
                JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)`, table)
		if err != nil {
			t.Fatal(err)
		}
		pk, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		order := "t::text"
		if len(pk) > 0 {
			order = strings.Join(pk, ", ")
		}
		rows, err = db.Query(ctx, `SELECT t::text FROM `+table+` t ORDER BY `+order)
		if err != nil {
			t.Fatal(err)
		}
		out[table], err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// compare reports every table whose rows differ, with the first differences.
func compare(t testing.TB, what string, want, got map[string][]string) {
	t.Helper()
	for table, w := range want {
		g := got[table]
		if len(w) != len(g) {
			t.Errorf("%s: %s has %d rows, want %d", what, table, len(g), len(w))
		}
		shown := 0
		for i := 0; i < max(len(w), len(g)) && shown < 3; i++ {
			var wr, gr string
			if i < len(w) {
				wr = w[i]
			}
			if i < len(g) {
				gr = g[i]
			}
			if wr != gr {
				t.Errorf("%s: %s row %d:\n got %s\nwant %s", what, table, i, gr, wr)
				shown++
			}
		}
	}
}

func rowCount(s map[string][]string) int {
	n := 0
	for _, rows := range s {
		n += len(rows)
	}
	return n
}

func checkpoint(t testing.TB, ctx context.Context, pool *pgxpool.Pool) eventstore.Position {
	t.Helper()
	pos, err := eventstore.ReadSlowestCheckpoint(ctx, pool, projections.AsyncNames())
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// checkReads compares what the read queries say of every virtual account
// with its balance row: ledger account balances, the balance as of now and
// this month's statement.
func checkReads(t *testing.T, e *env) {
	t.Helper()
	now := time.Now().UTC()
	rows, err := e.pool.Query(e.ctx, `SELECT v.id, v.platform_id, v.ledger_account_id, b.posted, b.pending_inbound, b.pending_outbound
        FROM virtual_accounts v JOIN account_balances b ON b.virtual_account_id = v.id`)
	if err != nil {
		t.Fatal(err)
	}
	type acc struct {
		id, platform, la string
		b                ledger.Balance
	}
	accs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (acc, error) {
		var a acc
		return a, r.Scan(&a.id, &a.platform, &a.la, &a.b.Posted, &a.b.PendingInbound, &a.b.PendingOutbound)
	})
	if err != nil {
		t.Fatal(err)
	}
	ledgerAccounts := map[string]queries.LedgerAccountView{}
	for _, a := range accs {
		scope := queries.Scope{PlatformID: a.platform, Environment: domain.Sandbox}
		if _, seen := ledgerAccounts[a.la]; !seen {
			for after := ""; ; {
				l, err := queries.ListLedgerAccounts(e.ctx, e.pool, scope, queries.Page{After: after, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				for _, la := range l.Data {
					ledgerAccounts[la.ID] = la
				}
				if !l.HasMore {
					break
				}
				after, _ = queries.DecodeCursor(*l.NextCursor)
			}
		}
		la, ok := ledgerAccounts[a.la]
		if !ok {
			t.Errorf("%s: its ledger account %s is not listed", a.id, a.la)
			continue
		}
		if la.Balances.Posted != a.b.Posted || la.Balances.Pending != a.b.PendingInbound-a.b.PendingOutbound ||
			la.Balances.Available != a.b.Available() || la.NormalBalance != "credit" {
			t.Errorf("%s: ledger account balances %+v (%s), balance row %+v", a.id, la.Balances, la.NormalBalance, a.b)
		}
		v, err := queries.GetVirtualAccount(e.ctx, e.pool, scope, a.id)
		if err != nil {
			t.Fatal(err)
		}
		if v.Balance.Posted != a.b.Posted || v.Balance.Available != a.b.Available() {
			t.Errorf("%s: view balance %+v, row %+v", a.id, v.Balance, a.b)
		}
		asOf, err := queries.BalanceAsOf(e.ctx, e.pool, scope, a.id, now)
		if err != nil {
			t.Fatal(err)
		}
		if asOf.Posted != a.b.Posted || asOf.PendingInbound != a.b.PendingInbound || asOf.PendingOutbound != a.b.PendingOutbound {
			t.Errorf("%s: balance as of now %+v, row %+v", a.id, asOf.BalanceView, a.b)
		}
		st, err := queries.Statement(e.ctx, e.pool, scope, a.id, now)
		if err != nil {
			t.Fatal(err)
		}
		if st.Month == now.Format("2006-01") && st.OpeningBalance == 0 && st.ClosingBalance != a.b.Posted {
			t.Errorf("%s: statement closes at %d, posted balance %d", a.id, st.ClosingBalance, a.b.Posted)
		}
		var in, out int64
		for _, tx := range st.Transactions {
			if tx.Status != "posted" {
				t.Errorf("%s: statement lists a %s transaction", a.id, tx.Status)
			}
			if tx.Amount > 0 {
				in += tx.Amount
			} else {
				out -= tx.Amount
			}
		}
		if in != st.TotalIn || out != st.TotalOut || st.OpeningBalance+in-out != st.ClosingBalance {
			t.Errorf("%s: statement totals in %d out %d opening %d closing %d; its transactions say in %d out %d",
				a.id, st.TotalIn, st.TotalOut, st.OpeningBalance, st.ClosingBalance, in, out)
		}
	}
	// Every platform's ledger: Σ debits = Σ credits of posted balances in
	// normal direction (debit-normal accounts count against credit-normal ones).
	var credit, debit int64
	for _, la := range ledgerAccounts {
		if la.NormalBalance == "credit" {
			credit += la.Balances.Posted
		} else {
			debit += la.Balances.Posted
		}
	}
	if credit != debit {
		t.Errorf("posted balances: credit-normal accounts hold %d, debit-normal %d", credit, debit)
	}
}

// ---- rebuild ---------------------------------------------------------------------------

func TestRebuildEqualsLiveProjections(t *testing.T) {
	e := newEnv(t)
	pending := e.workload(8, 30, 1)
	e.sync()
	before := snapshot(t, e.ctx, e.pool)
	for _, table := range []string{"virtual_accounts", "account_balances", "ledger_accounts", "inbound_transfers",
		"journal_entries", "ledger_entries", "account_transactions", "platforms", "platform_settings", "api_keys"} {
		if _, ok := before[table]; !ok {
			t.Errorf("projections.All() does not own %s", table)
		}
	}
	for _, table := range []string{"virtual_accounts", "account_balances", "inbound_transfers", "journal_entries", "ledger_entries", "account_transactions"} {
		if len(before[table]) == 0 {
			t.Fatalf("the workload left %s empty", table)
		}
	}
	var pendingRows int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM inbound_transfers WHERE status = 'pending' AND id = ANY($1)`, pending).Scan(&pendingRows); err != nil || pendingRows != len(pending) {
		t.Fatalf("pending ACH transfers: %d of %d (%v)", pendingRows, len(pending), err)
	}
	checkReads(t, e)
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}

	stats, err := rebuild.Run(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	var events int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if stats.Events != events {
		t.Errorf("rebuild replayed %d events, the log has %d", stats.Events, events)
	}
	// The rebuild gives the asynchronous projections the events below the
	// oldest transaction running on the server (other tests' included),
	// and the subscription takes it from there.
	if cp := checkpoint(t, e.ctx, e.pool); head.Less(cp) {
		t.Errorf("checkpoint after rebuild %+v is past the head %+v", cp, head)
	}
	e.sync()
	if cp := checkpoint(t, e.ctx, e.pool); cp != head {
		t.Errorf("checkpoint after rebuild and catch-up %+v, want the head %+v", cp, head)
	}
	after := snapshot(t, e.ctx, e.pool)
	compare(t, "rebuild after catch-up", before, after)
	t.Logf("compared %d rows", rowCount(before))

	// The subscription resumes where the rebuild stopped: new events are
	// applied once, and a second rebuild still agrees.
	c := e.platform("After rebuild")
	va := e.openVA(c, "late")
	e.must(e.inbound(c, va, 500, "rtp"))
	e.must(e.manual(c, ledger.TypeFee, va, "debit", 200))
	if err := e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, pending[0]); err != nil {
		t.Fatal(err)
	}
	e.sync()
	live := snapshot(t, e.ctx, e.pool)
	if len(live["ledger_entries"]) != len(before["ledger_entries"])+4 {
		t.Errorf("ledger entries after rebuild and 2 more entries: %d, want %d", len(live["ledger_entries"]), len(before["ledger_entries"])+4)
	}
	if _, err := rebuild.Run(e.ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	e.sync()
	compare(t, "second rebuild", live, snapshot(t, e.ctx, e.pool))
}

// createCopy clones the database behind url (no session may be connected
// to it) and returns the clone's URL; the clone is dropped when t ends.
func createCopy(t testing.TB, src string) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, pgtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var srcName string
	if err := func() error {
		c, err := pgx.Connect(ctx, src)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		return c.QueryRow(ctx, `SELECT current_database()`).Scan(&srcName)
	}(); err != nil {
		t.Fatal(err)
	}
	name := srcName + "_copy"
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, srcName))
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(20 * time.Millisecond) // the closed pool's sessions are still leaving
	}
	if err != nil {
		t.Fatalf("copy database: %v", err)
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(context.Background(), pgtest.AdminURL(t)); err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	u, err := pglocal.WithDatabase(pgtest.AdminURL(t), name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A rebuild while the asynchronous subscription lags behind the log, then
// a catch-up, ends where a subscription that simply caught up ends.
func TestRebuildWhileSubscriptionBehind(t *testing.T) {
	srcURL := pgtest.URL(t)
	poolA, err := pgxpool.New(context.Background(), srcURL)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, poolA)
	e.workload(6, 20, 2)
	e.sync()
	e.workload(6, 20, 3) // not caught up
	// Part of the way: one small batch each.
	for _, sub := range projections.NewSubscriptions(poolA, nil) {
		sub.BatchSize = 7
		for deadline := time.Now().Add(10 * time.Second); ; {
			n, err := sub.Step(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the subscription could not take a step")
			}
			time.Sleep(10 * time.Millisecond) // an older transaction elsewhere on the server holds readers back
		}
	}
	head, err := eventstore.Head(e.ctx, poolA)
	if err != nil {
		t.Fatal(err)
	}
	if cp := checkpoint(t, e.ctx, poolA); !cp.Less(head) {
		t.Fatalf("the subscription should lag: checkpoint %+v, head %+v", cp, head)
	}
	poolA.Close()

	// Two identical databases with a lagging subscription.
	copyURL := createCopy(t, srcURL)
	poolA, err = pgxpool.New(context.Background(), srcURL)
	if err != nil {
		t.Fatal(err)
	}
	defer poolA.Close()
	poolB, err := pgxpool.New(context.Background(), copyURL)
	if err != nil {
		t.Fatal(err)
	}
	defer poolB.Close()
	ctx := e.ctx

	// A: the subscription just catches up.
	if err := projections.CatchUp(ctx, poolA, head, nil); err != nil {
		t.Fatal(err)
	}
	want := snapshot(t, ctx, poolA)

	// B: rebuild first, then catch up.
	lagging := snapshot(t, ctx, poolB)
	if len(lagging["ledger_entries"]) >= len(want["ledger_entries"]) {
		t.Fatalf("the copy should lag: %d ledger entries, caught up %d", len(lagging["ledger_entries"]), len(want["ledger_entries"]))
	}
	if _, err := rebuild.Run(ctx, poolB); err != nil {
		t.Fatal(err)
	}
	if err := projections.CatchUp(ctx, poolB, head, nil); err != nil {
		t.Fatal(err)
	}
	compare(t, "rebuild while behind, then catch-up", want, snapshot(t, ctx, poolB))
	if a, b := checkpoint(t, ctx, poolA), checkpoint(t, ctx, poolB); a != b || a != head {
		t.Errorf("checkpoints: caught up %+v, rebuilt %+v, head %+v", a, b, head)
	}
}

// A rebuild while commands run: commands wait on the projection locks, and
// when everything is done the projections are what a quiet rebuild makes
// of the log; every balance row equals the sum of its entries.
func TestRebuildDuringCommands(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Busy")
	var vas []string
	for i := range 4 {
		va := e.openVA(c, fmt.Sprintf("biz_%d", i))
		e.must(e.inbound(c, va, 100_000, "rtp"))
		vas = append(vas, va)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(7, uint64(w)))
			for ctx.Err() == nil {
				va := vas[r.IntN(len(vas))]
				var err error
				switch r.IntN(4) {
				case 0:
					_, err = e.inbound(c, va, int64(1+r.IntN(100)), "rtp")
				case 1:
					_, err = e.inbound(c, va, int64(1+r.IntN(100)), "ach_same_day")
				case 2:
					_, err = e.manual(c, ledger.TypeFee, va, "debit", int64(1+r.IntN(100)))
				case 3:
					_, err = e.a.OpenVirtualAccount(e.ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: "new", Type: "savings"})
				}
				if !allowed(err) && ctx.Err() == nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		}()
	}
	for range 5 {
		time.Sleep(30 * time.Millisecond) // let commands be in flight when the rebuild starts
		if _, err := rebuild.Run(e.ctx, e.pool); err != nil {
			t.Errorf("rebuild during commands: %v", err)
		}
	}
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("command during rebuild: %v", err)
	}
	e.sync()

	// Inline projections against the log.
	var accounts, opened, transfers, received int
	if err := e.pool.QueryRow(e.ctx, `SELECT (SELECT count(*) FROM virtual_accounts),
            (SELECT count(*) FROM events WHERE event_type = 'virtual_account.created'),
            (SELECT count(*) FROM inbound_transfers),
            (SELECT count(*) FROM events WHERE event_type = 'inbound_transfer.received')`).Scan(&accounts, &opened, &transfers, &received); err != nil {
		t.Fatal(err)
	}
	if accounts != opened || transfers != received {
		t.Errorf("after rebuilds during commands: %d virtual accounts for %d opened, %d inbound transfers for %d received",
			accounts, opened, transfers, received)
	}
	rows, err := e.pool.Query(e.ctx, `SELECT b.virtual_account_id, b.posted, b.pending_inbound, b.pending_outbound,
            coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount ELSE -l.amount END) FILTER (WHERE l.status = 'posted'), 0),
            coalesce(sum(l.amount) FILTER (WHERE l.status = 'pending' AND l.direction = 'credit'), 0),
            coalesce(sum(l.amount) FILTER (WHERE l.status = 'pending' AND l.direction = 'debit'), 0)
        FROM account_balances b LEFT JOIN ledger_entries l ON l.virtual_account_id = b.virtual_account_id
        GROUP BY 1, 2, 3, 4`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		var posted, in, out, sp, si, so int64
		if err := rows.Scan(&id, &posted, &in, &out, &sp, &si, &so); err != nil {
			t.Fatal(err)
		}
		if posted != sp || in != si || out != so {
			t.Errorf("%s: balance row %d/%d/%d, its entries %d/%d/%d", id, posted, in, out, sp, si, so)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	live := snapshot(t, e.ctx, e.pool)
	if _, err := rebuild.Run(e.ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	e.sync()
	compare(t, "quiet rebuild after rebuilds during commands", snapshot(t, e.ctx, e.pool), live)
}

// ---- pagination --------------------------------------------------------------------------

// walk pages through a list with limit 3, calling between after each page.
// A walk over n items present at its start takes about n/3 pages: items
// that arrive meanwhile sort before the cursor and are not walked.
func walk[T any](t *testing.T, n int, list func(after string) (queries.List[T], error), key func(T) string, between func()) []string {
	t.Helper()
	var ids []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > n/3+20 {
			t.Fatalf("the walk over %d items does not end after %d pages", n, pages)
		}
		l, err := list(after)
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Data) > 3 {
			t.Fatalf("page of %d items with limit 3", len(l.Data))
		}
		for _, it := range l.Data {
			ids = append(ids, key(it))
		}
		if !l.HasMore {
			if l.NextCursor != nil {
				t.Errorf("last page has a next_cursor")
			}
			return ids
		}
		if l.NextCursor == nil || len(l.Data) != 3 {
			t.Fatalf("has_more with %d items and cursor %v", len(l.Data), l.NextCursor)
		}
		after, err = queries.DecodeCursor(*l.NextCursor)
		if err != nil {
			t.Fatal(err)
		}
		between()
	}
}

// exactlyOnce checks that every id of want appears once in got, in want's
// order, and that got has no duplicates at all.
func exactlyOnce(t *testing.T, what string, want, got []string) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
		if seen[id] == 2 {
			t.Errorf("%s: %s returned twice", what, id)
		}
	}
	var order []string
	for _, id := range want {
		if seen[id] == 0 {
			t.Errorf("%s: %s never returned", what, id)
		}
	}
	inWant := map[string]bool{}
	for _, id := range want {
		inWant[id] = true
	}
	for _, id := range got {
		if inWant[id] {
			order = append(order, id)
		}
	}
	if len(order) == len(want) {
		for i := range want {
			if order[i] != want[i] {
				t.Errorf("%s: item %d is %s, want %s (newest first)", what, i, order[i], want[i])
				break
			}
		}
	}
}

func ids(t *testing.T, e *env, query string, args ...any) []string {
	t.Helper()
	rows, err := e.pool.Query(e.ctx, query, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPaginationWalkWhileEntriesArrive(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Walker")
	scope := queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}
	va, other := e.openVA(c, "walker"), e.openVA(c, "other")
	e.must(e.inbound(c, va, 100_000, "rtp"))
	e.must(e.inbound(c, other, 100_000, "rtp"))
	for i := range 10 {
		e.must(e.manual(c, ledger.TypeFee, va, "debit", int64(10+i)))
		e.must(e.transfer(c, other, va, int64(5+i)))
	}
	e.must(e.inbound(c, va, 700, "ach_same_day")) // a pending one
	e.sync()

	// While the walks run, entries keep arriving and being projected.
	ctx, cancel := context.WithCancel(e.ctx)
	var bg sync.WaitGroup
	for _, s := range projections.NewSubscriptions(e.pool, nil) {
		s.PollInterval = 2 * time.Millisecond
		bg.Go(func() { s.Run(ctx) })
	}
	bg.Add(1)
	go func() {
		defer bg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			if i%2 == 0 {
				_, _ = e.manual(c, ledger.TypeAdjustment, va, "credit", 1)
			} else {
				_, _ = e.transfer(c, va, other, 1)
			}
			select {
			case <-ctx.Done():
			case <-time.After(25 * time.Millisecond):
			}
		}
	}()
	defer func() { cancel(); bg.Wait() }()
	// And, for certain, new ones between every two pages.
	between := func() {
		e.must(e.manual(c, ledger.TypeFee, va, "debit", 1))
		e.must(e.transfer(c, other, va, 2))
		e.sync()
	}

	t.Run("transactions", func(t *testing.T) {
		want := ids(t, e, `SELECT id FROM account_transactions WHERE virtual_account_id = $1 ORDER BY seq DESC`, va)
		got := walk(t, len(want), func(after string) (queries.List[queries.TransactionView], error) {
			return queries.ListTransactions(e.ctx, e.pool, scope, va, queries.TransactionFilter{}, queries.Page{After: after, Limit: 3})
		}, func(v queries.TransactionView) string { return v.ID }, between)
		if len(want) < 20 {
			t.Fatalf("only %d transactions to walk", len(want))
		}
		exactlyOnce(t, "transactions", want, got)
		for _, id := range got {
			if !domain.HasPrefix(id, domain.PrefixTransaction) {
				t.Errorf("transaction id %q", id)
			}
		}
	})

	t.Run("transactions filtered", func(t *testing.T) {
		want := ids(t, e, `SELECT id FROM account_transactions WHERE virtual_account_id = $1 AND type = 'fee' ORDER BY seq DESC`, va)
		got := walk(t, len(want), func(after string) (queries.List[queries.TransactionView], error) {
			return queries.ListTransactions(e.ctx, e.pool, scope, va, queries.TransactionFilter{Type: "fee"}, queries.Page{After: after, Limit: 3})
		}, func(v queries.TransactionView) string { return v.ID }, between)
		exactlyOnce(t, "fee transactions", want, got)
	})

	t.Run("ledger entries of the platform", func(t *testing.T) {
		want := ids(t, e, `SELECT id FROM ledger_entries WHERE platform_id = $1 ORDER BY seq DESC`, c.PlatformID)
		got := walk(t, len(want), func(after string) (queries.List[queries.LedgerEntryView], error) {
			return queries.ListLedgerEntries(e.ctx, e.pool, scope, queries.EntryFilter{}, queries.Page{After: after, Limit: 3})
		}, func(v queries.LedgerEntryView) string { return v.ID }, between)
		exactlyOnce(t, "ledger entries", want, got)
	})

	t.Run("ledger entries of one account", func(t *testing.T) {
		want := ids(t, e, `SELECT id FROM ledger_entries WHERE virtual_account_id = $1 ORDER BY seq DESC`, other)
		got := walk(t, len(want), func(after string) (queries.List[queries.LedgerEntryView], error) {
			return queries.ListLedgerEntries(e.ctx, e.pool, scope, queries.EntryFilter{VirtualAccountID: other}, queries.Page{After: after, Limit: 3})
		}, func(v queries.LedgerEntryView) string { return v.ID }, between)
		exactlyOnce(t, "entries of one account", want, got)
	})

	t.Run("virtual accounts", func(t *testing.T) {
		for i := range 7 {
			e.openVA(c, fmt.Sprintf("more_%d", i))
		}
		want := ids(t, e, `SELECT id FROM virtual_accounts WHERE platform_id = $1 ORDER BY id DESC`, c.PlatformID)
		got := walk(t, len(want), func(after string) (queries.List[queries.VirtualAccountView], error) {
			return queries.ListVirtualAccounts(e.ctx, e.pool, scope, queries.AccountFilter{}, queries.Page{After: after, Limit: 3})
		}, func(v queries.VirtualAccountView) string { return v.ID }, func() { e.openVA(c, "arriving") })
		exactlyOnce(t, "virtual accounts", want, got)
	})
}

// The window the test above stumbles on, made certain: the rebuild has
// begun (its snapshot is taken) and waits for the asynchronous subscriber,
// which holds its subscription's lock mid-batch; meanwhile commands commit. The
// rebuild must not lose them: once it is done, the inline projections hold
// every committed event.
func TestRebuildKeepsCommandsThatCommitWhileItWaits(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Window")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 1000, "rtp"))
	e.sync()

	// The subscribers are mid-batch: they hold their subscriptions' locks.
	sub, err := e.pool.Begin(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Rollback(context.Background())
	for _, name := range projections.AsyncNames() {
		if _, err := sub.Exec(e.ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.SubscriptionLock(name)); err != nil {
			t.Fatal(err)
		}
	}

	done := make(chan error, 1)
	go func() {
		_, err := rebuild.Run(e.ctx, e.pool)
		done <- err
	}()
	e.waitForSwapToWaitForSubscribers(t)

	// Commands commit while the rebuild waits.
	fee := e.must(e.manual(c, ledger.TypeFee, va, "debit", 300))
	late := e.openVA(c, "opened while the rebuild waits")
	e.must(e.inbound(c, late, 50, "rtp"))

	// The subscriber finishes its batch; the rebuild goes on.
	if err := sub.Rollback(e.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the rebuild did not finish")
	}
	e.sync()

	var posted int64
	if err := e.pool.QueryRow(e.ctx, `SELECT posted FROM account_balances WHERE virtual_account_id = $1`, va).Scan(&posted); err != nil {
		t.Fatal(err)
	}
	if posted != 700 {
		t.Errorf("after the rebuild %s has posted %d, want 700: the fee %s that committed while the rebuild waited is lost from account_balances",
			va, posted, fee)
	}
	var entries int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0)
        FROM ledger_entries WHERE virtual_account_id = $1 AND status = 'posted'`, va).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != 700 {
		t.Errorf("ledger entries of %s sum to %d, want 700", va, entries)
	}
	if _, err := queries.GetVirtualAccount(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, late); err != nil {
		t.Errorf("the account opened while the rebuild waited: %v", err)
	}
	// What the log says, a quiet rebuild makes.
	live := snapshot(t, e.ctx, e.pool)
	if _, err := rebuild.Run(e.ctx, e.pool); err != nil {
		t.Fatal(err)
	}
	e.sync()
	compare(t, "quiet rebuild", snapshot(t, e.ctx, e.pool), live)
}

// A subscription's first step ever inserts its checkpoint row while it
// holds the subscription's lock. A rebuild swapping meanwhile must wait
// for the lock before it makes the missing rows (it made them first, then
// waited for the lock: the step's insert waited for the rebuild's, and
// PostgreSQL broke the deadlock by failing one of them).
func TestRebuildWaitsForAFirstStepWithoutDeadlock(t *testing.T) {
	e := newEnv(t)
	c := e.platform("First step")
	va := e.openVA(c, "biz")
	e.must(e.inbound(c, va, 1000, "rtp"))
	e.sync()
	name := projections.LedgerSubscription
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM subscription_checkpoints WHERE name = $1`, name); err != nil {
		t.Fatal(err)
	}
	step, err := e.pool.Begin(e.ctx) // a first step, under way: it holds the lock
	if err != nil {
		t.Fatal(err)
	}
	defer step.Rollback(context.Background())
	if _, err := step.Exec(e.ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.SubscriptionLock(name)); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var stats rebuild.Stats
	go func() {
		var err error
		stats, err = rebuild.Run(e.ctx, e.pool)
		done <- err
	}()
	e.waitForSwapToWaitForSubscribers(t)
	// The step makes its row and commits; neither side may fail.
	if _, err := step.Exec(e.ctx, `INSERT INTO subscription_checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING`, name); err != nil {
		t.Fatalf("the first step's insert: %v", err)
	}
	if err := step.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("rebuild: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the rebuild did not finish")
	}
	if stats.SwapAttempts != 1 {
		t.Errorf("the swap took %d attempts, want 1: it deadlocked with the step and tried again", stats.SwapAttempts)
	}
}

// waitForSwapToWaitForSubscribers waits (bounded) until a rebuild's swap
// is blocked on the subscribers' locks.
func (e *env) waitForSwapToWaitForSubscribers(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var waiting bool
		if err := e.pool.QueryRow(e.ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
            WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'
              AND query LIKE '%pg_advisory_xact_lock(k)%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the rebuild never waited for the subscribers' locks")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
