package app_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/projections/rebuild"
)

// Tests of live mode's outbound ACH files (issue #16). Helpers start with "ach".

var achOriginator = ach.Originator{RoutingNumber: "021000021", Origin: "1234567890", CompanyID: "1234567890", CompanyName: "TREASURY"}

// achLive is a live platform's account, its business approved by the
// operator and funds credited from the platform's operating account.
func achLive(e *env, name string, funds int64) (app.Caller, string) {
	e.t.Helper()
	live := e.live(e.platform(name))
	va := e.openFor(live, "biz_1")
	id := e.submitOK(live, va, kybSubmission("12-3456789", "4321"))
	e.decide()
	if err := e.a.DecideKYB(e.ctx, operatorMeta("req_op"), nil, manualDecision(id, kyb.StatusApproved)); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.a.FundPlatform(e.ctx, app.Meta{}, nil, app.FundPlatform{PlatformID: live.PlatformID,
		Environment: domain.Live, Amount: amt(funds)}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.manual(live, ledger.TypeAdjustment, va, "credit", funds); err != nil {
		e.t.Fatal(err)
	}
	return live, va
}

func achPay(e *env, c app.Caller, va string, amount int64, rail string) string {
	e.t.Helper()
	res, err := payCreate(e, c, payRequest(va, amount, rail))
	if err != nil {
		e.t.Fatalf("create %s payment: %v", rail, err)
	}
	return res.ID
}

func achPayment(e *env, c app.Caller, id string) queries.PaymentView {
	e.t.Helper()
	p, err := queries.GetPayment(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func TestACHCutSubmitsThePendingLivePaymentsOfItsWindow(t *testing.T) {
	e := newEnv(t)
	live, va := achLive(e, "Acme", 1_000_000)
	sameDay1 := achPay(e, live, va, 1000, "ach_same_day")
	standard := achPay(e, live, va, 2000, "ach_standard")
	instant := achPay(e, live, va, 3000, "rtp")
	sameDay2 := achPay(e, live, va, 4000, "ach_same_day")
	canceled := achPay(e, live, va, 5000, "ach_same_day")
	if err := e.a.CancelPayment(e.ctx, app.Meta{}, live, canceled); err != nil {
		t.Fatal(err)
	}
	sandbox, sva := payReady(e, 100_000)
	sandboxACH := achPay(e, sandbox, sva, 1000, "ach_same_day")

	// A same-day window: the same-day payments only.
	f, err := e.a.CutACHFile(e.ctx, operatorMeta("req_cut"), achOriginator, false)
	if err != nil || f == nil {
		t.Fatalf("cut = %+v, %v", f, err)
	}
	var inFile []string
	for i, en := range f.Entries {
		inFile = append(inFile, en.PaymentID)
		if want := fmt.Sprintf("02100002%07d", i+1); en.TraceNumber != want {
			t.Errorf("entry %d: trace %s, want %s", i, en.TraceNumber, want)
		}
	}
	if !slices.Equal(inFile, []string{sameDay1, sameDay2}) || f.IDModifier != "A" || f.TotalCredit() != 5000 {
		t.Fatalf("the file holds %v (modifier %s, %d cents)", inFile, f.IDModifier, f.TotalCredit())
	}
	for i, id := range inFile {
		p := achPayment(e, live, id)
		if p.Status != payment.StatusSubmitted || p.TraceNumber != f.Entries[i].TraceNumber || p.ACHFileID != f.ACHFileID || p.SubmittedAt == nil {
			t.Errorf("payment %s: %s, trace %q, file %q", id, p.Status, p.TraceNumber, p.ACHFileID)
		}
	}
	for _, id := range []string{standard, instant} {
		if p := achPayment(e, live, id); p.Status != payment.StatusPending || p.TraceNumber != "" || p.ACHFileID != "" {
			t.Errorf("payment %s left out of the window: %s, trace %q", id, p.Status, p.TraceNumber)
		}
	}
	if p := achPayment(e, live, canceled); p.Status != payment.StatusCanceled {
		t.Errorf("the canceled payment is %s", p.Status)
	}
	if p := achPayment(e, sandbox, sandboxACH); p.Status != payment.StatusPending || p.ACHFileID != "" {
		t.Errorf("a sandbox payment went in a live file: %+v", p)
	}

	// Cut, not yet in the outbox: what the connector writes (again).
	untransmitted, err := e.a.UntransmittedACHFiles(e.ctx)
	if err != nil || len(untransmitted) != 1 || untransmitted[0].ACHFileID != f.ACHFileID || !slices.Equal(untransmitted[0].Entries, f.Entries) {
		t.Fatalf("untransmitted = %+v, %v", untransmitted, err)
	}
	var count int
	var total int64
	var transmitted *string
	if err := e.pool.QueryRow(e.ctx, `SELECT entry_count, total_credit, transmitted_at::text FROM ach_files WHERE id = $1`,
		f.ACHFileID).Scan(&count, &total, &transmitted); err != nil || count != 2 || total != 5000 || transmitted != nil {
		t.Fatalf("ach_files row: %d, %d, %v, %v", count, total, transmitted, err)
	}
	for range 2 { // recorded twice (a recovery that wrote it again): one event
		if err := e.a.TransmitACHFile(e.ctx, app.Meta{}, f.Day, f.ACHFileID); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.countEvents(ach.FileTransmitted{}.EventType()); n != 1 {
		t.Errorf("%d transmitted events", n)
	}
	if untransmitted, _ := e.a.UntransmittedACHFiles(e.ctx); len(untransmitted) != 0 {
		t.Errorf("after transmission: %+v", untransmitted)
	}
	wantCode(t, e.a.TransmitACHFile(e.ctx, app.Meta{}, f.Day, "achf_none"), domain.CodeNotFound)

	// The day's last window takes the standard one, numbering on.
	g, err := e.a.CutACHFile(e.ctx, operatorMeta("req_cut"), achOriginator, true)
	if err != nil || g == nil || len(g.Entries) != 1 || g.Entries[0].PaymentID != standard || g.IDModifier != "B" ||
		g.Entries[0].TraceNumber != "021000020000003" {
		t.Fatalf("second cut = %+v, %v", g, err)
	}
	// Nothing left: no file.
	if h, err := e.a.CutACHFile(e.ctx, operatorMeta("req_cut"), achOriginator, true); err != nil || h != nil {
		t.Fatalf("third cut = %+v, %v", h, err)
	}
	// The files and the payments' trace numbers are projections of the log
	// like any other: a replay gives the same rows.
	diffs, _, err := rebuild.CompareWithLog(e.ctx, e.pool)
	if err != nil || len(diffs) != 0 {
		t.Fatalf("the projections differ from the log: %+v, %v", diffs, err)
	}
}

// Cuts racing each other never put a payment in two files, nor hand out a
// modifier or a trace number twice.
func TestACHCutsRacingShareNothing(t *testing.T) {
	e := payEnv(t, 24)
	live, va := achLive(e, "Acme", 10_000_000)
	var ids []string
	for i := range 60 {
		ids = append(ids, achPay(e, live, va, int64(100+i), "ach_same_day"))
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		files []*ach.FileCreated
		errs  []error
	)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				f, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if f != nil {
					files = append(files, f)
				}
				mu.Unlock()
			}
		}()
		// Payments keep arriving while the cuts run.
		ids = append(ids, achPay(e, live, va, 7, "ach_same_day"))
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("cuts failed: %v", errs)
	}
	inFile := map[string]string{}
	modifiers, traces := map[string]bool{}, map[string]bool{}
	for _, f := range files {
		if modifiers[f.IDModifier] {
			t.Errorf("modifier %s twice", f.IDModifier)
		}
		modifiers[f.IDModifier] = true
		for _, en := range f.Entries {
			if other, dup := inFile[en.PaymentID]; dup {
				t.Errorf("payment %s in %s and %s", en.PaymentID, other, f.ACHFileID)
			}
			inFile[en.PaymentID] = f.ACHFileID
			if traces[en.TraceNumber] {
				t.Errorf("trace %s twice", en.TraceNumber)
			}
			traces[en.TraceNumber] = true
		}
	}
	// What the last cuts left (payments that arrived after them) goes next.
	if f, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false); err != nil {
		t.Fatal(err)
	} else if f != nil {
		for _, en := range f.Entries {
			if _, dup := inFile[en.PaymentID]; dup {
				t.Errorf("payment %s cut again", en.PaymentID)
			}
			inFile[en.PaymentID] = f.ACHFileID
		}
	}
	for _, id := range ids {
		p := achPayment(e, live, id)
		if inFile[id] == "" || p.Status != payment.StatusSubmitted || p.ACHFileID != inFile[id] {
			t.Errorf("payment %s: %s in %q, the cuts say %q", id, p.Status, p.ACHFileID, inFile[id])
		}
	}
	if len(files) < 2 {
		t.Logf("only %d files: the cuts did not overlap much", len(files))
	}
}

// A live ACH payment completes once its entry has settled, not before; its
// expected settlement is the file's from the cut on.
func TestSettledLiveACHPaymentsComplete(t *testing.T) {
	e := newEnv(t)
	live, va := achLive(e, "Acme", 1_000_000)
	ids := []string{achPay(e, live, va, 1000, "ach_same_day"), achPay(e, live, va, 2000, "ach_standard")}
	f, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, true)
	if err != nil || f == nil || len(f.Entries) != 2 {
		t.Fatalf("cut = %+v, %v", f, err)
	}
	settles := map[string]time.Time{}
	for _, en := range f.Entries {
		settles[en.PaymentID] = en.SettlesAt
		if got := achPayment(e, live, en.PaymentID).ExpectedSettlementAt.Time; !got.Equal(en.SettlesAt.Truncate(time.Millisecond)) {
			t.Errorf("payment %s expected at %v, its entry settles at %v", en.PaymentID, got, en.SettlesAt)
		}
	}
	first, last := settles[ids[0]], settles[ids[1]]
	if last.Before(first) {
		first, last = last, first
	}
	if n, err := e.a.CompleteSettledACHPayments(e.ctx, app.Meta{}, first.Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("before any settled: %d, %v", n, err)
	}
	// The two settle at different times (same-day at a window, standard
	// at 08:30 the next business day) unless the calendar makes them meet.
	atFirst, err := e.a.CompleteSettledACHPayments(e.ctx, app.Meta{}, first)
	if err != nil {
		t.Fatal(err)
	}
	atLast, err := e.a.CompleteSettledACHPayments(e.ctx, app.Meta{}, last)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1; first.Equal(last) {
		if atFirst != 2 || atLast != 0 {
			t.Fatalf("settling together: %d then %d", atFirst, atLast)
		}
	} else if atFirst != want || atLast != want {
		t.Fatalf("at the first settlement %d, at the last %d; want 1 and 1", atFirst, atLast)
	}
	for _, id := range ids {
		if p := achPayment(e, live, id); p.Status != payment.StatusCompleted || p.CompletedAt == nil {
			t.Errorf("payment %s: %s", id, p.Status)
		}
	}
	if n, err := e.a.CompleteSettledACHPayments(e.ctx, app.Meta{}, last.Add(time.Hour)); err != nil || n != 0 {
		t.Errorf("again: %d, %v", n, err)
	}
	// The holds posted: the account's pending outbound is gone, its
	// posted balance down by amount and fees.
	spent := int64(0)
	for _, id := range ids {
		p := achPayment(e, live, id)
		spent += p.Amount + p.Fee
	}
	if b := e.balance(va); b.PendingOutbound != 0 || b.Posted != 1_000_000-spent {
		t.Errorf("balance after completion: %+v, spent %d", b, spent)
	}
}
