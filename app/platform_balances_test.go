package app_test

import (
	"sync"
	"testing"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
)

// Tests of the platform_balances rows a chart may lack (issue #14 review,
// finding 1). Helpers start with "pb".

// pbLiveFunded is a live platform with a virtual account whose
// platform_operating the operator funded with amount cents.
func pbLiveFunded(e *env, amount int64) (live app.Caller, va string) {
	e.t.Helper()
	live = e.live(e.platform("Acme"))
	va = e.openFor(live, "biz_1")
	if _, err := e.a.FundPlatform(e.ctx, app.Meta{}, nil, app.FundPlatform{
		PlatformID: live.PlatformID, Environment: domain.Live, Amount: amt(amount)}); err != nil {
		e.t.Fatalf("fund: %v", err)
	}
	return live, va
}

// pbDropRows deletes the caller's platform_balances rows, as a chart opened
// by a replica older than the table leaves them.
func pbDropRows(e *env, c app.Caller) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM platform_balances WHERE platform_id = $1 AND environment = $2`,
		c.PlatformID, c.Environment.String()); err != nil {
		e.t.Fatal(err)
	}
}

func pbPosted(e *env, la string) int64 {
	e.t.Helper()
	var posted int64
	if err := e.pool.QueryRow(e.ctx, `SELECT posted FROM platform_balances WHERE ledger_account_id = $1`, la).Scan(&posted); err != nil {
		e.t.Fatalf("platform balance of %s: %v", la, err)
	}
	return posted
}

// A missing row must not let live entries take platform_operating below
// zero: the command makes the row from the log (which holds entries the
// asynchronous ledger projection has not seen: it never runs here) and
// checks against it.
func TestMissingPlatformBalanceRowIsMadeFromTheLog(t *testing.T) {
	e := newEnv(t)
	live, va := pbLiveFunded(e, 100)
	chart := e.chart(live)

	pbDropRows(e, live)
	_, err := e.manual(live, ledger.TypeAdjustment, va, "credit", 150)
	wantCode(t, err, domain.CodeInsufficientFunds)

	pbDropRows(e, live)
	if _, err := e.manual(live, ledger.TypeAdjustment, va, "credit", 60); err != nil {
		t.Fatalf("credit within the funding: %v", err)
	}
	if got := pbPosted(e, chart[ledger.CodePlatformOperating]); got != 40 {
		t.Fatalf("platform_operating posted %d, want 40", got)
	}
	if got := pbFromLog(e, chart[ledger.CodeOperatorFunding]); got != 100 {
		t.Fatalf("operator_funding from the log %d, want 100 (its normal balance is debit)", got)
	}

	pbDropRows(e, live)
	_, err = e.manual(live, ledger.TypeAdjustment, va, "credit", 41)
	wantCode(t, err, domain.CodeInsufficientFunds)
	if got := pbFromLog(e, chart[ledger.CodePlatformOperating]); got != 40 {
		t.Fatalf("platform_operating from the log %d after the refusal, want 40", got)
	}
}

// Commands that find the same row missing at once make it once and
// serialize on it: of two credits that each fit the funding but not
// together, exactly one passes.
func TestMissingPlatformBalanceRowConcurrentCommands(t *testing.T) {
	e := newEnv(t)
	live, va := pbLiveFunded(e, 100)
	chart := e.chart(live)
	for round := 0; round < 5; round++ {
		pbDropRows(e, live)
		before := pbFromLog(e, chart[ledger.CodePlatformOperating])
		amount := before/2 + 1
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.manual(live, ledger.TypeAdjustment, va, "credit", amount)
			}()
		}
		wg.Wait()
		passed := 0
		for _, err := range errs {
			if err == nil {
				passed++
			} else {
				wantCode(t, err, domain.CodeInsufficientFunds)
			}
		}
		if passed != 1 {
			t.Fatalf("round %d: %d of 2 credits of %d passed with %d funded, want 1", round, passed, amount, before)
		}
		if got := pbPosted(e, chart[ledger.CodePlatformOperating]); got != before-amount {
			t.Fatalf("round %d: platform_operating posted %d, want %d", round, got, before-amount)
		}
	}
}

// pbFromLog is a lockable account's balance the way a command computes it
// when the row is missing; the row stays missing.
func pbFromLog(e *env, la string) int64 {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, `SELECT insert_platform_balances_from_log(ARRAY[$1])`, la); err != nil {
		e.t.Fatal(err)
	}
	posted := pbPosted(e, la)
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM platform_balances WHERE ledger_account_id = $1`, la); err != nil {
		e.t.Fatal(err)
	}
	return posted
}
