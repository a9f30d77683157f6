package http_test

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

var (
	vaAccountNumber = regexp.MustCompile(`^[0-9]{12}$`)
	vaIDPattern     = regexp.MustCompile(`^va_[0-9a-hjkmnp-tv-z]{26}$`)
	vaTimePattern   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$`)
)

func TestVirtualAccountCreate(t *testing.T) {
	api, platformID, key := vaAPI(t)
	r := api.do("POST", "/v1/virtual-accounts", key, map[string]any{
		"platform_id": platformID, "entity_ref": "biz_42", "type": "savings", "metadata": map[string]string{"crm": "7"}})
	v := vaRequire(t, r, http.StatusCreated)
	id, _ := v["id"].(string)
	if !vaIDPattern.MatchString(id) {
		t.Errorf("id %q is not a va_ ULID", id)
	}
	for field, want := range map[string]any{
		"object": "virtual_account", "platform_id": platformID, "entity_ref": "biz_42", "type": "savings",
		"status": "active", "routing_number": "110000000", "currency": "USD", "kyb_status": "not_started",
		"environment": "sandbox",
	} {
		if v[field] != want {
			t.Errorf("%s = %v, want %v", field, v[field], want)
		}
	}
	if n, _ := v["account_number"].(string); !vaAccountNumber.MatchString(n) {
		t.Errorf("account_number %q is not 12 digits", n)
	}
	if c, _ := v["created_at"].(string); !vaTimePattern.MatchString(c) {
		t.Errorf("created_at %q is not RFC 3339 UTC with milliseconds", c)
	}
	if md, _ := v["metadata"].(map[string]any); len(md) != 1 || md["crm"] != "7" {
		t.Errorf("metadata = %v, want {crm: 7}", v["metadata"])
	}
	bal, _ := v["balance"].(map[string]any)
	for _, f := range []string{"posted", "pending_inbound", "pending_outbound", "available"} {
		if b, ok := bal[f].(float64); !ok || b != 0 {
			t.Errorf("balance.%s = %v, want 0", f, bal[f])
		}
	}

	// GET answers the same account.
	got := vaGet(t, api, key, "/v1/virtual-accounts/"+id)
	for _, f := range []string{"id", "account_number", "routing_number", "entity_ref", "status", "created_at"} {
		if got[f] != v[f] {
			t.Errorf("GET %s = %v, POST said %v", f, got[f], v[f])
		}
	}

	// One entity may hold several accounts; each gets its own number;
	// metadata defaults to {}.
	other := vaOpen(t, api, key, platformID, "biz_42")
	if other["account_number"] == v["account_number"] || other["id"] == id {
		t.Errorf("two accounts share a number or id: %v %v", other["account_number"], v["account_number"])
	}
	if md, ok := other["metadata"].(map[string]any); !ok || len(md) != 0 {
		t.Errorf("metadata without a request value = %v, want {}", other["metadata"])
	}
	if other["type"] != "checking" {
		t.Errorf("type = %v, want checking", other["type"])
	}
}

func TestVirtualAccountCreateValidation(t *testing.T) {
	api, platformID, key := vaAPI(t)
	otherPlatform, _ := api.newPlatform("Other Co")
	metadata := func(n int) map[string]string {
		m := map[string]string{}
		for i := 0; i < n; i++ {
			m[fmt.Sprintf("k%02d", i)] = "v"
		}
		return m
	}
	valid := func(change map[string]any) map[string]any {
		m := map[string]any{"platform_id": platformID, "entity_ref": "biz_1", "type": "checking"}
		for k, v := range change {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	for _, c := range []struct {
		name   string
		body   any
		status int
		code   string
		param  string
	}{
		{"entity_ref wrong type", valid(map[string]any{"entity_ref": 42}), 400, "invalid_request", "entity_ref"},
		{"type wrong type", valid(map[string]any{"type": true}), 400, "invalid_request", "type"},
		{"metadata wrong type", valid(map[string]any{"metadata": []string{"a"}}), 400, "invalid_request", "metadata"},
		{"type unknown", valid(map[string]any{"type": "business"}), 400, "invalid_request", "type"},
		{"type missing", valid(map[string]any{"type": nil}), 400, "invalid_request", "type"},
		{"entity_ref missing", valid(map[string]any{"entity_ref": nil}), 400, "invalid_request", "entity_ref"},
		{"entity_ref blank", valid(map[string]any{"entity_ref": "   "}), 400, "invalid_request", "entity_ref"},
		{"entity_ref 129 chars", valid(map[string]any{"entity_ref": strings.Repeat("e", 129)}), 400, "invalid_request", "entity_ref"},
		{"platform_id missing", valid(map[string]any{"platform_id": nil}), 400, "invalid_request", "platform_id"},
		{"another platform's platform_id", valid(map[string]any{"platform_id": otherPlatform}), 404, "not_found", ""},
		{"unknown platform_id", valid(map[string]any{"platform_id": vaUnknown("plt_")}), 404, "not_found", ""},
		{"51 metadata keys", valid(map[string]any{"metadata": metadata(51)}), 400, "invalid_request", "metadata"},
		{"metadata key 41 chars", valid(map[string]any{"metadata": map[string]string{strings.Repeat("k", 41): "v"}}), 400, "invalid_request", "metadata." + strings.Repeat("k", 41)},
		{"metadata value 501 chars", valid(map[string]any{"metadata": map[string]string{"k": strings.Repeat("v", 501)}}), 400, "invalid_request", "metadata.k"},
		{"unknown field", valid(map[string]any{"nickname": "x"}), 400, "invalid_request", "nickname"},
		{"not JSON", `{"platform_id":`, 400, "invalid_request", ""},
		{"not an object", `["x"]`, 400, "invalid_request", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := api.do("POST", "/v1/virtual-accounts", key, c.body)
			e := requireError(t, r, c.status, c.code)
			if c.param != "" && e["param"] != c.param {
				t.Errorf("param = %v, want %s", e["param"], c.param)
			}
		})
	}
	if ids := vaIDs(t, vaGet(t, api, key, "/v1/virtual-accounts")); len(ids) != 0 {
		t.Fatalf("refused requests created accounts: %v", ids)
	}

	// The bounds themselves are accepted.
	vaRequire(t, api.do("POST", "/v1/virtual-accounts", key, valid(map[string]any{
		"entity_ref": strings.Repeat("e", 128), "metadata": metadata(50)})), http.StatusCreated)
	vaRequire(t, api.do("POST", "/v1/virtual-accounts", key, valid(map[string]any{
		"metadata": map[string]string{strings.Repeat("k", 40): strings.Repeat("v", 500)}})), http.StatusCreated)
}

func TestVirtualAccountListFiltersAndPagination(t *testing.T) {
	api, platformID, key := vaAPI(t)
	var created []string // oldest first
	for _, ref := range []string{"ent-a", "ent-b", "ent-a", "ent-b", "ent-a"} {
		created = append(created, vaOpenID(t, api, key, platformID, ref))
	}
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+created[2]+"/freeze", key, nil), http.StatusOK)
	newestFirst := slices.Clone(created)
	slices.Reverse(newestFirst)

	all := vaGet(t, api, key, "/v1/virtual-accounts")
	if got := vaIDs(t, all); !slices.Equal(got, newestFirst) {
		t.Fatalf("list = %v, want newest first %v", got, newestFirst)
	}
	if all["has_more"] != false || all["next_cursor"] != nil {
		t.Errorf("a complete list has has_more %v, next_cursor %v", all["has_more"], all["next_cursor"])
	}

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"entity_ref=ent-a", []string{created[4], created[2], created[0]}},
		{"entity_ref=ent-b", []string{created[3], created[1]}},
		{"entity_ref=ent-c", nil},
		{"entity_ref=ENT-A", nil},
		{"status=frozen", []string{created[2]}},
		{"status=active", []string{created[4], created[3], created[1], created[0]}},
		{"status=closed", nil},
		{"entity_ref=ent-a&status=active", []string{created[4], created[0]}},
	} {
		if got := vaIDs(t, vaGet(t, api, key, "/v1/virtual-accounts?"+c.query)); !slices.Equal(got, c.want) {
			t.Errorf("?%s = %v, want %v", c.query, got, c.want)
		}
	}

	pages := vaWalk(t, api, key, "/v1/virtual-accounts", 2)
	if len(pages) != 3 || len(pages[2]) != 1 {
		t.Errorf("a walk by 2 over 5 accounts gave pages %v, want sizes 2, 2, 1", pages)
	}
	if got := vaFlatten(pages); !slices.Equal(got, newestFirst) {
		t.Errorf("the walk saw %v, want %v", got, newestFirst)
	}
	pages = vaWalk(t, api, key, "/v1/virtual-accounts?entity_ref=ent-a", 2)
	if got := vaFlatten(pages); len(pages) != 2 || !slices.Equal(got, []string{created[4], created[2], created[0]}) {
		t.Errorf("a filtered walk by 2 gave %v", pages)
	}
	pages = vaWalk(t, api, key, "/v1/virtual-accounts", 5)
	if len(pages) != 1 || len(pages[0]) != 5 {
		t.Errorf("a page exactly as long as the list has more: %v", pages)
	}

	for _, c := range []struct{ query, param string }{
		{"status=open", "status"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"limit=ten", "limit"},
		{"cursor=not-a-cursor", "cursor"},
	} {
		e := requireError(t, api.do("GET", "/v1/virtual-accounts?"+c.query, key, nil), 400, "invalid_request")
		if e["param"] != c.param {
			t.Errorf("?%s: param = %v, want %s", c.query, e["param"], c.param)
		}
	}
}

func TestVirtualAccountOtherPlatformIsNotFound(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	vaCredit(t, api, key, id, 1000)
	_, otherKey := api.newPlatform("Other Co")
	otherOwn := vaOpenID(t, api, otherKey, vaPlatformID(t, api, otherKey), "their_biz")

	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/virtual-accounts/" + id},
		{"GET", "/v1/virtual-accounts/" + id + "/balance"},
		{"GET", "/v1/virtual-accounts/" + id + "/balance?as_of=2020-01-01"},
		{"GET", "/v1/virtual-accounts/" + id + "/transactions"},
		{"GET", "/v1/virtual-accounts/" + id + "/statements/" + time.Now().UTC().Format("2006-01")},
		{"POST", "/v1/virtual-accounts/" + id + "/freeze"},
		{"POST", "/v1/virtual-accounts/" + id + "/unfreeze"},
		{"POST", "/v1/virtual-accounts/" + id + "/close"},
		{"GET", "/v1/ledger/entries?virtual_account_id=" + id},
	} {
		requireError(t, api.do(c.method, c.path, otherKey, nil), http.StatusNotFound, "not_found")
	}
	requireError(t, vaInbound(api, otherKey, id, 100, "rtp"), http.StatusNotFound, "not_found")
	requireError(t, vaEntry(api, otherKey, map[string]any{"type": "adjustment", "description": "x",
		"virtual_account_id": id, "direction": "credit", "amount": 100}), http.StatusNotFound, "not_found")
	if ids := vaIDs(t, vaGet(t, api, otherKey, "/v1/virtual-accounts")); !slices.Equal(ids, []string{otherOwn}) {
		t.Errorf("the other platform lists %v, want only its own %s", ids, otherOwn)
	}
	// The owner still sees it unchanged.
	if v := vaGet(t, api, key, "/v1/virtual-accounts/"+id); v["status"] != "active" || vaBalance(t, api, key, id)["posted"] != 1000 {
		t.Errorf("the other platform's calls changed the account: %v", v)
	}
	// Unknown and malformed ids.
	for _, bad := range []string{vaUnknown("va_"), "va_nope", vaUnknown("pay_")} {
		requireError(t, api.do("GET", "/v1/virtual-accounts/"+bad, key, nil), http.StatusNotFound, "not_found")
	}
}

func TestVirtualAccountEnvironmentsAreSeparate(t *testing.T) {
	api, platformID, sandboxKey := vaAPI(t)
	liveKey := api.enableLive(platformID)
	live := vaOpen(t, api, liveKey, platformID, "biz_1")
	if live["environment"] != "live" || !vaAccountNumber.MatchString(fmt.Sprint(live["account_number"])) {
		t.Fatalf("a live key opened %v", live)
	}
	liveID := live["id"].(string)
	sandboxID := vaOpenID(t, api, sandboxKey, platformID, "biz_1")

	for _, c := range []struct{ key, id string }{{sandboxKey, liveID}, {liveKey, sandboxID}} {
		for _, path := range []string{"", "/balance", "/transactions", "/statements/2026-01"} {
			requireError(t, api.do("GET", "/v1/virtual-accounts/"+c.id+path, c.key, nil), http.StatusNotFound, "not_found")
		}
		for _, action := range []string{"freeze", "unfreeze", "close"} {
			requireError(t, api.do("POST", "/v1/virtual-accounts/"+c.id+"/"+action, c.key, nil), http.StatusNotFound, "not_found")
		}
		requireError(t, api.do("GET", "/v1/ledger/entries?virtual_account_id="+c.id, c.key, nil), http.StatusNotFound, "not_found")
	}
	if ids := vaIDs(t, vaGet(t, api, sandboxKey, "/v1/virtual-accounts")); !slices.Equal(ids, []string{sandboxID}) {
		t.Errorf("the sandbox key lists %v, want only %s", ids, sandboxID)
	}
	if ids := vaIDs(t, vaGet(t, api, liveKey, "/v1/virtual-accounts")); !slices.Equal(ids, []string{liveID}) {
		t.Errorf("the live key lists %v, want only %s", ids, liveID)
	}
	if v := vaGet(t, api, liveKey, "/v1/virtual-accounts/"+liveID); v["status"] != "active" {
		t.Errorf("the live account is %v after the sandbox key's attempts", v["status"])
	}
}

func TestVirtualAccountLifecycle(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	path := "/v1/virtual-accounts/" + id
	state := func(action string, status int, want string) {
		t.Helper()
		r := api.do("POST", path+"/"+action, key, nil)
		if status != http.StatusOK {
			requireError(t, r, status, "invalid_state")
		} else if v := vaRequire(t, r, http.StatusOK); v["status"] != want || v["id"] != id {
			t.Fatalf("%s: status %v, want %s", action, v["status"], want)
		}
		if got := vaGet(t, api, key, path)["status"]; got != want {
			t.Fatalf("after %s the account is %v, want %s", action, got, want)
		}
	}
	state("freeze", 200, "frozen")
	state("freeze", 409, "frozen")
	state("close", 409, "frozen") // only an active account closes
	// A frozen account still receives funds.
	vaCredit(t, api, key, id, 100)
	state("unfreeze", 200, "active")
	state("unfreeze", 409, "active")
	state("close", 409, "active") // a balance of 100
	vaAdjust(t, api, key, id, "correction", "debit", 100)
	state("close", 200, "closed")
	state("close", 409, "closed")
	state("freeze", 409, "closed")
	state("unfreeze", 409, "closed")

	// A closed account rejects inbound funds and manual entries.
	e := requireError(t, vaInbound(api, key, id, 500, "rtp"), http.StatusUnprocessableEntity, "account_not_active")
	if e["resource_id"] != id {
		t.Errorf("resource_id = %v, want %s", e["resource_id"], id)
	}
	requireError(t, vaInbound(api, key, id, 500, "ach_standard"), http.StatusUnprocessableEntity, "account_not_active")
	requireError(t, vaEntry(api, key, map[string]any{"type": "adjustment", "description": "x", "virtual_account_id": id,
		"direction": "credit", "amount": 5}), http.StatusUnprocessableEntity, "account_not_active")
	if b := vaBalance(t, api, key, id); b["posted"] != 0 || b["pending_inbound"] != 0 {
		t.Errorf("a closed account's balance moved: %v", b)
	}

	// Bodies of the state changes are empty objects.
	other := vaOpenID(t, api, key, platformID, "biz_2")
	e = requireError(t, api.do("POST", "/v1/virtual-accounts/"+other+"/freeze", key, map[string]any{"reason": "x"}),
		http.StatusBadRequest, "invalid_request")
	if e["param"] != "reason" {
		t.Errorf("param = %v, want reason", e["param"])
	}
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+other+"/freeze", key, "{}"), http.StatusOK)
	requireError(t, api.do("POST", "/v1/virtual-accounts/"+vaUnknown("va_")+"/freeze", key, nil), http.StatusNotFound, "not_found")
}

func TestVirtualAccountCloseWithPendingInbound(t *testing.T) {
	api, platformID, key := vaAPI(t)
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"ach_standard_delay_seconds": 3600}}), http.StatusOK)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	it := vaRequire(t, vaInbound(api, key, id, 700, "ach_standard"), http.StatusCreated)
	if it["status"] != "pending" {
		t.Fatalf("an ACH transfer with an hour's delay is %v", it["status"])
	}
	requireError(t, api.do("POST", "/v1/virtual-accounts/"+id+"/close", key, nil), http.StatusConflict, "invalid_state")
}

// vaTxnFixture is an account with four transactions, oldest first: an RTP
// credit of 10000, an adjustment credit of 500, a fee debit of 250 and a
// pending ACH credit of 700. mid falls between the second and third.
type vaTxnFixture struct {
	api         *testAPI
	key, id     string
	mid         string
	inboundID   string
	adjustmentJ string
}

func vaNewTxnFixture(t *testing.T) vaTxnFixture {
	api, platformID, key := vaAPI(t)
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"ach_standard_delay_seconds": 3600}}), http.StatusOK)
	f := vaTxnFixture{api: api, key: key, id: vaOpenID(t, api, key, platformID, "biz_1")}
	f.inboundID = vaCredit(t, api, key, f.id, 10000)["id"].(string)
	f.adjustmentJ = vaAdjust(t, api, key, f.id, "adjustment", "credit", 500)["id"].(string)
	f.mid = vaNow()
	vaAdjust(t, api, key, f.id, "fee", "debit", 250)
	vaRequire(t, vaInbound(api, key, f.id, 700, "ach_standard"), http.StatusCreated)
	api.sync()
	return f
}

func TestVirtualAccountTransactions(t *testing.T) {
	f := vaNewTxnFixture(t)
	api, key := f.api, f.key
	base := "/v1/virtual-accounts/" + f.id + "/transactions"
	list := vaGet(t, api, key, base)
	txns := vaData(t, list)
	if len(txns) != 4 {
		t.Fatalf("%d transactions, want 4: %s", len(txns), list)
	}
	// Newest first: ACH (pending), fee, adjustment, RTP.
	want := []struct {
		typ, status, source string
		amount              int64
	}{
		{"inbound_transfer", "pending", "inbound_transfer", 700},
		{"fee", "posted", "journal_entry", -250},
		{"adjustment", "posted", "journal_entry", 500},
		{"inbound_transfer", "posted", "inbound_transfer", 10000},
	}
	for i, w := range want {
		tx := txns[i]
		src, _ := tx["source"].(map[string]any)
		if tx["type"] != w.typ || tx["status"] != w.status || vaInt(t, tx["amount"]) != w.amount || src["type"] != w.source {
			t.Errorf("transaction %d = %v, want %+v", i, tx, w)
		}
		if id, _ := tx["id"].(string); !strings.HasPrefix(id, "txn_") || tx["object"] != "transaction" || tx["virtual_account_id"] != f.id {
			t.Errorf("transaction %d: id %v object %v virtual_account_id %v", i, tx["id"], tx["object"], tx["virtual_account_id"])
		}
		if (tx["posted_at"] == nil) != (w.status == "pending") {
			t.Errorf("transaction %d (%s) has posted_at %v", i, w.status, tx["posted_at"])
		}
		if c, _ := tx["created_at"].(string); !vaTimePattern.MatchString(c) {
			t.Errorf("transaction %d created_at %q", i, c)
		}
		if d, _ := tx["description"].(string); d == "" {
			t.Errorf("transaction %d has no description", i)
		}
	}
	if src, _ := txns[3]["source"].(map[string]any); src["id"] != f.inboundID {
		t.Errorf("the RTP credit's source is %v, want the inbound transfer %s", src, f.inboundID)
	}
	if src, _ := txns[2]["source"].(map[string]any); src["id"] != f.adjustmentJ {
		t.Errorf("the adjustment's source is %v, want the journal entry %s", src, f.adjustmentJ)
	}
	all := vaIDs(t, list)

	tomorrow := time.Now().UTC().AddDate(0, 0, 1).Format("2006-01-02")
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format("2006-01-02")
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"status=pending", all[:1]},
		{"status=posted", all[1:]},
		{"status=void", nil},
		{"type=inbound_transfer", []string{all[0], all[3]}},
		{"type=fee", all[1:2]},
		{"type=adjustment", all[2:3]},
		{"type=payment", nil},
		{"type=inbound_transfer&status=posted", all[3:]},
		{"created_after=" + f.mid, all[:2]},
		{"created_before=" + f.mid, all[2:]},
		{"created_after=" + yesterday + "&created_before=" + tomorrow, all},
		{"created_after=" + tomorrow, nil},
		{"created_before=" + yesterday, nil},
		{"created_after=" + f.mid + "&type=fee", all[1:2]},
	} {
		if got := vaIDs(t, vaGet(t, api, key, base+"?"+c.query)); !slices.Equal(got, c.want) {
			t.Errorf("?%s = %v, want %v", c.query, got, c.want)
		}
	}

	pages := vaWalk(t, api, key, base, 3)
	if len(pages) != 2 || !slices.Equal(vaFlatten(pages), all) {
		t.Errorf("a walk by 3 gave %v, want %v in pages of 3 and 1", pages, all)
	}
	pages = vaWalk(t, api, key, base+"?type=inbound_transfer", 1)
	if len(pages) != 2 || !slices.Equal(vaFlatten(pages), []string{all[0], all[3]}) {
		t.Errorf("a filtered walk by 1 gave %v", pages)
	}

	for _, c := range []struct{ query, param string }{
		{"status=completed", "status"},
		{"type=transfer", "type"},
		{"created_after=yesterday", "created_after"},
		{"created_before=2026-13-01", "created_before"},
		{"limit=0", "limit"},
		{"cursor=bm9wZQ", "cursor"},
	} {
		e := requireError(t, api.do("GET", base+"?"+c.query, key, nil), http.StatusBadRequest, "invalid_request")
		if e["param"] != c.param {
			t.Errorf("?%s: param %v, want %s", c.query, e["param"], c.param)
		}
	}
	requireError(t, api.do("GET", "/v1/virtual-accounts/"+vaUnknown("va_")+"/transactions", key, nil), http.StatusNotFound, "not_found")
}

func TestVirtualAccountBalanceAsOf(t *testing.T) {
	api, platformID, key := vaAPI(t)
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"ach_standard_delay_seconds": 3600}}), http.StatusOK)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	path := "/v1/virtual-accounts/" + id + "/balance"
	before := vaNow()
	vaCredit(t, api, key, id, 10000)
	afterCredit := vaNow()
	vaRequire(t, vaInbound(api, key, id, 700, "ach_standard"), http.StatusCreated)
	afterPending := vaNow()
	vaAdjust(t, api, key, id, "fee", "debit", 300)
	api.sync()

	check := func(query string, posted, pendingIn, available int64) map[string]any {
		t.Helper()
		b := vaGet(t, api, key, path+query)
		if b["object"] != "balance" || b["virtual_account_id"] != id || b["currency"] != "USD" {
			t.Errorf("%s: object %v virtual_account_id %v currency %v", query, b["object"], b["virtual_account_id"], b["currency"])
		}
		got := [4]int64{vaInt(t, b["posted"]), vaInt(t, b["pending_inbound"]), vaInt(t, b["pending_outbound"]), vaInt(t, b["available"])}
		if want := [4]int64{posted, pendingIn, 0, available}; got != want {
			t.Errorf("balance%s = posted, pending_inbound, pending_outbound, available %v, want %v", query, got, want)
		}
		return b
	}
	check("?as_of="+before, 0, 0, 0)
	check("?as_of="+afterCredit, 10000, 0, 10000)
	check("?as_of="+afterPending, 10000, 700, 10000)
	check("?as_of="+vaNow(), 9700, 700, 9700)
	check("", 9700, 700, 9700)
	check("?as_of=2000-01-01", 0, 0, 0)
	b := check("?as_of=2030-01-01T00:00:00Z", 9700, 700, 9700)
	if b["as_of"] != "2030-01-01T00:00:00.000Z" {
		t.Errorf("as_of = %v, want the instant asked for", b["as_of"])
	}
	if cur := vaBalance(t, api, key, id); cur["posted"] != 9700 || cur["pending_inbound"] != 700 || cur["available"] != 9700 {
		t.Errorf("GET /virtual-accounts/:id balance = %v", cur)
	}
	e := requireError(t, api.do("GET", path+"?as_of=last-week", key, nil), http.StatusBadRequest, "invalid_request")
	if e["param"] != "as_of" {
		t.Errorf("param = %v, want as_of", e["param"])
	}
}

func TestVirtualAccountStatement(t *testing.T) {
	f := vaNewTxnFixture(t)
	api, key := f.api, f.key
	now := time.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	path := func(m time.Time) string {
		return "/v1/virtual-accounts/" + f.id + "/statements/" + m.Format("2006-01")
	}

	s := vaGet(t, api, key, path(month))
	for field, want := range map[string]any{
		"object": "statement", "virtual_account_id": f.id, "month": month.Format("2006-01"), "currency": "USD",
		"period_start": month.Format("2006-01-02T15:04:05.000Z"),
		"period_end":   month.AddDate(0, 1, 0).Format("2006-01-02T15:04:05.000Z"),
	} {
		if s[field] != want {
			t.Errorf("%s = %v, want %v", field, s[field], want)
		}
	}
	totals := func(s map[string]any) [4]int64 {
		return [4]int64{vaInt(t, s["opening_balance"]), vaInt(t, s["total_in"]), vaInt(t, s["total_out"]), vaInt(t, s["closing_balance"])}
	}
	if got, want := totals(s), [4]int64{0, 10500, 250, 10250}; got != want {
		t.Errorf("opening, in, out, closing = %v, want %v", got, want)
	}
	txns, _ := s["transactions"].([]any)
	var amounts []int64
	for _, x := range txns {
		tx, _ := x.(map[string]any)
		if tx["status"] != "posted" {
			t.Errorf("a statement lists a %v transaction", tx["status"])
		}
		amounts = append(amounts, vaInt(t, tx["amount"]))
	}
	if !slices.Equal(amounts, []int64{10000, 500, -250}) {
		t.Errorf("statement amounts %v, want the posted ones in posting order [10000 500 -250]", amounts)
	}

	next := vaGet(t, api, key, path(month.AddDate(0, 1, 0)))
	if got, want := totals(next), [4]int64{10250, 0, 0, 10250}; got != want {
		t.Errorf("next month: opening, in, out, closing = %v, want %v", got, want)
	}
	if l, ok := next["transactions"].([]any); !ok || len(l) != 0 {
		t.Errorf("next month's transactions = %v, want []", next["transactions"])
	}
	if got, want := totals(vaGet(t, api, key, path(month.AddDate(0, -1, 0)))), [4]int64{0, 0, 0, 0}; got != want {
		t.Errorf("last month: %v, want %v", got, want)
	}

	// CSV.
	r := api.do("GET", path(month)+"?format=csv", key, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("CSV statement: %d %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("Content-Type %q, want text/csv", ct)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment") || !strings.Contains(cd, ".csv") {
		t.Errorf("Content-Disposition %q", cd)
	}
	// One table (every row as wide as the header: the reader's default
	// check), which loads as one.
	rows, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("the statement is not one CSV table: %v\n%s", err, r.Body)
	}
	if want := []string{"transaction_id", "posted_at", "type", "description", "amount", "balance", "source_type", "source_id"}; !slices.Equal(rows[0], want) {
		t.Errorf("CSV header %v, want %v", rows[0], want)
	}
	i := 0
	var got [][2]string
	for _, row := range rows[i+1:] {
		if len(row) != 8 || !strings.HasPrefix(row[0], "txn_") || !vaTimePattern.MatchString(row[1]) {
			t.Errorf("CSV row %v", row)
			continue
		}
		got = append(got, [2]string{row[4], row[5]})
	}
	if want := [][2]string{{"10000", "10000"}, {"500", "10500"}, {"-250", "10250"}}; !slices.Equal(got, want) {
		t.Errorf("CSV amount, balance = %v, want %v", got, want)
	}
	r = api.do("GET", path(month)+"?format=json", key, nil)
	if vaRequire(t, r, http.StatusOK); !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("format=json Content-Type %q", r.Header.Get("Content-Type"))
	}

	for _, c := range []struct{ url, param string }{
		{path(month) + "?format=pdf", "format"},
		{"/v1/virtual-accounts/" + f.id + "/statements/2026-13", "month"},
		{"/v1/virtual-accounts/" + f.id + "/statements/202601", "month"},
		{"/v1/virtual-accounts/" + f.id + "/statements/2026-01-01", "month"},
	} {
		e := requireError(t, api.do("GET", c.url, key, nil), http.StatusBadRequest, "invalid_request")
		if e["param"] != c.param {
			t.Errorf("%s: param %v, want %s", c.url, e["param"], c.param)
		}
	}
}
