package http_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank"
	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/ach"
	apihttp "github.com/opentreasury/treasury/http"
)

// Tests of the operator's live ACH routes (issue #16). Helpers start with "rt".

// rtCutter hands the API a connector made once the test's app exists.
type rtCutter struct{ o *bank.ACHOutbound }

func (c *rtCutter) Cut(ctx context.Context, standard bool) ([]ach.FileCreated, error) {
	return c.o.Cut(ctx, standard)
}

func TestOperatorCutsAndListsLiveACHFiles(t *testing.T) {
	cutter := &rtCutter{}
	api := newTestAPI(t, apihttp.Config{ACH: cutter, LiveRails: []app.RailStatus{{Rail: "ach", Connected: true}}})
	dir := t.TempDir()
	outbox, err := transport.Open("file://"+dir, transport.SFTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	cutter.o = &bank.ACHOutbound{App: api.App, Outbox: outbox, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Originator: ach.Originator{RoutingNumber: "110000000", Origin: "1234567890", CompanyID: "1234567890", CompanyName: "TREASURY"}}
	doc := oaDocument(t, api)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	check := c.check

	platformID, sandboxKey := api.newPlatform("Acme Payroll")
	liveKey := api.enableLive(platformID)
	liveVA := vaOpenID(t, api, liveKey, platformID, "biz_rt_live")
	liveKYB := kt2SubmitID(t, api, liveKey, liveVA, kt2EINFor("6789"))
	kt2Decide(t, api)
	vaRequire(t, api.do("POST", "/v1/operator/kyb/"+liveKYB+"/decision", operatorKey, map[string]any{"outcome": "approved"}), http.StatusOK)
	vaRequire(t, mlFund(api, platformID, map[string]any{"amount": 100_000}), http.StatusCreated)
	vaRequire(t, vaEntry(api, liveKey, map[string]any{"type": "adjustment", "description": "Opening funds",
		"virtual_account_id": liveVA, "direction": "credit", "amount": 100_000}), http.StatusCreated)

	// Nothing pending: no file.
	p := "/operator/rails/ach/files"
	if l := check("POST", p, api.do("POST", "/v1"+p, operatorKey, nil), 200, ""); len(l["data"].([]any)) != 0 {
		t.Fatalf("a cut with nothing pending: %v", l)
	}
	sameDay := check("POST", "/payments", oapPay(api, liveKey, oapBody(liveVA, 1_000, "ach_same_day", "123456789")), 201, "")
	standard := check("POST", "/payments", oapPay(api, liveKey, oapBody(liveVA, 2_500, "ach_standard", "123456789")), 201, "")
	instant := check("POST", "/payments", oapPay(api, liveKey, oapBody(liveVA, 500, "rtp", "123456789")), 201, "")
	// A live counterparty's prenote waits for the same file (API.md §12).
	cpBody := map[string]any{"name": "Initech LLC", "account_number": "987654321", "routing_number": "021000021", "account_type": "savings"}
	cp := check("POST", "/counterparties", api.do("POST", "/v1/counterparties", liveKey, cpBody), 201, "")["id"].(string)
	verify := "/counterparties/{id}/verify"
	verified := check("POST", verify, api.do("POST", "/v1/counterparties/"+cp+"/verify", liveKey, map[string]any{"method": "prenote"}), 200, "")
	if v, _ := verified["verification"].(map[string]any); v["status"] != "pending" || v["method"] != "prenote" {
		t.Fatalf("a live verify: %v", verified)
	}
	check("POST", verify, api.do("POST", "/v1/counterparties/"+cp+"/verify", liveKey, map[string]any{"method": "prenote"}), 409, "invalid_state")

	cut := check("POST", p, api.do("POST", "/v1"+p, operatorKey, nil), 200, "")
	files := cut["data"].([]any)
	if len(files) != 1 {
		t.Fatalf("cut: %v", cut)
	}
	file := files[0].(map[string]any)
	if file["object"] != "ach_file" || file["entry_count"] != float64(3) || file["total_credit"] != float64(3_500) || file["transmitted_at"] == nil {
		t.Fatalf("the file: %v", file)
	}
	for _, pay := range []map[string]any{sameDay, standard} {
		got := check("GET", "/payments/{id}", api.do("GET", "/v1/payments/"+pay["id"].(string), liveKey, nil), 200, "")
		if got["status"] != "submitted" || got["ach_file_id"] != file["id"] || len(got["trace_number"].(string)) != 15 {
			t.Errorf("payment after the cut: %v", got)
		}
	}
	got := check("GET", "/payments/{id}", api.do("GET", "/v1/payments/"+instant["id"].(string), liveKey, nil), 200, "")
	if _, has := got["trace_number"]; has || got["status"] != "pending" {
		t.Errorf("an RTP payment after an ACH cut: %v", got)
	}
	data, err := os.ReadFile(filepath.Join(dir, file["name"].(string)))
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := nacha.Parse(data)
	if err != nil || parsed.Control().TotalCredit != 3_500 {
		t.Fatalf("the outbox's file: %+v, %v", parsed.Control(), err)
	}
	prenotes := 0
	for _, b := range parsed.Batches {
		for _, e := range b.Entries {
			if e.TransactionCode == nacha.SavingsPrenote && e.Amount == 0 && e.AccountNumber == "987654321" {
				prenotes++
			}
		}
	}
	if prenotes != 1 {
		t.Errorf("the file holds %d savings prenotes to 987654321, want 1", prenotes)
	}
	if v := vaGet(t, api, liveKey, "/v1/counterparties/"+cp)["verification"].(map[string]any); v["status"] != "pending" {
		t.Errorf("the counterparty after the cut (its prenote settles at the window): %v", v)
	}

	list := check("GET", p, api.do("GET", "/v1"+p, operatorKey, nil), 200, "")
	listed := list["data"].([]any)
	if len(listed) != 1 || listed[0].(map[string]any)["id"] != file["id"] || listed[0].(map[string]any)["transmitted_at"] == nil {
		t.Fatalf("list: %v", list)
	}
	check("GET", p, api.do("GET", "/v1"+p, sandboxKey, nil), 403, "forbidden")
	check("POST", p, api.do("POST", "/v1"+p, liveKey, nil), 403, "forbidden")
	check("POST", p, api.do("POST", "/v1"+p, "", nil), 401, "unauthorized")
	check("GET", p, api.do("GET", "/v1"+p+"?limit=0", operatorKey, nil), 400, "invalid_request")

	ready := api.do("GET", "/readyz", "", nil).JSON()
	if rails, _ := ready["live_rails"].([]any); len(rails) != 1 || rails[0].(map[string]any)["connected"] != true {
		t.Errorf("/readyz: %v", ready)
	}
}

func TestCuttingWithoutAnOutboxIsRefused(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{LiveRails: []app.RailStatus{
		{Rail: "ach", Reason: "TREASURY_ACH_OUTBOX is unset: live ACH payments stay pending"}}})
	doc := oaDocument(t, api)
	c := &oapChecker{t: t, doc: doc, seen: map[string]map[int]bool{}}
	e := c.check("POST", "/operator/rails/ach/files", api.do("POST", "/v1/operator/rails/ach/files", operatorKey, nil), 409, "invalid_state")
	if msg, _ := e["message"].(string); msg == "" {
		t.Errorf("no message: %v", e)
	}
	ready := api.do("GET", "/readyz", "", nil)
	rails, _ := ready.JSON()["live_rails"].([]any)
	if ready.Status != 200 || len(rails) != 1 || rails[0].(map[string]any)["reason"] == nil {
		t.Errorf("/readyz: %d %s", ready.Status, ready.Body)
	}
}

// rtDownCutter is a connector whose outbox does not answer.
type rtDownCutter struct{}

func (rtDownCutter) Cut(context.Context, bool) ([]ach.FileCreated, error) {
	return nil, errors.New("dial tcp 10.0.0.7:22: connection refused")
}

func TestACutWhoseOutboxIsDownAsksToTryAgain(t *testing.T) {
	api := newTestAPI(t, apihttp.Config{ACH: rtDownCutter{}})
	c := &oapChecker{t: t, doc: oaDocument(t, api), seen: map[string]map[int]bool{}}
	r := api.do("POST", "/v1/operator/rails/ach/files", operatorKey, nil)
	e := c.check("POST", "/operator/rails/ach/files", r, 503, "unavailable")
	if r.Header.Get("Retry-After") == "" || strings.Contains(e["message"].(string), "10.0.0.7") {
		t.Errorf("503 without Retry-After, or with the outbox's address: %v %v", r.Header, e)
	}
	c.check("POST", "/operator/rails/ach/files", api.do("POST", "/v1/operator/rails/ach/files", operatorKey, map[string]any{"x": 1}), 400, "invalid_request")
}
