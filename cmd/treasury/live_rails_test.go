package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/instant"
)

// TestLiveRails is live mode end to end (issue #16): `treasury serve` with
// its ACH folders and instant-payments API connected to `treasury
// bank-sim`, a live platform funded by an ACH credit file, paying out on
// all four rails; a return and a notification of change coming back; the
// credit to an unknown account returned in the next file; two
// counterparties' prenotes, one returned, one verified. Every payment's
// statuses and events, the webhook deliveries, the ledger and the balance
// are checked, the NACHA files the service wrote are read back by a reader
// written here (not the service's), and `audit verify` is clean.
func TestLiveRails(t *testing.T) {
	t.Parallel()
	dbURL := emptyDatabase(t)
	outbox, inbox := t.TempDir(), t.TempDir()
	simAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	const auth = "Bearer bank-sim-secret"
	sim := startTreasury(t, "", []string{"TREASURY_INSTANT_AUTH=" + auth}, "bank-sim",
		"--outbox", "file://"+outbox, "--inbox", "file://"+inbox, "--listen", simAddr)
	waitStatus(t, sim, 30*time.Second, "http://"+simAddr+"/pacs.028", "", http.StatusUnauthorized) // up, and asks for its key

	r := ftStartWith(t, dbURL, "TREASURY_ACH_OUTBOX=file://"+outbox, "TREASURY_ACH_INBOX=file://"+inbox,
		"TREASURY_ACH_INBOX_POLL=1s", "TREASURY_ACH_ORIGIN=1234567890", "TREASURY_ACH_COMPANY_ID=1234567890",
		"TREASURY_ACH_COMPANY_NAME=TREASURY E2E", "TREASURY_INSTANT_URL=http://"+simAddr, "TREASURY_INSTANT_AUTH="+auth)
	ready := decodeJSON[struct {
		LiveRails []app.RailStatus `json:"live_rails"`
	}](t, mustCall(t, http.MethodGet, r.base+"/readyz", "", nil))
	if len(ready.LiveRails) != 3 || slices.ContainsFunc(ready.LiveRails, func(s app.RailStatus) bool { return !s.Connected }) {
		t.Fatalf("/readyz: every live rail connected, got %+v", ready.LiveRails)
	}

	// A live platform, its account, its KYB decided by the operator.
	live := decodeJSON[struct {
		LiveAPIKey struct {
			Secret string `json:"secret"`
		} `json:"live_api_key"`
	}](t, r.opMust(http.MethodPost, "/v1/operator/platforms/"+r.platform+"/enable-live", map[string]any{}, http.StatusOK))
	r.key = live.LiveAPIKey.Secret
	hook := decodeJSON[struct {
		ID string `json:"id"`
	}](t, r.must(http.MethodPost, "/v1/webhooks", map[string]any{"url": "https://hooks.example.com/treasury"}, http.StatusCreated))
	type account struct {
		ID            string    `json:"id"`
		AccountNumber string    `json:"account_number"`
		KYBStatus     string    `json:"kyb_status"`
		Environment   string    `json:"environment"`
		Balance       ftBalance `json:"balance"`
	}
	va := decodeJSON[account](t, r.must(http.MethodPost, "/v1/virtual-accounts", map[string]any{
		"platform_id": r.platform, "entity_ref": "live_business", "type": "checking"}, http.StatusCreated))
	if va.Environment != "live" {
		t.Fatalf("a live key opened a %s account", va.Environment)
	}
	kyb := decodeJSON[struct {
		ID string `json:"id"`
	}](t, r.must(http.MethodPost, "/v1/kyb", map[string]any{
		"virtual_account_id": va.ID,
		"business": map[string]any{"legal_name": "Live Payroll Holdings LLC", "ein": "58-2046789", "entity_type": "llc",
			"formation_date": "2015-06-01", "formation_state": "DE", "address": ftAddress("500 Congress Ave")},
		"beneficial_owners": []any{map[string]any{"first_name": "Jane", "last_name": "Doe", "date_of_birth": "1980-04-12",
			"ssn_last4": "9876", "ownership_percentage": "60", "is_control_person": true, "address": ftAddress("12 Elm St")}},
	}, http.StatusCreated))
	eventually(t, 15*time.Second, "KYB in the operator's review queue", func() error {
		res, err := callWith(r.client, http.MethodPost, r.base+"/v1/operator/kyb/"+kyb.ID+"/decision", testOperatorKey,
			map[string]any{"outcome": "approved"})
		if err != nil || res.Status != http.StatusOK {
			return fmt.Errorf("%v %v", res, err)
		}
		return nil
	})
	getAccount := func() account {
		return decodeJSON[account](t, r.must(http.MethodGet, "/v1/virtual-accounts/"+va.ID, nil, http.StatusOK))
	}
	if a := getAccount(); a.KYBStatus != "approved" {
		t.Fatalf("kyb_status %s after the operator approved", a.KYBStatus)
	}

	// Funded by an ACH credit file from the bank; a credit to an account
	// number no live account has is owed back R03.
	const funds = 1_000_000
	bankSimCredit(t, inbox, va.AccountNumber, funds)
	bankSimCredit(t, inbox, "999999999999", 700)
	eventually(t, 20*time.Second, "the credit file applied", func() error {
		if b := getAccount().Balance; b.Posted != funds || b.Available != funds {
			return fmt.Errorf("balance %+v", b)
		}
		return nil
	})

	// A garbage file in the inbox is set aside, changing nothing.
	if err := os.WriteFile(filepath.Join(inbox, "garbage.ach"), []byte("not a NACHA file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the garbage file set aside", func() error {
		_, err := os.Stat(filepath.Join(inbox, "rejected", "garbage.ach"))
		return err
	})

	// Payments on all four rails, to the bank-sim's magic numbers.
	pay := func(rail, accountNumber string, amount int64) string {
		res := r.must(http.MethodPost, "/v1/payments", map[string]any{"virtual_account_id": va.ID, "amount": amount, "rail": rail,
			"idempotency_key": "live-" + rail + "-" + accountNumber,
			"destination":     map[string]any{"account_number": accountNumber, "routing_number": "021000021", "name": "Initech LLC"}},
			http.StatusCreated)
		return decodeJSON[ftPayment](t, res).ID
	}
	type want struct {
		rail, status, networkCode string
		events                    []string
		amount, fee               int64
	}
	created, submitted, completed, failed, noc := "payment.created", "payment.submitted", "payment.completed", "payment.failed", "payment.notification_of_change"
	wants := map[string]want{
		pay("rtp", "123456789", 10_000):            {"rtp", "completed", "", []string{created, submitted, completed}, 10_000, 50},
		pay("fednow", "4000000003", 20_000):        {"fednow", "failed", "AC03", []string{created, submitted, failed}, 20_000, 45},
		pay("rtp", instant.PendingAccount, 30_000): {"rtp", "completed", "", []string{created, submitted, completed}, 30_000, 50},
		pay("fednow", "123456789", 40_000):         {"fednow", "completed", "", []string{created, submitted, completed}, 40_000, 45},
		pay("ach_same_day", "123456789", 50_000):   {"ach_same_day", "completed", "", []string{created, submitted, completed}, 50_000, 100},
		pay("ach_standard", "4000000003", 60_000):  {"ach_standard", "failed", "R03", []string{created, submitted, failed}, 60_000, 25},
		pay("ach_standard", "4000000098", 70_000):  {"ach_standard", "completed", "", []string{created, submitted, noc, completed}, 70_000, 25},
	}
	type paymentJSON struct {
		ftPayment
		TraceNumber          string  `json:"trace_number"`
		ACHFileID            string  `json:"ach_file_id"`
		ExpectedSettlementAt *string `json:"expected_settlement_at"`
		Failure              *struct {
			Code        string `json:"code"`
			NetworkCode string `json:"network_code"`
		} `json:"failure"`
		Change *struct {
			Code          string `json:"code"`
			CorrectedData string `json:"corrected_data"`
		} `json:"notification_of_change"`
	}
	getPayment := func(id string) paymentJSON {
		return decodeJSON[paymentJSON](t, r.must(http.MethodGet, "/v1/payments/"+id, nil, http.StatusOK))
	}
	// The instant ones settle through the bank's instant API.
	for id, w := range wants {
		if strings.HasPrefix(w.rail, "ach") {
			continue
		}
		eventually(t, 20*time.Second, w.rail+" payment "+id+" "+w.status, func() error {
			if p := getPayment(id); p.Status != w.status {
				return fmt.Errorf("status %s", p.Status)
			}
			return nil
		})
	}

	// Two live counterparties verified by prenote (API.md §12): the bank
	// returns the one to a magic number R03; the other settles, verified.
	counterparty := func(accountNumber, accountType string) string {
		cp := decodeJSON[struct {
			ID string `json:"id"`
		}](t, r.must(http.MethodPost, "/v1/counterparties", map[string]any{"name": "Initech LLC", "account_number": accountNumber,
			"routing_number": "021000021", "account_type": accountType}, http.StatusCreated))
		r.must(http.MethodPost, "/v1/counterparties/"+cp.ID+"/verify", map[string]any{"method": "prenote"}, http.StatusOK)
		return cp.ID
	}
	type verification struct {
		Status      string `json:"status"`
		FailureCode string `json:"failure_code"`
	}
	getVerification := func(id string) verification {
		return decodeJSON[struct {
			Verification verification `json:"verification"`
		}](t, r.must(http.MethodGet, "/v1/counterparties/"+id, nil, http.StatusOK)).Verification
	}
	returnedCP, settledCP := counterparty("4000000003", "checking"), counterparty("123456789", "savings")

	// The ACH ones leave in a file cut now (the operator's route), which
	// also returns the unknown account's credit and carries the prenotes. (Serve cuts by itself
	// too, 15 minutes before each same-day window: at those times the
	// entries may come in two files.) The returned payment is a standard
	// one, which settles the next business day, so that serve's own
	// settlement never completes it before its return comes back.
	r.opMust(http.MethodPost, "/v1/operator/rails/ach/files", map[string]any{}, http.StatusOK)
	type achFile struct {
		ID          string `json:"id"`
		Name        string `json:"name"`
		EntryCount  int    `json:"entry_count"`
		TotalCredit int64  `json:"total_credit"`
	}
	files := decodeJSON[struct {
		Data []achFile `json:"data"`
	}](t, r.opMust(http.MethodGet, "/v1/operator/rails/ach/files?limit=100", nil, http.StatusOK)).Data
	fileIDs, entries, total := map[string]bool{}, 0, int64(0)
	for _, f := range files {
		fileIDs[f.ID] = true
		entries += f.EntryCount
		total += f.TotalCredit
	}
	if entries != 6 || total != 50_000+60_000+70_000+700 {
		t.Fatalf("the files cut: %+v, want 3 payments, 2 prenotes and 1 return in all", files)
	}
	for id, w := range wants {
		if !strings.HasPrefix(w.rail, "ach") {
			continue
		}
		if p := getPayment(id); p.Status != "submitted" || len(p.TraceNumber) != 15 || !fileIDs[p.ACHFileID] {
			t.Errorf("ACH payment %s after the cut: %+v", id, p)
		}
	}
	// The bank-sim takes the file and answers: the return and the change
	// are applied from the inbox.
	eventually(t, 20*time.Second, "the bank's answer applied", func() error {
		for id, w := range wants {
			p := getPayment(id)
			if w.status == "failed" && p.Status != "failed" {
				return fmt.Errorf("payment %s is %s", id, p.Status)
			}
			if slices.Contains(w.events, noc) && p.Change == nil {
				return fmt.Errorf("payment %s has no notification of change", id)
			}
		}
		if v := getVerification(returnedCP); v.Status != "failed" || v.FailureCode != "R03" {
			return fmt.Errorf("the counterparty whose prenote the bank returned: %+v", v)
		}
		return nil
	})
	if v := getVerification(settledCP); v.Status != "pending" {
		t.Errorf("the other counterparty before its prenote settled: %+v", v)
	}
	// The entries settle when their settlement time passes without a
	// return; serve checks every minute. This test cannot wait for the next
	// window, so it runs the same command with the clock at the latest
	// settlement time (on the same database, as serve does).
	var latest time.Time
	for id, w := range wants {
		if w.status == "completed" && strings.HasPrefix(w.rail, "ach") {
			at, err := time.Parse(time.RFC3339Nano, *getPayment(id).ExpectedSettlementAt)
			if err != nil {
				t.Fatal(err)
			}
			if at.After(latest) {
				latest = at
			}
		}
	}
	completeSettled(t, dbURL, latest) // the prenotes settle with the same-day payment: same file, same window
	if v := getVerification(settledCP); v.Status != "verified" {
		t.Errorf("the counterparty whose prenote settled: %+v", v)
	}

	// Every payment's end, failure, change and events.
	events := listAll[struct {
		ID   string          `json:"id"`
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}](t, r, "/v1/events")
	byObject := map[string][]string{}
	eventIDs := map[string]bool{}
	for _, e := range events {
		var data struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		}
		_ = json.Unmarshal(e.Data, &data)
		byObject[data.Object.ID] = append(byObject[data.Object.ID], e.Type)
		eventIDs[e.ID] = true
	}
	var spent int64
	for id, w := range wants {
		p := getPayment(id)
		if p.Status != w.status || p.Amount != w.amount || p.Fee != w.fee {
			t.Errorf("payment %s (%s): %s %d fee %d, want %s %d fee %d", id, w.rail, p.Status, p.Amount, p.Fee, w.status, w.amount, w.fee)
		}
		if w.networkCode != "" && (p.Failure == nil || p.Failure.NetworkCode != w.networkCode) {
			t.Errorf("payment %s: failure %+v, want network code %s", id, p.Failure, w.networkCode)
		}
		if slices.Contains(w.events, noc) && (p.Change == nil || p.Change.Code != "C01" || p.Change.CorrectedData != "4000000099") {
			t.Errorf("payment %s: notification of change %+v", id, p.Change)
		}
		got := slices.Clone(byObject[id])
		slices.Reverse(got) // the list is newest first
		if !slices.Equal(got, w.events) {
			t.Errorf("payment %s (%s to %s): events %v, want %v", id, w.rail, w.status, got, w.events)
		}
		if w.status == "completed" {
			spent += w.amount + w.fee
		}
	}
	for id, want := range map[string]string{returnedCP: "counterparty.verification_failed", settledCP: "counterparty.verified"} {
		if got := byObject[id]; !slices.Equal(got, []string{want}) {
			t.Errorf("counterparty %s: events %v, want %s", id, got, want)
		}
	}
	if got := byObject[va.ID]; !slices.Contains(got, "virtual_account.created") {
		t.Errorf("the account's events: %v", got)
	}
	var inboundEvents []string
	for _, types := range byObject {
		for _, ty := range types {
			if strings.HasPrefix(ty, "inbound_transfer.") {
				inboundEvents = append(inboundEvents, ty)
			}
		}
	}
	if !slices.Equal(inboundEvents, []string{"inbound_transfer.completed"}) {
		t.Errorf("inbound transfer events %v: the one credit applied, completed", inboundEvents)
	}

	// The balance is the credit less what completed; the account's posted
	// ledger entries add up to it.
	if b := getAccount().Balance; b.Posted != funds-spent || b.Available != funds-spent || b.PendingOutbound != 0 || b.PendingInbound != 0 {
		t.Errorf("balance %+v, want posted and available %d", b, funds-spent)
	}
	var ledger int64
	for _, e := range listAll[struct {
		Direction string `json:"direction"`
		Amount    int64  `json:"amount"`
		Status    string `json:"status"`
	}](t, r, "/v1/ledger/entries?virtual_account_id="+va.ID) {
		if e.Status != "posted" {
			continue
		}
		if e.Direction == "credit" {
			ledger += e.Amount
		} else {
			ledger -= e.Amount
		}
	}
	if ledger != funds-spent {
		t.Errorf("the account's posted ledger entries sum to %d, want %d", ledger, funds-spent)
	}

	// Each public event was handed to the live endpoint (whose deliveries
	// fail: example.com takes no webhooks).
	delivered := map[string]bool{}
	eventually(t, 20*time.Second, "a delivery for each event", func() error {
		for _, d := range listAll[struct {
			EventID string `json:"event_id"`
		}](t, r, "/v1/webhooks/"+hook.ID+"/deliveries") {
			delivered[d.EventID] = true
		}
		for id := range eventIDs {
			if !delivered[id] {
				return fmt.Errorf("event %s has no delivery", id)
			}
		}
		return nil
	})

	// The files the service wrote, read back here: the payments' file and
	// the one bank-sim took, with the return of the unknown account's credit.
	var names []string
	eventually(t, 20*time.Second, "the bank took every file cut", func() error { // it answers, then moves
		names, _ = filepath.Glob(filepath.Join(outbox, "accepted", "*.ach"))
		if len(names) != len(files) {
			return fmt.Errorf("the bank took %v, want the %d files cut", names, len(files))
		}
		return nil
	})
	f := nachaRead{traces: map[string]int64{}}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		one := readNACHA(t, data)
		f.entries, f.credit, f.debit = f.entries+one.entries, f.credit+one.credit, f.debit+one.debit
		f.returns = append(f.returns, one.returns...)
		f.prenotes = append(f.prenotes, one.prenotes...)
		for trace, amount := range one.traces {
			f.traces[trace] = amount
		}
	}
	if f.entries != 6 || f.credit != 50_000+60_000+70_000+700 || f.debit != 0 {
		t.Errorf("the files: %d entries, credit %d, debit %d", f.entries, f.credit, f.debit)
	}
	slices.Sort(f.prenotes)
	if !slices.Equal(f.prenotes, []string{"23 4000000003", "33 123456789"}) {
		t.Errorf("the files' prenotes %v, want a checking one to 4000000003 and a savings one to 123456789", f.prenotes)
	}
	for id, w := range wants {
		if p := getPayment(id); strings.HasPrefix(w.rail, "ach") && f.traces[p.TraceNumber] != w.amount {
			t.Errorf("payment %s: trace %s carries %d in the file, want %d", id, p.TraceNumber, f.traces[p.TraceNumber], w.amount)
		}
	}
	if len(f.returns) != 1 || f.returns[0] != "R03" {
		t.Errorf("returns in the file: %v, want the unknown account's R03", f.returns)
	}
	ftAuditClean(t, dbURL)
}

// bankSimCredit has `treasury bank-sim credit` drop a credit file.
func bankSimCredit(t *testing.T, inbox, accountNumber string, amount int64) {
	t.Helper()
	c := exec.Command(treasuryBin, "bank-sim", "credit", "--inbox", "file://"+inbox, "--account-number", accountNumber,
		"--amount", strconv.FormatInt(amount, 10), "--originator", "GLOBEX PAYROLL")
	c.Env = treasuryEnv()
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("bank-sim credit: %v\n%s", err, out)
	}
}

// completeSettled runs serve's settlement checks (payments, prenotes) with
// the clock at asOf.
func completeSettled(t *testing.T, dbURL string, asOf time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := a.CompleteSettledACHPayments(ctx, app.Meta{Actor: "live_rails_test"}, asOf.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.VerifySettledPrenotes(ctx, app.Meta{Actor: "live_rails_test"}, asOf.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
}

// listAll reads every page of a list.
func listAll[T any](t *testing.T, r *ftRig, path string) []T {
	t.Helper()
	var out []T
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	cursor := ""
	for {
		q := path + sep + "limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		page := decodeJSON[struct {
			Data       []T     `json:"data"`
			HasMore    bool    `json:"has_more"`
			NextCursor *string `json:"next_cursor"`
		}](t, r.must(http.MethodGet, q, nil, http.StatusOK))
		out = append(out, page.Data...)
		if !page.HasMore || page.NextCursor == nil {
			return out
		}
		cursor = *page.NextCursor
	}
}

// nachaRead is what readNACHA found in a file.
type nachaRead struct {
	entries       int              // entry records (6)
	credit, debit int64            // the file control's totals, checked
	traces        map[string]int64 // entry trace number → amount
	returns       []string         // the return reason codes of addenda 99
	prenotes      []string         // "code account" of the zero-dollar prenote entries (23, 33)
}

// readNACHA reads a NACHA file with nothing of bank/nacha: every record 94
// characters, blocked by tens; every batch's and the file's counts, entry
// hash and totals recomputed from the entries and compared with the
// controls.
func readNACHA(t *testing.T, data []byte) nachaRead {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines)%10 != 0 {
		t.Fatalf("%d records: not blocked by tens", len(lines))
	}
	num := func(line string, from, to int) int64 {
		n, err := strconv.ParseInt(strings.TrimSpace(line[from-1:to]), 10, 64)
		if err != nil {
			t.Fatalf("record %q, columns %d–%d: %v", line, from, to, err)
		}
		return n
	}
	out := nachaRead{traces: map[string]int64{}}
	var batches, fileEntries, fileAddenda int
	var fileHash, fileDebit, fileCredit int64
	var batchEntries int
	var batchHash, batchDebit, batchCredit int64
	sawControl := false
	for i, line := range lines {
		if len(line) != 94 {
			t.Fatalf("record %d is %d characters", i+1, len(line))
		}
		switch line[0] {
		case '1':
			if i != 0 || line[34:40] != "094101" {
				t.Fatalf("file header %q", line)
			}
		case '5':
			batches++
			batchEntries, batchHash, batchDebit, batchCredit = 0, 0, 0, 0
		case '6':
			code, amount := num(line, 2, 3), num(line, 30, 39)
			batchEntries++
			fileEntries++
			out.entries++
			batchHash += num(line, 4, 11)
			switch {
			case code%10 >= 1 && code%10 <= 4: // 21–24, 31–34: credits
				batchCredit += amount
			default:
				batchDebit += amount
			}
			out.traces[line[79:94]] = amount
			if (code == 23 || code == 33) && amount == 0 {
				out.prenotes = append(out.prenotes, fmt.Sprintf("%d %s", code, strings.TrimSpace(line[12:29])))
			}
		case '7':
			batchEntries++
			fileAddenda++
			if line[1:3] == "99" {
				out.returns = append(out.returns, line[3:6])
			}
		case '8':
			if num(line, 5, 10) != int64(batchEntries) || num(line, 11, 20) != batchHash%10_000_000_000 ||
				num(line, 21, 32) != batchDebit || num(line, 33, 44) != batchCredit {
				t.Fatalf("batch control %q: computed %d records, hash %d, debit %d, credit %d", line, batchEntries, batchHash, batchDebit, batchCredit)
			}
			fileHash += batchHash
			fileDebit += batchDebit
			fileCredit += batchCredit
		case '9':
			if strings.Trim(line, "9") == "" && sawControl {
				continue // padding
			}
			sawControl = true
			if num(line, 2, 7) != int64(batches) || num(line, 8, 13) != int64(len(lines)/10) ||
				num(line, 14, 21) != int64(fileEntries+fileAddenda) || num(line, 22, 31) != fileHash%10_000_000_000 ||
				num(line, 32, 43) != fileDebit || num(line, 44, 55) != fileCredit {
				t.Fatalf("file control %q: computed %d batches, %d blocks, %d records, hash %d, debit %d, credit %d",
					line, batches, len(lines)/10, fileEntries+fileAddenda, fileHash, fileDebit, fileCredit)
			}
		default:
			t.Fatalf("record %d of type %q", i+1, line[0])
		}
	}
	if !sawControl || !bytes.HasSuffix(data, []byte("\n")) {
		t.Fatal("no file control, or no final line break")
	}
	out.credit, out.debit = fileCredit, fileDebit
	return out
}
