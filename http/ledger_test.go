package http_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// vaLedgerAccounts maps the caller's ledger accounts by name (system
// accounts) and by virtual account id (accounts of virtual accounts).
func vaLedgerAccounts(t *testing.T, api *testAPI, key string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, a := range vaData(t, vaGet(t, api, key, "/v1/ledger/accounts?limit=100")) {
		if va, ok := a["virtual_account_id"].(string); ok {
			out[va] = a
		} else {
			out[fmt.Sprint(a["name"])] = a
		}
	}
	return out
}

// vaLedgerBalance reads one of an account's balances.
func vaLedgerBalance(t *testing.T, a map[string]any, field string) int64 {
	t.Helper()
	b, _ := a["balances"].(map[string]any)
	return vaInt(t, b[field])
}

// vaEntries lists the entries of a journal entry response.
func vaEntries(t *testing.T, je map[string]any) []map[string]any {
	t.Helper()
	raw, _ := je["entries"].([]any)
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i], _ = x.(map[string]any)
	}
	return out
}

// vaLine is a request line of the lines form.
func vaLine(account, direction string, amount int64) map[string]any {
	field := "ledger_account_id"
	if strings.HasPrefix(account, "va_") {
		field = "virtual_account_id"
	}
	return map[string]any{field: account, "direction": direction, "amount": amount}
}

func TestJournalEntryShorthand(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")

	r := vaEntry(api, key, map[string]any{"type": "adjustment", "description": "Goodwill credit", "virtual_account_id": id,
		"direction": "credit", "amount": 5000, "metadata": map[string]string{"ticket": "T-1"},
		"effective_at": "2026-01-01T00:00:00Z"})
	je := vaRequire(t, r, http.StatusCreated)
	jeID, _ := je["id"].(string)
	if !strings.HasPrefix(jeID, "je_") || je["object"] != "journal_entry" || je["type"] != "adjustment" ||
		je["description"] != "Goodwill credit" || je["status"] != "posted" || je["environment"] != "sandbox" {
		t.Errorf("journal entry %v", je)
	}
	if je["effective_at"] != "2026-01-01T00:00:00.000Z" {
		t.Errorf("effective_at = %v, want 2026-01-01T00:00:00.000Z", je["effective_at"])
	}
	if md, _ := je["metadata"].(map[string]any); md["ticket"] != "T-1" {
		t.Errorf("metadata = %v", je["metadata"])
	}
	accounts := vaLedgerAccounts(t, api, key)
	operating, _ := accounts["platform_operating"]["id"].(string)
	fees, _ := accounts["platform_fees"]["id"].(string)
	vaLA, _ := accounts[id]["id"].(string)
	if operating == "" || fees == "" || vaLA == "" {
		t.Fatalf("ledger accounts lack platform_operating, platform_fees or the account's: %v", accounts)
	}
	entries := vaEntries(t, je)
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2: %s", len(entries), r.Body)
	}
	for i, w := range []struct{ la, va, dir string }{{vaLA, id, "credit"}, {operating, "", "debit"}} {
		e := entries[i]
		va, _ := e["virtual_account_id"].(string)
		if e["ledger_account_id"] != w.la || va != w.va || e["direction"] != w.dir || vaInt(t, e["amount"]) != 5000 ||
			e["journal_entry_id"] != jeID || e["object"] != "ledger_entry" || e["type"] != "adjustment" ||
			e["status"] != "posted" || e["currency"] != "USD" || !strings.HasPrefix(fmt.Sprint(e["id"]), "le_") {
			t.Errorf("entry %d = %v, want %s of %s (virtual account %q)", i, e, w.dir, w.la, w.va)
		}
	}
	if _, ok := entries[1]["virtual_account_id"]; !ok || entries[1]["virtual_account_id"] != nil {
		t.Errorf("a system account's entry has virtual_account_id %v, want null", entries[1]["virtual_account_id"])
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 5000 || b["available"] != 5000 {
		t.Errorf("balance after a 5000 credit: %v", b)
	}

	// A fee debit goes to platform_fees; a correction to platform_operating.
	je = vaAdjust(t, api, key, id, "fee", "debit", 1200)
	if entries := vaEntries(t, je); len(entries) != 2 || entries[1]["ledger_account_id"] != fees || entries[1]["direction"] != "credit" {
		t.Errorf("a fee's offset is %v, want a credit of platform_fees %s", entries, fees)
	}
	je = vaAdjust(t, api, key, id, "correction", "debit", 100)
	if entries := vaEntries(t, je); len(entries) != 2 || entries[1]["ledger_account_id"] != operating {
		t.Errorf("a correction's offset is %v, want platform_operating %s", entries, operating)
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 3700 {
		t.Errorf("posted = %d, want 3700", b["posted"])
	}

	// A debit past the available balance: 422 naming the account; nothing posts.
	e := requireError(t, vaEntry(api, key, map[string]any{"type": "fee", "description": "too much", "virtual_account_id": id,
		"direction": "debit", "amount": 3701}), http.StatusUnprocessableEntity, "insufficient_funds")
	if e["resource_id"] != id {
		t.Errorf("resource_id = %v, want %s", e["resource_id"], id)
	}
	vaAdjust(t, api, key, id, "fee", "debit", 3700) // exactly the balance
	if b := vaBalance(t, api, key, id); b["posted"] != 0 || b["available"] != 0 {
		t.Errorf("balance after debiting it all: %v", b)
	}

	for _, c := range []struct {
		name  string
		body  map[string]any
		param string
	}{
		{"type missing", map[string]any{"description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1}, "type"},
		{"type not manual", map[string]any{"type": "payment", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1}, "type"},
		{"description missing", map[string]any{"type": "fee", "virtual_account_id": id, "direction": "credit", "amount": 1}, "description"},
		{"description 501 chars", map[string]any{"type": "fee", "description": strings.Repeat("d", 501), "virtual_account_id": id, "direction": "credit", "amount": 1}, "description"},
		{"direction unknown", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "up", "amount": 1}, "direction"},
		{"amount zero", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 0}, "amount"},
		{"amount missing", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit"}, "amount"},
		{"amount not an integer", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1.5}, "amount"},
		{"amount a string", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": "1"}, "amount"},
		{"virtual_account_id malformed", map[string]any{"type": "fee", "description": "x", "virtual_account_id": "acct_1", "direction": "credit", "amount": 1}, "virtual_account_id"},
		{"no form", map[string]any{"type": "fee", "description": "x"}, "lines"},
		{"two forms", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1,
			"lines": []any{vaLine(id, "credit", 1), vaLine(operating, "debit", 1)}}, "lines"},
		{"effective_at not RFC 3339", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1, "effective_at": "2026-01-01"}, "effective_at"},
		{"51 metadata keys", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1, "metadata": vaManyKeys(51)}, "metadata"},
		{"unknown field", map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "credit", "amount": 1, "memo": "y"}, "memo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := requireError(t, vaEntry(api, key, c.body), http.StatusBadRequest, "invalid_request")
			if e["param"] != c.param {
				t.Errorf("param = %v, want %s", e["param"], c.param)
			}
		})
	}
	requireError(t, vaEntry(api, key, map[string]any{"type": "fee", "description": "x", "virtual_account_id": vaUnknown("va_"),
		"direction": "credit", "amount": 1}), http.StatusNotFound, "not_found")
}

func vaManyKeys(n int) map[string]string {
	m := map[string]string{}
	for i := 0; i < n; i++ {
		m["k"+strconv.Itoa(i)] = "v"
	}
	return m
}

func TestJournalEntryLines(t *testing.T) {
	api, platformID, key := vaAPI(t)
	a := vaOpenID(t, api, key, platformID, "biz_a")
	b := vaOpenID(t, api, key, platformID, "biz_b")
	vaCredit(t, api, key, a, 10000)
	accounts := vaLedgerAccounts(t, api, key)
	operating, _ := accounts["platform_operating"]["id"].(string)
	bLA, _ := accounts[b]["id"].(string)

	// Move 3000 from a to b, naming b by its ledger account.
	je := vaRequire(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "Misrouted deposit",
		"lines": []any{vaLine(a, "debit", 3000), vaLine(bLA, "credit", 3000)}}), http.StatusCreated)
	entries := vaEntries(t, je)
	if len(entries) != 2 || entries[0]["virtual_account_id"] != a || entries[1]["virtual_account_id"] != b ||
		entries[1]["ledger_account_id"] != bLA || entries[0]["ledger_account_id"] != accounts[a]["id"] {
		t.Errorf("entries %v: want a's and b's ledger and virtual account ids filled in", entries)
	}
	// Three lines.
	vaRequire(t, vaEntry(api, key, map[string]any{"type": "adjustment", "description": "Promo",
		"lines": []any{vaLine(operating, "debit", 500), vaLine(a, "credit", 200), vaLine(b, "credit", 300)}}), http.StatusCreated)
	if ba, bb := vaBalance(t, api, key, a)["posted"], vaBalance(t, api, key, b)["posted"]; ba != 7200 || bb != 3300 {
		t.Errorf("posted a %d b %d, want 7200 and 3300", ba, bb)
	}

	e := requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x",
		"lines": []any{vaLine(a, "debit", 100), vaLine(b, "credit", 90)}}), http.StatusBadRequest, "unbalanced_entry")
	if e["param"] != "lines" {
		t.Errorf("unbalanced_entry param = %v, want lines", e["param"])
	}
	requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x",
		"lines": []any{vaLine(a, "credit", 100), vaLine(b, "credit", 100)}}), http.StatusBadRequest, "unbalanced_entry")

	e = requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x",
		"lines": []any{vaLine(b, "debit", 3301), vaLine(operating, "credit", 3301)}}), http.StatusUnprocessableEntity, "insufficient_funds")
	if e["resource_id"] != b {
		t.Errorf("insufficient_funds resource_id = %v, want %s", e["resource_id"], b)
	}

	for _, c := range []struct {
		name  string
		lines any
		param string
	}{
		{"one line", []any{vaLine(a, "debit", 1)}, "lines"},
		{"no lines", []any{}, "lines"},
		{"both ids", []any{map[string]any{"ledger_account_id": operating, "virtual_account_id": a, "direction": "debit", "amount": 1}, vaLine(b, "credit", 1)}, "lines[0]"},
		{"neither id", []any{vaLine(a, "debit", 1), map[string]any{"direction": "credit", "amount": 1}}, "lines[1]"},
		{"bad direction", []any{vaLine(a, "debit", 1), vaLine(b, "sideways", 1)}, "lines[1].direction"},
		{"zero amount", []any{vaLine(a, "debit", 0), vaLine(b, "credit", 0)}, "lines[0].amount"},
		{"unknown line field", []any{map[string]any{"virtual_account_id": a, "direction": "debit", "amount": 1, "memo": "x"}, vaLine(b, "credit", 1)}, "memo"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x", "lines": c.lines}),
				http.StatusBadRequest, "invalid_request")
			if e["param"] != c.param && !strings.HasSuffix(fmt.Sprint(e["param"]), c.param) {
				t.Errorf("param = %v, want %s", e["param"], c.param)
			}
		})
	}
	many := make([]any, 101)
	for i := range many {
		many[i] = vaLine(operating, []string{"debit", "credit"}[i%2], 1)
	}
	requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x", "lines": many}), http.StatusBadRequest, "invalid_request")

	e = requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x",
		"lines": []any{vaLine(vaUnknown("la_"), "debit", 1), vaLine(a, "credit", 1)}}), http.StatusNotFound, "not_found")
	if e["param"] != "lines[0].ledger_account_id" {
		t.Errorf("param = %v, want lines[0].ledger_account_id", e["param"])
	}
	// Another platform's ledger account does not exist for the caller.
	otherPlatform, otherKey := api.newPlatform("Other Co")
	other := vaOpenID(t, api, otherKey, otherPlatform, "theirs")
	otherLA, _ := vaLedgerAccounts(t, api, otherKey)[other]["id"].(string)
	requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x",
		"lines": []any{vaLine(a, "debit", 1), vaLine(otherLA, "credit", 1)}}), http.StatusNotFound, "not_found")
	requireError(t, vaEntry(api, key, map[string]any{"type": "correction", "description": "x",
		"lines": []any{vaLine(a, "debit", 1), vaLine(other, "credit", 1)}}), http.StatusNotFound, "not_found")
	if ba, bb := vaBalance(t, api, key, a)["posted"], vaBalance(t, api, key, b)["posted"]; ba != 7200 || bb != 3300 {
		t.Errorf("refused entries moved money: posted a %d b %d", ba, bb)
	}
}

func TestJournalEntryReversal(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	vaCredit(t, api, key, id, 10000)
	orig := vaAdjust(t, api, key, id, "adjustment", "credit", 2500)
	origID := orig["id"].(string)
	if vaBalance(t, api, key, id)["posted"] != 12500 {
		t.Fatal("the adjustment did not post")
	}

	rev := vaRequire(t, vaEntry(api, key, map[string]any{"reverses": origID}), http.StatusCreated)
	if rev["type"] != "correction" || rev["reverses"] != origID || rev["description"] != "Reversal of "+origID {
		t.Errorf("reversal: type %v reverses %v description %v", rev["type"], rev["reverses"], rev["description"])
	}
	oe, re := vaEntries(t, orig), vaEntries(t, rev)
	if len(re) != len(oe) {
		t.Fatalf("the reversal has %d entries, the original %d", len(re), len(oe))
	}
	for i := range oe {
		if re[i]["ledger_account_id"] != oe[i]["ledger_account_id"] || re[i]["amount"] != oe[i]["amount"] ||
			re[i]["direction"] == oe[i]["direction"] || re[i]["id"] == oe[i]["id"] {
			t.Errorf("reversal entry %d = %v, want the mirror of %v", i, re[i], oe[i])
		}
	}
	if b := vaBalance(t, api, key, id)["posted"]; b != 10000 {
		t.Errorf("posted after the reversal = %d, want 10000", b)
	}

	// Twice: 409 naming the reversal.
	e := requireError(t, vaEntry(api, key, map[string]any{"reverses": origID}), http.StatusConflict, "invalid_state")
	if e["resource_id"] != rev["id"] {
		t.Errorf("resource_id = %v, want the reversal %v", e["resource_id"], rev["id"])
	}
	// A reversal with its own type and description.
	second := vaAdjust(t, api, key, id, "fee", "debit", 400)
	rev2 := vaRequire(t, vaEntry(api, key, map[string]any{"reverses": second["id"], "type": "adjustment", "description": "Fee waived"}), http.StatusCreated)
	if rev2["type"] != "adjustment" || rev2["description"] != "Fee waived" {
		t.Errorf("reversal with type and description: %v %v", rev2["type"], rev2["description"])
	}
	// A reversal that would overdraw the account.
	third := vaAdjust(t, api, key, id, "adjustment", "credit", 1000)
	vaAdjust(t, api, key, id, "fee", "debit", 10500)
	e = requireError(t, vaEntry(api, key, map[string]any{"reverses": third["id"]}), http.StatusUnprocessableEntity, "insufficient_funds")
	if e["resource_id"] != id {
		t.Errorf("resource_id = %v, want %s", e["resource_id"], id)
	}

	for _, bad := range []string{vaUnknown("je_"), "je_nope"} {
		requireError(t, vaEntry(api, key, map[string]any{"reverses": bad}), http.StatusNotFound, "not_found")
	}
	e = requireError(t, vaEntry(api, key, map[string]any{"reverses": origID, "type": "payment"}), http.StatusBadRequest, "invalid_request")
	if e["param"] != "type" {
		t.Errorf("param = %v, want type", e["param"])
	}
	requireError(t, vaEntry(api, key, map[string]any{"reverses": origID, "virtual_account_id": id, "direction": "credit", "amount": 1}),
		http.StatusBadRequest, "invalid_request")
	_, otherKey := api.newPlatform("Other Co")
	requireError(t, vaEntry(api, otherKey, map[string]any{"reverses": third["id"]}), http.StatusNotFound, "not_found")
}

func TestJournalEntryIdempotency(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	body := map[string]any{"type": "adjustment", "description": "Bonus", "virtual_account_id": id, "direction": "credit", "amount": 700}

	r := vaEntry(api, key, body, "Idempotency-Key", "adj-1")
	first := vaRequire(t, r, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a first request has Idempotent-Replayed %q", r.Header.Get("Idempotent-Replayed"))
	}
	r = vaEntry(api, key, body, "Idempotency-Key", "adj-1")
	replay := vaRequire(t, r, http.StatusOK)
	if r.Header.Get("Idempotent-Replayed") != "true" || replay["id"] != first["id"] || replay["created_at"] != first["created_at"] {
		t.Errorf("replay: header %q id %v (want %v)", r.Header.Get("Idempotent-Replayed"), replay["id"], first["id"])
	}
	// Key order and white space do not matter.
	reordered := fmt.Sprintf(` { "amount" : 700, "direction":"credit", "virtual_account_id": %q, "description":"Bonus", "type":"adjustment" } `, id)
	r = vaEntry(api, key, reordered, "Idempotency-Key", "adj-1")
	if vaRequire(t, r, http.StatusOK); r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("a reordered body is not a replay")
	}
	if b := vaBalance(t, api, key, id)["posted"]; b != 700 {
		t.Fatalf("posted = %d after one entry and two replays, want 700", b)
	}

	// Same key, another request: 409 naming the original.
	changed := map[string]any{"type": "adjustment", "description": "Bonus", "virtual_account_id": id, "direction": "credit", "amount": 701}
	e := requireError(t, vaEntry(api, key, changed, "Idempotency-Key", "adj-1"), http.StatusConflict, "idempotency_conflict")
	if e["resource_id"] != first["id"] {
		t.Errorf("resource_id = %v, want %v", e["resource_id"], first["id"])
	}

	// The key in the body works the same.
	withKey := map[string]any{"type": "fee", "description": "Monthly fee", "virtual_account_id": id, "direction": "debit", "amount": 100, "idempotency_key": "fee-1"}
	r1 := vaRequire(t, vaEntry(api, key, withKey), http.StatusCreated)
	r = vaEntry(api, key, withKey)
	if r2 := vaRequire(t, r, http.StatusOK); r2["id"] != r1["id"] || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("body key replay: %v vs %v, header %q", r2["id"], r1["id"], r.Header.Get("Idempotent-Replayed"))
	}
	// Header and body given: they must be equal.
	r = vaEntry(api, key, withKey, "Idempotency-Key", "fee-1")
	vaRequire(t, r, http.StatusOK)
	e = requireError(t, vaEntry(api, key, withKey, "Idempotency-Key", "fee-2"), http.StatusBadRequest, "invalid_request")
	if e["param"] != "idempotency_key" {
		t.Errorf("param = %v, want idempotency_key", e["param"])
	}
	e = requireError(t, vaEntry(api, key, body, "Idempotency-Key", strings.Repeat("k", 256)), http.StatusBadRequest, "invalid_request")
	if e["param"] != "idempotency_key" {
		t.Errorf("param = %v, want idempotency_key", e["param"])
	}
	if b := vaBalance(t, api, key, id)["posted"]; b != 600 {
		t.Fatalf("posted = %d, want 600", b)
	}

	// A refused request does not take the key.
	over := map[string]any{"type": "fee", "description": "Too big", "virtual_account_id": id, "direction": "debit", "amount": 100000}
	requireError(t, vaEntry(api, key, over, "Idempotency-Key", "big-1"), http.StatusUnprocessableEntity, "insufficient_funds")
	vaCredit(t, api, key, id, 100000)
	vaRequire(t, vaEntry(api, key, over, "Idempotency-Key", "big-1"), http.StatusCreated)

	// Scope: (platform, environment).
	otherPlatform, otherKey := api.newPlatform("Other Co")
	otherID := vaOpenID(t, api, otherKey, otherPlatform, "theirs")
	vaRequire(t, vaEntry(api, otherKey, map[string]any{"type": "adjustment", "description": "Bonus", "virtual_account_id": otherID,
		"direction": "credit", "amount": 700}, "Idempotency-Key", "adj-1"), http.StatusCreated)
	liveKey := api.enableLive(platformID)
	liveID := vaOpenID(t, api, liveKey, platformID, "biz_1")
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 700}), http.StatusCreated) // live money is funded first
	vaRequire(t, vaEntry(api, liveKey, map[string]any{"type": "adjustment", "description": "Bonus", "virtual_account_id": liveID,
		"direction": "credit", "amount": 700}, "Idempotency-Key", "adj-1"), http.StatusCreated)
}

// vaLedgerFixture: two accounts; a (RTP credit 10000, then after mid a
// fee debit 250), b (adjustment credit 500 after mid, and a pending ACH
// credit 700). Eight ledger entries.
type vaLedgerFixture struct {
	api       *testAPI
	key       string
	a, b, mid string
}

func vaNewLedgerFixture(t *testing.T) vaLedgerFixture {
	api, platformID, key := vaAPI(t)
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"ach_standard_delay_seconds": 3600}}), http.StatusOK)
	f := vaLedgerFixture{api: api, key: key}
	f.a = vaOpenID(t, api, key, platformID, "biz_a")
	f.b = vaOpenID(t, api, key, platformID, "biz_b")
	vaCredit(t, api, key, f.a, 10000)
	f.mid = vaNow()
	vaAdjust(t, api, key, f.b, "adjustment", "credit", 500)
	vaAdjust(t, api, key, f.a, "fee", "debit", 250)
	vaRequire(t, vaInbound(api, key, f.b, 700, "ach_standard"), http.StatusCreated)
	api.sync()
	return f
}

func TestLedgerEntriesList(t *testing.T) {
	f := vaNewLedgerFixture(t)
	api, key := f.api, f.key
	accounts := vaLedgerAccounts(t, api, key)
	fees, _ := accounts["platform_fees"]["id"].(string)
	aLA, _ := accounts[f.a]["id"].(string)

	list := vaGet(t, api, key, "/v1/ledger/entries")
	entries := vaData(t, list)
	if len(entries) != 8 {
		t.Fatalf("%d ledger entries, want 8: %s", len(entries), list)
	}
	all := vaIDs(t, list)
	byID := map[string]map[string]any{}
	for _, e := range entries {
		byID[e["id"].(string)] = e
		if e["object"] != "ledger_entry" || e["currency"] != "USD" || e["environment"] != "sandbox" ||
			!strings.HasPrefix(fmt.Sprint(e["journal_entry_id"]), "je_") || !strings.HasPrefix(fmt.Sprint(e["ledger_account_id"]), "la_") {
			t.Errorf("entry %v", e)
		}
	}
	// Newest first: the pending ACH pair comes first, the RTP pair last.
	if entries[0]["status"] != "pending" || entries[7]["type"] != "inbound_transfer" || entries[7]["status"] != "posted" {
		t.Errorf("entries are not newest first: first %v, last %v", entries[0], entries[7])
	}

	match := func(pred func(e map[string]any) bool) []string {
		var out []string
		for _, id := range all {
			if pred(byID[id]) {
				out = append(out, id)
			}
		}
		return out
	}
	field := func(name, value string) func(e map[string]any) bool {
		return func(e map[string]any) bool { return fmt.Sprint(e[name]) == value }
	}
	and := func(p, q func(e map[string]any) bool) func(e map[string]any) bool {
		return func(e map[string]any) bool { return p(e) && q(e) }
	}
	for _, c := range []struct {
		query string
		want  []string
		n     int
	}{
		{"virtual_account_id=" + f.a, match(field("virtual_account_id", f.a)), 2},
		{"virtual_account_id=" + f.b, match(field("virtual_account_id", f.b)), 2},
		{"ledger_account_id=" + aLA, match(field("virtual_account_id", f.a)), 2},
		{"ledger_account_id=" + fees, match(field("ledger_account_id", fees)), 1},
		{"type=inbound_transfer", match(field("type", "inbound_transfer")), 4},
		{"type=fee", match(field("type", "fee")), 2},
		{"type=adjustment", match(field("type", "adjustment")), 2},
		{"type=payment", nil, 0},
		{"direction=debit", match(field("direction", "debit")), 4},
		{"direction=credit", match(field("direction", "credit")), 4},
		{"status=pending", match(field("status", "pending")), 2},
		{"status=posted", match(field("status", "posted")), 6},
		{"status=archived", nil, 0},
		{"created_after=" + f.mid, all[:6], 6},
		{"created_before=" + f.mid, all[6:], 2},
		{"virtual_account_id=" + f.a + "&direction=debit", match(and(field("virtual_account_id", f.a), field("direction", "debit"))), 1},
		{"virtual_account_id=" + f.b + "&status=pending&type=inbound_transfer", match(and(field("virtual_account_id", f.b), field("status", "pending"))), 1},
		{"ledger_account_id=" + fees + "&direction=debit", nil, 0},
		{"virtual_account_id=" + f.a + "&created_after=" + f.mid, match(and(field("virtual_account_id", f.a), field("type", "fee"))), 1},
	} {
		got := vaIDs(t, vaGet(t, api, key, "/v1/ledger/entries?"+c.query))
		if len(got) != c.n || !slices.Equal(got, c.want) {
			t.Errorf("?%s = %v, want %d entries %v", c.query, got, c.n, c.want)
		}
	}
	if e := byID[match(field("ledger_account_id", fees))[0]]; e["direction"] != "credit" || vaInt(t, e["amount"]) != 250 || e["virtual_account_id"] != nil {
		t.Errorf("the platform_fees entry is %v, want a credit of 250 with no virtual account", e)
	}

	pages := vaWalk(t, api, key, "/v1/ledger/entries", 3)
	if len(pages) != 3 || !slices.Equal(vaFlatten(pages), all) {
		t.Errorf("a walk by 3 gave %v, want %v in pages of 3, 3, 2", pages, all)
	}
	pages = vaWalk(t, api, key, "/v1/ledger/entries?direction=credit", 3)
	if !slices.Equal(vaFlatten(pages), match(field("direction", "credit"))) || len(pages) != 2 {
		t.Errorf("a filtered walk gave %v", pages)
	}

	for _, c := range []struct{ query, param string }{
		{"virtual_account_id=" + f.a + "&ledger_account_id=" + aLA, "ledger_account_id"},
		{"direction=up", "direction"},
		{"status=void", "status"},
		{"type=transfer", "type"},
		{"created_after=soon", "created_after"},
		{"created_before=2026-02-30", "created_before"},
		{"limit=101", "limit"},
		{"cursor=xyz", "cursor"},
	} {
		e := requireError(t, api.do("GET", "/v1/ledger/entries?"+c.query, key, nil), http.StatusBadRequest, "invalid_request")
		if e["param"] != c.param {
			t.Errorf("?%s: param %v, want %s", c.query, e["param"], c.param)
		}
	}
	for _, q := range []string{"virtual_account_id=" + vaUnknown("va_"), "ledger_account_id=" + vaUnknown("la_")} {
		requireError(t, api.do("GET", "/v1/ledger/entries?"+q, key, nil), http.StatusNotFound, "not_found")
	}
	// Another platform sees none of it, not even by id.
	_, otherKey := api.newPlatform("Other Co")
	if ids := vaIDs(t, vaGet(t, api, otherKey, "/v1/ledger/entries")); len(ids) != 0 {
		t.Errorf("another platform lists %v", ids)
	}
	requireError(t, api.do("GET", "/v1/ledger/entries?ledger_account_id="+fees, otherKey, nil), http.StatusNotFound, "not_found")
}

func TestLedgerAccountsBalances(t *testing.T) {
	f := vaNewLedgerFixture(t)
	api, key := f.api, f.key
	list := vaGet(t, api, key, "/v1/ledger/accounts")
	items := vaData(t, list)
	if len(items) != 9 {
		t.Fatalf("%d ledger accounts, want 7 system accounts and 2 of virtual accounts: %s", len(items), list)
	}
	accounts := vaLedgerAccounts(t, api, key)
	for _, c := range []struct {
		name                     string
		normal                   string
		posted, pending, availab int64
	}{
		{"rail_clearing_rtp", "debit", 10000, 0, 10000},
		{"rail_clearing_ach_standard", "debit", 0, 700, 0},
		{"rail_clearing_ach_same_day", "debit", 0, 0, 0},
		{"rail_clearing_fednow", "debit", 0, 0, 0},
		{"platform_fees", "credit", 250, 0, 250},
		{"platform_operating", "credit", -500, 0, -500},
		{"service_fee_revenue", "credit", 0, 0, 0},
		{f.a, "credit", 9750, 0, 9750},
		{f.b, "credit", 500, 700, 500},
	} {
		a := accounts[c.name]
		if a == nil {
			t.Errorf("no ledger account %s", c.name)
			continue
		}
		if id, _ := a["id"].(string); !strings.HasPrefix(id, "la_") || a["object"] != "ledger_account" || a["currency"] != "USD" || a["environment"] != "sandbox" {
			t.Errorf("%s: %v", c.name, a)
		}
		got := [3]int64{vaLedgerBalance(t, a, "posted"), vaLedgerBalance(t, a, "pending"), vaLedgerBalance(t, a, "available")}
		if a["normal_balance"] != c.normal || got != [3]int64{c.posted, c.pending, c.availab} {
			t.Errorf("%s: normal %v balances posted, pending, available %v, want %s %v", c.name, a["normal_balance"], got, c.normal,
				[3]int64{c.posted, c.pending, c.availab})
		}
	}
	// The ledger balances: debit-normal posted = credit-normal posted.
	var debits, credits int64
	for _, a := range accounts {
		if a["normal_balance"] == "debit" {
			debits += vaLedgerBalance(t, a, "posted")
		} else {
			credits += vaLedgerBalance(t, a, "posted")
		}
	}
	if debits != credits {
		t.Errorf("debit-normal accounts hold %d, credit-normal %d", debits, credits)
	}
	// A virtual account's ledger account agrees with its balance.
	if b := vaBalance(t, api, key, f.b); b["posted"] != 500 || b["pending_inbound"] != 700 {
		t.Errorf("virtual account b balance %v", b)
	}

	pages := vaWalk(t, api, key, "/v1/ledger/accounts", 4)
	if got := vaFlatten(pages); len(pages) != 3 || !slices.Equal(got, vaIDs(t, list)) {
		t.Errorf("a walk by 4 gave %v, want %v", pages, vaIDs(t, list))
	}
	for _, q := range []string{"limit=0", "cursor=abc"} {
		requireError(t, api.do("GET", "/v1/ledger/accounts?"+q, key, nil), http.StatusBadRequest, "invalid_request")
	}

	// The live environment has its own ledger.
	platformID := vaPlatformID(t, api, key)
	liveKey := api.enableLive(platformID)
	liveVA := vaOpenID(t, api, liveKey, platformID, "biz_a")
	for _, a := range vaData(t, vaGet(t, api, liveKey, "/v1/ledger/accounts")) {
		if a["environment"] != "live" || a["id"] == accounts["platform_fees"]["id"] {
			t.Errorf("a live key lists %v", a)
		}
	}
	if la := vaLedgerAccounts(t, api, liveKey)[liveVA]; la == nil || vaLedgerBalance(t, la, "posted") != 0 {
		t.Errorf("the live account's ledger account is %v", la)
	}
}

// TestLedgerAccountsChartOfANewPlatform: API.md §7 gives every platform
// and environment its system accounts; a platform that has opened a
// virtual account but moved no money yet lists them with zero balances
// (and can name platform_operating in a lines-form entry).
func TestLedgerAccountsChartOfANewPlatform(t *testing.T) {
	api, platformID, key := vaAPI(t)
	vaOpenID(t, api, key, platformID, "biz_a")
	accounts := vaLedgerAccounts(t, api, key)
	var missing []string
	for _, name := range []string{"platform_operating", "platform_fees", "service_fee_revenue",
		"rail_clearing_ach_standard", "rail_clearing_ach_same_day", "rail_clearing_rtp", "rail_clearing_fednow"} {
		if accounts[name] == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("GET /ledger/accounts of a platform with one virtual account and no money movement yet lists %d accounts; it lacks %v",
			len(accounts), missing)
	}
}

func TestLedgerExport(t *testing.T) {
	f := vaNewLedgerFixture(t)
	api, key := f.api, f.key
	vaAdjust(t, api, key, f.a, "adjustment", "credit", 500)
	api.sync()
	accounts := vaLedgerAccounts(t, api, key)

	read := func(query string) [][]string {
		t.Helper()
		r := api.do("GET", "/v1/ledger/exports"+query, key, nil)
		if r.Status != http.StatusOK {
			t.Fatalf("export%s: %d %s", query, r.Status, r.Body)
		}
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
			t.Errorf("Content-Type %q, want text/csv", ct)
		}
		if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, `attachment; filename="ledger-`) {
			t.Errorf("Content-Disposition %q", cd)
		}
		rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
		if err != nil {
			t.Fatalf("the export is not CSV: %v\n%s", err, r.Body)
		}
		want := []string{"entry_id", "journal_entry_id", "ledger_account_id", "ledger_account_name", "virtual_account_id",
			"direction", "amount", "currency", "type", "status", "description", "effective_at", "created_at", "posted_at", "running_balance"}
		if len(rows) == 0 || !slices.Equal(rows[0], want) {
			t.Fatalf("export header %v, want %v", rows, want)
		}
		return rows[1:]
	}
	// running balances per account, in ledger order
	running := func(rows [][]string) map[string][]string {
		out := map[string][]string{}
		for _, row := range rows {
			name := row[3]
			if row[4] != "" {
				name = row[4]
			}
			out[name] = append(out[name], row[14])
		}
		return out
	}
	rows := read("")
	if len(rows) != 10 {
		t.Fatalf("%d rows, want 10", len(rows))
	}
	for _, row := range rows {
		if !strings.HasPrefix(row[0], "le_") || !strings.HasPrefix(row[1], "je_") || row[7] != "USD" ||
			!vaTimePattern.MatchString(row[11]) || !vaTimePattern.MatchString(row[12]) {
			t.Errorf("row %v", row)
		}
		if (row[13] == "") != (row[9] == "pending") {
			t.Errorf("row %v: posted_at %q with status %s", row, row[13], row[9])
		}
		if la := accounts[row[3]]; row[4] == "" && (la == nil || la["id"] != row[2]) {
			t.Errorf("row %v: ledger account name and id disagree", row)
		}
	}
	want := map[string][]string{
		f.a:                          {"10000", "9750", "10250"},
		f.b:                          {"500", "500"}, // the pending ACH credit does not count
		"rail_clearing_rtp":          {"10000"},
		"rail_clearing_ach_standard": {"0"},
		"platform_fees":              {"250"},
		"platform_operating":         {"-500", "-1000"},
	}
	got := running(rows)
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("running_balance of %s = %v, want %v", name, got[name], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("accounts in the export: %v", got)
	}

	// A range keeps each account's running balance over its whole history.
	rows = read("?created_after=" + f.mid)
	got = running(rows)
	if len(rows) != 8 || !slices.Equal(got[f.a], []string{"9750", "10250"}) || got["rail_clearing_rtp"] != nil {
		t.Errorf("created_after export: %d rows, running %v", len(rows), got)
	}
	rows = read("?created_before=" + f.mid)
	if got = running(rows); len(rows) != 2 || !slices.Equal(got[f.a], []string{"10000"}) {
		t.Errorf("created_before export: %d rows, running %v", len(rows), got)
	}
	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	if rows = read("?created_after=" + tomorrow); len(rows) != 0 {
		t.Errorf("an export of tomorrow has %d rows", len(rows))
	}

	e := requireError(t, api.do("GET", "/v1/ledger/exports?created_after=today", key, nil), http.StatusBadRequest, "invalid_request")
	if e["param"] != "created_after" {
		t.Errorf("param = %v, want created_after", e["param"])
	}
	_, otherKey := api.newPlatform("Other Co")
	r := api.do("GET", "/v1/ledger/exports", otherKey, nil)
	if lines := strings.Split(strings.TrimSpace(string(r.Body)), "\n"); r.Status != http.StatusOK || len(lines) != 1 {
		t.Errorf("another platform's export: %d %q", r.Status, r.Body)
	}
}

// vaConcurrently sends n requests at once and counts their statuses.
func vaConcurrently(n int, send func() response) map[int]int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := send()
			mu.Lock()
			counts[r.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return counts
}

func TestJournalEntryConcurrentDebitsNeverOverdraw(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	vaCredit(t, api, key, id, 1000)
	counts := vaConcurrently(10, func() response {
		return vaEntry(api, key, map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "debit", "amount": 200})
	})
	if counts[http.StatusCreated] != 5 || counts[http.StatusUnprocessableEntity] != 5 {
		t.Errorf("10 concurrent debits of 200 from 1000: %v, want 5 × 201 and 5 × 422", counts)
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 0 || b["available"] != 0 {
		t.Errorf("balance %v, want 0", b)
	}
}

func TestJournalEntryConcurrentIdempotentDuplicates(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	counts := vaConcurrently(10, func() response {
		return vaEntry(api, key, map[string]any{"type": "adjustment", "description": "x", "virtual_account_id": id,
			"direction": "credit", "amount": 5}, "Idempotency-Key", "dup-1")
	})
	if counts[http.StatusCreated] != 1 || counts[http.StatusCreated]+counts[http.StatusOK]+counts[http.StatusConflict] != 10 {
		t.Errorf("10 concurrent duplicates: %v, want one 201 and the rest 200 (replayed) or 409 (in progress)", counts)
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 5 {
		t.Errorf("posted = %d after 10 duplicates of a 5 credit, want 5", b["posted"])
	}
}

// GET /ledger/journal-entries/:id (API.md §12): a manual entry, and the
// entry a simulated inbound transfer made, each with its lines and its
// source, as the document says; another platform's, the other
// environment's, a malformed or unknown id are 404; the operator key 403.
func TestGetJournalEntry(t *testing.T) {
	api, platformID, key := vaAPI(t)
	doc := oaDocument(t, api)
	va := vaOpenID(t, api, key, platformID, "biz_1")
	manual := vaRequire(t, vaEntry(api, key, map[string]any{"type": "adjustment", "description": "Goodwill credit",
		"virtual_account_id": va, "direction": "credit", "amount": 5000}), http.StatusCreated)
	id := manual["id"].(string)
	got := oaCheck(t, doc, "GET", "/ledger/journal-entries/{id}", api.do("GET", "/v1/ledger/journal-entries/"+id, key, nil))
	if got["id"] != id || len(vaEntries(t, got)) != 2 || !reflect.DeepEqual(got["source"], map[string]any{"type": "journal_entry", "id": id}) {
		t.Errorf("the manual entry: %v", got)
	}
	if !reflect.DeepEqual(got, manual) {
		t.Errorf("GET differs from the POST's answer:\n got %v\nwant %v", got, manual)
	}
	transfer := vaRequire(t, api.do("POST", "/v1/simulations/inbound-transfers", key, map[string]any{"virtual_account_id": va,
		"amount": 700, "rail": "rtp", "originator": map[string]any{"name": "Globex", "account_number": "123456789", "routing_number": "021000021"}}),
		http.StatusCreated)
	je := oaCheck(t, doc, "GET", "/ledger/journal-entries/{id}", api.do("GET", "/v1/ledger/journal-entries/"+transfer["journal_entry_id"].(string), key, nil))
	if !reflect.DeepEqual(je["source"], map[string]any{"type": "inbound_transfer", "id": transfer["id"]}) || je["type"] != "inbound_transfer" {
		t.Errorf("the transfer's entry: %v", je)
	}

	_, otherKey := api.newPlatform("Other")
	liveKey := api.enableLive(platformID)
	for _, c := range []struct{ key, id string }{{otherKey, id}, {liveKey, id}, {key, "je_01jh3v9a2b3c4d5e6f7g8h9j0k"}, {key, "je_nope"}, {key, "pay_01jh3v9a2b3c4d5e6f7g8h9j0k"}} {
		oaCheck(t, doc, "GET", "/ledger/journal-entries/{id}", requireErrorResponse(t, api.do("GET", "/v1/ledger/journal-entries/"+c.id, c.key, nil), http.StatusNotFound, "not_found"))
	}
	requireError(t, api.do("GET", "/v1/ledger/journal-entries/"+id, operatorKey, nil), http.StatusForbidden, "forbidden")
	requireError(t, api.do("GET", "/v1/ledger/journal-entries/"+id, "", nil), http.StatusUnauthorized, "unauthorized")
}

// requireErrorResponse is requireError that hands the response on.
func requireErrorResponse(t *testing.T, r response, status int, code string) response {
	t.Helper()
	requireError(t, r, status, code)
	return r
}
