package http_test

import (
	"net/http"
	"testing"
)

// TestEventsFromAccountsAndLedger: opening an account, an instant inbound
// transfer and a fee give virtual_account.created, one ledger.entry.created
// per posted entry and inbound_transfer.completed, each carrying its
// resource; a pending ACH entry emits ledger.entry.created only once it posts.
func TestEventsFromAccountsAndLedger(t *testing.T) {
	api, platformID, key := vaAPI(t)
	va := vaOpenID(t, api, key, platformID, "biz_events")
	transfer := vaCredit(t, api, key, va, 10_000)
	fee := vaAdjust(t, api, key, va, "fee", "debit", 250)
	api.sync()

	events := vaData(t, vaGet(t, api, key, "/v1/events?limit=100"))
	byType := map[string][]map[string]any{}
	for _, e := range events {
		if e["object"] != "event" || e["platform_id"] != platformID || e["environment"] != "sandbox" {
			t.Fatalf("event envelope: %v", e)
		}
		byType[e["type"].(string)] = append(byType[e["type"].(string)], e)
	}
	object := func(e map[string]any) map[string]any {
		return e["data"].(map[string]any)["object"].(map[string]any)
	}
	if got := byType["virtual_account.created"]; len(got) != 1 || object(got[0])["id"] != va || object(got[0])["object"] != "virtual_account" {
		t.Fatalf("virtual_account.created: %v", got)
	}
	if got := byType["inbound_transfer.completed"]; len(got) != 1 || object(got[0])["id"] != transfer["id"] || object(got[0])["status"] != "completed" {
		t.Fatalf("inbound_transfer.completed: %v", got)
	}
	entries := map[string]bool{}
	for _, e := range byType["ledger.entry.created"] {
		o := object(e)
		if o["object"] != "ledger_entry" || o["status"] != "posted" {
			t.Fatalf("ledger.entry.created carries %v", o)
		}
		entries[o["id"].(string)] = true
	}
	for _, le := range fee["entries"].([]any) {
		if !entries[le.(map[string]any)["id"].(string)] {
			t.Errorf("no ledger.entry.created for fee entry %v", le)
		}
	}
	if len(entries) != 4 { // 2 for the transfer, 2 for the fee
		t.Fatalf("%d ledger.entry.created events, want 4: %v", len(entries), byType)
	}

	// Filter by type, get by id, and another platform sees nothing.
	only := vaData(t, vaGet(t, api, key, "/v1/events?type=virtual_account.created"))
	if len(only) != 1 {
		t.Fatalf("type filter: %v", only)
	}
	id := only[0]["id"].(string)
	if got := vaGet(t, api, key, "/v1/events/"+id); got["id"] != id || got["type"] != "virtual_account.created" {
		t.Fatalf("GET /events/:id: %v", got)
	}
	_, other := api.newPlatform("Other")
	requireError(t, api.do("GET", "/v1/events/"+id, other, nil), http.StatusNotFound, "not_found")
	if got := vaData(t, vaGet(t, api, other, "/v1/events")); len(got) != 0 {
		t.Fatalf("another platform sees events: %v", got)
	}
	requireError(t, api.do("GET", "/v1/events?type=nope", key, nil), http.StatusBadRequest, "invalid_request")

	// A pending ACH credit: no ledger.entry.created until it posts.
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, map[string]any{"sandbox": map[string]any{"ach_same_day_delay_seconds": 1}}), http.StatusOK)
	vaRequire(t, vaInbound(api, key, va, 700, "ach_same_day"), http.StatusCreated)
	api.sync()
	if got := vaData(t, vaGet(t, api, key, "/v1/events?type=ledger.entry.created&limit=100")); len(got) != 4 {
		t.Fatalf("a pending entry emitted ledger.entry.created: %d events", len(got))
	}
	vaSettle(t, api, 1)
	api.sync()
	if got := vaData(t, vaGet(t, api, key, "/v1/events?type=ledger.entry.created&limit=100")); len(got) != 6 {
		t.Fatalf("after the ACH posted: %d ledger.entry.created events, want 6", len(got))
	}
	if got := vaData(t, vaGet(t, api, key, "/v1/events?type=inbound_transfer.completed")); len(got) != 2 {
		t.Fatalf("inbound_transfer.completed after the ACH settled: %d, want 2", len(got))
	}
}
