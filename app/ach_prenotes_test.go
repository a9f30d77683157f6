package app_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/projections/queries"
)

// Tests of live prenotes (issue #18, API.md §12): a live counterparty's
// prenote leaves in the next ACH file, settles into verified, or is
// returned into failed. Helpers start with "prenote".

func prenoteCounterparty(e *env, c app.Caller, accountNumber, accountType string) string {
	e.t.Helper()
	res, err := e.a.CreateCounterparty(e.ctx, app.Meta{}, nil, c, counterparty.Request{Name: "Initech LLC",
		AccountNumber: accountNumber, RoutingNumber: "021000021", AccountType: accountType})
	if err != nil {
		e.t.Fatal(err)
	}
	return res.ID
}

func prenoteVerify(e *env, c app.Caller, id string) {
	e.t.Helper()
	if err := e.a.VerifyCounterparty(e.ctx, app.Meta{}, c, id, counterparty.MethodPrenote); err != nil {
		e.t.Fatalf("verify %s: %v", id, err)
	}
}

func prenoteView(e *env, c app.Caller, id string) queries.VerificationView {
	e.t.Helper()
	v, err := queries.GetCounterparty(e.ctx, e.pool, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return v.Verification
}

// prenoteEntries are a file's prenote entries by counterparty.
func prenoteEntries(t *testing.T, f *ach.FileCreated) map[string]ach.Entry {
	t.Helper()
	out := map[string]ach.Entry{}
	for _, en := range f.Entries {
		if !en.Prenote {
			continue
		}
		if _, dup := out[en.CounterpartyID]; dup {
			t.Errorf("counterparty %s twice in file %s", en.CounterpartyID, f.ACHFileID)
		}
		out[en.CounterpartyID] = en
	}
	return out
}

func TestLivePrenoteLeavesInTheNextFileAndSettlesIntoVerified(t *testing.T) {
	e := newEnv(t)
	live, va := achLive(e, "Acme", 1_000_000)
	checking := prenoteCounterparty(e, live, "987654321", counterparty.AccountChecking)
	savings := prenoteCounterparty(e, live, "123456789", counterparty.AccountSavings)
	gone := prenoteCounterparty(e, live, "555555555", counterparty.AccountChecking)
	unasked := prenoteCounterparty(e, live, "666666666", counterparty.AccountChecking)
	for _, id := range []string{checking, savings, gone} {
		prenoteVerify(e, live, id)
		if v := prenoteView(e, live, id); v.Status != counterparty.StatusPending {
			t.Fatalf("%s after verify: %+v", id, v)
		}
	}
	if err := e.a.DeleteCounterparty(e.ctx, app.Meta{}, live, gone); err != nil {
		t.Fatal(err)
	}
	// A second request while the prenote is out is refused.
	if err := e.a.VerifyCounterparty(e.ctx, app.Meta{}, live, checking, counterparty.MethodPrenote); err == nil {
		t.Error("a second prenote while one is pending was accepted")
	}
	// A sandbox counterparty's prenote never goes in a live file.
	sandbox, _ := payReady(e, 100_000)
	sandboxCP := prenoteCounterparty(e, sandbox, "987654321", counterparty.AccountChecking)
	prenoteVerify(e, sandbox, sandboxCP)
	pay := achPay(e, live, va, 1000, "ach_same_day")

	// A same-day window's cut: the payment and the two prenotes.
	f, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false)
	if err != nil || f == nil {
		t.Fatalf("cut = %+v, %v", f, err)
	}
	prenotes := prenoteEntries(t, f)
	if len(f.Entries) != 3 || len(prenotes) != 2 || f.TotalCredit() != 1000 {
		t.Fatalf("file entries %+v: want the payment and the prenotes of %s and %s", f.Entries, checking, savings)
	}
	for id, savingsAccount := range map[string]bool{checking: false, savings: true} {
		en, ok := prenotes[id]
		if !ok || en.Amount != 0 || en.Savings != savingsAccount || en.PaymentID != "" || len(en.TraceNumber) != 15 ||
			en.Rail != "ach_same_day" || en.PlatformID != live.PlatformID {
			t.Errorf("prenote of %s: %+v", id, en)
		}
	}
	if prenotes[checking].AccountNumber != "987654321" || prenotes[savings].AccountNumber != "123456789" {
		t.Errorf("prenotes' accounts: %+v", prenotes)
	}
	for _, en := range f.Entries {
		if !en.Prenote && en.PaymentID != pay {
			t.Errorf("entry %+v", en)
		}
	}
	// Submitted, not verified: still pending; a second cut has nothing.
	for id := range prenotes {
		if v := prenoteView(e, live, id); v.Status != counterparty.StatusPending {
			t.Errorf("%s after the cut: %+v", id, v)
		}
	}
	if again, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, true); err != nil || again != nil {
		t.Fatalf("a second cut: %+v, %v", again, err)
	}
	if v := prenoteView(e, live, unasked); v.Status != counterparty.StatusUnverified {
		t.Errorf("a counterparty never verified: %+v", v)
	}

	// Verified when the entry settles without a return, not before.
	settles := prenotes[checking].SettlesAt
	if n, err := e.a.VerifySettledPrenotes(e.ctx, app.Meta{}, settles.Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("before the settlement: %d, %v", n, err)
	}
	if n, err := e.a.VerifySettledPrenotes(e.ctx, app.Meta{}, settles); err != nil || n != 2 {
		t.Fatalf("at the settlement: %d, %v; want 2", n, err)
	}
	for id := range prenotes {
		if v := prenoteView(e, live, id); v.Status != counterparty.StatusVerified || v.FailureCode != "" {
			t.Errorf("%s after the settlement: %+v", id, v)
		}
	}
	if n, err := e.a.VerifySettledPrenotes(e.ctx, app.Meta{}, settles.Add(time.Hour)); err != nil || n != 0 {
		t.Errorf("again: %d, %v", n, err)
	}
	if v := prenoteView(e, sandbox, sandboxCP); v.Status != counterparty.StatusPending && v.Status != counterparty.StatusVerified {
		t.Errorf("the sandbox counterparty: %+v", v)
	}
}

func TestLivePrenoteReturnedFailsItsCounterparty(t *testing.T) {
	e := newEnv(t)
	live, _ := achLive(e, "Acme", 1_000_000)
	untouched := prenoteCounterparty(e, live, "987654321", counterparty.AccountChecking)
	settled := prenoteCounterparty(e, live, "123456789", counterparty.AccountChecking)
	prenoteVerify(e, live, untouched)
	prenoteVerify(e, live, settled)
	f, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false)
	if err != nil || f == nil {
		t.Fatalf("cut = %+v, %v", f, err)
	}
	prenotes := prenoteEntries(t, f)
	// Both settle (verified); then one of them is returned R04 (a late
	// return), and a prenote of the next file is returned R03 while
	// still pending.
	if n, err := e.a.VerifySettledPrenotes(e.ctx, app.Meta{}, prenotes[settled].SettlesAt); err != nil || n != 2 {
		t.Fatalf("settled: %d, %v", n, err)
	}
	fresh := prenoteCounterparty(e, live, "444444444", counterparty.AccountSavings)
	prenoteVerify(e, live, fresh)
	f2, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false)
	if err != nil || f2 == nil {
		t.Fatalf("second cut = %+v, %v", f2, err)
	}
	freshEntry := prenoteEntries(t, f2)[fresh]

	ref := func(en ach.Entry) app.ACHEntryRef {
		return app.ACHEntryRef{TraceNumber: en.TraceNumber, AccountNumber: en.AccountNumber, RDFI: en.RoutingNumber[:8]}
	}
	for _, tc := range []struct {
		id   string
		en   ach.Entry
		code string
	}{{fresh, freshEntry, "R03"}, {settled, prenotes[settled], "R04"}} {
		got, err := e.a.ReturnACHPrenote(e.ctx, app.Meta{}, ref(tc.en), tc.code)
		if err != nil || got != tc.id {
			t.Fatalf("return of %s: %s, %v", tc.id, got, err)
		}
		if v := prenoteView(e, live, tc.id); v.Status != counterparty.StatusFailed || v.FailureCode != tc.code {
			t.Errorf("%s after its return %s: %+v", tc.id, tc.code, v)
		}
		// The same return again changes nothing (the code stays the first).
		if _, err := e.a.ReturnACHPrenote(e.ctx, app.Meta{}, ref(tc.en), "R02"); err != nil {
			t.Fatal(err)
		}
		if v := prenoteView(e, live, tc.id); v.FailureCode != tc.code {
			t.Errorf("%s after a second return: %+v", tc.id, v)
		}
	}
	if v := prenoteView(e, live, untouched); v.Status != counterparty.StatusVerified {
		t.Errorf("%s, never returned: %+v", untouched, v)
	}
	// Another account number, another receiving bank: no such entry.
	wrong := ref(freshEntry)
	wrong.AccountNumber = "999999999"
	if _, err := e.a.ReturnACHPrenote(e.ctx, app.Meta{}, wrong, "R03"); !errors.Is(err, app.ErrNoSuchTrace) {
		t.Errorf("a return naming another account: %v", err)
	}
	otherBank := ref(prenotes[untouched])
	otherBank.RDFI = "01100001"
	if _, err := e.a.ReturnACHPrenote(e.ctx, app.Meta{}, otherBank, "R03"); !errors.Is(err, app.ErrNoSuchTrace) {
		t.Errorf("a return from another receiving bank: %v", err)
	}
	// A deleted counterparty is no longer what a return names.
	if err := e.a.DeleteCounterparty(e.ctx, app.Meta{}, live, untouched); err != nil {
		t.Fatal(err)
	}
	if _, err := e.a.ReturnACHPrenote(e.ctx, app.Meta{}, ref(prenotes[untouched]), "R03"); !errors.Is(err, app.ErrNoSuchTrace) {
		t.Errorf("a return of a deleted counterparty's prenote: %v", err)
	}

	// A failed counterparty may be verified again: a new prenote, a new
	// trace; the old prenote's return no longer names it.
	prenoteVerify(e, live, fresh)
	if v := prenoteView(e, live, fresh); v.Status != counterparty.StatusPending || v.FailureCode != "" {
		t.Errorf("verified again: %+v", v)
	}
	if _, err := e.a.ReturnACHPrenote(e.ctx, app.Meta{}, ref(freshEntry), "R03"); !errors.Is(err, app.ErrNoSuchTrace) {
		t.Errorf("the old prenote's return after a new request: %v", err)
	}
	f3, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false)
	if err != nil || f3 == nil {
		t.Fatalf("third cut = %+v, %v", f3, err)
	}
	if en, ok := prenoteEntries(t, f3)[fresh]; !ok || en.TraceNumber == freshEntry.TraceNumber {
		t.Errorf("the new prenote: %+v (the old trace %s)", en, freshEntry.TraceNumber)
	}
}

// Cuts racing each other and the requests that keep coming put each
// prenote in exactly one file, with a trace number of its own.
func TestLivePrenotesInCutsRacingGoOnce(t *testing.T) {
	e := payEnv(t, 24)
	live, _ := achLive(e, "Acme", 1_000_000)
	var ids []string
	for i := range 30 {
		id := prenoteCounterparty(e, live, fmt.Sprintf("7%08d", i), counterparty.AccountChecking)
		prenoteVerify(e, live, id)
		ids = append(ids, id)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		files []*ach.FileCreated
		errs  []error
	)
	for g := range 12 {
		wg.Add(2)
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
		go func() { // requests arriving while the cuts run
			defer wg.Done()
			id := prenoteCounterparty(e, live, fmt.Sprintf("8%08d", g), counterparty.AccountSavings)
			err := e.a.VerifyCounterparty(e.ctx, app.Meta{}, live, id, counterparty.MethodPrenote)
			mu.Lock()
			ids = append(ids, id)
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("failed: %v", errs)
	}
	if f, err := e.a.CutACHFile(e.ctx, app.Meta{}, achOriginator, false); err != nil {
		t.Fatal(err)
	} else if f != nil {
		files = append(files, f)
	}
	inFile, traces := map[string]string{}, map[string]bool{}
	for _, f := range files {
		for id, en := range prenoteEntries(t, f) {
			if other, dup := inFile[id]; dup {
				t.Errorf("prenote of %s in %s and %s", id, other, f.ACHFileID)
			}
			inFile[id] = f.ACHFileID
			if traces[en.TraceNumber] {
				t.Errorf("trace %s twice", en.TraceNumber)
			}
			traces[en.TraceNumber] = true
		}
	}
	for _, id := range ids {
		if inFile[id] == "" {
			t.Errorf("the prenote of %s is in no file", id)
		}
	}
	if len(inFile) != 42 {
		t.Errorf("%d prenotes in files, want 42", len(inFile))
	}
}
