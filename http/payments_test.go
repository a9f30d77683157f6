package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/eventstore"
)

// Helpers of the payment tests. Their names start with "pay" so that they
// never clash with other test files.

// payRails are the four rails with their default fees (API.md §5).
var payRails = []struct {
	name string
	fee  int64
}{{"ach_standard", 25}, {"ach_same_day", 100}, {"rtp", 50}, {"fednow", 45}}

// payMagic is a sandbox magic destination account number and what each
// rail does with it (API.md §5's table). An empty network code means the
// rail settles it.
type payMagic struct {
	number, ach, rtp, fednow, code, action, suggested string
}

var payMagicNumbers = []payMagic{
	{"4000000002", "R02", "AC04", "AC04", "account_closed", "update_destination", ""},
	{"4000000003", "R03", "AC03", "AC03", "no_account", "update_destination", ""},
	{"4000000004", "R04", "AC02", "AC02", "invalid_account_number", "update_destination", ""},
	{"4000000016", "R16", "AC06", "AC06", "account_frozen", "contact_recipient", ""},
	{"4000000023", "R23", "CUST", "CUST", "credit_refused", "do_not_retry", ""},
	{"4000009912", "", "9912", "E997", "network_unavailable", "retry_other_rail", "ach_same_day"},
}

// networkCode is what rail answers for the magic number ("" settles).
func (m payMagic) networkCode(rail string) string {
	switch rail {
	case "rtp":
		return m.rtp
	case "fednow":
		return m.fednow
	}
	return m.ach
}

var paySeq atomic.Int64

// payKey is a fresh idempotency key.
func payKey() string {
	return fmt.Sprintf("pay-%d-%d", time.Now().UnixNano(), paySeq.Add(1))
}

// payDest is a valid destination (021000021 passes the ABA checksum).
func payDest(accountNumber string) map[string]any {
	return map[string]any{"account_number": accountNumber, "routing_number": "021000021", "name": "Initech LLC"}
}

// payBody is a valid payment request with a fresh idempotency key.
func payBody(accountID string, amount int64, rail, accountNumber string) map[string]any {
	return map[string]any{"virtual_account_id": accountID, "amount": amount, "rail": rail,
		"destination": payDest(accountNumber), "idempotency_key": payKey()}
}

// payCreate sends POST /v1/payments.
func payCreate(api *testAPI, key string, body any, headers ...string) response {
	return api.do("POST", "/v1/payments", key, body, headers...)
}

// payCreated creates a payment and requires 201.
func payCreated(t testing.TB, api *testAPI, key string, body any, headers ...string) map[string]any {
	t.Helper()
	return vaRequire(t, payCreate(api, key, body, headers...), http.StatusCreated)
}

// payGet reads a payment.
func payGet(t testing.TB, api *testAPI, key, id string) map[string]any {
	t.Helper()
	return vaGet(t, api, key, "/v1/payments/"+id)
}

// payKYBBody is a valid KYB submission; the EIN's last four digits decide
// in the sandbox (0000 rejects, 1111 goes to review, anything else approves).
func payKYBBody(accountID, ein string) map[string]any {
	addr := map[string]any{"line1": "1 Main Street", "city": "Dover", "state": "DE", "postal_code": "19901", "country": "US"}
	return map[string]any{
		"virtual_account_id": accountID,
		"business": map[string]any{"legal_name": "Acme Widgets LLC", "ein": ein, "entity_type": "llc",
			"formation_date": "2015-03-01", "formation_state": "DE", "address": addr},
		"beneficial_owners": []any{map[string]any{"first_name": "Jane", "last_name": "Roe", "date_of_birth": "1980-05-17",
			"ssn_last4": "1234", "ownership_percentage": 60, "is_control_person": true, "address": addr}},
	}
}

// payDecideKYB runs the sandbox KYB decider over everything filed so far.
func payDecideKYB(t testing.TB, api *testAPI) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	head, err := eventstore.Head(ctx, api.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := api.App.KYBDecider(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("KYB decider: %v", err)
	}
}

// payKYB files a KYB verification with the EIN and lets the decider
// decide; it returns the account's kyb_status afterwards.
func payKYB(t testing.TB, api *testAPI, key, accountID, ein string) string {
	t.Helper()
	vaRequire(t, api.do("POST", "/v1/kyb", key, payKYBBody(accountID, ein)), http.StatusCreated)
	payDecideKYB(t, api)
	s, _ := vaGet(t, api, key, "/v1/virtual-accounts/"+accountID)["kyb_status"].(string)
	return s
}

// payApprove gets the business behind an account KYB approved.
func payApprove(t testing.TB, api *testAPI, key, accountID string) {
	t.Helper()
	if s := payKYB(t, api, key, accountID, "12-3456789"); s != "approved" {
		t.Fatalf("kyb_status %q after an approving EIN, want approved", s)
	}
}

// payAccount opens an account of a business that is already approved (or
// approves it if approve is set) and credits funds to it at once.
func payAccount(t testing.TB, api *testAPI, key, platformID, entityRef string, funds int64, approve bool) string {
	t.Helper()
	id := vaOpenID(t, api, key, platformID, entityRef)
	if approve {
		payApprove(t, api, key, id)
	}
	if funds > 0 {
		vaCredit(t, api, key, id, funds)
	}
	return id
}

// paySettings patches the caller's settings and requires 200.
func paySettings(t testing.TB, api *testAPI, key string, patch map[string]any) {
	t.Helper()
	vaRequire(t, api.do("PATCH", "/v1/platform/settings", key, patch), http.StatusOK)
}

// payFastACH makes sandbox ACH settle after 1 s.
func payFastACH(t testing.TB, api *testAPI, key string) {
	t.Helper()
	paySettings(t, api, key, map[string]any{"sandbox": map[string]any{
		"ach_same_day_delay_seconds": 1, "ach_standard_delay_seconds": 1}})
}

// paySettle lets the sandbox simulator schedule everything logged so far,
// then performs due actions until done holds, for at most 15 s.
func paySettle(t testing.TB, api *testAPI, what string, done func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	sim := vaSimulator(api)
	head, err := eventstore.Head(ctx, api.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Subscription(nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("simulator catch up: %v", err)
	}
	for {
		if _, err := sim.SettleDue(ctx); err != nil {
			t.Fatalf("settle due: %v", err)
		}
		if done() {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within 15 s", what)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// payStatuses reads the statuses of payments.
func payStatuses(t testing.TB, api *testAPI, key string, ids []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, id := range ids {
		out[id], _ = payGet(t, api, key, id)["status"].(string)
	}
	return out
}

// paySettleAll settles until no payment of ids is pending or submitted.
func paySettleAll(t testing.TB, api *testAPI, key string, ids ...string) {
	t.Helper()
	paySettle(t, api, "settle "+strings.Join(ids, ", "), func() bool {
		for _, s := range payStatuses(t, api, key, ids) {
			if s == "pending" || s == "submitted" {
				return false
			}
		}
		return true
	})
}

// payWalk returns every item of a list, following its cursors.
func payWalk(t testing.TB, api *testAPI, key, path string) []map[string]any {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	var all []map[string]any
	cursor := ""
	for i := 0; ; i++ {
		if i > 200 {
			t.Fatalf("%s: the walk does not end", path)
		}
		u := path + sep + "limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		list := vaGet(t, api, key, u)
		all = append(all, vaData(t, list)...)
		if list["has_more"] != true {
			return all
		}
		cursor, _ = list["next_cursor"].(string)
	}
}

// payEvents returns the public events of a type about a payment, keyed by type.
func payEvents(t testing.TB, api *testAPI, key, paymentID string) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for _, e := range payWalk(t, api, key, "/v1/events") {
		data, _ := e["data"].(map[string]any)
		obj, _ := data["object"].(map[string]any)
		typ, _ := e["type"].(string)
		if strings.HasPrefix(typ, "payment.") && obj["id"] == paymentID {
			out[typ] = append(out[typ], obj)
		}
	}
	return out
}

// payTransactions returns an account's transactions about a payment.
func payTransactions(t testing.TB, api *testAPI, key, accountID, paymentID string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, tx := range payWalk(t, api, key, "/v1/virtual-accounts/"+accountID+"/transactions") {
		if src, _ := tx["source"].(map[string]any); src["type"] == "payment" && src["id"] == paymentID {
			out = append(out, tx)
		}
	}
	return out
}

// payWantTransactions checks a payment's transactions: by type, the sum
// of their signed amounts and their one status.
func payWantTransactions(t testing.TB, txns []map[string]any, want map[string]int64, status string) {
	t.Helper()
	got := map[string]int64{}
	for _, tx := range txns {
		typ, _ := tx["type"].(string)
		got[typ] += vaInt(t, tx["amount"])
		if tx["status"] != status {
			t.Errorf("transaction %v is %v, want %s", tx["id"], tx["status"], status)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("transactions by type %v, want %v", got, want)
	}
}

// payCheckLedger asserts double entry over the whole database: Σ debits =
// Σ credits in every status and every journal entry, and each virtual
// account's balance row equals the sums of its entries.
func payCheckLedger(t testing.TB, api *testAPI) {
	t.Helper()
	api.sync()
	ctx := context.Background()
	rows, err := api.Pool.Query(ctx, `SELECT status, coalesce(sum(amount) FILTER (WHERE direction = 'debit'), 0),
            coalesce(sum(amount) FILTER (WHERE direction = 'credit'), 0) FROM ledger_entries GROUP BY status`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var status string
		var debits, credits int64
		if err := rows.Scan(&status, &debits, &credits); err != nil {
			t.Fatal(err)
		}
		n++
		if debits != credits {
			t.Errorf("%s ledger entries: Σ debits %d ≠ Σ credits %d", status, debits, credits)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no ledger entries at all")
	}
	var unbalanced, mismatched int
	if err := api.Pool.QueryRow(ctx, `SELECT count(*) FROM (SELECT journal_entry_id FROM ledger_entries GROUP BY journal_entry_id
        HAVING sum(CASE WHEN direction = 'debit' THEN amount ELSE -amount END) <> 0) x`).Scan(&unbalanced); err != nil {
		t.Fatal(err)
	}
	if unbalanced != 0 {
		t.Errorf("%d journal entries are unbalanced", unbalanced)
	}
	if err := api.Pool.QueryRow(ctx, `SELECT count(*) FROM account_balances b WHERE
        b.posted <> (SELECT coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END), 0) FROM ledger_entries l
                     WHERE l.virtual_account_id = b.virtual_account_id AND l.status = 'posted')
        OR b.pending_inbound <> (SELECT coalesce(sum(amount), 0) FROM ledger_entries l
                     WHERE l.virtual_account_id = b.virtual_account_id AND l.status = 'pending' AND direction = 'credit')
        OR b.pending_outbound <> (SELECT coalesce(sum(amount), 0) FROM ledger_entries l
                     WHERE l.virtual_account_id = b.virtual_account_id AND l.status = 'pending' AND direction = 'debit')
        OR b.posted - b.pending_outbound < 0`).Scan(&mismatched); err != nil {
		t.Fatal(err)
	}
	if mismatched != 0 {
		t.Errorf("%d balance rows differ from the sums of their ledger entries (or are negative)", mismatched)
	}
}

// payFeeRevenue is the posted balance of a platform's service fee revenue account.
func payFeeRevenue(t testing.TB, api *testAPI, platformID string) int64 {
	t.Helper()
	var n int64
	if err := api.Pool.QueryRow(context.Background(), `SELECT coalesce(sum(CASE WHEN l.direction = 'credit' THEN l.amount ELSE -l.amount END), 0)
        FROM ledger_entries l JOIN ledger_accounts a ON a.id = l.ledger_account_id
        WHERE a.platform_id = $1 AND a.environment = 'sandbox' AND a.code = 'service_fee_revenue' AND l.status = 'posted'`,
		platformID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// payBalanceIs checks an account's balance.
func payBalanceIs(t testing.TB, api *testAPI, key, accountID string, posted, pendingOutbound int64) {
	t.Helper()
	b := vaBalance(t, api, key, accountID)
	want := map[string]int64{"posted": posted, "pending_inbound": 0, "pending_outbound": pendingOutbound, "available": posted - pendingOutbound}
	if fmt.Sprint(b) != fmt.Sprint(want) {
		t.Errorf("balance of %s = %v, want %v", accountID, b, want)
	}
}

func payTime(t testing.TB, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("%v is not a timestamp: %v", v, err)
	}
	return at
}

// ---------------------------------------------------------------------------

// Every rail takes a payment: 201 pending with amount + fee held, then the
// simulator settles it (RTP and FedNow at once, ACH after the sandbox
// delay), the amount and fee post, the fee goes to service fee revenue,
// and the account's transactions and the public events show it.
func TestPaymentEveryRailCompletes(t *testing.T) {
	api, platformID, key := vaAPI(t)
	payFastACH(t, api, key)
	const funds = 1_000_000
	acc := payAccount(t, api, key, platformID, "biz", funds, true)

	ids := map[string]string{}
	var held, fees int64
	for i, rail := range payRails {
		amount := int64(10_000 + i)
		body := payBody(acc, amount, rail.name, "123456789")
		body["description"] = "Invoice " + rail.name
		body["metadata"] = map[string]any{"invoice": rail.name}
		p := payCreated(t, api, key, body)
		id, _ := p["id"].(string)
		if !strings.HasPrefix(id, "pay_") {
			t.Fatalf("payment id %q", id)
		}
		ids[rail.name] = id
		held += amount + rail.fee
		fees += rail.fee
		for field, want := range map[string]any{"object": "payment", "virtual_account_id": acc, "currency": "USD",
			"rail": rail.name, "status": "pending", "idempotency_key": body["idempotency_key"], "environment": "sandbox",
			"description": "Invoice " + rail.name, "failure": nil, "submitted_at": nil, "completed_at": nil,
			"failed_at": nil, "canceled_at": nil} {
			if p[field] != want {
				t.Errorf("%s: %s = %v, want %v", rail.name, field, p[field], want)
			}
		}
		if vaInt(t, p["amount"]) != amount || vaInt(t, p["fee"]) != rail.fee {
			t.Errorf("%s: amount %v fee %v, want %d and %d", rail.name, p["amount"], p["fee"], amount, rail.fee)
		}
		if fmt.Sprint(p["destination"]) != fmt.Sprint(payDest("123456789")) || fmt.Sprint(p["metadata"]) != "map[invoice:"+rail.name+"]" {
			t.Errorf("%s: destination %v metadata %v", rail.name, p["destination"], p["metadata"])
		}
		wait := payTime(t, p["expected_settlement_at"]).Sub(payTime(t, p["created_at"]))
		if instant := rail.name == "rtp" || rail.name == "fednow"; (instant && wait != 0) || (!instant && wait != time.Second) {
			t.Errorf("%s: expected_settlement_at is %v after created_at", rail.name, wait)
		}
		// The hold is there at once: available drops, posted does not.
		payBalanceIs(t, api, key, acc, funds, held)
	}

	var all []string
	for _, id := range ids {
		all = append(all, id)
	}
	paySettleAll(t, api, key, all...)
	for rail, id := range ids {
		p := payGet(t, api, key, id)
		if p["status"] != "completed" || p["submitted_at"] == nil || p["completed_at"] == nil || p["failure"] != nil || p["failed_at"] != nil {
			t.Errorf("%s: settled payment %v", rail, p)
		}
	}
	payBalanceIs(t, api, key, acc, funds-held, 0)

	api.sync()
	if got := payFeeRevenue(t, api, platformID); got != fees {
		t.Errorf("service fee revenue %d, want the %d of fees", got, fees)
	}
	for _, rail := range payRails {
		id := ids[rail.name]
		amount := vaInt(t, payGet(t, api, key, id)["amount"])
		payWantTransactions(t, payTransactions(t, api, key, acc, id),
			map[string]int64{"payment": -amount, "payment_fee": -rail.fee}, "posted")
		ev := payEvents(t, api, key, id)
		for typ, status := range map[string]string{"payment.created": "pending", "payment.submitted": "submitted", "payment.completed": "completed"} {
			if len(ev[typ]) != 1 || ev[typ][0]["status"] != status {
				t.Errorf("%s: %s events %v, want one with status %s", rail.name, typ, ev[typ], status)
			}
		}
		if len(ev["payment.failed"])+len(ev["payment.canceled"]) != 0 {
			t.Errorf("%s: a completed payment has failure or cancel events", rail.name)
		}
	}
	payCheckLedger(t, api)
}

// Every magic destination number fails on every rail with its failure
// code and advice, and the hold is released: the balance is exactly what
// it was. 4000009912 only fails the instant rails; ACH settles it.
func TestPaymentMagicNumbersFailWithAdvice(t *testing.T) {
	api, platformID, key := vaAPI(t)
	payFastACH(t, api, key)
	payApprove(t, api, key, vaOpenID(t, api, key, platformID, "biz"))
	type run struct {
		magic       payMagic
		rail        string
		fee, amount int64
		account, id string
	}
	var runs []*run
	var ids []string
	for _, m := range payMagicNumbers {
		for i, rail := range payRails {
			r := &run{magic: m, rail: rail.name, fee: rail.fee, amount: int64(5_000 + i)}
			// An account funded with exactly this payment's amount + fee.
			r.account = payAccount(t, api, key, platformID, "biz", r.amount+r.fee, false)
			p := payCreated(t, api, key, payBody(r.account, r.amount, r.rail, m.number))
			r.id, _ = p["id"].(string)
			payBalanceIs(t, api, key, r.account, r.amount+r.fee, r.amount+r.fee)
			runs = append(runs, r)
			ids = append(ids, r.id)
		}
	}
	paySettleAll(t, api, key, ids...)
	api.sync()
	for _, r := range runs {
		name := r.magic.number + " on " + r.rail
		p := payGet(t, api, key, r.id)
		code := r.magic.networkCode(r.rail)
		if code == "" {
			if p["status"] != "completed" || p["failure"] != nil {
				t.Errorf("%s: %v, want completed", name, p)
			}
			payBalanceIs(t, api, key, r.account, 0, 0)
			continue
		}
		if p["status"] != "failed" || p["failed_at"] == nil || p["completed_at"] != nil {
			t.Errorf("%s: status %v failed_at %v completed_at %v, want failed", name, p["status"], p["failed_at"], p["completed_at"])
		}
		f, _ := p["failure"].(map[string]any)
		advice, _ := f["retry_recommendation"].(map[string]any)
		if f["code"] != r.magic.code || f["network_code"] != code || f["reason"] == "" || f["reason"] == nil {
			t.Errorf("%s: failure %v, want code %s network_code %s and a reason", name, f, r.magic.code, code)
		}
		if advice["action"] != r.magic.action {
			t.Errorf("%s: retry_recommendation %v, want action %s", name, advice, r.magic.action)
		}
		if r.magic.suggested != "" && advice["suggested_rail"] != r.magic.suggested {
			t.Errorf("%s: suggested_rail %v, want %s", name, advice["suggested_rail"], r.magic.suggested)
		}
		if r.magic.suggested == "" && advice["suggested_rail"] != nil {
			t.Errorf("%s: suggested_rail %v, want none", name, advice["suggested_rail"])
		}
		// The hold is released: the balance is exactly the funds again.
		payBalanceIs(t, api, key, r.account, r.amount+r.fee, 0)
		payWantTransactions(t, payTransactions(t, api, key, r.account, r.id),
			map[string]int64{"payment": -r.amount, "payment_fee": -r.fee}, "void")
		ev := payEvents(t, api, key, r.id)
		if len(ev["payment.failed"]) != 1 || len(ev["payment.completed"]) != 0 {
			t.Errorf("%s: events %v", name, ev)
		} else if fmt.Sprint(ev["payment.failed"][0]["failure"]) != fmt.Sprint(p["failure"]) {
			t.Errorf("%s: payment.failed carries %v, want %v", name, ev["payment.failed"][0]["failure"], p["failure"])
		}
	}
	if got := payFeeRevenue(t, api, platformID); got != 25+100 {
		t.Errorf("fee revenue %d, want only the two ACH payments' fees (125)", got)
	}
	payCheckLedger(t, api)
}

// The business rules run in order: account active, KYB approved,
// screening, daily limit, funds. Each refusal holds nothing and stores
// no idempotency key.
func TestPaymentBusinessRulesInOrder(t *testing.T) {
	api, platformID, key := vaAPI(t)
	// Every rule is broken at first.
	acc := vaOpenID(t, api, key, platformID, "biz")
	vaCredit(t, api, key, acc, 1_000)
	paySettings(t, api, key, map[string]any{"daily_payment_limit": 500})
	body := payBody(acc, 10_000, "rtp", "123456789")
	body["destination"].(map[string]any)["name"] = "Acme ofac Test Holdings"
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+acc+"/freeze", key, nil), http.StatusOK)

	m := requireError(t, payCreate(api, key, body), http.StatusUnprocessableEntity, "account_not_active")
	if m["resource_id"] != acc {
		t.Errorf("account_not_active names %v, want the account", m["resource_id"])
	}
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+acc+"/unfreeze", key, nil), http.StatusOK)
	m = requireError(t, payCreate(api, key, body), http.StatusUnprocessableEntity, "kyb_not_approved")
	if m["resource_id"] != acc {
		t.Errorf("kyb_not_approved names %v, want the account", m["resource_id"])
	}
	// A business in review or rejected is not approved either.
	review := vaOpenID(t, api, key, platformID, "biz_review")
	vaCredit(t, api, key, review, 1_000)
	if s := payKYB(t, api, key, review, "12-3451111"); s != "pending_review" {
		t.Fatalf("kyb_status %q, want pending_review", s)
	}
	requireError(t, payCreate(api, key, payBody(review, 10, "rtp", "123456789")), http.StatusUnprocessableEntity, "kyb_not_approved")
	rejected := vaOpenID(t, api, key, platformID, "biz_rejected")
	vaCredit(t, api, key, rejected, 1_000)
	if s := payKYB(t, api, key, rejected, "12-3450000"); s != "rejected" {
		t.Fatalf("kyb_status %q, want rejected", s)
	}
	requireError(t, payCreate(api, key, payBody(rejected, 10, "rtp", "123456789")), http.StatusUnprocessableEntity, "kyb_not_approved")

	payApprove(t, api, key, acc)
	m = requireError(t, payCreate(api, key, body), http.StatusUnprocessableEntity, "compliance_rejected")
	if m["param"] != "destination.name" {
		t.Errorf("compliance_rejected param %v, want destination.name", m["param"])
	}
	body["destination"].(map[string]any)["name"] = "Initech LLC"
	requireError(t, payCreate(api, key, body), http.StatusUnprocessableEntity, "limit_exceeded")
	paySettings(t, api, key, map[string]any{"daily_payment_limit": nil})
	requireError(t, payCreate(api, key, body), http.StatusUnprocessableEntity, "insufficient_funds")

	// available ≥ amount + fee, to the cent: 950 + 50 = 1000 passes, 951 does not.
	body["amount"] = 951
	requireError(t, payCreate(api, key, body), http.StatusUnprocessableEntity, "insufficient_funds")
	payBalanceIs(t, api, key, acc, 1_000, 0)
	// Nothing was stored for the key: the same key now works.
	body["amount"] = 950
	p := payCreated(t, api, key, body)
	payBalanceIs(t, api, key, acc, 1_000, 1_000)
	requireError(t, payCreate(api, key, payBody(acc, 1, "fednow", "123456789")), http.StatusUnprocessableEntity, "insufficient_funds")
	// A closed account is not active either.
	paySettleAll(t, api, key, p["id"].(string))
	payBalanceIs(t, api, key, acc, 0, 0)
	vaRequire(t, api.do("POST", "/v1/virtual-accounts/"+acc+"/close", key, nil), http.StatusOK)
	requireError(t, payCreate(api, key, payBody(acc, 1, "rtp", "123456789")), http.StatusUnprocessableEntity, "account_not_active")

	list := vaData(t, vaGet(t, api, key, "/v1/payments"))
	if len(list) != 1 || list[0]["id"] != p["id"] {
		t.Errorf("payments %v, want only %v", list, p["id"])
	}
	payCheckLedger(t, api)
}

// The daily limit counts the day's payments of the account; failed and
// canceled ones do not count.
func TestPaymentDailyLimit(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	other := payAccount(t, api, key, platformID, "biz", 100_000, false)
	paySettings(t, api, key, map[string]any{"daily_payment_limit": 1_000})

	first := payCreated(t, api, key, payBody(acc, 600, "ach_standard", "123456789"))
	requireError(t, payCreate(api, key, payBody(acc, 401, "rtp", "123456789")), http.StatusUnprocessableEntity, "limit_exceeded")
	// Another account has its own limit.
	payCreated(t, api, key, payBody(other, 1_000, "rtp", "123456789"))
	// Exactly up to the limit passes (the fee does not count).
	second := payCreated(t, api, key, payBody(acc, 400, "rtp", "123456789"))
	requireError(t, payCreate(api, key, payBody(acc, 1, "rtp", "123456789")), http.StatusUnprocessableEntity, "limit_exceeded")
	// A canceled payment frees its part of the limit.
	vaRequire(t, api.do("POST", "/v1/payments/"+first["id"].(string)+"/cancel", key, nil), http.StatusOK)
	third := payCreated(t, api, key, payBody(acc, 600, "rtp", "4000000002"))
	// So does a failed one (the magic number fails on RTP).
	paySettleAll(t, api, key, second["id"].(string), third["id"].(string))
	if s := payGet(t, api, key, third["id"].(string))["status"]; s != "failed" {
		t.Fatalf("the magic number payment is %v", s)
	}
	payCreated(t, api, key, payBody(acc, 600, "rtp", "123456789"))
	requireError(t, payCreate(api, key, payBody(acc, 1, "rtp", "123456789")), http.StatusUnprocessableEntity, "limit_exceeded")
}

// Field validation answers 400 naming the field.
func TestPaymentValidation(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 0, true)
	valid := func(change func(m map[string]any)) map[string]any {
		m := payBody(acc, 100, "rtp", "123456789")
		change(m)
		return m
	}
	dest := func(field string, v any) func(m map[string]any) {
		return func(m map[string]any) { m["destination"].(map[string]any)[field] = v }
	}
	set := func(field string, v any) func(m map[string]any) {
		return func(m map[string]any) {
			if v == nil {
				delete(m, field)
			} else {
				m[field] = v
			}
		}
	}
	for _, c := range []struct {
		name   string
		change func(m map[string]any)
		code   string
		param  string
	}{
		{"zero amount", set("amount", 0), "invalid_request", "amount"},
		{"negative amount", set("amount", -5), "invalid_request", "amount"},
		{"missing amount", set("amount", nil), "invalid_request", "amount"},
		{"fractional amount", set("amount", 10.5), "invalid_request", "amount"},
		{"unknown rail", set("rail", "wire"), "invalid_request", "rail"},
		{"missing rail", set("rail", nil), "invalid_request", "rail"},
		{"routing checksum", dest("routing_number", "021000022"), "invalid_request", "destination.routing_number"},
		{"routing length", dest("routing_number", "02100002"), "invalid_request", "destination.routing_number"},
		{"account number short", dest("account_number", "123"), "invalid_request", "destination.account_number"},
		{"account number long", dest("account_number", "123456789012345678"), "invalid_request", "destination.account_number"},
		{"account number letters", dest("account_number", "12345x"), "invalid_request", "destination.account_number"},
		{"empty name", dest("name", ""), "invalid_request", "destination.name"},
		{"long name", dest("name", strings.Repeat("n", 81)), "invalid_request", "destination.name"},
		{"long description", set("description", strings.Repeat("d", 141)), "invalid_request", "description"},
		{"missing account", set("virtual_account_id", nil), "invalid_request", "virtual_account_id"},
		{"missing key", set("idempotency_key", nil), "invalid_request", "idempotency_key"},
		{"long key", set("idempotency_key", strings.Repeat("k", 256)), "invalid_request", "idempotency_key"},
		{"padded key", set("idempotency_key", " key "), "invalid_request", "idempotency_key"},
		{"same day over limit", func(m map[string]any) { m["rail"], m["amount"] = "ach_same_day", 100_000_001 }, "amount_exceeds_rail_limit", "amount"},
		{"rtp over limit", set("amount", 1_000_000_001), "amount_exceeds_rail_limit", "amount"},
		{"fednow over limit", func(m map[string]any) { m["rail"], m["amount"] = "fednow", 1_000_000_001 }, "amount_exceeds_rail_limit", "amount"},
		{"standard over limit", func(m map[string]any) { m["rail"], m["amount"] = "ach_standard", 10_000_000_000 }, "amount_exceeds_rail_limit", "amount"},
	} {
		m := requireError(t, payCreate(api, key, valid(c.change)), http.StatusBadRequest, c.code)
		if m["param"] != c.param {
			t.Errorf("%s: param %v, want %s", c.name, m["param"], c.param)
		}
	}
	// The limits themselves are allowed (the unfunded account then lacks funds).
	for rail, max := range map[string]int64{"ach_same_day": 100_000_000, "rtp": 1_000_000_000, "fednow": 1_000_000_000, "ach_standard": 9_999_999_999} {
		requireError(t, payCreate(api, key, payBody(acc, max, rail, "123456789")), http.StatusUnprocessableEntity, "insufficient_funds")
	}
	// 80 characters of name, 140 of description, 4 and 17 digits are fine.
	vaCredit(t, api, key, acc, 1_000)
	ok := valid(dest("name", strings.Repeat("ñ", 80)))
	ok["description"] = strings.Repeat("é", 140)
	payCreated(t, api, key, ok)
	payCreated(t, api, key, valid(dest("account_number", "1234")))
	payCreated(t, api, key, valid(dest("account_number", "12345678901234567")))
	requireError(t, payCreate(api, key, payBody(vaUnknown("va_"), 100, "rtp", "123456789")), http.StatusNotFound, "not_found")
	requireError(t, payCreate(api, key, `{"virtual_account_id":`), http.StatusBadRequest, "invalid_request")
	if n := len(vaData(t, vaGet(t, api, key, "/v1/payments"))); n != 3 {
		t.Errorf("%d payments, want the 3 valid ones", n)
	}
}

// Idempotency: the key in the body or the Idempotency-Key header (both
// given must be equal); a replay is 200 with the original payment and
// Idempotent-Replayed; another request with the key is 409.
func TestPaymentIdempotency(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	body := payBody(acc, 1_000, "ach_standard", "123456789")
	k := body["idempotency_key"].(string)
	r := payCreate(api, key, body)
	first := vaRequire(t, r, http.StatusCreated)
	if r.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("a first request has Idempotent-Replayed %q", r.Header.Get("Idempotent-Replayed"))
	}
	replays := []response{
		payCreate(api, key, body),
		// The key in the header instead of the body.
		payCreate(api, key, map[string]any{"virtual_account_id": acc, "amount": 1_000, "rail": "ach_standard",
			"destination": payDest("123456789")}, "Idempotency-Key", k),
		// In both, equal.
		payCreate(api, key, body, "Idempotency-Key", k),
		// Other key order and white space.
		payCreate(api, key, fmt.Sprintf(` { "rail" : "ach_standard", "destination": {"name":"Initech LLC","routing_number":"021000021",
            "account_number":"123456789"}, "idempotency_key": %q, "amount": 1000, "virtual_account_id": %q } `, k, acc)),
	}
	for i, r := range replays {
		p := vaRequire(t, r, http.StatusOK)
		if r.Header.Get("Idempotent-Replayed") != "true" || p["id"] != first["id"] || p["created_at"] != first["created_at"] ||
			p["status"] != "pending" || p["idempotency_key"] != k {
			t.Errorf("replay %d: %s (Idempotent-Replayed %q)", i, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	}
	// Header and body disagree: 400.
	requireError(t, payCreate(api, key, body, "Idempotency-Key", k+"-other"), http.StatusBadRequest, "invalid_request")
	// Another request with the key: 409 naming the payment.
	for _, change := range []func(m map[string]any){
		func(m map[string]any) { m["amount"] = 1_001 },
		func(m map[string]any) { m["rail"] = "ach_same_day" },
		func(m map[string]any) { m["destination"] = payDest("987654321") },
		func(m map[string]any) { m["description"] = "different" },
	} {
		other := payBody(acc, 1_000, "ach_standard", "123456789")
		other["idempotency_key"] = k
		change(other)
		m := requireError(t, payCreate(api, key, other), http.StatusConflict, "idempotency_conflict")
		if m["resource_id"] != first["id"] {
			t.Errorf("idempotency_conflict resource_id %v, want %v", m["resource_id"], first["id"])
		}
	}
	list := vaData(t, vaGet(t, api, key, "/v1/payments?idempotency_key="+url.QueryEscape(k)))
	if len(list) != 1 || list[0]["id"] != first["id"] {
		t.Errorf("payments with the key: %v", list)
	}
	payBalanceIs(t, api, key, acc, 100_000, 1_025)
	// A replay still answers with the payment after it changed, and
	// creates nothing.
	vaRequire(t, api.do("POST", "/v1/payments/"+first["id"].(string)+"/cancel", key, nil), http.StatusOK)
	if r := payCreate(api, key, body); r.Status != http.StatusOK || r.JSON()["id"] != first["id"] {
		t.Errorf("replay after cancel: %d %s", r.Status, r.Body)
	}
	payBalanceIs(t, api, key, acc, 100_000, 0)
	// Keys are per platform: another platform's same key is its own payment.
	_, key2 := api.newPlatform("Other Co")
	pid2 := vaPlatformID(t, api, key2)
	acc2 := payAccount(t, api, key2, pid2, "biz", 10_000, true)
	other := payBody(acc2, 1_000, "ach_standard", "123456789")
	other["idempotency_key"] = k
	if p := payCreated(t, api, key2, other); p["id"] == first["id"] {
		t.Errorf("another platform's key replayed the first platform's payment")
	}
}

// payPost sends a request from any goroutine (api.do may call t.Fatal).
func payPost(api *testAPI, key string, body []byte) (response, error) {
	req, err := http.NewRequest("POST", api.URL+"/v1/payments", bytes.NewReader(body))
	if err != nil {
		return response{}, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{Status: res.StatusCode, Header: res.Header, Body: b}, err
}

// 20 concurrent requests with one key make one payment: each gets it
// (or 409 idempotency_in_progress), and only one is not a replay.
func TestPaymentConcurrentDuplicatesMakeOnePayment(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	body, _ := json.Marshal(payBody(acc, 1_000, "ach_standard", "123456789"))
	const n = 20
	results := make([]response, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = payPost(api, key, body)
		}()
	}
	close(start)
	wg.Wait()
	ids := map[any]int{}
	created := 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		switch r.Status {
		case http.StatusCreated:
			created++
			ids[r.JSON()["id"]]++
		case http.StatusOK:
			if r.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("a 200 without Idempotent-Replayed: %s", r.Body)
			}
			ids[r.JSON()["id"]]++
		default:
			requireError(t, r, http.StatusConflict, "idempotency_in_progress")
		}
	}
	if created != 1 || len(ids) != 1 {
		t.Errorf("%d created, ids %v; want one payment created and every other answer the same", created, ids)
	}
	if list := vaData(t, vaGet(t, api, key, "/v1/payments")); len(list) != 1 {
		t.Errorf("%d payments, want 1", len(list))
	}
	payBalanceIs(t, api, key, acc, 100_000, 1_025)
}

// Only a pending payment can be canceled; canceling releases the hold,
// and the simulator then leaves the payment alone.
func TestPaymentCancel(t *testing.T) {
	api, platformID, key := vaAPI(t)
	paySettings(t, api, key, map[string]any{"sandbox": map[string]any{"auto_settle": false,
		"ach_same_day_delay_seconds": 1, "ach_standard_delay_seconds": 1}})
	const funds = 100_000
	acc := payAccount(t, api, key, platformID, "biz", funds, true)
	p := payCreated(t, api, key, payBody(acc, 2_000, "ach_same_day", "123456789"))
	id := p["id"].(string)
	payBalanceIs(t, api, key, acc, funds, 2_100)
	r := api.do("POST", "/v1/payments/"+id+"/cancel", key, nil)
	c := vaRequire(t, r, http.StatusOK)
	if c["id"] != id || c["status"] != "canceled" || c["canceled_at"] == nil || c["submitted_at"] != nil {
		t.Errorf("canceled payment %v", c)
	}
	payBalanceIs(t, api, key, acc, funds, 0)
	requireError(t, api.do("POST", "/v1/payments/"+id+"/cancel", key, nil), http.StatusConflict, "payment_not_cancelable")

	// Submitted (the simulated rail took it after 1 s) cannot be canceled.
	sub := payCreated(t, api, key, payBody(acc, 3_000, "ach_standard", "123456789"))["id"].(string)
	paySettle(t, api, "submit", func() bool { return payGet(t, api, key, sub)["status"] == "submitted" })
	requireError(t, api.do("POST", "/v1/payments/"+sub+"/cancel", key, nil), http.StatusConflict, "payment_not_cancelable")
	// Neither can completed and failed payments.
	done := payCreated(t, api, key, payBody(acc, 1_000, "rtp", "123456789"))["id"].(string)
	failed := payCreated(t, api, key, payBody(acc, 1_000, "fednow", "4000000023"))["id"].(string)
	paySettleAll(t, api, key, done, failed)
	for _, x := range []string{done, failed} {
		requireError(t, api.do("POST", "/v1/payments/"+x+"/cancel", key, nil), http.StatusConflict, "payment_not_cancelable")
	}
	// Unknown, malformed and other platforms' payments are not found.
	requireError(t, api.do("POST", "/v1/payments/"+vaUnknown("pay_")+"/cancel", key, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("POST", "/v1/payments/nope/cancel", key, nil), http.StatusNotFound, "not_found")
	_, key2 := api.newPlatform("Other Co")
	requireError(t, api.do("POST", "/v1/payments/"+sub+"/cancel", key2, nil), http.StatusNotFound, "not_found")

	// The canceled payment stays canceled whatever the simulator does.
	paySettle(t, api, "nothing more", func() bool { return true })
	if s := payGet(t, api, key, id)["status"]; s != "canceled" {
		t.Errorf("canceled payment became %v", s)
	}
	payBalanceIs(t, api, key, acc, funds-1_050, 3_025)
	api.sync()
	ev := payEvents(t, api, key, id)
	if len(ev["payment.canceled"]) != 1 || ev["payment.canceled"][0]["status"] != "canceled" || len(ev["payment.submitted"]) != 0 {
		t.Errorf("events of the canceled payment: %v", ev)
	}
	payWantTransactions(t, payTransactions(t, api, key, acc, id), map[string]int64{"payment": -2_000, "payment_fee": -100}, "void")
	payCheckLedger(t, api)
}

// With auto_settle off, ACH payments stay submitted until the simulation
// endpoints decide. Failing a completed payment reverses it exactly.
func TestPaymentSimulationEndpoints(t *testing.T) {
	api, platformID, key := vaAPI(t)
	paySettings(t, api, key, map[string]any{"sandbox": map[string]any{"auto_settle": false,
		"ach_same_day_delay_seconds": 1, "ach_standard_delay_seconds": 1}})
	const funds = 100_000
	acc := payAccount(t, api, key, platformID, "biz", funds, true)
	a := payCreated(t, api, key, payBody(acc, 1_000, "ach_standard", "123456789"))["id"].(string)
	b := payCreated(t, api, key, payBody(acc, 2_000, "ach_same_day", "123456789"))["id"].(string)
	// RTP settles at once even with auto_settle off.
	c := payCreated(t, api, key, payBody(acc, 3_000, "rtp", "123456789"))["id"].(string)
	paySettle(t, api, "submit", func() bool {
		s := payStatuses(t, api, key, []string{a, b, c})
		return s[a] == "submitted" && s[b] == "submitted" && s[c] == "completed"
	})
	// Nothing more is scheduled: they stay submitted.
	var scheduled int
	if err := api.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sandbox_schedule`).Scan(&scheduled); err != nil || scheduled != 0 {
		t.Errorf("%d actions still scheduled (%v), want none with auto_settle off", scheduled, err)
	}
	payBalanceIs(t, api, key, acc, funds-3_050, 1_025+2_100)

	p := vaRequire(t, api.do("POST", "/v1/simulations/payments/"+a+"/complete", key, nil), http.StatusOK)
	if p["status"] != "completed" || p["completed_at"] == nil {
		t.Errorf("simulated completion: %v", p)
	}
	payBalanceIs(t, api, key, acc, funds-3_050-1_025, 2_100)
	// Completing again changes nothing.
	vaRequire(t, api.do("POST", "/v1/simulations/payments/"+a+"/complete", key, nil), http.StatusOK)
	payBalanceIs(t, api, key, acc, funds-3_050-1_025, 2_100)

	p = vaRequire(t, api.do("POST", "/v1/simulations/payments/"+b+"/fail", key, map[string]any{"network_code": "R01"}), http.StatusOK)
	f, _ := p["failure"].(map[string]any)
	advice, _ := f["retry_recommendation"].(map[string]any)
	if p["status"] != "failed" || f["code"] != "insufficient_funds" || f["network_code"] != "R01" || advice["action"] != "retry_later" {
		t.Errorf("simulated failure: %v", p)
	}
	payBalanceIs(t, api, key, acc, funds-3_050-1_025, 0)
	requireError(t, api.do("POST", "/v1/simulations/payments/"+b+"/complete", key, nil), http.StatusConflict, "invalid_state")

	// An instant payment is final once completed: it cannot be returned
	// (ACH returns are covered in app's TestPaymentEntriesCannotBeReversedByHand).
	requireError(t, api.do("POST", "/v1/simulations/payments/"+c+"/fail", key, map[string]any{"network_code": "AC04"}), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+c+"/fail", key, map[string]any{"network_code": "R02"}), http.StatusBadRequest, "invalid_request")
	payBalanceIs(t, api, key, acc, funds-3_050-1_025, 0)
	api.sync()
	payWantTransactions(t, payTransactions(t, api, key, acc, c), map[string]int64{"payment": -3_000, "payment_fee": -50}, "posted")
	ev := payEvents(t, api, key, c)
	if len(ev["payment.completed"]) != 1 || len(ev["payment.failed"]) != 0 {
		t.Errorf("events of the completed instant payment: %v", ev)
	}
	if got := payFeeRevenue(t, api, platformID); got != 75 {
		t.Errorf("fee revenue %d, want 75 (both completed payments)", got)
	}

	// Validation, other platforms, live keys.
	d := payCreated(t, api, key, payBody(acc, 100, "ach_standard", "123456789"))["id"].(string)
	for _, body := range []any{map[string]any{}, map[string]any{"network_code": "r01"}, map[string]any{"network_code": "R"},
		map[string]any{"network_code": "R01", "extra": 1}} {
		requireError(t, api.do("POST", "/v1/simulations/payments/"+d+"/fail", key, body), http.StatusBadRequest, "invalid_request")
	}
	vaRequire(t, api.do("POST", "/v1/payments/"+d+"/cancel", key, nil), http.StatusOK)
	requireError(t, api.do("POST", "/v1/simulations/payments/"+d+"/fail", key, map[string]any{"network_code": "R01"}), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+d+"/complete", key, nil), http.StatusConflict, "invalid_state")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+vaUnknown("pay_")+"/complete", key, nil), http.StatusNotFound, "not_found")
	otherID, key2 := api.newPlatform("Other Co")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+a+"/complete", key2, nil), http.StatusNotFound, "not_found")
	live := api.enableLive(otherID)
	requireError(t, api.do("POST", "/v1/simulations/payments/"+a+"/complete", live, nil), http.StatusForbidden, "forbidden")
	requireError(t, api.do("POST", "/v1/simulations/payments/"+a+"/fail", live, map[string]any{"network_code": "R01"}), http.StatusForbidden, "forbidden")
	payCheckLedger(t, api)
}

// Fees come from the platform's fee schedule, which the operator changes.
func TestPaymentFeeSchedule(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	vaRequire(t, api.do("PATCH", "/v1/operator/platforms/"+platformID, operatorKey,
		map[string]any{"fee_schedule": map[string]any{"rtp": 7, "ach_standard": 0}}), http.StatusOK)
	want := map[string]int64{"rtp": 7, "ach_standard": 0, "ach_same_day": 100, "fednow": 45}
	var ids []string
	var held int64
	for rail, fee := range want {
		p := payCreated(t, api, key, payBody(acc, 1_000, rail, "123456789"))
		if got := vaInt(t, p["fee"]); got != fee {
			t.Errorf("%s fee %d, want %d", rail, got, fee)
		}
		ids = append(ids, p["id"].(string))
		held += 1_000 + fee
	}
	payBalanceIs(t, api, key, acc, 100_000, held)
	for _, id := range ids {
		vaRequire(t, api.do("POST", "/v1/simulations/payments/"+id+"/complete", key, nil), http.StatusOK)
	}
	payBalanceIs(t, api, key, acc, 100_000-held, 0)
	api.sync()
	if got := payFeeRevenue(t, api, platformID); got != 7+100+45 {
		t.Errorf("fee revenue %d, want %d", got, 7+100+45)
	}
	for _, id := range ids {
		p := payGet(t, api, key, id)
		w := map[string]int64{"payment": -1_000}
		if fee := vaInt(t, p["fee"]); fee > 0 {
			w["payment_fee"] = -fee
		}
		payWantTransactions(t, payTransactions(t, api, key, acc, id), w, "posted")
	}
	// Another platform keeps the defaults.
	_, key2 := api.newPlatform("Other Co")
	acc2 := payAccount(t, api, key2, vaPlatformID(t, api, key2), "biz", 10_000, true)
	if p := payCreated(t, api, key2, payBody(acc2, 1_000, "rtp", "123456789")); vaInt(t, p["fee"]) != 50 {
		t.Errorf("another platform's rtp fee %v, want 50", p["fee"])
	}
	payCheckLedger(t, api)
}

// GET /v1/payments/:id and the filters of GET /v1/payments.
func TestPaymentGetAndList(t *testing.T) {
	api, platformID, key := vaAPI(t)
	a := payAccount(t, api, key, platformID, "biz", 100_000, true)
	b := payAccount(t, api, key, platformID, "biz", 100_000, false)
	p1 := payCreated(t, api, key, payBody(a, 100, "ach_standard", "123456789"))
	p2 := payCreated(t, api, key, payBody(a, 200, "rtp", "123456789"))
	mid := vaNow()
	p3 := payCreated(t, api, key, payBody(b, 300, "rtp", "4000000002"))
	p4 := payCreated(t, api, key, payBody(b, 400, "ach_same_day", "123456789"))
	end := vaNow()
	id := func(p map[string]any) string { return p["id"].(string) }
	// Settled through the simulation endpoints: the simulator would also
	// submit the ACH payments after a second.
	vaRequire(t, api.do("POST", "/v1/simulations/payments/"+id(p2)+"/complete", key, nil), http.StatusOK)
	vaRequire(t, api.do("POST", "/v1/simulations/payments/"+id(p3)+"/fail", key, map[string]any{"network_code": "AC04"}), http.StatusOK)
	vaRequire(t, api.do("POST", "/v1/payments/"+id(p4)+"/cancel", key, nil), http.StatusOK)

	got := payGet(t, api, key, id(p1))
	for _, f := range []string{"id", "object", "virtual_account_id", "amount", "currency", "rail", "destination", "status", "fee",
		"idempotency_key", "description", "metadata", "failure", "expected_settlement_at", "submitted_at", "completed_at",
		"failed_at", "canceled_at", "environment", "created_at"} {
		if _, ok := got[f]; !ok {
			t.Errorf("a payment lacks %s: %v", f, got)
		}
	}
	if got["id"] != p1["id"] || got["created_at"] != p1["created_at"] || got["status"] != "pending" {
		t.Errorf("GET %v, created %v", got, p1)
	}

	for q, want := range map[string][]map[string]any{
		"":                        {p4, p3, p2, p1},
		"virtual_account_id=" + a: {p2, p1},
		"virtual_account_id=" + b: {p4, p3},
		"status=pending":          {p1},
		"status=completed":        {p2},
		"status=failed":           {p3},
		"status=canceled":         {p4},
		"status=submitted":        {},
		"rail=rtp":                {p3, p2},
		"rail=ach_same_day":       {p4},
		"rail=fednow":             {},
		"idempotency_key=" + url.QueryEscape(p3["idempotency_key"].(string)):                     {p3},
		"idempotency_key=" + url.QueryEscape(p3["idempotency_key"].(string)) + "&status=failed":  {p3},
		"idempotency_key=" + url.QueryEscape(p3["idempotency_key"].(string)) + "&status=pending": {},
		"idempotency_key=no-such-key":                                                       {},
		"created_after=" + url.QueryEscape(mid):                                             {p4, p3},
		"created_before=" + url.QueryEscape(mid):                                            {p2, p1},
		"created_after=" + url.QueryEscape(mid) + "&created_before=" + url.QueryEscape(end): {p4, p3},
		"rail=rtp&status=completed&virtual_account_id=" + a:                                 {p2},
	} {
		var wantIDs []string
		for _, p := range want {
			wantIDs = append(wantIDs, id(p))
		}
		path := "/v1/payments"
		if q != "" {
			path += "?" + q
		}
		if ids := vaFlatten(vaWalk(t, api, key, path, 1)); strings.Join(ids, ",") != strings.Join(wantIDs, ",") {
			t.Errorf("GET %s: %v, want %v", path, ids, wantIDs)
		}
	}
	for _, q := range []string{"status=done", "rail=wire", "created_after=yesterday", "created_before=2024-13-01", "limit=0", "limit=101"} {
		requireError(t, api.do("GET", "/v1/payments?"+q, key, nil), http.StatusBadRequest, "invalid_request")
	}
	// Unknown, malformed, other platforms' and other environments' payments are not found.
	requireError(t, api.do("GET", "/v1/payments/"+vaUnknown("pay_"), key, nil), http.StatusNotFound, "not_found")
	requireError(t, api.do("GET", "/v1/payments/va_123", key, nil), http.StatusNotFound, "not_found")
	_, key2 := api.newPlatform("Other Co")
	requireError(t, api.do("GET", "/v1/payments/"+id(p1), key2, nil), http.StatusNotFound, "not_found")
	requireError(t, payCreate(api, key2, payBody(a, 100, "rtp", "123456789")), http.StatusNotFound, "not_found")
	if list := vaData(t, vaGet(t, api, key2, "/v1/payments")); len(list) != 0 {
		t.Errorf("another platform lists %d payments", len(list))
	}
	if list := vaData(t, vaGet(t, api, key2, "/v1/payments?idempotency_key="+url.QueryEscape(p3["idempotency_key"].(string)))); len(list) != 0 {
		t.Errorf("another platform finds %d payments by this platform's idempotency key", len(list))
	}
	live := api.enableLive(platformID)
	requireError(t, api.do("GET", "/v1/payments/"+id(p1), live, nil), http.StatusNotFound, "not_found")
	if list := vaData(t, vaGet(t, api, live, "/v1/payments")); len(list) != 0 {
		t.Errorf("the live environment lists %d sandbox payments", len(list))
	}
	// Without a key: 401.
	requireError(t, api.do("GET", "/v1/payments", "", nil), http.StatusUnauthorized, "unauthorized")
	requireError(t, payCreate(api, "", payBody(a, 100, "rtp", "123456789")), http.StatusUnauthorized, "unauthorized")
}

// Live payments follow the real calendars and the sandbox never touches
// them; the environments do not see each other's payments.
func TestPaymentLive(t *testing.T) {
	api, platformID, key := vaAPI(t)
	live := api.enableLive(platformID)
	acc := vaOpenID(t, api, live, platformID, "biz")
	kyb := vaRequire(t, api.do("POST", "/v1/kyb", live, payKYBBody(acc, "12-3456789")), http.StatusCreated)
	payDecideKYB(t, api)
	if s := vaGet(t, api, live, "/v1/virtual-accounts/"+acc)["kyb_status"]; s != "pending_review" {
		t.Fatalf("live KYB is %v, want pending_review", s)
	}
	requireError(t, payCreate(api, live, payBody(acc, 100, "rtp", "123456789")), http.StatusUnprocessableEntity, "kyb_not_approved")
	vaRequire(t, api.do("POST", "/v1/operator/kyb/"+kyb["id"].(string)+"/decision", operatorKey, map[string]any{"outcome": "approved"}), http.StatusOK)
	requireError(t, payCreate(api, live, payBody(acc, 100, "rtp", "123456789")), http.StatusUnprocessableEntity, "insufficient_funds")
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 100_000}), http.StatusCreated) // live money is funded first
	vaAdjust(t, api, live, acc, "adjustment", "credit", 100_000)

	rtp := payCreated(t, api, live, payBody(acc, 1_000, "rtp", "4000000002"))
	ach := payCreated(t, api, live, payBody(acc, 2_000, "ach_standard", "123456789"))
	if rtp["environment"] != "live" || rtp["expected_settlement_at"] != rtp["created_at"] || vaInt(t, rtp["fee"]) != 50 {
		t.Errorf("live RTP payment %v", rtp)
	}
	if wait := payTime(t, ach["expected_settlement_at"]).Sub(payTime(t, ach["created_at"])); wait <= 0 || wait > 5*24*time.Hour {
		t.Errorf("live ACH expected %v after creation", wait)
	}
	payBalanceIs(t, api, live, acc, 100_000, 3_075)
	// The simulator schedules nothing for live payments.
	paySettle(t, api, "catch up", func() bool { return true })
	var scheduled int
	if err := api.Pool.QueryRow(context.Background(), `SELECT count(*) FROM sandbox_schedule`).Scan(&scheduled); err != nil || scheduled != 0 {
		t.Errorf("%d sandbox actions (%v) for live payments", scheduled, err)
	}
	for _, p := range []map[string]any{rtp, ach} {
		if s := payGet(t, api, live, p["id"].(string))["status"]; s != "pending" {
			t.Errorf("a live payment is %v", s)
		}
		requireError(t, api.do("GET", "/v1/payments/"+p["id"].(string), key, nil), http.StatusNotFound, "not_found")
		requireError(t, api.do("POST", "/v1/simulations/payments/"+p["id"].(string)+"/complete", live, nil), http.StatusForbidden, "forbidden")
	}
	// A sandbox key cannot pay from a live account, nor the reverse.
	requireError(t, payCreate(api, key, payBody(acc, 100, "rtp", "123456789")), http.StatusNotFound, "not_found")
	sandboxAcc := payAccount(t, api, key, platformID, "biz", 10_000, true)
	requireError(t, payCreate(api, live, payBody(sandboxAcc, 100, "rtp", "123456789")), http.StatusNotFound, "not_found")
	// A live pending payment can be canceled.
	c := vaRequire(t, api.do("POST", "/v1/payments/"+ach["id"].(string)+"/cancel", live, nil), http.StatusOK)
	if c["status"] != "canceled" {
		t.Errorf("canceled live payment %v", c)
	}
	payBalanceIs(t, api, live, acc, 100_000, 1_050)
	payCheckLedger(t, api)
}
