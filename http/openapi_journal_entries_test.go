package http_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/opentreasury/treasury/domain/ledger"
)

// TestOpenAPIJournalEntriesList causes every documented status of GET
// /ledger/journal-entries (but 429 and 5xx) and checks each answer against
// the document; then its parameters: the query parameters documented are
// exactly those the handler reads, each of them changes the answer (none is
// documented but ignored), and each enum is the set the handler accepts.
func TestOpenAPIJournalEntriesList(t *testing.T) {
	f := jeSetup(t)
	api, key := f.api, f.key
	doc := oaDocument(t, api)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	p := "/ledger/journal-entries"
	get := func(k, query string) response { return api.do("GET", "/v1"+p+"?"+query, k, nil) }

	whole := c.check("GET", p, get(key, "limit=100"), 200, "")
	if n := len(oaArray(whole["data"])); n != len(f.ids) {
		t.Fatalf("the whole list has %d entries, want %d", n, len(f.ids))
	}
	for i, je := range oaArray(whole["data"]) {
		kt2Conforms(t, doc, "JournalEntry", je, "journal entry "+strconv.Itoa(i))
	}
	page := c.check("GET", p, get(key, "limit=2&type=adjustment&metadata[region]=east"), 200, "")
	if page["has_more"] != false || len(oaArray(page["data"])) != 1 {
		t.Errorf("one adjustment of the east: %v", page)
	}
	for _, bad := range []string{"type=payment_fee", "status=void", "source_type=pay", "metadata=east", "created_after=soon",
		"created_before=later", "limit=0", "cursor=nope"} {
		c.check("GET", p, get(key, bad), 400, "invalid_request")
	}
	c.check("GET", p, get("", ""), 401, "unauthorized")
	c.check("GET", p, get(operatorKey, ""), 403, "forbidden")

	documented := oaObj(oapOp(doc, "GET", p)["responses"])
	for status := range documented {
		if n, _ := strconv.Atoi(status); n != http.StatusTooManyRequests && n < 500 && !c.seen["GET "+p][n] {
			t.Errorf("GET %s → %s is documented but this test did not see it", p, status)
		}
	}
	for n := range c.seen["GET "+p] {
		if documented[strconv.Itoa(n)] == nil {
			t.Errorf("GET %s → %d is not documented", p, n)
		}
	}

	// The parameters. Each value below selects fewer entries than none
	// does (the fixture has entries of every kind), so a parameter the
	// handler ignored would answer the whole list.
	effective := map[string]string{
		"type":               "type=funding",
		"status":             "status=archived",
		"virtual_account_id": "virtual_account_id=" + f.va2,
		"source_type":        "source_type=book_transfer",
		"source_id":          "source_id=" + f.payment,
		"metadata":           "metadata[region]=west",
		"created_after":      "created_after=" + url.QueryEscape(f.mark2),
		"created_before":     "created_before=" + url.QueryEscape(f.mark1),
		"limit":              "limit=1",
		"cursor":             "cursor=" + url.QueryEscape(vaGet(t, api, key, "/v1"+p+"?limit=1")["next_cursor"].(string)),
	}
	enums := map[string][]string{"type": ledger.JournalTypes, "status": ledger.Statuses, "source_type": ledger.SourceTypes}
	var names []string
	for _, param := range oaArray(oapOp(doc, "GET", p)["parameters"]) {
		param := oaResolve(t, doc, oaObj(param))
		if param["in"] != "query" {
			continue
		}
		name := param["name"].(string)
		names = append(names, name)
		query, ok := effective[name]
		if !ok {
			t.Errorf("the query parameter %s is documented but the handler reads no such parameter", name)
			continue
		}
		got := oaArray(c.check("GET", p, get(key, query+"&limit=100"), 200, "")["data"])
		if name == "limit" {
			got = oaArray(c.check("GET", p, get(key, query), 200, "")["data"])
		}
		if len(got) == 0 || len(got) >= len(f.ids) {
			t.Errorf("?%s: %d of %d entries: the parameter does not narrow the list", query, len(got), len(f.ids))
		}
		if want, ok := enums[name]; ok {
			var enum []string
			for _, v := range oaArray(oaObj(param["schema"])["enum"]) {
				enum = append(enum, v.(string))
				c.check("GET", p, get(key, name+"="+v.(string)), 200, "")
			}
			if !slices.Equal(slices.Sorted(slices.Values(enum)), slices.Sorted(slices.Values(want))) {
				t.Errorf("%s: the document's enum %v, the handler's %v", name, enum, want)
			}
		}
	}
	for name := range effective {
		if !slices.Contains(names, name) {
			t.Errorf("the handler reads %s, which the document does not name", name)
		}
	}
}
