package http_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
)

// schedDate is the Eastern date days from today.
func schedDate(days int) string {
	return time.Now().In(rails.Eastern).AddDate(0, 0, days).Format(time.DateOnly)
}

// schedBody is payBody scheduled for date.
func schedBody(accountID string, amount int64, rail, date string) map[string]any {
	b := payBody(accountID, amount, rail, "123456789")
	b["scheduled_for"] = date
	return b
}

// A scheduled payment holds nothing until its date; released (by the
// sandbox's simulation here), it runs the rules then: held and sent, or
// failed with the rule's code. It can be canceled while it waits; no rail
// touches it.
func TestScheduledPayments(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	tomorrow := schedDate(1)

	p := payCreated(t, api, key, schedBody(acc, 10_000, "rtp", tomorrow))
	id := p["id"].(string)
	if p["status"] != "scheduled" || p["scheduled_for"] != tomorrow || p["journal_entry_id"] != nil || p["submitted_at"] != nil {
		t.Fatalf("scheduled: %v", p)
	}
	if got, want := payTime(t, p["expected_settlement_at"]), payment.ReleaseAt(tomorrow); !got.Equal(want) {
		t.Errorf("expected_settlement_at %v, want %v (an RTP payment settles at its release)", got, want)
	}
	payBalanceIs(t, api, key, acc, 100_000, 0) // nothing held
	if now := payCreated(t, api, key, payBody(acc, 1_000, "rtp", "123456789")); now["scheduled_for"] != nil {
		t.Fatalf("scheduled_for is absent on a payment that leaves now: %v", now)
	}

	// The date: after today (Eastern), at most 365 days ahead, a date.
	for _, date := range []string{schedDate(0), schedDate(-1), schedDate(366), "2026-02-30", "tomorrow", "2026-12-01T06:00:00Z"} {
		m := requireError(t, payCreate(api, key, schedBody(acc, 10_000, "rtp", date)), http.StatusBadRequest, "invalid_request")
		if m["param"] != "scheduled_for" {
			t.Errorf("%q: %v", date, m)
		}
	}
	payCreated(t, api, key, schedBody(acc, 10_000, "rtp", schedDate(365)))

	// No rail sees it; it cannot be completed or failed by hand.
	api.sync()
	if s := payGet(t, api, key, id)["status"]; s != "scheduled" {
		t.Fatalf("after the simulator ran: %v", s)
	}
	requireError(t, api.do("POST", "/v1/simulations/payments/"+id+"/complete", key, nil), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+id+"/fail", key, map[string]any{"network_code": "AC03"}), http.StatusConflict, "invalid_state")
	list := vaData(t, vaGet(t, api, key, "/v1/payments?status=scheduled"))
	if len(list) != 2 {
		t.Errorf("scheduled payments listed: %d, want 2", len(list))
	}

	// Another platform, or live, finds nothing to release.
	_, otherKey := api.newPlatform("Other")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+id+"/release", otherKey, nil), http.StatusNotFound, "not_found")

	// Released: held now, then the rail settles it.
	r := vaRequire(t, api.do("POST", "/v1/simulations/payments/"+id+"/release", key, nil), http.StatusOK)
	if r["status"] != "pending" && r["status"] != "submitted" && r["status"] != "completed" || r["journal_entry_id"] == nil || r["scheduled_for"] != tomorrow {
		t.Fatalf("released: %v", r)
	}
	requireError(t, api.do("POST", "/v1/simulations/payments/"+id+"/release", key, nil), http.StatusConflict, "invalid_state")
	paySettleAll(t, api, key, id)
	if s := payGet(t, api, key, id)["status"]; s != "completed" {
		t.Fatalf("a released RTP payment: %v", s)
	}
	je := vaGet(t, api, key, "/v1/ledger/journal-entries/"+r["journal_entry_id"].(string))
	if src, _ := je["source"].(map[string]any); src["id"] != id || je["status"] != "posted" {
		t.Fatalf("its journal entry: %v", je)
	}
	paySettleAll(t, api, key, list[0]["id"].(string), list[1]["id"].(string))
	payBalanceIs(t, api, key, acc, 100_000-1_050-10_050, 0)

	// Released without the funds: failed with the rule's code; nothing held, no entry.
	poor := payCreated(t, api, key, schedBody(acc, 95_000, "ach_standard", tomorrow))["id"].(string)
	f := vaRequire(t, api.do("POST", "/v1/simulations/payments/"+poor+"/release", key, nil), http.StatusOK)
	failure, _ := f["failure"].(map[string]any)
	if f["status"] != "failed" || failure["code"] != "insufficient_funds" || failure["network_code"] != nil || failure["reason"] == "" ||
		f["journal_entry_id"] != nil || f["failed_at"] == nil {
		t.Fatalf("released without funds: %v", f)
	}
	payBalanceIs(t, api, key, acc, 88_900, 0)

	// Canceled while it waits: nothing to release.
	c := payCreated(t, api, key, schedBody(acc, 5_000, "ach_same_day", tomorrow))["id"].(string)
	canceled := vaRequire(t, api.do("POST", "/v1/payments/"+c+"/cancel", key, nil), http.StatusOK)
	if canceled["status"] != "canceled" || canceled["journal_entry_id"] != nil {
		t.Fatalf("canceled: %v", canceled)
	}
	requireError(t, api.do("POST", "/v1/simulations/payments/"+c+"/release", key, nil), http.StatusConflict, "invalid_state")
	payBalanceIs(t, api, key, acc, 88_900, 0)

	// Events: payment.created shows it scheduled, payment.released pending.
	api.sync()
	seen := map[string]any{}
	for _, typ := range []string{"payment.created", "payment.released"} {
		for _, ev := range vaData(t, vaGet(t, api, key, "/v1/events?limit=100&type="+typ)) {
			if obj, _ := ev["data"].(map[string]any)["object"].(map[string]any); obj["id"] == id {
				seen[typ] = obj["status"]
			}
		}
	}
	if seen["payment.created"] != "scheduled" || seen["payment.released"] != "pending" {
		t.Errorf("events of the released payment: %v", seen)
	}
	payCheckLedger(t, api)
	apAudit(t, api)
}

// The clock releases what is due, and only that; at the approval threshold
// a released payment waits for a key other than the one that scheduled it;
// the daily limit counts a released payment on the day of its release.
func TestScheduledPaymentClock(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	ctx := context.Background()
	soon := payCreated(t, api, key, schedBody(acc, 2_000, "ach_standard", schedDate(1)))["id"].(string)
	later := payCreated(t, api, key, schedBody(acc, 3_000, "ach_standard", schedDate(3)))["id"].(string)
	if n, err := api.App.ReleaseDuePayments(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("nothing is due yet: %d, %v", n, err)
	}
	if n, err := api.App.ReleaseDuePayments(ctx, payment.ReleaseAt(schedDate(1))); err != nil || n != 1 {
		t.Fatalf("at 06:00 ET tomorrow: %d released, %v; want 1", n, err)
	}
	if s := payGet(t, api, key, soon)["status"]; s != "pending" && s != "submitted" {
		t.Fatalf("the due payment: %v", s)
	}
	if s := payGet(t, api, key, later)["status"]; s != "scheduled" {
		t.Fatalf("the later payment: %v", s)
	}
	payBalanceIs(t, api, key, acc, 100_000, 2_025)

	// At the threshold: requires_approval from the release; its scheduler cannot approve it.
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": 3_000})
	if n, err := api.App.ReleaseDuePayments(ctx, payment.ReleaseAt(schedDate(3))); err != nil || n != 1 {
		t.Fatalf("at 06:00 ET in 3 days: %d released, %v", n, err)
	}
	held := payGet(t, api, key, later)
	if held["status"] != "requires_approval" || apApproval(t, held)["created_by"] == nil {
		t.Fatalf("released at the threshold: %v", held)
	}
	requireError(t, api.do("POST", "/v1/payments/"+later+"/approve", key, nil), http.StatusForbidden, "forbidden")
	_, approver := apSecondKey(t, api, key)
	vaRequire(t, api.do("POST", "/v1/payments/"+later+"/approve", approver, nil), http.StatusOK)
	// Its approval expires 7 days after the release, not after the creation.
	if n, err := api.App.ExpireApprovals(ctx, time.Now().Add(payment.ApprovalWindow-time.Minute)); err != nil || n != 0 {
		t.Fatalf("expiry: %d, %v", n, err)
	}

	// The daily limit: a payment scheduled earlier counts on the day it is released.
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": nil, "daily_payment_limit": 20_000})
	s := payCreated(t, api, key, schedBody(acc, 8_000, "ach_standard", schedDate(1)))["id"].(string)
	payCreated(t, api, key, payBody(acc, 9_000, "ach_standard", "123456789")) // 2,000 + 3,000 released today, + 9,000
	f := vaRequire(t, api.do("POST", "/v1/simulations/payments/"+s+"/release", key, nil), http.StatusOK)
	if failure, _ := f["failure"].(map[string]any); f["status"] != "failed" || failure["code"] != "limit_exceeded" {
		t.Fatalf("released over the day's limit: %v", f)
	}
	payCheckLedger(t, api)
	apAudit(t, api)
}

// A release run many times at once — the clock and the simulation racing,
// as after a crash — holds each payment once.
func TestScheduledPaymentReleasedOnce(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 1_000_000, true)
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		ids[i] = payCreated(t, api, key, schedBody(acc, 1_000, "ach_standard", schedDate(1)))["id"].(string)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 10*n)
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := api.App.ReleaseDuePayments(context.Background(), payment.ReleaseAt(schedDate(1))); err != nil {
				errs <- err.Error()
			}
		}()
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := api.do("POST", "/v1/simulations/payments/"+id+"/release", key, nil)
				if r.Status != http.StatusOK && !(r.Status == http.StatusConflict && r.Str("code") == "invalid_state") {
					errs <- r.Str("code")
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	for _, id := range ids {
		if s := payGet(t, api, key, id)["status"]; s != "pending" && s != "submitted" {
			t.Errorf("%s: %v", id, s)
		}
	}
	payBalanceIs(t, api, key, acc, 1_000_000, n*1_025) // each held once
	api.sync()
	var entries int
	if err := api.Pool.QueryRow(context.Background(), `SELECT count(DISTINCT journal_entry_id) FROM ledger_entries
        WHERE source_id = ANY($1)`, ids).Scan(&entries); err != nil {
		t.Fatal(err)
	}
	if entries != n {
		t.Errorf("%d journal entries for %d payments", entries, n)
	}
	payCheckLedger(t, api)
	apAudit(t, api)
}
