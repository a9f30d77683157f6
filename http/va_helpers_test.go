package http_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	apihttp "github.com/opentreasury/treasury/http"
	"github.com/opentreasury/treasury/sandbox"
)

// Helpers of the virtual account, ledger and simulation tests. Their names
// start with "va" so that they never clash with other test files.

// vaOriginator is a valid originator of a simulated inbound transfer
// (021000021 passes the ABA checksum).
var vaOriginator = map[string]any{"name": "Globex Corp", "account_number": "123456789", "routing_number": "021000021"}

// vaAPI is a test API without rate limiting (these tests send many
// requests with one key) and a fresh platform with its sandbox key.
func vaAPI(t *testing.T) (api *testAPI, platformID, key string) {
	t.Helper()
	api = newTestAPI(t, apihttp.Config{RateLimitOff: true})
	platformID, key = api.newPlatform("Acme Payroll")
	return api, platformID, key
}

// vaRequire asserts a status and returns the decoded body.
func vaRequire(t testing.TB, r response, status int) map[string]any {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	return r.JSON()
}

// vaOpen opens a checking account for entityRef and returns it.
func vaOpen(t testing.TB, api *testAPI, key, platformID, entityRef string) map[string]any {
	t.Helper()
	r := api.do("POST", "/v1/virtual-accounts", key, map[string]any{
		"platform_id": platformID, "entity_ref": entityRef, "type": "checking"})
	return vaRequire(t, r, http.StatusCreated)
}

// vaOpenID opens an account and returns its id.
func vaOpenID(t testing.TB, api *testAPI, key, platformID, entityRef string) string {
	t.Helper()
	return vaOpen(t, api, key, platformID, entityRef)["id"].(string)
}

// vaPlatformID reads the caller's platform id.
func vaPlatformID(t testing.TB, api *testAPI, key string) string {
	t.Helper()
	return vaGet(t, api, key, "/v1/platform")["id"].(string)
}

// vaInbound simulates an inbound transfer and returns the response.
func vaInbound(api *testAPI, key, accountID string, amount int64, rail string) response {
	return api.do("POST", "/v1/simulations/inbound-transfers", key, map[string]any{
		"virtual_account_id": accountID, "amount": amount, "rail": rail, "originator": vaOriginator})
}

// vaCredit credits an account at once over RTP and returns the transfer.
func vaCredit(t testing.TB, api *testAPI, key, accountID string, amount int64) map[string]any {
	t.Helper()
	body := vaRequire(t, vaInbound(api, key, accountID, amount, "rtp"), http.StatusCreated)
	if body["status"] != "completed" {
		t.Fatalf("an RTP inbound transfer is %v, want completed", body["status"])
	}
	return body
}

// vaEntry posts a manual journal entry.
func vaEntry(api *testAPI, key string, body any, headers ...string) response {
	return api.do("POST", "/v1/ledger/entries", key, body, headers...)
}

// vaAdjust posts a shorthand journal entry and requires 201.
func vaAdjust(t testing.TB, api *testAPI, key, accountID, typ, direction string, amount int64) map[string]any {
	t.Helper()
	r := vaEntry(api, key, map[string]any{"type": typ, "description": typ + " " + direction,
		"virtual_account_id": accountID, "direction": direction, "amount": amount})
	return vaRequire(t, r, http.StatusCreated)
}

// vaGet GETs path and requires 200.
func vaGet(t testing.TB, api *testAPI, key, path string) map[string]any {
	t.Helper()
	return vaRequire(t, api.do("GET", path, key, nil), http.StatusOK)
}

// vaData returns the data of a list body.
func vaData(t testing.TB, list map[string]any) []map[string]any {
	t.Helper()
	if list["object"] != "list" {
		t.Fatalf("not a list: %v", list)
	}
	raw, ok := list["data"].([]any)
	if !ok {
		t.Fatalf("list data is not an array: %v", list["data"])
	}
	out := make([]map[string]any, len(raw))
	for i, x := range raw {
		out[i], _ = x.(map[string]any)
	}
	return out
}

// vaIDs lists the ids of a list's items, in order.
func vaIDs(t testing.TB, list map[string]any) []string {
	t.Helper()
	var ids []string
	for _, item := range vaData(t, list) {
		ids = append(ids, fmt.Sprint(item["id"]))
	}
	return ids
}

// vaInt reads a JSON number as an int64.
func vaInt(t testing.TB, v any) int64 {
	t.Helper()
	f, ok := v.(float64)
	if !ok {
		t.Fatalf("%v (%T) is not a number", v, v)
	}
	return int64(f)
}

// vaBalance reads an account's balance object from GET /virtual-accounts/:id.
func vaBalance(t testing.TB, api *testAPI, key, accountID string) map[string]int64 {
	t.Helper()
	b, _ := vaGet(t, api, key, "/v1/virtual-accounts/"+accountID)["balance"].(map[string]any)
	out := map[string]int64{}
	for _, f := range []string{"posted", "pending_inbound", "pending_outbound", "available"} {
		out[f] = vaInt(t, b[f])
	}
	return out
}

// vaWalk follows a list's cursors from path (which may carry a query) with
// the given limit and returns the ids of every page. It checks that every
// page but the last is full, has has_more and a next_cursor, and that the
// last has neither.
func vaWalk(t testing.TB, api *testAPI, key, path string, limit int) [][]string {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var pages [][]string
	cursor := ""
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatalf("%s: the walk does not end", path)
		}
		u := fmt.Sprintf("%s%slimit=%d", path, sep, limit)
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		list := vaGet(t, api, key, u)
		ids := vaIDs(t, list)
		pages = append(pages, ids)
		next, _ := list["next_cursor"].(string)
		if list["has_more"] != true {
			if list["next_cursor"] != nil {
				t.Fatalf("%s: the last page has next_cursor %v", u, list["next_cursor"])
			}
			return pages
		}
		if next == "" || len(ids) != limit {
			t.Fatalf("%s: has_more with %d items and next_cursor %q", u, len(ids), next)
		}
		cursor = next
	}
}

// vaFlatten joins pages of ids.
func vaFlatten(pages [][]string) []string {
	var all []string
	for _, p := range pages {
		all = append(all, p...)
	}
	return all
}

// vaNow is an instant strictly between the requests sent before and after
// it, as a query parameter value (RFC 3339, UTC). The server stamps events
// with its clock truncated to the microsecond, so the boundary is the next
// whole microsecond, and vaNow returns only once the clock has passed it.
func vaNow() string {
	b := time.Now().UTC().Truncate(time.Microsecond).Add(time.Microsecond)
	for !time.Now().After(b) { // at most a microsecond
	}
	return b.Format(time.RFC3339Nano)
}

// vaSimulator is the sandbox simulator over the test API's database.
func vaSimulator(api *testAPI) *sandbox.Simulator {
	return &sandbox.Simulator{App: api.App, Pool: api.Pool}
}

// vaSettle schedules what the simulator saw in the log, then performs due
// actions until it has performed want of them, polling for at most 15 s.
func vaSettle(t testing.TB, api *testAPI, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sim := vaSimulator(api)
	head, err := eventstore.Head(ctx, api.Pool)
	if err != nil {
		t.Fatal(err)
	}
	// CatchUpTo, not CatchUp: reads stop below the oldest transaction on
	// the whole server, which other tests' transactions may hold back.
	if err := sim.Subscription(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("simulator catch up: %v", err)
	}
	done := 0
	for done < want {
		n, err := sim.SettleDue(ctx)
		if err != nil {
			t.Fatalf("settle due: %v", err)
		}
		done += n
		if done >= want {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("only %d of %d sandbox actions became due within 15 s", done, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// vaUnknown is a well-formed id of the prefix that names nothing.
func vaUnknown(prefix string) string { return domain.NewID(prefix) }
