package app_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// Helpers of the payment tests; their names start with "pay".

// payEnv is an env whose pool has room for many concurrent transactions.
func payEnv(t *testing.T, conns int32) *env {
	t.Helper()
	pool := newPool(t, conns)
	return &env{t: t, ctx: testCtx(t), pool: pool, a: newApp(t, pool)}
}

// paySubmission is a valid KYB submission the sandbox approves.
func paySubmission() kyb.Submission {
	addr := kyb.Address{Line1: "1 Main Street", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}
	return kyb.Submission{
		Business: kyb.Business{LegalName: "Acme Widgets LLC", EIN: "12-3456789", EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE", Address: addr},
		BeneficialOwner: []kyb.Owner{{FirstName: "Jane", LastName: "Roe", DateOfBirth: "1980-05-17", SSNLast4: "1234",
			OwnershipPercentage: decimal.NewFromInt(60), IsControlPerson: true, Address: addr}},
	}
}

// payApprove files KYB for the account's business and runs the sandbox decider.
func payApprove(e *env, c app.Caller, va string) {
	e.t.Helper()
	if _, err := e.a.SubmitKYB(e.ctx, app.Meta{}, nil, c, va, paySubmission()); err != nil {
		e.t.Fatalf("submit KYB: %v", err)
	}
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.a.KYBDecider(nil).CatchUpTo(e.ctx, head); err != nil {
		e.t.Fatalf("KYB decider: %v", err)
	}
	var status string
	if err := e.pool.QueryRow(e.ctx, `SELECT status FROM kyb_entities WHERE platform_id = $1 AND entity_ref = 'biz_1'`,
		c.PlatformID).Scan(&status); err != nil || status != kyb.StatusApproved {
		e.t.Fatalf("KYB status %q (%v), want approved", status, err)
	}
}

// payReady is a platform with one approved, funded account.
func payReady(e *env, funds int64) (app.Caller, string) {
	e.t.Helper()
	c := e.platform("Acme")
	va := e.openVA(c)
	payApprove(e, c, va)
	if funds > 0 {
		e.fund(c, va, funds)
	}
	return c, va
}

var payKeySeq atomic.Int64

// payIdem is an idempotency key of a create_payment request.
func payIdem(c app.Caller, key, hash string) *app.Idempotency {
	return &app.Idempotency{Scope: c.PlatformID, Environment: c.Environment.String(), Key: key,
		Operation: "create_payment", RequestHash: hash}
}

func payRequest(va string, amount int64, rail string) payment.Request {
	return payment.Request{VirtualAccountID: va, Amount: amount, Rail: rail,
		Destination: payment.Destination{AccountNumber: "123456789", RoutingNumber: "021000021", Name: "Initech LLC"}}
}

// payCreate creates a payment with a fresh key.
func payCreate(e *env, c app.Caller, req payment.Request) (app.Result, error) {
	k := fmt.Sprintf("pay-%d", payKeySeq.Add(1))
	return e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, k, k), c, req)
}

// payStatus reads a payment's status from its projection.
func payStatus(e *env, id string) string {
	e.t.Helper()
	var s string
	if err := e.pool.QueryRow(e.ctx, `SELECT status FROM payments WHERE id = $1`, id).Scan(&s); err != nil {
		e.t.Fatalf("payment %s: %v", id, err)
	}
	return s
}

// payWatch samples an account's available balance until stop is closed and
// returns the lowest value seen.
func payWatch(e *env, va string, stop <-chan struct{}) (lowest func() int64) {
	var low atomic.Int64
	low.Store(1 << 62)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var posted, out int64
			if err := e.pool.QueryRow(e.ctx, `SELECT posted, pending_outbound FROM account_balances WHERE virtual_account_id = $1`, va).
				Scan(&posted, &out); err == nil && posted-out < low.Load() {
				low.Store(posted - out)
			}
		}
	}()
	return func() int64 { wg.Wait(); return low.Load() }
}

// payCheckLedger catches the projections up and asserts double entry:
// Σ debits = Σ credits over all ledger entries (and per status and per
// journal entry), and every balance row equals the sums of its virtual
// account's entries.
func payCheckLedger(e *env) {
	e.t.Helper()
	t := e.t
	head, err := eventstore.Head(e.ctx, e.pool)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	if err := projections.CatchUp(ctx, e.pool, head, nil); err != nil {
		t.Fatalf("catch up projections: %v", err)
	}
	var debits, credits int64
	if err := e.pool.QueryRow(ctx, `SELECT coalesce(sum(amount) FILTER (WHERE direction = 'debit'), 0),
        coalesce(sum(amount) FILTER (WHERE direction = 'credit'), 0) FROM ledger_entries`).Scan(&debits, &credits); err != nil {
		t.Fatal(err)
	}
	if debits != credits || debits == 0 {
		t.Errorf("Σ debits %d, Σ credits %d", debits, credits)
	}
	var badStatus, badJournal int
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT status FROM ledger_entries GROUP BY status
        HAVING sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) <> 0) x`).Scan(&badStatus); err != nil {
		t.Fatal(err)
	}
	if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT journal_entry_id FROM ledger_entries GROUP BY journal_entry_id
        HAVING sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) <> 0 OR count(DISTINCT status) <> 1) x`).Scan(&badJournal); err != nil {
		t.Fatal(err)
	}
	if badStatus != 0 || badJournal != 0 {
		t.Errorf("%d statuses and %d journal entries are unbalanced", badStatus, badJournal)
	}
	rows, err := e.pool.Query(ctx, `SELECT b.virtual_account_id, b.posted, b.pending_inbound, b.pending_outbound,
            coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount ELSE -l.amount END) FILTER (WHERE l.status = 'posted'), 0),
            coalesce(sum(l.amount) FILTER (WHERE l.status = 'pending' AND l.direction = 'credit'), 0),
            coalesce(sum(l.amount) FILTER (WHERE l.status = 'pending' AND l.direction = 'debit'), 0)
        FROM account_balances b LEFT JOIN ledger_entries l ON l.virtual_account_id = b.virtual_account_id
        GROUP BY 1, 2, 3, 4`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var posted, in, out, sPosted, sIn, sOut int64
		if err := rows.Scan(&id, &posted, &in, &out, &sPosted, &sIn, &sOut); err != nil {
			t.Fatal(err)
		}
		if posted != sPosted || in != sIn || out != sOut {
			t.Errorf("%s: balance row %d/%d/%d, its entries say %d/%d/%d (posted/pending in/pending out)",
				id, posted, in, out, sPosted, sIn, sOut)
		}
		if posted-out < 0 {
			t.Errorf("%s: available %d", id, posted-out)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------------------

// An account funded for exactly N payments gets 3N concurrent payments:
// exactly N are accepted and 2N refused with insufficient_funds, and the
// available balance is never negative, not even for an instant.
func TestConcurrentPaymentsNeverOverdraw(t *testing.T) {
	const (
		n      = 15
		amount = 1_000
		fee    = 50 // rtp's default
	)
	e := payEnv(t, 3*n+8)
	c, va := payReady(e, n*(amount+fee))

	stop := make(chan struct{})
	lowest := payWatch(e, va, stop)
	start := make(chan struct{})
	ids := make([]string, 3*n)
	errs := make([]error, 3*n)
	var wg sync.WaitGroup
	for i := range 3 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := payCreate(e, c, payRequest(va, amount, "rtp"))
			ids[i], errs[i] = res.ID, err
		}()
	}
	close(start)
	wg.Wait()
	close(stop)

	var accepted []string
	refused := 0
	for i := range 3 * n {
		switch {
		case errs[i] == nil:
			accepted = append(accepted, ids[i])
		case domain.CodeOf(errs[i]) == domain.CodeInsufficientFunds:
			refused++
		default:
			t.Errorf("payment %d: unexpected error %v", i, errs[i])
		}
	}
	if len(accepted) != n || refused != 2*n {
		t.Errorf("%d accepted and %d insufficient_funds, want %d and %d", len(accepted), refused, n, 2*n)
	}
	if low := lowest(); low < 0 {
		t.Errorf("the available balance went down to %d", low)
	}
	e.wantBalance(va, ledger.Balance{Posted: n * (amount + fee), PendingOutbound: n * (amount + fee)})
	if got := count(t, e.ctx, e.pool, `SELECT count(*) FROM payments WHERE virtual_account_id = $1`, va); got != n {
		t.Errorf("%d payment rows, want %d", got, n)
	}
	if got := e.countEvents("payment.created"); got != n {
		t.Errorf("%d payment.created events, want %d", got, n)
	}
	if got := count(t, e.ctx, e.pool, `SELECT count(*) FROM idempotency_keys`); got != n {
		t.Errorf("%d idempotency keys stored, want %d (refused requests store none)", got, n)
	}

	// Settle them all at once too: some complete, some fail, one is returned
	// after completing. The balance ends exactly where the sums say.
	var completed int64
	var settle sync.WaitGroup
	settleErrs := make([]error, len(accepted))
	for i, id := range accepted {
		settle.Add(1)
		go func() {
			defer settle.Done()
			if i%3 == 0 {
				settleErrs[i] = e.a.FailPayment(e.ctx, app.Meta{}, nil, id, "AC03")
			} else {
				settleErrs[i] = e.a.CompletePayment(e.ctx, app.Meta{}, nil, id)
			}
		}()
	}
	settle.Wait()
	for i, err := range settleErrs {
		if err != nil {
			t.Fatalf("settle %s: %v", accepted[i], err)
		}
		if i%3 != 0 {
			completed++
		}
	}
	// An instant payment is final once completed: no return.
	if err := e.a.FailPayment(e.ctx, app.Meta{}, &c, accepted[1], "AC04"); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Fatalf("return of a completed RTP payment: %v, want invalid_state", err)
	}
	e.wantBalance(va, ledger.Balance{Posted: (n - completed) * (amount + fee)})
	payCheckLedger(e)
	var revenue int64
	if err := e.pool.QueryRow(e.ctx, `SELECT coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount ELSE -l.amount END), 0)
        FROM ledger_entries l JOIN ledger_accounts a ON a.id = l.ledger_account_id
        WHERE a.platform_id = $1 AND a.code = $2 AND l.status = 'posted'`, c.PlatformID, ledger.CodeServiceFeeRevenue).Scan(&revenue); err != nil {
		t.Fatal(err)
	}
	if revenue != completed*fee {
		t.Errorf("service fee revenue %d, want %d", revenue, completed*fee)
	}
}

// The daily limit holds under concurrency too: payments of one account
// see each other under the balance lock.
func TestConcurrentPaymentsRespectTheDailyLimit(t *testing.T) {
	const n, amount = 10, 1_000
	e := payEnv(t, 3*n+8)
	c, va := payReady(e, 1_000_000)
	limit := int64(n * amount)
	if err := e.a.UpdateSettings(e.ctx, app.Meta{}, c.PlatformID, c.Environment,
		platform.SettingsPatch{DailyPaymentLimit: domain.Some(limit)}); err != nil {
		t.Fatal(err)
	}
	start := make(chan struct{})
	errs := make([]error, 3*n)
	var wg sync.WaitGroup
	for i := range 3 * n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = payCreate(e, c, payRequest(va, amount, "ach_standard"))
		}()
	}
	close(start)
	wg.Wait()
	ok, limited := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case domain.CodeOf(err) == domain.CodeLimitExceeded:
			limited++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != n || limited != 2*n {
		t.Errorf("%d accepted and %d limit_exceeded, want %d and %d", ok, limited, n, 2*n)
	}
	e.wantBalance(va, ledger.Balance{Posted: 1_000_000, PendingOutbound: n * (amount + 25)})
}

// 20 concurrent identical requests with one key make one payment, and
// every caller gets its id (or idempotency_in_progress).
func TestConcurrentIdenticalPaymentRequestsMakeOnePayment(t *testing.T) {
	const workers = 20
	e := payEnv(t, workers+8)
	c, va := payReady(e, 100_000)
	k := payIdem(c, "one-key", "same-request")
	req := payRequest(va, 1_000, "ach_same_day")

	results := make([]app.Result, workers)
	errs := make([]error, workers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = e.a.CreatePayment(e.ctx, app.Meta{RequestID: fmt.Sprintf("req_%d", i)}, k, c, req)
		}()
	}
	close(start)
	wg.Wait()

	var id string
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM payments`).Scan(&id); err != nil {
		t.Fatalf("the one payment: %v", err)
	}
	fresh := 0
	for i := range workers {
		switch {
		case errs[i] == nil && results[i].ID == id:
			if !results[i].Replayed {
				fresh++
			}
		default:
			t.Errorf("call %d: %+v, %v; want %s (a duplicate waits for the first and replays it)", i, results[i], errs[i], id)
		}
	}
	if fresh != 1 {
		t.Errorf("%d calls claim to have created the payment, want 1", fresh)
	}
	if got := count(t, e.ctx, e.pool, `SELECT count(*) FROM payments`); got != 1 {
		t.Errorf("%d payment rows, want 1", got)
	}
	if got := e.countEvents("payment.created"); got != 1 {
		t.Errorf("%d payment.created events, want 1", got)
	}
	e.wantBalance(va, ledger.Balance{Posted: 100_000, PendingOutbound: 1_100})

	// Two different requests racing on one key: one payment; callers of
	// the other request get a conflict naming it.
	k2 := func(i int) *app.Idempotency { return payIdem(c, "two-requests", fmt.Sprintf("hash-%d", i%2)) }
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = e.a.CreatePayment(e.ctx, app.Meta{}, k2(i), c, payRequest(va, int64(100+i%2), "rtp"))
		}()
	}
	wg.Wait()
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM payments WHERE idempotency_key = 'two-requests'`).Scan(&id); err != nil {
		t.Fatalf("the one payment of the second race: %v", err)
	}
	for i := range workers {
		if errs[i] == nil && results[i].ID == id {
			continue
		}
		if de := wantCode(t, errs[i], domain.CodeIdempotencyConflict); de.ResourceID != id {
			t.Errorf("conflict names %q, want %s", de.ResourceID, id)
		}
	}
	if got := count(t, e.ctx, e.pool, `SELECT count(*) FROM payments`); got != 2 {
		t.Errorf("%d payment rows, want 2", got)
	}
}

// The ledger of a payment through each of its ends: the hold is one
// pending journal entry (amount to the rail's clearing account, fee to
// service fee revenue); completion posts it, failure or cancel archives
// it, and a return after completion posts its mirror image.
func TestPaymentJournalEntries(t *testing.T) {
	e := payEnv(t, 8)
	const funds = 100_000
	c, va := payReady(e, funds)
	chart := e.chart(c)
	la := e.ledgerAccount(va)
	ids := map[string]string{}
	for _, end := range []string{"complete", "fail", "cancel", "return"} {
		res, err := payCreate(e, c, payRequest(va, 1_000, "ach_same_day"))
		if err != nil {
			t.Fatalf("%s: %v", end, err)
		}
		ids[end] = res.ID
	}
	e.wantBalance(va, ledger.Balance{Posted: funds, PendingOutbound: 4 * 1_100})
	if err := e.a.SubmitPayment(e.ctx, app.Meta{}, ids["fail"]); err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		e.a.CompletePayment(e.ctx, app.Meta{}, &c, ids["complete"]),
		e.a.FailPayment(e.ctx, app.Meta{}, &c, ids["fail"], "R03"),
		e.a.CancelPayment(e.ctx, app.Meta{}, c, ids["cancel"]),
		e.a.CompletePayment(e.ctx, app.Meta{}, nil, ids["return"]),
		e.a.FailPayment(e.ctx, app.Meta{}, nil, ids["return"], "R02"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Canceling anything but a pending payment is refused.
	for _, id := range ids {
		wantCode(t, e.a.CancelPayment(e.ctx, app.Meta{}, c, id), domain.CodePaymentNotCancelable)
	}
	// Another platform's caller does not find them.
	other := e.platform("Other")
	wantCode(t, e.a.CancelPayment(e.ctx, app.Meta{}, other, ids["complete"]), domain.CodeNotFound)
	wantCode(t, e.a.CompletePayment(e.ctx, app.Meta{}, &other, ids["complete"]), domain.CodeNotFound)

	e.wantBalance(va, ledger.Balance{Posted: funds - 1_100})
	for end, want := range map[string]string{"complete": "completed", "fail": "failed", "cancel": "canceled", "return": "failed"} {
		if got := payStatus(e, ids[end]); got != want {
			t.Errorf("%s: status %s, want %s", end, got, want)
		}
	}
	payCheckLedger(e)

	hold := []entryShape{
		{la: la, va: va, dir: "debit", amount: 1_000, typ: ledger.TypePayment},
		{la: chart[ledger.RailClearing("ach_same_day")], dir: "credit", amount: 1_000, typ: ledger.TypePayment},
	}
	fees := []entryShape{
		{la: la, va: va, dir: "debit", amount: 100, typ: ledger.TypePaymentFee},
		{la: chart[ledger.CodeServiceFeeRevenue], dir: "credit", amount: 100, typ: ledger.TypePaymentFee},
	}
	for end, status := range map[string]string{"complete": "posted", "fail": "archived", "cancel": "archived", "return": "posted"} {
		var je string
		if err := e.pool.QueryRow(e.ctx, `SELECT journal_entry_id FROM payments WHERE id = $1`, ids[end]).Scan(&je); err != nil {
			t.Fatal(err)
		}
		v := e.journal(c, je)
		if v.Status != status || v.Type != ledger.TypePayment || len(v.Entries) != 4 {
			t.Errorf("%s: journal entry %s is %s %s with %d entries, want %s payment with 4", end, je, v.Type, v.Status, len(v.Entries), status)
			continue
		}
		got := map[string]int64{}
		for _, le := range v.Entries {
			vaID := ""
			if le.VirtualAccountID != nil {
				vaID = *le.VirtualAccountID
			}
			got[fmt.Sprintf("%s/%s/%s/%s", le.LedgerAccountID, vaID, le.Direction, le.Type)] += le.Amount
		}
		for _, s := range append(hold, fees...) {
			if got[fmt.Sprintf("%s/%s/%s/%s", s.la, s.va, s.dir, s.typ)] != s.amount {
				t.Errorf("%s: entries %v lack %+v", end, got, s)
			}
		}
		if end == "return" {
			if v.ReversedBy == nil {
				t.Errorf("the returned payment's entry is not reversed")
				continue
			}
			r := e.journal(c, *v.ReversedBy)
			if r.Type != ledger.TypePaymentReversal || r.Status != ledger.StatusPosted || len(r.Entries) != 4 {
				t.Errorf("reversal %+v", r)
			}
			var back int64
			for _, le := range r.Entries {
				if le.VirtualAccountID != nil && *le.VirtualAccountID == va && le.Direction == "credit" {
					back += le.Amount
				}
			}
			if back != 1_100 {
				t.Errorf("the reversal credits the account %d, want 1100", back)
			}
		}
	}
}

// Cancel and settlement race: each payment ends either canceled (hold
// released) or completed (posted), never both, and the balance says so.
func TestCancelRacesSettlement(t *testing.T) {
	const n, amount = 20, 1_000
	e := payEnv(t, 2*n+8)
	c, va := payReady(e, n*(amount+25))
	var ids []string
	for range n {
		res, err := payCreate(e, c, payRequest(va, amount, "ach_standard"))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.ID)
	}
	cancelErrs := make([]error, n)
	completeErrs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			<-start
			cancelErrs[i] = e.a.CancelPayment(e.ctx, app.Meta{}, c, id)
		}()
		go func() {
			defer wg.Done()
			<-start
			completeErrs[i] = e.a.CompletePayment(e.ctx, app.Meta{}, nil, id)
		}()
	}
	close(start)
	wg.Wait()
	var completed int64
	for i, id := range ids {
		st := payStatus(e, id)
		switch {
		case st == payment.StatusCanceled && cancelErrs[i] == nil && domain.CodeOf(completeErrs[i]) == domain.CodeInvalidState:
		case st == payment.StatusCompleted && completeErrs[i] == nil && domain.CodeOf(cancelErrs[i]) == domain.CodePaymentNotCancelable:
			completed++
		default:
			t.Errorf("%s: %s, cancel %v, complete %v", id, st, cancelErrs[i], completeErrs[i])
		}
		ev := 0
		for _, typ := range []string{"payment.canceled", "payment.completed"} {
			ev += count(t, e.ctx, e.pool, `SELECT count(*) FROM events WHERE stream_id = $1 AND event_type = $2`, payment.StreamID(id), typ)
		}
		if ev != 1 {
			t.Errorf("%s has %d cancel/complete events, want 1", id, ev)
		}
	}
	t.Logf("%d completed, %d canceled", completed, n-completed)
	e.wantBalance(va, ledger.Balance{Posted: (n - completed) * (amount + 25)})
	payCheckLedger(e)
}

// TestPaymentKeyReusedOnForeignAccount: a key reused with another
// platform's account (or another environment's view of one's own) is a
// conflict naming the first payment, never a lookup of that account; a
// fresh key on such an account is not found, and nothing is written.
func TestPaymentKeyReusedOnForeignAccount(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 100_000)
	other := e.platform("Other")
	foreign := e.openVA(other)

	first, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "k-1", "h-1"), c, payRequest(va, 100, "rtp"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "k-1", "h-2"), c, payRequest(foreign, 100, "rtp"))
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeIdempotencyConflict || de.ResourceID != first.ID {
		t.Errorf("reused key on another platform's account: %v, want idempotency_conflict naming %s", err, first.ID)
	}
	if _, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "k-2", "h-3"), c, payRequest(foreign, 100, "rtp")); domain.CodeOf(err) != domain.CodeNotFound {
		t.Errorf("another platform's account with a fresh key: %v, want not_found", err)
	}
	live := app.Caller{PlatformID: c.PlatformID, Environment: domain.Live}
	if _, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(live, "k-3", "h-4"), live, payRequest(va, 100, "rtp")); domain.CodeOf(err) != domain.CodeNotFound {
		t.Errorf("the sandbox account asked for with live credentials: %v, want not_found", err)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM payments`); n != 1 {
		t.Errorf("%d payments, want 1", n)
	}
	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM idempotency_keys WHERE operation = 'create_payment'`); n != 1 {
		t.Errorf("%d payment keys stored, want 1 (refused requests store none)", n)
	}
}

// TestCreatePaymentAnswersWithWhatItWrote: a new payment comes back as its
// transaction wrote it (read in the same batch as the inline writes, so
// the API need not read it back after the commit); a replay carries none.
func TestCreatePaymentAnswersWithWhatItWrote(t *testing.T) {
	e := payEnv(t, 8)
	c, va := payReady(e, 100_000)
	res, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "k-view", "h"), c, payRequest(va, 250, "ach_standard"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Payment == nil {
		t.Fatal("CreatePayment returned no payment")
	}
	stored, err := queries.GetPayment(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*res.Payment, stored) {
		t.Errorf("returned %+v\nstored   %+v", *res.Payment, stored)
	}
	again, err := e.a.CreatePayment(e.ctx, app.Meta{}, payIdem(c, "k-view", "h"), c, payRequest(va, 250, "ach_standard"))
	if err != nil || !again.Replayed || again.ID != res.ID || again.Payment != nil {
		t.Errorf("replay: %+v, %v; want the same id, replayed, no payment", again, err)
	}
}
