package http_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	apihttp "github.com/opentreasury/treasury/http"
)

// TestOpenAPIBookTransfersResponsesMatchSchemas causes every documented
// status of the book transfer routes (but 429 and 5xx) and checks each
// answer against the document.
func TestOpenAPIBookTransfersResponsesMatchSchemas(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 10000, Burst: 10000}})
	doc := oaDocument(t, api)
	platformID, key := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	check := c.check
	from := oapApproved(t, api, key, platformID, "biz_bt", 100_000)
	to := vaOpenID(t, api, key, platformID, "biz_bt_payee")
	unapproved := vaOpenID(t, api, key, platformID, "biz_bt_unverified")

	p := "/book-transfers"
	post := func(k string, body any, headers ...string) response {
		return api.do("POST", "/v1/book-transfers", k, body, headers...)
	}
	body := btBody(from, to, 1_000)
	body["description"], body["metadata"] = "Rent share", map[string]string{"lease": "12"}
	bt := check("POST", p, post(key, body), 201, "")
	id := bt["id"].(string)
	replay := map[string]any{}
	for k, v := range body {
		replay[k] = v
	}
	delete(replay, "idempotency_key")
	r := post(key, replay, "Idempotency-Key", body["idempotency_key"].(string))
	if check("POST", p, r, 200, "")["id"] != id || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay: %v %s", r.Header, r.Body)
	}
	replay["amount"] = 1_001
	if e := check("POST", p, post(key, replay, "Idempotency-Key", body["idempotency_key"].(string)), 409, "idempotency_conflict"); e["resource_id"] != id {
		t.Errorf("idempotency_conflict names %v, want %s", e["resource_id"], id)
	}
	noKey := btBody(from, to, 1)
	delete(noKey, "idempotency_key")
	for _, x := range []struct {
		key    string
		body   any
		status int
		code   string
	}{
		{key, btBody(from, from, 1), 400, "invalid_request"},
		{key, noKey, 400, "invalid_request"},
		{key, `{"amount": "1"}`, 400, "invalid_request"},
		{"", btBody(from, to, 1), 401, "unauthorized"},
		{operatorKey, btBody(from, to, 1), 403, "forbidden"},
		{liveKey, btBody(from, to, 1), 404, "not_found"},
		{key, strings.Repeat(" ", apihttp.MaxBodyBytes+1), 413, "request_too_large"},
		{key, btBody(unapproved, to, 1), 422, "kyb_not_approved"},
		{key, btBody(from, to, 1_000_000), 422, "insufficient_funds"},
	} {
		check("POST", p, post(x.key, x.body), x.status, x.code)
	}

	list := check("GET", p, api.do("GET", "/v1/book-transfers?virtual_account_id="+to+"&metadata[lease]=12", key, nil), 200, "")
	if data := oaArray(list["data"]); len(data) != 1 || oaObj(data[0])["id"] != id {
		t.Errorf("list: %v", list)
	}
	check("GET", p, api.do("GET", "/v1/book-transfers?limit=0", key, nil), 400, "invalid_request")
	check("GET", p, api.do("GET", "/v1/book-transfers", "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1/book-transfers", operatorKey, nil), 403, "forbidden")
	one := "/book-transfers/{id}"
	check("GET", one, api.do("GET", "/v1/book-transfers/"+id, key, nil), 200, "")
	check("GET", one, api.do("GET", "/v1/book-transfers/"+id, "", nil), 401, "unauthorized")
	check("GET", one, api.do("GET", "/v1/book-transfers/"+id, operatorKey, nil), 403, "forbidden")
	check("GET", one, api.do("GET", "/v1/book-transfers/"+id, liveKey, nil), 404, "not_found")
	check("GET", one, api.do("GET", "/v1/book-transfers/nope", key, nil), 404, "not_found")

	// Its event and its ledger entries conform too.
	api.sync()
	events := oaCheck(t, doc, "GET", "/events", api.do("GET", "/v1/events?type=book_transfer.completed", key, nil))
	if data := oaArray(events["data"]); len(data) != 1 {
		t.Errorf("%d book_transfer.completed events, want 1", len(data))
	} else {
		kt2Conforms(t, doc, "BookTransfer", oaObj(oaObj(oaObj(data[0])["data"])["object"]), "book_transfer.completed data.object")
	}
	for i, le := range vaData(t, vaGet(t, api, key, "/v1/ledger/entries?type=book_transfer")) {
		kt2Conforms(t, doc, "LedgerEntry", le, fmt.Sprintf("book_transfer ledger entry %d", i))
	}
	for i, tx := range vaData(t, vaGet(t, api, key, "/v1/virtual-accounts/"+to+"/transactions?type=book_transfer")) {
		kt2Conforms(t, doc, "Transaction", tx, fmt.Sprintf("book_transfer transaction %d", i))
	}
	kt2Conforms(t, doc, "JournalEntry", vaGet(t, api, key, "/v1/ledger/journal-entries/"+bt["journal_entry_id"].(string)), "its journal entry")

	for _, o := range []struct{ method, path string }{{"POST", p}, {"GET", p}, {"GET", one}} {
		documented := oaObj(oapOp(doc, o.method, o.path)["responses"])
		for status := range documented {
			if n, _ := strconv.Atoi(status); n != http.StatusTooManyRequests && n < 500 && !c.seen[o.method+" "+o.path][n] {
				t.Errorf("%s %s → %s is documented but this test did not see it", o.method, o.path, status)
			}
		}
		for n := range c.seen[o.method+" "+o.path] {
			if documented[strconv.Itoa(n)] == nil {
				t.Errorf("%s %s → %d is not documented", o.method, o.path, n)
			}
		}
	}
}
