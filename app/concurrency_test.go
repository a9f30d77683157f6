package app_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/projections"
)

// Many goroutines debit one account with manual entries: exactly as many
// succeed as the funds allow, the rest are insufficient_funds, and the
// balance never goes below zero, not even for an instant.
func TestConcurrentDebitsNeverOverdraw(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	const (
		n          = 40 // debits the funds allow
		goroutines = 64
		perG       = 3
		amount     = 100
	)
	e.fund(c, va, n*amount)
	e.wantBalance(va, ledger.Balance{Posted: n * amount})

	// A watcher samples the balance row while the debits run.
	stop := make(chan struct{})
	var minAvailable atomic.Int64
	minAvailable.Store(n * amount)
	var watch sync.WaitGroup
	watch.Add(1)
	go func() {
		defer watch.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var posted, out int64
			if err := e.pool.QueryRow(e.ctx, `SELECT posted, pending_outbound FROM account_balances WHERE virtual_account_id = $1`, va).
				Scan(&posted, &out); err == nil && posted-out < minAvailable.Load() {
				minAvailable.Store(posted - out)
			}
		}
	}()

	start := make(chan struct{})
	var ok, refused atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var unexpected []error
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range perG {
				_, err := e.manual(c, ledger.TypeFee, va, "debit", amount)
				switch {
				case err == nil:
					ok.Add(1)
				case domain.CodeOf(err) == domain.CodeInsufficientFunds:
					refused.Add(1)
				default:
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	close(stop)
	watch.Wait()

	for _, err := range unexpected {
		t.Errorf("unexpected error: %v", err)
	}
	if ok.Load() != n || refused.Load() != goroutines*perG-n {
		t.Errorf("%d succeeded and %d refused; want %d and %d", ok.Load(), refused.Load(), n, goroutines*perG-n)
	}
	if m := minAvailable.Load(); m < 0 {
		t.Errorf("available balance went down to %d", m)
	}
	e.wantBalance(va, ledger.Balance{})
	var negative int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(*) FROM account_balances
        WHERE posted < 0 OR pending_inbound < 0 OR pending_outbound < 0 OR posted - pending_outbound < 0`).Scan(&negative); err != nil || negative != 0 {
		t.Errorf("%d negative balance rows (%v)", negative, err)
	}
	if got := e.countEvents("ledger.journal_entry.recorded"); got != n+1 {
		t.Errorf("%d journal entries recorded, want %d (the funding and %d debits)", got, n+1, n)
	}

	e.sync()
	var sum, debits int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0),
            count(*) FILTER (WHERE direction = 'debit')
        FROM ledger_entries WHERE virtual_account_id = $1 AND status = 'posted'`, va).Scan(&sum, &debits); err != nil {
		t.Fatal(err)
	}
	if sum != 0 || debits != n {
		t.Errorf("the account's entries sum to %d over %d debits, want 0 over %d", sum, debits, n)
	}
}

// mixed runs a concurrent mixed workload over several accounts of two
// platforms. Refusals the rules allow (insufficient funds, invalid state)
// are expected; anything else fails the test.
type mixed struct {
	e       *env
	callers []app.Caller
	vas     map[string][]string // platform → its virtual accounts

	mu      sync.Mutex
	entries map[string][]string // platform → manual journal entries to reverse
	pending []string            // ACH transfers not completed yet
	counts  map[string]int
}

func newMixed(e *env, platforms, accounts int) *mixed {
	m := &mixed{e: e, vas: map[string][]string{}, entries: map[string][]string{}, counts: map[string]int{}}
	for p := range platforms {
		c := e.platform("Platform " + string(rune('A'+p)))
		m.callers = append(m.callers, c)
		for range accounts {
			va := e.openVA(c)
			e.fund(c, va, 10_000)
			m.vas[c.PlatformID] = append(m.vas[c.PlatformID], va)
		}
	}
	return m
}

func (m *mixed) count(what string) {
	m.mu.Lock()
	m.counts[what]++
	m.mu.Unlock()
}

// run performs ops operations in each of workers goroutines.
func (m *mixed) run(t *testing.T, workers, ops int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 42))
			for range ops {
				if err := m.step(r); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
}

func (m *mixed) step(r *rand.Rand) error {
	e := m.e
	c := m.callers[r.IntN(len(m.callers))]
	vas := m.vas[c.PlatformID]
	va := vas[r.IntN(len(vas))]
	amount := int64(1 + r.IntN(5000))
	var err error
	var what string
	switch op := r.IntN(11); op {
	case 0:
		what = "inbound rtp"
		_, err = e.inbound(c, va, amount, "rtp")
	case 1:
		what = "inbound ach"
		var id string
		rail := "ach_same_day"
		if r.IntN(2) == 0 {
			rail = "ach_standard"
		}
		id, err = e.inbound(c, va, amount, rail)
		if err == nil {
			m.mu.Lock()
			m.pending = append(m.pending, id)
			m.mu.Unlock()
		}
	case 2:
		what = "complete ach"
		m.mu.Lock()
		var id string
		if len(m.pending) > 0 && r.IntN(3) > 0 { // leave some pending
			i := r.IntN(len(m.pending))
			id = m.pending[i]
			m.pending = append(m.pending[:i], m.pending[i+1:]...)
		}
		m.mu.Unlock()
		if id == "" {
			what = "complete ach: none pending"
		} else {
			err = e.a.CompleteInboundTransfer(e.ctx, app.Meta{}, id)
		}
	case 3, 4:
		what = "fee"
		err = m.remember(c, func() (app.Result, error) { return e.manual(c, ledger.TypeFee, va, "debit", amount) })
	case 5:
		what = "adjustment credit"
		err = m.remember(c, func() (app.Result, error) { return e.manual(c, ledger.TypeAdjustment, va, "credit", amount) })
	case 6:
		what = "adjustment debit"
		err = m.remember(c, func() (app.Result, error) { return e.manual(c, ledger.TypeAdjustment, va, "debit", amount) })
	case 7, 8:
		what = "transfer"
		to := vas[r.IntN(len(vas))]
		err = m.remember(c, func() (app.Result, error) {
			return e.lines(c, ledger.TypeAdjustment, vaLine(va, "debit", amount), vaLine(to, "credit", amount))
		})
	case 9:
		what = "reversal"
		m.mu.Lock()
		list := m.entries[c.PlatformID]
		var je string
		if len(list) > 0 {
			je = list[r.IntN(len(list))]
		}
		m.mu.Unlock()
		if je != "" {
			_, err = e.reverse(c, je)
		}
	case 10:
		if r.IntN(2) == 0 {
			what = "freeze"
			err = e.a.FreezeVirtualAccount(e.ctx, app.Meta{}, c, va)
		} else {
			what = "unfreeze"
			err = e.a.UnfreezeVirtualAccount(e.ctx, app.Meta{}, c, va)
		}
	}
	switch domain.CodeOf(err) {
	case "":
		if err != nil {
			return err
		}
		m.count(what)
	case domain.CodeInsufficientFunds:
		m.count(what + " refused")
		m.count("insufficient funds")
	case domain.CodeInvalidState:
		m.count(what + " refused")
	default:
		return err
	}
	return nil
}

func (m *mixed) remember(c app.Caller, post func() (app.Result, error)) error {
	res, err := post()
	if err == nil {
		m.mu.Lock()
		m.entries[c.PlatformID] = append(m.entries[c.PlatformID], res.ID)
		m.mu.Unlock()
	}
	return err
}

// checkLedger asserts the double-entry invariants over the whole ledger
// and that every balance row equals the sums of its account's entries.
func checkLedger(t *testing.T, e *env) {
	t.Helper()
	ctx := e.ctx
	rows, err := e.pool.Query(ctx, `SELECT status,
            coalesce(sum(amount) FILTER (WHERE direction = 'debit'), 0),
            coalesce(sum(amount) FILTER (WHERE direction = 'credit'), 0), count(*)
        FROM ledger_entries GROUP BY status ORDER BY status`)
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[string]bool{}
	for rows.Next() {
		var status string
		var debits, credits, n int64
		if err := rows.Scan(&status, &debits, &credits, &n); err != nil {
			t.Fatal(err)
		}
		statuses[status] = true
		if debits != credits {
			t.Errorf("%s entries: Σ debits %d ≠ Σ credits %d", status, debits, credits)
		}
		t.Logf("%s: %d entries, Σ debits = Σ credits = %d", status, n, debits)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !statuses["posted"] || !statuses["pending"] {
		t.Errorf("the workload should leave posted and pending entries, got %v", statuses)
	}

	var unbalanced, lonely int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM (
            SELECT journal_entry_id FROM ledger_entries GROUP BY journal_entry_id
            HAVING sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) <> 0
                OR count(DISTINCT status) <> 1 OR count(*) < 2) x`).Scan(&unbalanced); err != nil {
		t.Fatal(err)
	}
	if unbalanced != 0 {
		t.Errorf("%d journal entries are unbalanced, mixed in status or have fewer than 2 lines", unbalanced)
	}
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM journal_entries j
        WHERE NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.journal_entry_id = j.id)
           OR j.status <> (SELECT min(status) FROM ledger_entries l WHERE l.journal_entry_id = j.id)`).Scan(&lonely); err != nil {
		t.Fatal(err)
	}
	if lonely != 0 {
		t.Errorf("%d journal entries disagree with their ledger entries", lonely)
	}
	var journals, recorded int
	if err := e.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM journal_entries),
        (SELECT count(*) FROM events WHERE event_type = 'ledger.journal_entry.recorded')`).Scan(&journals, &recorded); err != nil {
		t.Fatal(err)
	}
	if journals != recorded {
		t.Errorf("%d journal entries projected, %d recorded in the log", journals, recorded)
	}

	// Every virtual account: its balance row is the sum of its entries,
	// by virtual account id and by its ledger account id alike.
	rows, err = e.pool.Query(ctx, `SELECT v.id, b.posted, b.pending_inbound, b.pending_outbound,
            coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount ELSE -l.amount END) FILTER (WHERE l.status = 'posted'), 0),
            coalesce(sum(l.amount) FILTER (WHERE l.status = 'pending' AND l.direction = 'credit'), 0),
            coalesce(sum(l.amount) FILTER (WHERE l.status = 'pending' AND l.direction = 'debit'), 0),
            count(l.id) FILTER (WHERE l.virtual_account_id IS DISTINCT FROM v.id),
            (SELECT coalesce(sum(t.amount), 0) FROM account_transactions t WHERE t.virtual_account_id = v.id AND t.status = 'posted')
        FROM virtual_accounts v
        JOIN account_balances b ON b.virtual_account_id = v.id
        LEFT JOIN ledger_entries l ON l.ledger_account_id = v.ledger_account_id
        GROUP BY v.id, b.posted, b.pending_inbound, b.pending_outbound ORDER BY v.id`)
	if err != nil {
		t.Fatal(err)
	}
	accounts := 0
	for rows.Next() {
		var id string
		var posted, in, out, sumPosted, sumIn, sumOut, foreign, txns int64
		if err := rows.Scan(&id, &posted, &in, &out, &sumPosted, &sumIn, &sumOut, &foreign, &txns); err != nil {
			t.Fatal(err)
		}
		accounts++
		if posted != sumPosted || in != sumIn || out != sumOut {
			t.Errorf("%s: balance row posted %d / pending in %d / pending out %d, entries say %d / %d / %d",
				id, posted, in, out, sumPosted, sumIn, sumOut)
		}
		if foreign != 0 {
			t.Errorf("%s: %d entries on its ledger account do not name it", id, foreign)
		}
		if txns != posted {
			t.Errorf("%s: posted transactions sum to %d, balance %d", id, txns, posted)
		}
		if posted-out < 0 {
			t.Errorf("%s: available %d", id, posted-out)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if accounts == 0 {
		t.Fatal("no accounts checked")
	}
	var orphan int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries l
        WHERE l.virtual_account_id IS NOT NULL AND NOT EXISTS (
            SELECT 1 FROM virtual_accounts v WHERE v.id = l.virtual_account_id AND v.ledger_account_id = l.ledger_account_id)`).Scan(&orphan); err != nil {
		t.Fatal(err)
	}
	if orphan != 0 {
		t.Errorf("%d ledger entries name a virtual account but not its ledger account", orphan)
	}
}

func TestConcurrentMixedWorkloadKeepsTheLedgerBalanced(t *testing.T) {
	e := newEnv(t)
	m := newMixed(e, 2, 4)
	// The async projections run during the workload too, as in production.
	ctx, cancel := context.WithCancel(e.ctx)
	var sub sync.WaitGroup
	for _, s := range projections.NewSubscriptions(e.pool, nil) {
		s.PollInterval = 5 * time.Millisecond
		sub.Go(func() { s.Run(ctx) })
	}
	m.run(t, 24, 25)
	cancel()
	sub.Wait()
	t.Logf("workload: %v", m.counts)
	for _, op := range []string{"fee", "transfer", "reversal", "inbound ach", "complete ach", "freeze", "insufficient funds"} {
		if m.counts[op] == 0 {
			t.Errorf("the workload never saw a successful %q: %v", op, m.counts)
		}
	}
	e.sync()
	checkLedger(t, e)
}
