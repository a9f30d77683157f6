package http_test

import (
	"net/http"
	"sync"
	"testing"
)

// btBody is a book transfer request with a fresh idempotency key.
func btBody(from, to string, amount int64) map[string]any {
	return map[string]any{"from_virtual_account_id": from, "to_virtual_account_id": to, "amount": amount,
		"idempotency_key": payKey()}
}

// A book transfer moves money at once, as one posted journal entry whose
// lines are the two accounts' book_transfer transactions, and is linked
// both ways to that entry.
func TestBookTransferMovesMoneyAtOnce(t *testing.T) {
	api, platformID, key := vaAPI(t)
	from := payAccount(t, api, key, platformID, "payer", 10_000, true)
	to := vaOpenID(t, api, key, platformID, "payee")

	body := btBody(from, to, 2_500)
	body["description"] = "Rent share"
	body["metadata"] = map[string]any{"invoice": "INV-7"}
	bt := vaRequire(t, api.do("POST", "/v1/book-transfers", key, body), http.StatusCreated)
	if bt["object"] != "book_transfer" || bt["status"] != "completed" || vaInt(t, bt["amount"]) != 2_500 ||
		bt["from_virtual_account_id"] != from || bt["to_virtual_account_id"] != to || bt["currency"] != "USD" ||
		bt["description"] != "Rent share" || bt["idempotency_key"] != body["idempotency_key"] || bt["environment"] != "sandbox" {
		t.Fatalf("book transfer: %v", bt)
	}
	if md, _ := bt["metadata"].(map[string]any); md["invoice"] != "INV-7" {
		t.Fatalf("metadata: %v", bt["metadata"])
	}
	id, je := bt["id"].(string), bt["journal_entry_id"].(string)
	payBalanceIs(t, api, key, from, 7_500, 0)
	payBalanceIs(t, api, key, to, 2_500, 0)
	if got := vaGet(t, api, key, "/v1/book-transfers/"+id); got["id"] != id || got["journal_entry_id"] != je {
		t.Fatalf("GET: %v", got)
	}

	api.sync()
	entry := vaGet(t, api, key, "/v1/ledger/journal-entries/"+je)
	if src, _ := entry["source"].(map[string]any); src["type"] != "book_transfer" || src["id"] != id ||
		entry["type"] != "book_transfer" || entry["status"] != "posted" {
		t.Fatalf("journal entry: %v", entry)
	}
	for account, want := range map[string]int64{from: -2_500, to: 2_500} {
		var found int
		for _, tx := range payWalk(t, api, key, "/v1/virtual-accounts/"+account+"/transactions") {
			src, _ := tx["source"].(map[string]any)
			if src["type"] != "book_transfer" || src["id"] != id {
				continue
			}
			found++
			if tx["type"] != "book_transfer" || vaInt(t, tx["amount"]) != want || tx["status"] != "posted" {
				t.Errorf("transaction of %s: %v, want book_transfer %d posted", account, tx, want)
			}
		}
		if found != 1 {
			t.Errorf("%d book transfer transactions on %s, want 1", found, account)
		}
	}
	events := vaData(t, vaGet(t, api, key, "/v1/events?type=book_transfer.completed"))
	if len(events) != 1 {
		t.Fatalf("%d book_transfer.completed events, want 1", len(events))
	}
	if obj, _ := events[0]["data"].(map[string]any)["object"].(map[string]any); obj["id"] != id || obj["journal_entry_id"] != je {
		t.Fatalf("event object: %v", events[0])
	}

	// Listed, by either account and by metadata.
	for _, q := range []string{"", "?virtual_account_id=" + from, "?virtual_account_id=" + to, "?metadata[invoice]=INV-7"} {
		if list := vaData(t, vaGet(t, api, key, "/v1/book-transfers"+q)); len(list) != 1 || list[0]["id"] != id {
			t.Errorf("list%s: %v", q, list)
		}
	}
	for _, q := range []string{"?virtual_account_id=va_01jx0000000000000000000000", "?metadata[invoice]=INV-8"} {
		if list := vaData(t, vaGet(t, api, key, "/v1/book-transfers"+q)); len(list) != 0 {
			t.Errorf("list%s: %v, want none", q, list)
		}
	}
	payCheckLedger(t, api)
	apAudit(t, api)
}

// The rules, in order: the request's form (400), both accounts the
// caller's in its environment (404), the sender active and approved, the
// receiver not closed, the funds (422). A refusal moves nothing.
func TestBookTransferRules(t *testing.T) {
	api, platformID, key := vaAPI(t)
	from := payAccount(t, api, key, platformID, "payer", 10_000, true)
	to := vaOpenID(t, api, key, platformID, "payee")
	unapproved := payAccount(t, api, key, platformID, "unapproved", 5_000, false)
	otherPlatform, otherKey := api.newPlatform("Other")
	foreign := vaOpenID(t, api, otherKey, otherPlatform, "theirs")
	liveKey := api.enableLive(platformID)

	for name, tc := range map[string]struct {
		body   map[string]any
		key    string
		status int
		code   string
	}{
		"no idempotency key": {map[string]any{"from_virtual_account_id": from, "to_virtual_account_id": to, "amount": 1}, key, 400, "invalid_request"},
		"same account":       {btBody(from, from, 1), key, 400, "invalid_request"},
		"zero amount":        {btBody(from, to, 0), key, 400, "invalid_request"},
		"not an account id":  {btBody("pay_123", to, 1), key, 400, "invalid_request"},
		"long description": {func() map[string]any {
			b := btBody(from, to, 1)
			b["description"] = string(make([]byte, 141))
			return b
		}(), key, 400, "invalid_request"},
		"another platform's":  {btBody(from, foreign, 1), key, 404, "not_found"},
		"from another's":      {btBody(foreign, to, 1), key, 404, "not_found"},
		"live key, sandbox":   {btBody(from, to, 1), liveKey, 404, "not_found"},
		"unknown account":     {btBody(from, "va_01jx0000000000000000000000", 1), key, 404, "not_found"},
		"sender not approved": {btBody(unapproved, to, 1), key, 422, "kyb_not_approved"},
		"more than available": {btBody(from, to, 10_001), key, 422, "insufficient_funds"},
	} {
		t.Run(name, func(t *testing.T) {
			requireError(t, api.do("POST", "/v1/book-transfers", tc.key, tc.body), tc.status, tc.code)
		})
	}

	// A frozen sender sends nothing; a frozen receiver still receives.
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+to+"/freeze", key, nil), http.StatusOK)
	vaRequire(t, api.do("POST", "/v1/book-transfers", key, btBody(from, to, 1_000)), http.StatusCreated)
	m := requireError(t, api.do("POST", "/v1/book-transfers", key, btBody(to, from, 1)), 422, "account_not_active")
	if m["resource_id"] != to {
		t.Errorf("resource_id %v, want the sender %s", m["resource_id"], to)
	}
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+to+"/unfreeze", key, nil), http.StatusOK)

	// A closed receiver refuses (an empty account can be closed).
	closed := vaOpenID(t, api, key, platformID, "gone")
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+closed+"/close", key, nil), http.StatusOK)
	m = requireError(t, api.do("POST", "/v1/book-transfers", key, btBody(from, closed, 1)), 422, "account_not_active")
	if m["resource_id"] != closed {
		t.Errorf("resource_id %v, want the closed receiver %s", m["resource_id"], closed)
	}
	payBalanceIs(t, api, key, from, 9_000, 0)
	payBalanceIs(t, api, key, to, 1_000, 0)
	if list := vaData(t, vaGet(t, api, key, "/v1/book-transfers")); len(list) != 1 {
		t.Errorf("%d book transfers after the refusals, want 1", len(list))
	}
	requireError(t, api.do("GET", "/v1/book-transfers/bt_01jx0000000000000000000000", key, nil), 404, "not_found")
	id := vaData(t, vaGet(t, api, key, "/v1/book-transfers"))[0]["id"].(string)
	requireError(t, api.do("GET", "/v1/book-transfers/"+id, otherKey, nil), 404, "not_found")
	requireError(t, api.do("GET", "/v1/book-transfers/"+id, liveKey, nil), 404, "not_found")
	payCheckLedger(t, api)
	apAudit(t, api)
}

// Concurrent transfers both ways between two accounts never overdraw
// either, never deadlock, and keep the sum: every one that answers 201
// moved its amount, every other is insufficient_funds.
func TestBookTransfersConcurrentNeverOverdraw(t *testing.T) {
	api, platformID, key := vaAPI(t)
	a := payAccount(t, api, key, platformID, "a", 1_000, true)
	b := payAccount(t, api, key, platformID, "b", 1_000, true)
	const n = 40
	var wg sync.WaitGroup
	var mu sync.Mutex
	moved := map[string]int64{}
	var refused []response
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			from, to := a, b
			if i%2 == 1 {
				from, to = b, a
			}
			r := api.do("POST", "/v1/book-transfers", key, btBody(from, to, 300))
			mu.Lock()
			defer mu.Unlock()
			if r.Status == http.StatusCreated {
				moved[from] -= 300
				moved[to] += 300
			} else {
				refused = append(refused, r)
			}
		}()
	}
	wg.Wait()
	for _, r := range refused {
		requireError(t, r, http.StatusUnprocessableEntity, "insufficient_funds")
	}
	if 1_000+moved[a] < 0 || 1_000+moved[b] < 0 || len(refused) == n {
		t.Fatalf("moved %v with %d refused", moved, len(refused))
	}
	payBalanceIs(t, api, key, a, 1_000+moved[a], 0)
	payBalanceIs(t, api, key, b, 1_000+moved[b], 0)
	payCheckLedger(t, api)
	apAudit(t, api)
}
