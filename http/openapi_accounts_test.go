package http_test

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	apihttp "github.com/opentreasury/treasury/http"
)

// The OpenAPI checks of openapi_test.go, over the virtual account, ledger
// and simulation routes.

func TestOpenAPIAccountsSchemasDocumented(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{})
	doc := oaDocument(t, api)
	for _, name := range []string{"VirtualAccount", "VirtualAccountList", "AccountBalance", "Balance", "Transaction",
		"TransactionList", "Statement", "LedgerAccount", "LedgerAccountList", "LedgerEntry", "LedgerEntryList",
		"JournalEntry", "JournalEntryRequest", "InboundTransfer", "Originator", "SimulateInboundTransferRequest",
		"CreateVirtualAccountRequest"} {
		if oaPointer(doc, "#/components/schemas/"+name) == nil {
			t.Errorf("components.schemas.%s is missing", name)
		}
	}
	// Request bodies are closed, as the decoder is; the journal entry
	// request is one of three closed forms.
	for _, name := range []string{"CreateVirtualAccountRequest", "SimulateInboundTransferRequest", "Originator", "JournalLine"} {
		if s := oaPointer(doc, "#/components/schemas/"+name); s == nil || s["additionalProperties"] != false {
			t.Errorf("%s does not have additionalProperties: false", name)
		}
	}
	forms := oaObjects(oaPointer(doc, "#/components/schemas/JournalEntryRequest")["oneOf"])
	if len(forms) != 3 {
		t.Fatalf("JournalEntryRequest has %d forms, want 3 (shorthand, lines, reversal)", len(forms))
	}
	for i, f := range forms {
		if f = oaResolve(t, doc, f); f["additionalProperties"] != false {
			t.Errorf("JournalEntryRequest form %d is not closed", i)
		}
	}
}

// TestOpenAPIAccountsRequestFieldsAccepted sends every documented request
// field, alone, and checks the server does not refuse it as unknown.
func TestOpenAPIAccountsRequestFieldsAccepted(t *testing.T) {
	api, _, key := vaAPI(t)
	doc := oaDocument(t, api)
	props := func(name string) []string {
		var out []string
		for p := range oaFlatten(t, doc, oaComponent(name)).props {
			out = append(out, p)
		}
		return out
	}
	check := func(label, path string, body map[string]any) {
		t.Helper()
		r := api.do("POST", path, key, body)
		if msg, _ := r.JSON()["message"].(string); r.Status == http.StatusBadRequest && strings.HasPrefix(msg, "unknown field") {
			t.Errorf("%s: a documented field is refused: %s", label, r.Body)
		}
	}
	for _, p := range props("CreateVirtualAccountRequest") {
		check("CreateVirtualAccountRequest."+p, "/v1/virtual-accounts", map[string]any{p: nil})
	}
	for _, p := range props("SimulateInboundTransferRequest") {
		check("SimulateInboundTransferRequest."+p, "/v1/simulations/inbound-transfers", map[string]any{p: nil})
	}
	for _, p := range props("Originator") {
		check("Originator."+p, "/v1/simulations/inbound-transfers", map[string]any{"originator": map[string]any{p: nil}})
	}
	for _, form := range []string{"JournalEntryShorthandRequest", "JournalEntryLinesRequest", "JournalEntryReversalRequest"} {
		for _, p := range props(form) {
			check(form+"."+p, "/v1/ledger/entries", map[string]any{p: nil})
		}
	}
	for _, p := range props("JournalLine") {
		check("JournalLine."+p, "/v1/ledger/entries", map[string]any{"lines": []any{map[string]any{p: nil}}})
	}
}

// vaOACSVExample checks a real CSV response against the document: the
// status documents text/csv, and the example's header lines are the
// response's.
func vaOACSVExample(t *testing.T, doc map[string]any, path string, r response, headerLines int) {
	t.Helper()
	op := oaObj(oaObj(oaObj(doc["paths"])[path])["get"])
	res := oaResolve(t, doc, oaObj(oaObj(op["responses"])[strconv.Itoa(r.Status)]))
	media := oaObj(oaObj(res["content"])["text/csv"])
	if media == nil {
		t.Fatalf("GET %s → %d: text/csv is not documented", path, r.Status)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Errorf("GET %s: Content-Type %q", path, ct)
	}
	example, _ := media["example"].(string)
	got := strings.Split(strings.ReplaceAll(string(r.Body), "\r\n", "\n"), "\n")
	want := strings.Split(example, "\n")
	if len(got) < headerLines || len(want) < headerLines {
		t.Fatalf("GET %s: too few lines: got %q, documented %q", path, r.Body, example)
	}
	for i := 0; i < headerLines; i++ {
		g, w := got[i], want[i]
		if i == 0 && strings.Contains(w, ",va_") { // the statement's first line names the account
			g, w = strings.SplitN(g, ",", 2)[0], strings.SplitN(w, ",", 2)[0]
		}
		if strings.HasPrefix(w, "month,") || strings.HasPrefix(w, "opening_balance,") || strings.HasPrefix(w, "total_") || strings.HasPrefix(w, "closing_balance,") {
			g, w = strings.SplitN(g, ",", 2)[0], strings.SplitN(w, ",", 2)[0]
		}
		if g != w {
			t.Errorf("GET %s: CSV line %d is %q, the document's example has %q", path, i+1, g, w)
		}
	}
	if res["headers"] == nil || oaObj(res["headers"])["Content-Disposition"] == nil {
		t.Errorf("GET %s → %d: Content-Disposition is not documented", path, r.Status)
	}
}

func TestOpenAPIAccountsResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	check := func(method, path string, r response) map[string]any {
		t.Helper()
		return oaCheck(t, doc, method, path, r)
	}
	checkAs := func(schema, label string, v any) {
		t.Helper()
		oaCheckObject(t, doc, oaComponent(schema), oaObj(v), label)
	}
	checkItems := func(schema, label string, list map[string]any) {
		t.Helper()
		for i, item := range oaArray(list["data"]) {
			checkAs(schema, fmt.Sprintf("%s data[%d]", label, i), item)
		}
	}
	want := func(r response, status int, code string) {
		t.Helper()
		if r.Status != status || (code != "" && r.JSON()["code"] != code) {
			t.Fatalf("%d %s, want %d %s", r.Status, r.Body, status, code)
		}
	}
	vaPath := "/virtual-accounts/{id}"

	// Virtual accounts.
	create := map[string]any{"platform_id": platformID, "entity_ref": "biz_1", "type": "checking", "metadata": map[string]string{"crm": "1"}}
	r := api.do("POST", "/v1/virtual-accounts", key, create)
	want(r, 201, "")
	body := check("POST", "/virtual-accounts", r)
	checkAs("AccountBalance", "POST /virtual-accounts balance", body["balance"])
	id := body["id"].(string)
	want(api.do("POST", "/v1/virtual-accounts", liveKey, create), 201, "")
	empty := vaOpenID(t, api, key, platformID, "biz_2")
	for _, c := range []struct {
		body   any
		key    string
		status int
	}{
		{map[string]any{"platform_id": platformID, "entity_ref": "", "type": "checking"}, key, 400},
		{map[string]any{"platform_id": "plt_x", "entity_ref": "a", "type": "checking"}, key, 404},
		{create, "", 401},
		{create, operatorKey, 403},
		{strings.Repeat(" ", apihttp.MaxBodyBytes+1), key, 413},
	} {
		r := api.do("POST", "/v1/virtual-accounts", c.key, c.body)
		want(r, c.status, "")
		check("POST", "/virtual-accounts", r)
	}
	list := check("GET", "/virtual-accounts", api.do("GET", "/v1/virtual-accounts?limit=1", key, nil))
	checkItems("VirtualAccount", "GET /virtual-accounts", list)
	check("GET", "/virtual-accounts", api.do("GET", "/v1/virtual-accounts?status=open", key, nil))
	check("GET", vaPath, api.do("GET", "/v1/virtual-accounts/"+id, key, nil))
	check("GET", vaPath, api.do("GET", "/v1/virtual-accounts/"+id, liveKey, nil))

	// Simulations.
	r = vaInbound(api, key, id, 10000, "rtp")
	want(r, 201, "")
	it := check("POST", "/simulations/inbound-transfers", r)
	checkAs("Originator", "inbound transfer originator", it["originator"])
	want(api.do("PATCH", "/v1/platform/settings", key, map[string]any{"sandbox": map[string]any{"ach_standard_delay_seconds": 3600}}), 200, "")
	r = vaInbound(api, key, id, 700, "ach_standard")
	if check("POST", "/simulations/inbound-transfers", r)["status"] != "pending" {
		t.Errorf("ACH inbound transfer: %s", r.Body)
	}
	for _, c := range []struct {
		key, id, rail string
		amount        int64
		status        int
		code          string
	}{
		{key, id, "wire", 1, 400, "invalid_request"},
		{key, id, "rtp", 1_000_000_001, 400, "amount_exceeds_rail_limit"},
		{liveKey, id, "rtp", 1, 403, "forbidden"},
		{operatorKey, id, "rtp", 1, 403, "forbidden"},
		{"", id, "rtp", 1, 401, "unauthorized"},
		{key, vaUnknown("va_"), "rtp", 1, 404, "not_found"},
	} {
		r := vaInbound(api, c.key, c.id, c.amount, c.rail)
		want(r, c.status, c.code)
		check("POST", "/simulations/inbound-transfers", r)
	}

	// Journal entries: the three forms, a replay, and the refusals.
	shorthand := map[string]any{"type": "fee", "description": "Monthly fee", "virtual_account_id": id, "direction": "debit", "amount": 250}
	r = vaEntry(api, key, shorthand, "Idempotency-Key", "oa-fee-1")
	want(r, 201, "")
	je := check("POST", "/ledger/entries", r)
	for i, e := range oaArray(je["entries"]) {
		checkAs("LedgerEntry", fmt.Sprintf("journal entry entries[%d]", i), e)
	}
	r = vaEntry(api, key, shorthand, "Idempotency-Key", "oa-fee-1")
	want(r, 200, "")
	check("POST", "/ledger/entries", r)
	la := vaData(t, vaGet(t, api, key, "/v1/ledger/accounts?limit=100"))
	operating := ""
	for _, a := range la {
		if a["name"] == "platform_operating" {
			operating = a["id"].(string)
		}
	}
	r = vaEntry(api, key, map[string]any{"type": "adjustment", "description": "Promo", "lines": []any{
		vaLine(operating, "debit", 500), vaLine(id, "credit", 500)}})
	want(r, 201, "")
	lines := check("POST", "/ledger/entries", r)
	r = vaEntry(api, key, map[string]any{"reverses": lines["id"]})
	want(r, 201, "")
	check("POST", "/ledger/entries", r)
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+empty+"/close", key, nil), 200)
	for _, c := range []struct {
		body    any
		headers []string
		status  int
		code    string
	}{
		{map[string]any{"type": "fee", "description": "x", "lines": []any{vaLine(id, "debit", 2), vaLine(operating, "credit", 1)}}, nil, 400, "unbalanced_entry"},
		{map[string]any{"type": "payment", "description": "x", "virtual_account_id": id, "direction": "debit", "amount": 1}, nil, 400, "invalid_request"},
		{map[string]any{"reverses": vaUnknown("je_")}, nil, 404, "not_found"},
		{map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "debit", "amount": 999}, []string{"Idempotency-Key", "oa-fee-1"}, 409, "idempotency_conflict"},
		{map[string]any{"reverses": lines["id"]}, nil, 409, "invalid_state"},
		{map[string]any{"type": "fee", "description": "x", "virtual_account_id": id, "direction": "debit", "amount": 1_000_000}, nil, 422, "insufficient_funds"},
		{map[string]any{"type": "fee", "description": "x", "virtual_account_id": empty, "direction": "credit", "amount": 1}, nil, 422, "account_not_active"},
		{strings.Repeat(" ", apihttp.MaxBodyBytes+1), nil, 413, "request_too_large"},
	} {
		r := vaEntry(api, key, c.body, c.headers...)
		want(r, c.status, c.code)
		check("POST", "/ledger/entries", r)
	}
	r = vaInbound(api, key, empty, 100, "rtp")
	want(r, 422, "account_not_active")
	check("POST", "/simulations/inbound-transfers", r)

	// Account states.
	for _, c := range []struct {
		action, id string
		body       any
		status     int
	}{
		{"freeze", id, nil, 200},
		{"freeze", id, nil, 409},
		{"unfreeze", id, "{}", 200},
		{"unfreeze", id, map[string]any{"x": 1}, 400},
		{"close", id, nil, 409},
		{"close", vaUnknown("va_"), nil, 404},
	} {
		r := api.do("POST", "/v1/virtual-accounts/"+c.id+"/"+c.action, key, c.body)
		want(r, c.status, "")
		check("POST", vaPath+"/"+c.action, r)
	}

	// The projections.
	api.sync()
	month := time.Now().UTC().Format("2006-01")
	for _, c := range []struct {
		path, url string
		status    int
		items     string
	}{
		{vaPath, "/v1/virtual-accounts/" + vaUnknown("va_"), 404, ""},
		{vaPath + "/balance", "/v1/virtual-accounts/" + id + "/balance", 200, ""},
		{vaPath + "/balance", "/v1/virtual-accounts/" + id + "/balance?as_of=2026-01-01", 200, ""},
		{vaPath + "/balance", "/v1/virtual-accounts/" + id + "/balance?as_of=soon", 400, ""},
		{vaPath + "/balance", "/v1/virtual-accounts/" + empty + "/balance", 200, ""},
		{vaPath + "/transactions", "/v1/virtual-accounts/" + id + "/transactions?limit=2", 200, "Transaction"},
		{vaPath + "/transactions", "/v1/virtual-accounts/" + id + "/transactions?type=x", 400, ""},
		{vaPath + "/transactions", "/v1/virtual-accounts/" + vaUnknown("va_") + "/transactions", 404, ""},
		{vaPath + "/statements/{month}", "/v1/virtual-accounts/" + id + "/statements/" + month, 200, ""},
		{vaPath + "/statements/{month}", "/v1/virtual-accounts/" + id + "/statements/13", 400, ""},
		{vaPath + "/statements/{month}", "/v1/virtual-accounts/" + vaUnknown("va_") + "/statements/" + month, 404, ""},
		{"/ledger/accounts", "/v1/ledger/accounts?limit=3", 200, "LedgerAccount"},
		{"/ledger/accounts", "/v1/ledger/accounts?limit=0", 400, ""},
		{"/ledger/entries", "/v1/ledger/entries?virtual_account_id=" + id, 200, "LedgerEntry"},
		{"/ledger/entries", "/v1/ledger/entries?status=pending", 200, "LedgerEntry"},
		{"/ledger/entries", "/v1/ledger/entries?direction=up", 400, ""},
		{"/ledger/entries", "/v1/ledger/entries?ledger_account_id=" + vaUnknown("la_"), 404, ""},
		{"/ledger/exports", "/v1/ledger/exports?created_before=tomorrow", 400, ""},
	} {
		r := api.do("GET", c.url, key, nil)
		want(r, c.status, "")
		body := check("GET", c.path, r)
		if c.items != "" {
			checkItems(c.items, "GET "+c.url, body)
		}
		if c.path == vaPath+"/statements/{month}" && r.Status == 200 {
			for i, tx := range oaArray(body["transactions"]) {
				checkAs("Transaction", fmt.Sprintf("statement transactions[%d]", i), tx)
			}
			if len(oaArray(body["transactions"])) == 0 {
				t.Errorf("the statement lists no transactions: %s", r.Body)
			}
		}
		if c.items == "LedgerAccount" {
			for i, a := range oaArray(body["data"]) {
				checkAs("LedgerAccountBalances", fmt.Sprintf("ledger account %d balances", i), oaObj(a)["balances"])
			}
		}
		if c.items == "Transaction" {
			for i, tx := range oaArray(body["data"]) {
				checkAs("Source", fmt.Sprintf("transaction %d source", i), oaObj(tx)["source"])
			}
		}
	}

	// CSV.
	r = api.do("GET", "/v1/virtual-accounts/"+id+"/statements/"+month+"?format=csv", key, nil)
	want(r, 200, "")
	vaOACSVExample(t, doc, vaPath+"/statements/{month}", r, 1)
	// One table: every line has the header's fields.
	if rows, err := csv.NewReader(bytes.NewReader(r.Body)).ReadAll(); err != nil || len(rows) < 2 {
		t.Errorf("the statement CSV does not read as one table: %d rows, %v", len(rows), err)
	}
	r = api.do("GET", "/v1/ledger/exports", key, nil)
	want(r, 200, "")
	vaOACSVExample(t, doc, "/ledger/exports", r, 1)
}
