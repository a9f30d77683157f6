package http_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	apihttp "github.com/opentreasury/treasury/http"
)

func TestSimulateInboundTransferRTP(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	r := vaInbound(api, key, id, 12345, "rtp")
	it := vaRequire(t, r, http.StatusCreated)
	itID, _ := it["id"].(string)
	for field, want := range map[string]any{"object": "inbound_transfer", "virtual_account_id": id, "currency": "USD",
		"rail": "rtp", "status": "completed", "environment": "sandbox", "description": "Inbound rtp from Globex Corp"} {
		if it[field] != want {
			t.Errorf("%s = %v, want %v", field, it[field], want)
		}
	}
	if !strings.HasPrefix(itID, "itx_") || vaInt(t, it["amount"]) != 12345 || !strings.HasPrefix(it["journal_entry_id"].(string), "je_") {
		t.Errorf("inbound transfer %v", it)
	}
	if o, _ := it["originator"].(map[string]any); o["name"] != "Globex Corp" || o["account_number"] != "123456789" || o["routing_number"] != "021000021" {
		t.Errorf("originator = %v", it["originator"])
	}
	if it["completed_at"] == nil || it["expected_settlement_at"] != it["created_at"] {
		t.Errorf("an instant transfer: completed_at %v, expected_settlement_at %v, created_at %v",
			it["completed_at"], it["expected_settlement_at"], it["created_at"])
	}
	// The balance moved at once, before any projection caught up.
	if b := vaBalance(t, api, key, id); b["posted"] != 12345 || b["available"] != 12345 || b["pending_inbound"] != 0 {
		t.Errorf("balance right after an RTP credit: %v", b)
	}
	// FedNow, with a description, is instant too.
	r = api.do("POST", "/v1/simulations/inbound-transfers", key, map[string]any{"virtual_account_id": id, "amount": 55,
		"rail": "fednow", "originator": vaOriginator, "description": "Invoice 17"})
	if it := vaRequire(t, r, http.StatusCreated); it["status"] != "completed" || it["description"] != "Invoice 17" {
		t.Errorf("fednow transfer %v", it)
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 12400 {
		t.Errorf("posted = %d, want 12400", b["posted"])
	}
	api.sync()
	txns := vaData(t, vaGet(t, api, key, "/v1/virtual-accounts/"+id+"/transactions"))
	if len(txns) != 2 {
		t.Fatalf("%d transactions, want 2", len(txns))
	}
	src, _ := txns[1]["source"].(map[string]any)
	if txns[1]["type"] != "inbound_transfer" || txns[1]["status"] != "posted" || src["type"] != "inbound_transfer" || src["id"] != itID {
		t.Errorf("the RTP credit's transaction is %v", txns[1])
	}
}

func TestSimulateInboundTransferValidation(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	req := func(change map[string]any) map[string]any {
		o := map[string]any{}
		for k, v := range vaOriginator {
			o[k] = v
		}
		m := map[string]any{"virtual_account_id": id, "amount": 100, "rail": "rtp", "originator": o}
		for k, v := range change {
			if name, ok := strings.CutPrefix(k, "originator."); ok {
				if v == nil {
					delete(o, name)
				} else {
					o[name] = v
				}
			} else if v == nil {
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
		{"routing checksum", req(map[string]any{"originator.routing_number": "021000022"}), 400, "invalid_request", "originator.routing_number"},
		{"routing 8 digits", req(map[string]any{"originator.routing_number": "02100002"}), 400, "invalid_request", "originator.routing_number"},
		{"routing letters", req(map[string]any{"originator.routing_number": "02100002a"}), 400, "invalid_request", "originator.routing_number"},
		{"routing missing", req(map[string]any{"originator.routing_number": nil}), 400, "invalid_request", "originator.routing_number"},
		{"account_number 3 digits", req(map[string]any{"originator.account_number": "123"}), 400, "invalid_request", "originator.account_number"},
		{"account_number 18 digits", req(map[string]any{"originator.account_number": strings.Repeat("1", 18)}), 400, "invalid_request", "originator.account_number"},
		{"account_number not digits", req(map[string]any{"originator.account_number": "12345x"}), 400, "invalid_request", "originator.account_number"},
		{"originator name missing", req(map[string]any{"originator.name": nil}), 400, "invalid_request", "originator.name"},
		{"originator name 81 chars", req(map[string]any{"originator.name": strings.Repeat("n", 81)}), 400, "invalid_request", "originator.name"},
		{"originator missing", req(map[string]any{"originator": nil}), 400, "invalid_request", "originator.routing_number"},
		{"rtp over its limit", req(map[string]any{"amount": 1_000_000_001}), 400, "amount_exceeds_rail_limit", "amount"},
		{"fednow over its limit", req(map[string]any{"rail": "fednow", "amount": 1_000_000_001}), 400, "amount_exceeds_rail_limit", "amount"},
		{"ach_same_day over its limit", req(map[string]any{"rail": "ach_same_day", "amount": 100_000_001}), 400, "amount_exceeds_rail_limit", "amount"},
		{"ach_standard over its limit", req(map[string]any{"rail": "ach_standard", "amount": 10_000_000_000}), 400, "amount_exceeds_rail_limit", "amount"},
		{"unknown rail", req(map[string]any{"rail": "wire"}), 400, "invalid_request", "rail"},
		{"rail missing", req(map[string]any{"rail": nil}), 400, "invalid_request", "rail"},
		{"amount zero", req(map[string]any{"amount": 0}), 400, "invalid_request", "amount"},
		{"amount negative", req(map[string]any{"amount": -5}), 400, "invalid_request", "amount"},
		{"amount a string", req(map[string]any{"amount": "100"}), 400, "invalid_request", "amount"},
		{"description 141 chars", req(map[string]any{"description": strings.Repeat("d", 141)}), 400, "invalid_request", "description"},
		{"virtual_account_id missing", req(map[string]any{"virtual_account_id": nil}), 400, "invalid_request", "virtual_account_id"},
		{"unknown field", req(map[string]any{"memo": "x"}), 400, "invalid_request", "memo"},
		{"unknown account", req(map[string]any{"virtual_account_id": vaUnknown("va_")}), 404, "not_found", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := requireError(t, api.do("POST", "/v1/simulations/inbound-transfers", key, c.body), c.status, c.code)
			if c.param != "" && e["param"] != c.param {
				t.Errorf("param = %v, want %s", e["param"], c.param)
			}
		})
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 0 || b["pending_inbound"] != 0 {
		t.Fatalf("refused simulations moved money: %v", b)
	}
	// The bounds themselves pass: each rail's maximum, 4 and 17 digits, 80 and 140 characters.
	for _, c := range []map[string]any{
		{"amount": 1_000_000_000},
		{"rail": "fednow", "amount": 1_000_000_000},
		{"rail": "ach_same_day", "amount": 100_000_000},
		{"originator.account_number": "1234", "originator.name": strings.Repeat("n", 80), "description": strings.Repeat("d", 140)},
		{"originator.account_number": strings.Repeat("9", 17)},
	} {
		vaRequire(t, api.do("POST", "/v1/simulations/inbound-transfers", key, req(c)), http.StatusCreated)
	}
}

func TestSimulationsNeedASandboxKey(t *testing.T) {
	api, platformID, sandboxKey := vaAPI(t)
	liveKey := api.enableLive(platformID)
	liveID := vaOpenID(t, api, liveKey, platformID, "biz_1")
	sandboxID := vaOpenID(t, api, sandboxKey, platformID, "biz_1")
	for _, id := range []string{liveID, sandboxID} {
		requireError(t, vaInbound(api, liveKey, id, 100, "rtp"), http.StatusForbidden, "forbidden")
	}
	requireError(t, vaInbound(api, operatorKey, sandboxID, 100, "rtp"), http.StatusForbidden, "forbidden")
	requireError(t, vaInbound(api, "", sandboxID, 100, "rtp"), http.StatusUnauthorized, "unauthorized")
	// A sandbox key cannot reach a live account.
	requireError(t, vaInbound(api, sandboxKey, liveID, 100, "rtp"), http.StatusNotFound, "not_found")
	if b := vaBalance(t, api, liveKey, liveID); b["posted"] != 0 || b["pending_inbound"] != 0 {
		t.Errorf("the live account's balance moved: %v", b)
	}
}

func TestSimulateInboundTransferACHSettlesAfterTheDelay(t *testing.T) {
	api, platformID, key := vaAPI(t)
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{
		"sandbox": map[string]any{"ach_same_day_delay_seconds": 1, "ach_standard_delay_seconds": 0}}), http.StatusOK)
	id := vaOpenID(t, api, key, platformID, "biz_1")

	it := vaRequire(t, vaInbound(api, key, id, 4000, "ach_same_day"), http.StatusCreated)
	if it["status"] != "pending" || it["completed_at"] != nil {
		t.Fatalf("an ACH transfer with a 1 s delay is %v (completed_at %v)", it["status"], it["completed_at"])
	}
	created, err1 := time.Parse(time.RFC3339, it["created_at"].(string))
	expected, err2 := time.Parse(time.RFC3339, it["expected_settlement_at"].(string))
	if d := expected.Sub(created); err1 != nil || err2 != nil || d < 999*time.Millisecond || d > 1001*time.Millisecond {
		t.Errorf("expected_settlement_at %v is not created_at %v + 1 s", it["expected_settlement_at"], it["created_at"])
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 0 || b["pending_inbound"] != 4000 || b["available"] != 0 {
		t.Errorf("balance of a pending ACH credit: %v (inbound funds count once settled)", b)
	}
	api.sync()
	txns := vaData(t, vaGet(t, api, key, "/v1/virtual-accounts/"+id+"/transactions"))
	if len(txns) != 1 || txns[0]["status"] != "pending" || txns[0]["posted_at"] != nil {
		t.Fatalf("transactions of a pending ACH credit: %v", txns)
	}

	pendingAt := vaNow()
	vaSettle(t, api, 1)
	if b := vaBalance(t, api, key, id); b["posted"] != 4000 || b["pending_inbound"] != 0 || b["available"] != 4000 {
		t.Errorf("balance after settlement: %v", b)
	}
	api.sync()
	txns = vaData(t, vaGet(t, api, key, "/v1/virtual-accounts/"+id+"/transactions"))
	if len(txns) != 1 || txns[0]["status"] != "posted" || txns[0]["posted_at"] == nil {
		t.Errorf("transactions after settlement: %v", txns)
	}
	entries := vaData(t, vaGet(t, api, key, "/v1/ledger/entries?status=posted&type=inbound_transfer"))
	if len(entries) != 2 {
		t.Errorf("%d posted inbound ledger entries after settlement, want 2", len(entries))
	}
	// The balance as of an instant while it was pending, and now.
	for _, c := range []struct {
		asOf              string
		posted, pendingIn int64
	}{{pendingAt, 0, 4000}, {vaNow(), 4000, 0}} {
		b := vaGet(t, api, key, "/v1/virtual-accounts/"+id+"/balance?as_of="+c.asOf)
		if vaInt(t, b["posted"]) != c.posted || vaInt(t, b["pending_inbound"]) != c.pendingIn {
			t.Errorf("balance as of %s = %v, want posted %d pending_inbound %d", c.asOf, b, c.posted, c.pendingIn)
		}
	}

	// With a delay of 0, ACH completes at once.
	it = vaRequire(t, vaInbound(api, key, id, 600, "ach_standard"), http.StatusCreated)
	if it["status"] != "completed" {
		t.Errorf("an ACH transfer with no delay is %v", it["status"])
	}
	if b := vaBalance(t, api, key, id); b["posted"] != 4600 {
		t.Errorf("posted = %d, want 4600", b["posted"])
	}
}

// API.md §3: the rate limit applies per key and every response carries
// the RateLimit-* headers; the simulation route is a platform-key route.
func TestSimulationsAreRateLimited(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{RateLimit: &apihttp.RateLimit{PerSecond: 1, Burst: 2}})
	platformID, key := api.newPlatform("Throttled")
	id := vaOpenID(t, api, key, platformID, "biz_1")
	r := vaInbound(api, key, id, 100, "rtp")
	if r.Header.Get("RateLimit-Limit") == "" {
		t.Errorf("POST /simulations/inbound-transfers → %d carries no RateLimit-Limit header", r.Status)
	}
	statuses := []int{r.Status}
	for i := 0; i < 3; i++ {
		statuses = append(statuses, vaInbound(api, key, id, 100, "rtp").Status)
	}
	if statuses[len(statuses)-1] != http.StatusTooManyRequests {
		t.Errorf("five requests (one opening the account) in a burst of 2 at 1/s: the simulations got %v, no 429", statuses)
	}
}

// API.md §1 and the Error schema: param names the field at fault as a
// dotted path, also for an unknown field inside an object.
func TestSimulateInboundTransferUnknownNestedField(t *testing.T) {
	api, platformID, key := vaAPI(t)
	id := vaOpenID(t, api, key, platformID, "biz_1")
	r := api.do("POST", "/v1/simulations/inbound-transfers", key, map[string]any{"virtual_account_id": id, "amount": 5, "rail": "rtp",
		"originator": map[string]any{"name": "Globex Corp", "account_number": "123456789", "routing_number": "021000021", "nickname": "G"}})
	e := requireError(t, r, http.StatusBadRequest, "invalid_request")
	if e["param"] != "originator.nickname" {
		t.Errorf("param = %v, want originator.nickname", e["param"])
	}
}
