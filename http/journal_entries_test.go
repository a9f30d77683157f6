package http_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// jeFixture is a platform whose sandbox holds one journal entry of nearly
// every kind and state, created in a known order, and the entries as GET
// /ledger/journal-entries/:id shows them (the oracle of the list tests).
type jeFixture struct {
	api             *testAPI
	platformID, key string
	va1, va2, va3   string   // va3 has no entries
	ids             []string // every entry, oldest first
	byID            map[string]map[string]any
	mark1, mark2    string // instants between entries
	at1, at2        int    // ids[at1:] were created after mark1, ids[at2:] after mark2
	payment         string // a pending payment's id
	inbound         string // the first (posted) inbound transfer's id
}

func jeSetup(t *testing.T) *jeFixture {
	t.Helper()
	api, platformID, key := vaAPI(t)
	f := &jeFixture{api: api, platformID: platformID, key: key, byID: map[string]map[string]any{}}
	paySettings(t, api, key, map[string]any{"sandbox": map[string]any{"auto_settle": false}})
	f.va1 = vaOpenID(t, api, key, platformID, "biz_1")
	payApprove(t, api, key, f.va1)
	f.va2 = vaOpenID(t, api, key, platformID, "biz_2")
	f.va3 = vaOpenID(t, api, key, platformID, "biz_3")
	add := func(id any) string {
		t.Helper()
		s, _ := id.(string)
		if !strings.HasPrefix(s, "je_") {
			t.Fatalf("no journal entry id: %v", id)
		}
		f.ids = append(f.ids, s)
		return s
	}
	in := vaCredit(t, api, key, f.va1, 100_000) // posted
	f.inbound = in["id"].(string)
	add(in["journal_entry_id"])
	add(vaRequire(t, vaInbound(api, key, f.va2, 5_000, "ach_standard"), http.StatusCreated)["journal_entry_id"]) // pending

	f.mark1, f.at1 = vaNow(), len(f.ids)
	manual := func(body map[string]any) {
		t.Helper()
		add(vaRequire(t, vaEntry(api, key, body), http.StatusCreated)["id"])
	}
	manual(map[string]any{"type": "adjustment", "description": "Goodwill", "virtual_account_id": f.va1, "direction": "credit",
		"amount": 1_000, "metadata": map[string]string{"region": "east", "tier": "gold"},
		// Nanoseconds, which PostgreSQL rounds to the microsecond: the list
		// must still show the instant GET shows.
		"effective_at": "2026-01-01T00:00:00.1239996Z"})
	manual(map[string]any{"type": "fee", "description": "Monthly fee", "virtual_account_id": f.va1, "direction": "debit",
		"amount": 200, "metadata": map[string]string{"region": "east", "tier": "silver"}})
	manual(map[string]any{"type": "correction", "description": "Misposted", "metadata": map[string]string{"region": "west"},
		"lines": []map[string]any{{"virtual_account_id": f.va1, "direction": "debit", "amount": 100},
			{"virtual_account_id": f.va2, "direction": "credit", "amount": 100}}})

	f.mark2, f.at2 = vaNow(), len(f.ids)
	add(vaRequire(t, api.do("POST", "/v1/book-transfers", key, btBody(f.va1, f.va2, 2_000)), http.StatusCreated)["journal_entry_id"])
	p := payCreated(t, api, key, payBody(f.va1, 3_000, "ach_standard", "123456789"))
	f.payment = p["id"].(string)
	add(p["journal_entry_id"]) // pending
	canceled := payCreated(t, api, key, payBody(f.va1, 1_000, "ach_standard", "123456789"))
	add(canceled["journal_entry_id"])
	vaRequire(t, api.do("POST", "/v1/payments/"+canceled["id"].(string)+"/cancel", key, nil), http.StatusOK) // archived
	add(vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 10_000, "environment": "sandbox"}), http.StatusCreated)["id"])

	api.sync() // the list reads the ledger projection
	for _, id := range f.ids {
		f.byID[id] = vaGet(t, api, key, "/v1/ledger/journal-entries/"+id)
	}
	return f
}

// want is the fixture's entries (newest first) that keep holds.
func (f *jeFixture) want(keep func(i int, je map[string]any) bool) []string {
	var out []string
	for i := len(f.ids) - 1; i >= 0; i-- {
		if keep(i, f.byID[f.ids[i]]) {
			out = append(out, f.ids[i])
		}
	}
	return out
}

func jeTouches(je map[string]any, va string) bool {
	for _, l := range je["entries"].([]any) {
		if l.(map[string]any)["virtual_account_id"] == va {
			return true
		}
	}
	return false
}

// GET /ledger/journal-entries (API.md §12): every filter, alone and
// combined, selects exactly the entries it names, newest first, and a walk
// by cursor two at a time keeps the filters; each item is the entry as GET
// /ledger/journal-entries/:id shows it.
func TestListJournalEntriesFilters(t *testing.T) {
	f := jeSetup(t)
	api, key := f.api, f.key
	_, otherKey := api.newPlatform("Other Co")
	foreignVA := vaOpenID(t, api, otherKey, vaPlatformID(t, api, otherKey), "theirs")
	vaCredit(t, api, otherKey, foreignVA, 500)
	api.sync()

	all := func(int, map[string]any) bool { return true }
	field := func(name, value string) func(int, map[string]any) bool {
		return func(_ int, je map[string]any) bool { return je[name] == value }
	}
	md := func(pairs map[string]string) func(int, map[string]any) bool {
		return func(_ int, je map[string]any) bool {
			m := je["metadata"].(map[string]any)
			for k, v := range pairs {
				if m[k] != v {
					return false
				}
			}
			return true
		}
	}
	and := func(fs ...func(int, map[string]any) bool) func(int, map[string]any) bool {
		return func(i int, je map[string]any) bool {
			for _, f := range fs {
				if !f(i, je) {
					return false
				}
			}
			return true
		}
	}
	touches := func(va string) func(int, map[string]any) bool {
		return func(_ int, je map[string]any) bool { return jeTouches(je, va) }
	}
	source := func(name, value string) func(int, map[string]any) bool {
		return func(_ int, je map[string]any) bool { return je["source"].(map[string]any)[name] == value }
	}
	q := url.QueryEscape
	cases := map[string]func(int, map[string]any) bool{
		"":                                       all,
		"virtual_account_id=" + f.va1:            touches(f.va1),
		"virtual_account_id=" + f.va2:            touches(f.va2),
		"virtual_account_id=" + f.va3:            func(int, map[string]any) bool { return false },
		"virtual_account_id=" + vaUnknown("va_"): func(int, map[string]any) bool { return false },
		"virtual_account_id=" + foreignVA:        func(int, map[string]any) bool { return false },
		"created_after=" + q(f.mark1):            func(i int, _ map[string]any) bool { return i >= f.at1 },
		"created_before=" + q(f.mark2):           func(i int, _ map[string]any) bool { return i < f.at2 },
		"created_after=" + q(f.mark1) + "&created_before=" + q(f.mark2): func(i int, _ map[string]any) bool { return i >= f.at1 && i < f.at2 },
		"created_after=2000-01-01":                                      all,
		"created_before=2000-01-01":                                     func(int, map[string]any) bool { return false },
		"source_id=" + f.payment:                                        source("id", f.payment),
		"source_id=" + f.inbound:                                        source("id", f.inbound),
		"source_type=payment&source_id=" + f.inbound:                    func(int, map[string]any) bool { return false },
		"metadata[region]=east":                                         md(map[string]string{"region": "east"}),
		"metadata[region]=east&metadata[tier]=gold":                     md(map[string]string{"region": "east", "tier": "gold"}),
		"metadata[region]=east&metadata[tier]=bronze":                   func(int, map[string]any) bool { return false },
		"metadata[region]=west":                                         md(map[string]string{"region": "west"}),
		"type=fee&virtual_account_id=" + f.va1 + "&metadata[region]=east": and(field("type", "fee"), touches(f.va1),
			md(map[string]string{"region": "east"})),
		"status=posted&virtual_account_id=" + f.va2: and(field("status", "posted"), touches(f.va2)),
		"type=payment&status=pending":               and(field("type", "payment"), field("status", "pending")),
	}
	for _, typ := range ledger.JournalTypes {
		cases["type="+typ] = field("type", typ)
	}
	for _, s := range ledger.Statuses {
		cases["status="+s] = field("status", s)
	}
	for _, s := range ledger.SourceTypes {
		cases["source_type="+s] = source("type", s)
	}
	for query, keep := range cases {
		want := f.want(keep)
		got := vaFlatten(vaWalk(t, api, key, "/v1/ledger/journal-entries?"+query, 2))
		if !slices.Equal(got, want) {
			t.Errorf("?%s:\n got %v\nwant %v", query, got, want)
		}
	}
	// The fixture has each kind it claims to, so no filter above passes by
	// selecting nothing where it should select something.
	for _, query := range []string{"type=adjustment", "type=fee", "type=correction", "type=inbound_transfer", "type=payment",
		"type=book_transfer", "type=funding", "status=pending", "status=posted", "status=archived", "source_type=journal_entry",
		"source_type=book_transfer", "virtual_account_id=" + f.va2} {
		if len(f.want(cases[query])) == 0 {
			t.Errorf("the fixture has no entry for ?%s", query)
		}
	}

	// Each item is GET /ledger/journal-entries/:id's object, lines and source included.
	list := vaGet(t, api, key, "/v1/ledger/journal-entries?limit=100")
	items := vaData(t, list)
	if len(items) != len(f.ids) || list["has_more"] != false || list["next_cursor"] != nil {
		t.Fatalf("the whole list: %d items, has_more %v", len(items), list["has_more"])
	}
	for _, je := range items {
		if want := f.byID[je["id"].(string)]; !reflect.DeepEqual(je, want) {
			t.Errorf("listed:\n %v\nGET:\n %v", je, want)
		}
	}
	// Another platform sees only its own.
	if ids := vaIDs(t, vaGet(t, api, otherKey, "/v1/ledger/journal-entries")); len(ids) != 1 || slices.Contains(f.ids, ids[0]) {
		t.Errorf("the other platform's list: %v", ids)
	}
}

// Sandbox and live are apart: a live funding is in the live list only, the
// sandbox entries in the sandbox list only, and the other environment's
// account filters to nothing.
func TestListJournalEntriesEnvironments(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz")
	sandbox := vaAdjust(t, api, key, va, "adjustment", "credit", 100)["id"].(string)
	liveKey := api.enableLive(platformID)
	live := vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 5_000}), http.StatusCreated)["id"].(string)
	api.sync()
	if ids := vaIDs(t, vaGet(t, api, key, "/v1/ledger/journal-entries")); !slices.Equal(ids, []string{sandbox}) {
		t.Errorf("sandbox list: %v, want [%s]", ids, sandbox)
	}
	if ids := vaIDs(t, vaGet(t, api, liveKey, "/v1/ledger/journal-entries")); !slices.Equal(ids, []string{live}) {
		t.Errorf("live list: %v, want [%s]", ids, live)
	}
	if ids := vaIDs(t, vaGet(t, api, liveKey, "/v1/ledger/journal-entries?virtual_account_id="+va)); len(ids) != 0 {
		t.Errorf("live list of a sandbox account: %v", ids)
	}
	requireError(t, api.do("GET", "/v1/ledger/journal-entries", operatorKey, nil), http.StatusForbidden, "forbidden")
	requireError(t, api.do("GET", "/v1/ledger/journal-entries", "", nil), http.StatusUnauthorized, "unauthorized")
}

// Bad filter values are 400 invalid_request with a message and the
// parameter named; never a 500, never an empty list.
func TestListJournalEntriesBadFilters(t *testing.T) {
	api, _, key := vaAPI(t)
	for query, param := range map[string]string{
		"type=payment_fee":   "type", // a line's type, never an entry's
		"type=nope":          "type",
		"type=PAYMENT":       "type",
		"status=void":        "status",
		"source_type=pay":    "source_type",
		"created_after=soon": "created_after",
		"created_before=1":   "created_before",
		"limit=0":            "limit",
		"limit=101":          "limit",
		"limit=x":            "limit",
		"cursor=abc":         "cursor",
		"cursor=" + url.QueryEscape(jeCursor("x")): "cursor",
		"cursor=" + url.QueryEscape(jeCursor("0")): "cursor",
		"metadata=east":                               "metadata",
		"metadata[a]=1&metadata[a]=2":                 "metadata",
		"metadata[" + strings.Repeat("k", 41) + "]=x": "",
		"metadata[a]=%00":                             "",
		"source_id=%ff":                               "",
	} {
		e := requireError(t, api.do("GET", "/v1/ledger/journal-entries?"+query, key, nil), http.StatusBadRequest, "invalid_request")
		if m, _ := e["message"].(string); m == "" {
			t.Errorf("?%s: no message: %v", query, e)
		}
		if p, _ := e["param"].(string); (param != "" && p != param) || p == "" {
			t.Errorf("?%s: param %q, want %q", query, p, param)
		}
	}
}

// jeCursor is a cursor as the API encodes one, around a sort key it would
// never give.
func jeCursor(after string) string {
	return queries.EncodeCursor(after)
}

// A walk by cursor while entries are posted and projected concurrently
// sees every entry that was there when it began exactly once, in order,
// and nothing twice: new entries take a higher seq, above the cursor.
func TestListJournalEntriesWalkWhileEntriesArrive(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz")
	var before []string
	for i := 0; i < 15; i++ {
		before = append(before, vaAdjust(t, api, key, va, "adjustment", "credit", 1)["id"].(string))
	}
	slices.Reverse(before)
	api.sync()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				if r := vaEntry(api, key, map[string]any{"type": "adjustment", "description": "more", "virtual_account_id": va,
					"direction": "credit", "amount": 1}); r.Status != http.StatusCreated {
					t.Errorf("post: %d %s", r.Status, r.Body)
				}
			}
		}()
	}
	projected := make(chan error, 1)
	go func() { // the projector, catching up as the entries come
		for ctx.Err() == nil {
			head, err := eventstore.Head(ctx, api.Pool)
			if err == nil {
				err = projections.CatchUp(ctx, api.Pool, head, nil)
			}
			if err != nil && ctx.Err() == nil {
				projected <- err
				return
			}
		}
		projected <- nil
	}()
	for range 5 {
		got := vaFlatten(vaWalk(t, api, key, "/v1/ledger/journal-entries?virtual_account_id="+va, 2))
		seen := map[string]bool{}
		var old []string
		for _, id := range got {
			if seen[id] {
				t.Fatalf("%s twice in one walk", id)
			}
			seen[id] = true
			if slices.Contains(before, id) {
				old = append(old, id)
			}
		}
		if !slices.Equal(old, before) {
			t.Fatalf("the walk saw the first entries as\n %v\nwant\n %v", old, before)
		}
	}
	wg.Wait()
	cancel()
	if err := <-projected; err != nil {
		t.Fatal(err)
	}
	api.sync()
	if n := len(vaFlatten(vaWalk(t, api, key, "/v1/ledger/journal-entries", 7))); n != 55 {
		t.Errorf("%d entries, want 55", n)
	}
}
