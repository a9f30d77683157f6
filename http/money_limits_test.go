package http_test

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/ledger"
)

// Tests of the money bounds and of live funding (issue #14, items 2 and 4).
// Their helpers start with "ml" so that they never clash with other files.

// mlLines is a balanced entry of n debits to from and n credits to to, each
// of amount cents.
func mlLines(from, to string, n int, amount int64) []map[string]any {
	var lines []map[string]any
	for i := 0; i < n; i++ {
		lines = append(lines, vaLine(from, "debit", amount), vaLine(to, "credit", amount))
	}
	return lines
}

func mlPost(api *testAPI, key string, body map[string]any) response {
	return api.do("POST", "/v1/ledger/entries", key, body)
}

func mlAdjust(api *testAPI, key, accountID, direction string, amount int64) response {
	return mlPost(api, key, map[string]any{"type": "adjustment", "description": "test",
		"virtual_account_id": accountID, "direction": direction, "amount": amount})
}

// mlSystem reads the id and posted balance of one of the caller's system accounts.
func mlSystem(t *testing.T, api *testAPI, key, code string) (id string, posted int64) {
	t.Helper()
	api.sync()
	a, ok := vaLedgerAccounts(t, api, key)[code]
	if !ok {
		t.Fatalf("no %s ledger account", code)
	}
	return a["id"].(string), vaLedgerBalance(t, a, "posted")
}

func mlFund(api *testAPI, platformID string, body map[string]any, headers ...string) response {
	return api.do("POST", "/v1/operator/platforms/"+platformID+"/fund", operatorKey, body, headers...)
}

// The overflow repro, bounded: lines past the largest amount are
// 400, balances past the largest balance are 422, and the report routes
// keep answering 200.
func TestMoneyBoundsRefuseOverflow(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_1")
	vaRequire(t, mlAdjust(api, key, va, "credit", 1), http.StatusCreated) // opens the chart
	operating, _ := mlSystem(t, api, key, "platform_operating")
	fees, _ := mlSystem(t, api, key, "platform_fees")

	// The repro's lines (10^15 cents each) are over the largest amount.
	m := requireError(t, mlPost(api, key, map[string]any{"type": "adjustment", "description": "big",
		"lines": mlLines(fees, operating, 25, 1_000_000_000_000_000)}), http.StatusBadRequest, "invalid_request")
	if m["param"] != "lines[0].amount" {
		t.Fatalf("param %v, want lines[0].amount", m["param"])
	}
	requireError(t, mlAdjust(api, key, va, "credit", ledger.MaxAmount+1), http.StatusBadRequest, "invalid_request")

	// Lines of the largest amount: each entry moves 25 × 10^13 = 2.5 × 10^14,
	// so four reach the largest balance exactly and the fifth is refused.
	entry := map[string]any{"type": "adjustment", "description": "max", "lines": mlLines(fees, operating, 25, ledger.MaxAmount)}
	for i := 0; i < 4; i++ {
		vaRequire(t, mlPost(api, key, entry), http.StatusCreated)
	}
	m = requireError(t, mlPost(api, key, entry), http.StatusUnprocessableEntity, "limit_exceeded")
	if m["resource_id"] != operating && m["resource_id"] != fees {
		t.Fatalf("resource_id %v, want one of the platform accounts", m["resource_id"])
	}
	if _, posted := mlSystem(t, api, key, "platform_operating"); posted != ledger.MaxBalance-1 {
		t.Fatalf("platform_operating posted %d, want %d", posted, ledger.MaxBalance-1)
	}
	if _, posted := mlSystem(t, api, key, "platform_fees"); posted != -ledger.MaxBalance {
		t.Fatalf("platform_fees posted %d, want %d", posted, -ledger.MaxBalance)
	}
	// An entry that moves back toward zero is still allowed.
	vaRequire(t, mlPost(api, key, map[string]any{"type": "correction", "description": "back",
		"lines": mlLines(operating, fees, 1, ledger.MaxAmount)}), http.StatusCreated)
	vaGet(t, api, key, "/v1/ledger/accounts?limit=100")
	today := time.Now().UTC().Format("2006-01-02")
	vaGet(t, api, key, "/v1/platform/revenue-share?from="+today+"&to="+today) // over the entries above
}

// A virtual account cannot be credited past the largest balance, by an
// adjustment or by an inbound transfer, checked under its lock.
func TestMoneyBoundsVirtualAccount(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_1")
	vaRequire(t, mlAdjust(api, key, va, "credit", 1), http.StatusCreated) // opens the chart
	vaRequire(t, mlAdjust(api, key, va, "debit", 1), http.StatusCreated)
	operating, _ := mlSystem(t, api, key, "platform_operating")
	// 2 × 50 × 10^13: the account holds exactly the largest balance.
	for i := 0; i < 2; i++ {
		vaRequire(t, mlPost(api, key, map[string]any{"type": "adjustment", "description": "fill",
			"lines": mlLines(operating, va, 50, ledger.MaxAmount)}), http.StatusCreated)
	}
	requireError(t, mlAdjust(api, key, va, "credit", 1), http.StatusUnprocessableEntity, "limit_exceeded")
	// One cent of room, and the inbound path.
	vaRequire(t, mlAdjust(api, key, va, "debit", 1), http.StatusCreated)
	m := requireError(t, vaInbound(api, key, va, 2, "rtp"), http.StatusUnprocessableEntity, "limit_exceeded")
	if m["resource_id"] != va {
		t.Fatalf("resource_id %v, want %s", m["resource_id"], va)
	}
	vaRequire(t, vaInbound(api, key, va, 1, "rtp"), http.StatusCreated)
	if b := vaBalance(t, api, key, va); b["posted"] != ledger.MaxBalance {
		t.Fatalf("posted %d, want %d", b["posted"], ledger.MaxBalance)
	}
	vaGet(t, api, key, "/v1/ledger/accounts?limit=100")
}

// The live repro: an adjustment credited from an unfunded
// platform_operating is refused; the operator's funding makes it possible;
// the sandbox keeps its freedom.
func TestLiveAdjustmentNeedsFunding(t *testing.T) {
	api, platformID, sandboxKey := vaAPI(t)
	liveKey := api.enableLive(platformID)
	va := vaOpenID(t, api, liveKey, platformID, "biz_1")

	m := requireError(t, mlAdjust(api, liveKey, va, "credit", 1_000_000_000_000), http.StatusUnprocessableEntity, "insufficient_funds")
	operating, posted := mlSystem(t, api, liveKey, "platform_operating")
	if m["resource_id"] != operating || posted != 0 {
		t.Fatalf("resource_id %v (want %s), platform_operating posted %d (want 0)", m["resource_id"], operating, posted)
	}
	if b := vaBalance(t, api, liveKey, va); b["available"] != 0 {
		t.Fatalf("available %d after a refused credit", b["available"])
	}
	// platform_fees may not go negative either.
	requireError(t, mlPost(api, liveKey, map[string]any{"type": "fee", "description": "refund",
		"virtual_account_id": va, "direction": "credit", "amount": 5}), http.StatusUnprocessableEntity, "insufficient_funds")

	je := vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 1_000_000_000_000, "description": "Wire 42"}), http.StatusCreated)
	if je["type"] != "funding" || je["environment"] != "live" || je["description"] != "Wire 42" {
		t.Fatalf("funding entry: %v", je)
	}
	var actor string
	if err := api.Pool.QueryRow(context.Background(), `SELECT metadata->>'actor' FROM events WHERE stream_id = $1`,
		ledger.StreamID(je["id"].(string))).Scan(&actor); err != nil || actor != "operator" {
		t.Fatalf("funding event actor %q (%v), want operator", actor, err)
	}
	if _, posted := mlSystem(t, api, liveKey, "platform_operating"); posted != 1_000_000_000_000 {
		t.Fatalf("platform_operating posted %d after funding", posted)
	}
	if _, posted := mlSystem(t, api, liveKey, "operator_funding"); posted != 1_000_000_000_000 {
		t.Fatalf("operator_funding posted %d after funding", posted)
	}

	vaRequire(t, mlAdjust(api, liveKey, va, "credit", 1_000_000_000_000), http.StatusCreated)
	if b := vaBalance(t, api, liveKey, va); b["available"] != 1_000_000_000_000 {
		t.Fatalf("available %d, want 10^12", b["available"])
	}
	requireError(t, mlAdjust(api, liveKey, va, "credit", 1), http.StatusUnprocessableEntity, "insufficient_funds")
	// Money can go back the other way, and then out again.
	vaRequire(t, mlAdjust(api, liveKey, va, "debit", 10), http.StatusCreated)
	vaRequire(t, mlAdjust(api, liveKey, va, "credit", 10), http.StatusCreated)
	if _, posted := mlSystem(t, api, liveKey, "platform_operating"); posted != 0 {
		t.Fatalf("platform_operating posted %d, want 0", posted)
	}

	// Sandbox: unchanged, platform_operating may go negative.
	sva := vaOpenID(t, api, sandboxKey, platformID, "biz_1")
	vaRequire(t, mlAdjust(api, sandboxKey, sva, "credit", 1_000_000_000_000), http.StatusCreated)
	if _, posted := mlSystem(t, api, sandboxKey, "platform_operating"); posted != -1_000_000_000_000 {
		t.Fatalf("sandbox platform_operating posted %d, want -10^12", posted)
	}
}

func TestFundPlatformValidation(t *testing.T) {
	api, platformID, sandboxKey := vaAPI(t)
	requireError(t, mlFund(api, platformID, map[string]any{"amount": 100}), http.StatusUnprocessableEntity, "live_not_enabled")
	liveKey := api.enableLive(platformID)
	for _, body := range []map[string]any{{}, {"amount": 0}, {"amount": ledger.MaxAmount + 1}, {"amount": "5"}} {
		if m := requireError(t, mlFund(api, platformID, body), http.StatusBadRequest, "invalid_request"); m["param"] != "amount" {
			t.Fatalf("%v: param %v, want amount", body, m["param"])
		}
	}
	requireError(t, mlFund(api, platformID, map[string]any{"amount": 5, "environment": "prod"}), http.StatusBadRequest, "invalid_request")
	requireError(t, mlFund(api, platformID, map[string]any{"amount": 5, "extra": 1}), http.StatusBadRequest, "invalid_request")
	requireError(t, mlFund(api, "plt_01hzzzzzzzzzzzzzzzzzzzzzzz", map[string]any{"amount": 5}), http.StatusNotFound, "not_found")
	requireError(t, api.do("POST", "/v1/operator/platforms/"+platformID+"/fund", liveKey, map[string]any{"amount": 5}),
		http.StatusForbidden, "forbidden")

	// Idempotency: the same key and body replay; another body conflicts.
	first := vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 500}, "Idempotency-Key", "fund-1"), http.StatusCreated)
	again := mlFund(api, platformID, map[string]any{"amount": 500}, "Idempotency-Key", "fund-1")
	if again.Status != http.StatusOK || again.Header.Get("Idempotent-Replayed") != "true" || again.Str("id") != first["id"] {
		t.Fatalf("replay: %d %s", again.Status, again.Body)
	}
	requireError(t, mlFund(api, platformID, map[string]any{"amount": 501}, "Idempotency-Key", "fund-1"), http.StatusConflict, "idempotency_conflict")
	if _, posted := mlSystem(t, api, liveKey, "platform_operating"); posted != 500 {
		t.Fatalf("platform_operating posted %d, want 500 (one funding)", posted)
	}
	// The sandbox can be funded too, when asked.
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 7, "environment": "sandbox"}), http.StatusCreated)
	if _, posted := mlSystem(t, api, sandboxKey, "platform_operating"); posted != 7 {
		t.Fatalf("sandbox platform_operating posted %d, want 7", posted)
	}
}

// Many credits at once from a funded live platform_operating never take it
// below zero: exactly as many succeed as the funding covers.
func TestLiveFundingConcurrentCredits(t *testing.T) {
	api, platformID, _ := vaAPI(t)
	liveKey := api.enableLive(platformID)
	const funded, each, workers = 1_000, 100, 24
	var accounts []string
	for i := 0; i < 4; i++ {
		accounts = append(accounts, vaOpenID(t, api, liveKey, platformID, "biz_"+strconv.Itoa(i)))
	}
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": funded}), http.StatusCreated)

	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := mlAdjust(api, liveKey, accounts[i%len(accounts)], "credit", each)
			mu.Lock()
			statuses[r.Status]++
			mu.Unlock()
		}(i)
	}
	wg.Wait()
	if statuses[http.StatusCreated] != funded/each || statuses[http.StatusUnprocessableEntity] != workers-funded/each {
		t.Fatalf("statuses %v, want %d × 201 and %d × 422", statuses, funded/each, workers-funded/each)
	}
	if _, posted := mlSystem(t, api, liveKey, "platform_operating"); posted != 0 {
		t.Fatalf("platform_operating posted %d, want 0", posted)
	}
	var locked int64
	if err := api.Pool.QueryRow(context.Background(), `SELECT posted FROM platform_balances
        WHERE platform_id = $1 AND environment = 'live' AND code = 'platform_operating'`, platformID).Scan(&locked); err != nil || locked != 0 {
		t.Fatalf("locked balance row %d (%v), want 0", locked, err)
	}
}

// Balances written before the bounds existed (the repro left sums
// past int64) make the report routes answer 422 limit_exceeded, never 500.
// The rows are put in the ledger view directly: no command can write them now.
func TestReportsPastInt64Answer422(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_1")
	vaRequire(t, mlAdjust(api, key, va, "credit", 1), http.StatusCreated)
	operating, _ := mlSystem(t, api, key, "platform_operating")
	vaAccount := vaLedgerAccounts(t, api, key)[va]["id"].(string)
	for i, acc := range []string{operating, operating, vaAccount, vaAccount} {
		var vaID *string
		if acc == vaAccount {
			vaID = &va
		}
		if _, err := api.Pool.Exec(context.Background(), `INSERT INTO ledger_entries (seq, id, journal_entry_id, platform_id,
                environment, ledger_account_id, virtual_account_id, direction, amount, type, status, description,
                source_type, source_id, effective_at, created_at, posted_at)
            VALUES ((SELECT max(seq) + 1 FROM ledger_entries), $1, 'je_legacy', $2, 'sandbox', $3, $4, 'credit',
                9000000000000000000, 'adjustment', 'posted', 'legacy', 'journal_entry', 'je_legacy', now(), now(), now())`,
			"le_legacy"+strconv.Itoa(i), platformID, acc, vaID); err != nil {
			t.Fatal(err)
		}
	}
	requireError(t, api.do("GET", "/v1/ledger/accounts?limit=100", key, nil), http.StatusUnprocessableEntity, "limit_exceeded")
	today := "2020-01-01"
	if r := api.do("GET", "/v1/platform", key, nil); r.Status == http.StatusOK {
		today = r.Str("created_at")[:10]
	}
	requireError(t, api.do("GET", "/v1/platform/revenue-share?from="+today+"&to="+today, key, nil),
		http.StatusUnprocessableEntity, "limit_exceeded")
}
