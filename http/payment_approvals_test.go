package http_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/projections/rebuild"
)

// apSecondKey creates another sandbox key of the platform and returns its
// id and secret.
func apSecondKey(t *testing.T, api *testAPI, key string) (id, secret string) {
	t.Helper()
	k := vaRequire(t, api.do("POST", "/v1/platform/api-keys", key, map[string]any{"name": "approver"}), http.StatusCreated)
	return k["id"].(string), k["secret"].(string)
}

// apApproval is a payment's approval object.
func apApproval(t *testing.T, p map[string]any) map[string]any {
	t.Helper()
	a, ok := p["approval"].(map[string]any)
	if !ok {
		t.Fatalf("payment %v has no approval", p["id"])
	}
	return a
}

// With payment_approval_threshold set, a payment of that amount or more is
// created requires_approval, held but not sent; another key approves it
// (then the rail takes it) or denies it (the hold is released); the
// creating key cannot approve it.
func TestPaymentApprovals(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": 5_000})
	approverID, approver := apSecondKey(t, api, key)

	below := payCreated(t, api, key, payBody(acc, 4_999, "rtp", "123456789"))
	if below["status"] != "pending" || below["approval"] != nil {
		t.Fatalf("a payment under the threshold: %v", below)
	}
	p := payCreated(t, api, key, payBody(acc, 5_000, "rtp", "123456789"))
	id := p["id"].(string)
	a := apApproval(t, p)
	if p["status"] != "requires_approval" || a["created_by"] == "" || a["created_by"] == approverID ||
		a["approved_at"] != nil || a["approved_by"] != nil || a["denied_at"] != nil {
		t.Fatalf("a payment at the threshold: %v", p)
	}
	if got, want := payTime(t, a["expires_at"]), payTime(t, p["created_at"]).Add(7*24*time.Hour); !got.Equal(want) {
		t.Errorf("expires_at %v, want %v (created + 7 days)", got, want)
	}
	// Held like any payment: 4,999 + 50 and 5,000 + 50.
	payBalanceIs(t, api, key, acc, 100_000, 10_099)

	// The rail does not see it while it waits.
	paySettleAll(t, api, key, below["id"].(string))
	if s := payGet(t, api, key, id)["status"]; s != "requires_approval" {
		t.Fatalf("after the simulator ran: %v, want requires_approval", s)
	}
	list := vaData(t, vaGet(t, api, key, "/v1/payments?status=requires_approval"))
	if len(list) != 1 || list[0]["id"] != id {
		t.Errorf("the list of payments awaiting approval: %v", list)
	}

	m := requireError(t, api.do("POST", "/v1/payments/"+id+"/approve", key, nil), http.StatusForbidden, "forbidden")
	if m["message"] == "" {
		t.Fatal(m)
	}
	got := vaRequire(t, api.do("POST", "/v1/payments/"+id+"/approve", approver, nil), http.StatusOK)
	if a := apApproval(t, got); got["status"] != "pending" || a["approved_by"] != approverID || a["approved_at"] == nil {
		t.Fatalf("approved: %v", got)
	}
	requireError(t, api.do("POST", "/v1/payments/"+id+"/approve", approver, nil), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/payments/"+id+"/deny", approver, nil), http.StatusConflict, "invalid_state")
	paySettleAll(t, api, key, id)
	if s := payGet(t, api, key, id)["status"]; s != "completed" {
		t.Fatalf("an approved RTP payment: %v, want completed", s)
	}
	payBalanceIs(t, api, key, acc, 100_000-10_099, 0)

	// Denied: final, hold released; the creator may deny (withdraw) it.
	d := payCreated(t, api, key, payBody(acc, 6_000, "ach_standard", "123456789"))
	payBalanceIs(t, api, key, acc, 89_901, 6_025)
	denied := vaRequire(t, api.do("POST", "/v1/payments/"+d["id"].(string)+"/deny", key, map[string]any{"reason": "duplicate invoice"}), http.StatusOK)
	if a := apApproval(t, denied); denied["status"] != "denied" || a["denied_by"] != apApproval(t, d)["created_by"] ||
		a["denial_reason"] != "duplicate invoice" || a["approved_at"] != nil {
		t.Fatalf("denied: %v", denied)
	}
	payBalanceIs(t, api, key, acc, 89_901, 0)
	requireError(t, api.do("POST", "/v1/payments/"+d["id"].(string)+"/approve", approver, nil), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/payments/"+d["id"].(string)+"/cancel", key, nil), http.StatusConflict, "payment_not_cancelable")
	requireError(t, api.do("POST", "/v1/payments/"+below["id"].(string)+"/approve", approver, nil), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/payments/"+d["id"].(string)+"/deny", key, map[string]any{"reason": string(make([]byte, 501))}),
		http.StatusBadRequest, "invalid_request")

	// Canceled while it waits: the hold is released.
	c := payCreated(t, api, key, payBody(acc, 7_000, "ach_same_day", "123456789"))
	canceled := vaRequire(t, api.do("POST", "/v1/payments/"+c["id"].(string)+"/cancel", key, nil), http.StatusOK)
	if canceled["status"] != "canceled" || canceled["cancellation_reason"] != nil {
		t.Fatalf("canceled: %v", canceled)
	}
	payBalanceIs(t, api, key, acc, 89_901, 0)

	// Another platform's or environment's key finds nothing to approve.
	_, otherKey := api.newPlatform("Other")
	e := payCreated(t, api, key, payBody(acc, 8_000, "rtp", "123456789"))
	requireError(t, api.do("POST", "/v1/payments/"+e["id"].(string)+"/approve", otherKey, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("POST", "/v1/payments/"+e["id"].(string)+"/approve", api.enableLive(platformID), nil), http.StatusNotFound, "not_found")

	// Their events, each with the payment as it was then: a held payment's
	// payment.created already shows it waiting (it never stood without its
	// approval).
	api.sync()
	for _, ev := range vaData(t, vaGet(t, api, key, "/v1/events?type=payment.created&limit=100")) {
		if obj, _ := ev["data"].(map[string]any)["object"].(map[string]any); obj["id"] == id &&
			(obj["status"] != "requires_approval" || obj["approval"] == nil) {
			t.Errorf("payment.created of a held payment: %v", obj)
		}
	}
	for typ, status := range map[string]string{"payment.requires_approval": "requires_approval", "payment.approved": "pending", "payment.denied": "denied"} {
		events := vaData(t, vaGet(t, api, key, "/v1/events?type="+typ))
		if len(events) == 0 {
			t.Errorf("no %s event", typ)
		}
		for _, ev := range events {
			if obj, _ := ev["data"].(map[string]any)["object"].(map[string]any); obj["status"] != status || obj["approval"] == nil {
				t.Errorf("%s: %v", typ, obj)
			}
		}
	}
	payCheckLedger(t, api)
	apAudit(t, api)
}

// Unapproved for 7 days, a payment is canceled (reason approval_expired),
// its hold released; one approved in time is left alone.
func TestPaymentApprovalExpires(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": 1_000})
	_, approver := apSecondKey(t, api, key)
	waiting := payCreated(t, api, key, payBody(acc, 1_000, "ach_standard", "123456789"))["id"].(string)
	approved := payCreated(t, api, key, payBody(acc, 2_000, "ach_standard", "123456789"))["id"].(string)
	vaRequire(t, api.do("POST", "/v1/payments/"+approved+"/approve", approver, nil), http.StatusOK)

	ctx := context.Background()
	if n, err := api.App.ExpireApprovals(ctx, time.Now().Add(payment.ApprovalWindow-time.Minute)); err != nil || n != 0 {
		t.Fatalf("before the window ends: %d canceled, %v", n, err)
	}
	if n, err := api.App.ExpireApprovals(ctx, time.Now().Add(payment.ApprovalWindow+time.Second)); err != nil || n != 1 {
		t.Fatalf("after the window: %d canceled, %v; want 1", n, err)
	}
	p := payGet(t, api, key, waiting)
	if p["status"] != "canceled" || p["cancellation_reason"] != "approval_expired" {
		t.Fatalf("expired: %v", p)
	}
	if s := payGet(t, api, key, approved)["status"]; s != "pending" {
		t.Fatalf("the approved payment: %v", s)
	}
	payBalanceIs(t, api, key, acc, 100_000, 2_025)
	if n, err := api.App.ExpireApprovals(ctx, time.Now().Add(payment.ApprovalWindow+time.Second)); err != nil || n != 0 {
		t.Fatalf("a second pass: %d canceled, %v", n, err)
	}
	payCheckLedger(t, api)
	apAudit(t, api)
}

// Approval, denial, cancel and expiry race on each payment: exactly one
// wins; the others are refused (409) or do nothing, and the hold is
// released exactly when the payment did not go.
func TestPaymentApprovalRaces(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 1_000_000, true)
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": 1_000})
	_, approver := apSecondKey(t, api, key)
	const n = 12
	ids := make([]string, n)
	for i := range ids {
		ids[i] = payCreated(t, api, key, payBody(acc, 1_000, "ach_standard", "123456789"))["id"].(string)
	}
	type answer struct {
		op     string
		status int
		code   string
	}
	answers := make([][]answer, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, id := range ids {
		for _, op := range []string{"approve", "deny", "cancel", "expire"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var a answer
				if op == "expire" {
					_, err := api.App.ExpireApprovals(context.Background(), time.Now().Add(payment.ApprovalWindow+time.Second))
					a = answer{op, http.StatusOK, ""}
					if err != nil {
						a.status = http.StatusInternalServerError
					}
				} else {
					k := approver
					if op == "cancel" {
						k = key
					}
					r := api.do("POST", "/v1/payments/"+id+"/"+op, k, nil)
					a = answer{op, r.Status, r.Str("code")}
				}
				mu.Lock()
				answers[i] = append(answers[i], a)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	var held int64
	for i, id := range ids {
		p := payGet(t, api, key, id)
		won := map[string]bool{}
		for _, a := range answers[i] {
			switch {
			case a.op == "expire":
				if a.status != http.StatusOK {
					t.Errorf("%s: the expiry pass failed", id)
				}
			case a.status == http.StatusOK:
				won[a.op] = true
			case a.status == http.StatusConflict && (a.code == "invalid_state" || a.code == "payment_not_cancelable"):
			default:
				t.Errorf("%s %s: %d %s", id, a.op, a.status, a.code)
			}
		}
		var want string
		switch {
		case len(won) > 1 && !(won["approve"] && won["cancel"] && len(won) == 2):
			t.Errorf("%s: several won: %v", id, won)
		case won["approve"] && won["cancel"]:
			want = "canceled" // approved, then canceled while still pending: both legal, in that order
		case won["approve"]:
			want = "pending"
		case won["deny"]:
			want = "denied"
		default:
			want = "canceled" // by the platform or by expiry
		}
		if p["status"] != want {
			t.Errorf("%s is %v after %v, want %s", id, p["status"], answers[i], want)
		}
		if p["status"] == "pending" {
			held += 1_025
		}
	}
	payBalanceIs(t, api, key, acc, 1_000_000, held)
	payCheckLedger(t, api)
	apAudit(t, api)
}

// apAudit rebuilds every projection from the log and compares it with the
// live tables: the new events rebuild to exactly what the commands wrote.
func apAudit(t *testing.T, api *testAPI) {
	t.Helper()
	api.sync()
	diffs, events, err := rebuild.CompareWithLog(context.Background(), api.Pool)
	if err != nil {
		t.Fatalf("audit: %v", err)
	}
	if len(diffs) > 0 || events == 0 {
		t.Fatalf("the log rebuilds to other tables (%d events): %+v", events, diffs)
	}
}
