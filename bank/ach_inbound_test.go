package bank_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank"
	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/projections/queries"
	"github.com/opentreasury/treasury/projections/rebuild"
)

// Tests of the bank's files read from the inbox (ACHInbound); the live
// set-up is ach_outbound_test.go's.

// cutOne cuts the pending same-day payments into one file, written to an
// outbox of its own.
func cutOne(t *testing.T, l *live) ach.FileCreated {
	t.Helper()
	out, _ := outbox(t)
	files, err := (&bank.ACHOutbound{App: l.a, Outbox: out, Originator: originator, Log: discard}).Cut(l.ctx, false)
	if err != nil || len(files) != 1 {
		t.Fatalf("cut = %v, %v", files, err)
	}
	return files[0]
}

// returnFile is what the bank sends back for entries of a file it took:
// a return (addenda 99) of each, with its code.
func returnFile(t *testing.T, f ach.FileCreated, codes map[string]string) []byte {
	t.Helper()
	return bankFile(t, f, codes, nil)
}

// bankFile is a file of returns (trace → return code) and notifications
// of change (trace → [change code, corrected data]) of the entries of f,
// each repeating its entry's account number and amount (a trace f does not
// have: 123456789, $10.00).
func bankFile(t *testing.T, f ach.FileCreated, codes map[string]string, changes map[string][2]string) []byte {
	t.Helper()
	account, amount := map[string]string{}, map[string]int64{}
	for _, e := range f.Entries {
		account[e.TraceNumber], amount[e.TraceNumber] = e.AccountNumber, e.Amount
	}
	accountOf := func(trace string) string {
		if a, ok := account[trace]; ok {
			return a
		}
		return "123456789"
	}
	amountOf := func(trace string) int64 {
		if a, ok := amount[trace]; ok {
			return a
		}
		return 1000
	}
	b := nacha.Batch{Header: nacha.BatchHeader{ServiceClass: nacha.MixedDebitsAndCredits, CompanyName: "TREASURY",
		CompanyID: "1234567890", SEC: "CCD", EntryDescription: "PAYMENT", EffectiveDate: time.Now(), SettlementDate: "331",
		OriginatorStatus: '1', ODFI: "01100001", Number: 1}}
	i := 0
	for trace, code := range codes {
		i++
		own := fmt.Sprintf("01100001%07d", i)
		b.Entries = append(b.Entries, nacha.Entry{TransactionCode: nacha.CheckingReturn, RDFI: "02100002", CheckDigit: '1',
			AccountNumber: accountOf(trace), Amount: amountOf(trace), Name: "INITECH LLC", TraceNumber: own,
			Addenda: &nacha.Addenda{Type: nacha.AddendaReturn, Code: code, OriginalTrace: trace, OriginalRDFI: "01100001",
				TraceNumber: own}})
	}
	for trace, change := range changes {
		i++
		own := fmt.Sprintf("01100001%07d", i)
		b.Entries = append(b.Entries, nacha.Entry{TransactionCode: nacha.CheckingReturn, RDFI: "02100002", CheckDigit: '1',
			AccountNumber: accountOf(trace), Name: "INITECH LLC", TraceNumber: own,
			Addenda: &nacha.Addenda{Type: nacha.AddendaNOC, Code: change[0], OriginalTrace: trace, OriginalRDFI: "01100001",
				CorrectedData: change[1], TraceNumber: own}})
	}
	data, err := nacha.Marshal(nacha.File{Header: nacha.FileHeader{ImmediateDestination: "1234567890",
		ImmediateOrigin: "021000021", CreatedAt: time.Now(), IDModifier: 'A'}, Batches: []nacha.Batch{b}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestACHInboundAppliesReturnsOnce(t *testing.T) {
	l := newLive(t)
	out, _ := outbox(t)
	inbox, inDir := outbox(t)
	o := &bank.ACHOutbound{App: l.a, Outbox: out, Originator: originator, Log: discard}
	submitted, completed, kept := l.pay(1000, "ach_same_day"), l.pay(2000, "ach_same_day"), l.pay(3000, "ach_same_day")
	files, err := o.Cut(l.ctx, false)
	if err != nil || len(files) != 1 {
		t.Fatal(files, err)
	}
	trace := map[string]string{}
	for _, e := range files[0].Entries {
		trace[e.PaymentID] = e.TraceNumber
	}
	if err := l.a.CompletePayment(l.ctx, app.Meta{}, nil, completed); err != nil { // settled before its return came
		t.Fatal(err)
	}
	returns := returnFile(t, files[0], map[string]string{trace[submitted]: "R03", trace[completed]: "R01", "099999990000042": "R02"})
	if err := inbox.Put(l.ctx, "returns-1.ach", returns); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(inDir, "garbage.ach"), []byte("not a NACHA file\n"), 0o644)
	before := l.balance()

	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	n, err := in.Poll(l.ctx)
	if err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	// A file that does not read may be one the bank is still writing: it
	// is left for the next poll, and set aside when its bytes are the same.
	if _, err := os.Stat(filepath.Join(inDir, "garbage.ach")); err != nil {
		t.Fatalf("an unreadable file was set aside at its first sight: %v", err)
	}
	if n, err := in.Poll(l.ctx); err != nil || n != 0 {
		t.Fatalf("the second Poll = %d, %v", n, err)
	}
	p := l.payment(submitted)
	if p.Status != payment.StatusFailed || p.Failure == nil || p.Failure.NetworkCode != "R03" || p.Failure.Code != "no_account" {
		t.Errorf("the returned submitted payment: %s %+v", p.Status, p.Failure)
	}
	if p := l.payment(completed); p.Status != payment.StatusFailed || p.Failure.NetworkCode != "R01" {
		t.Errorf("the returned completed payment: %s %+v", p.Status, p.Failure)
	}
	if p := l.payment(kept); p.Status != payment.StatusSubmitted {
		t.Errorf("a payment not returned: %s", p.Status)
	}
	// Both come back: the submitted one's hold released, the completed
	// one's entries reversed.
	after := l.balance()
	if after.Available != before.Available+1000+100+2000+100 {
		t.Errorf("available %d → %d", before.Available, after.Available)
	}
	for sub, name := range map[string]string{bank.Processed: "returns-1.ach", bank.Rejected: "garbage.ach"} {
		if _, err := os.Stat(filepath.Join(inDir, sub, name)); err != nil {
			t.Errorf("%s/%s: %v", sub, name, err)
		}
	}

	// The same file again: applied once.
	if err := inbox.Put(l.ctx, "returns-1-again.ach", returns); err != nil {
		t.Fatal(err)
	}
	events := l.events()
	if n, err := in.Poll(l.ctx); err != nil || n != 0 {
		t.Fatalf("the same file again: %d, %v", n, err)
	}
	if got := l.events(); got != events {
		t.Errorf("the same file again appended %d events", got-events)
	}
	if _, err := os.Stat(filepath.Join(inDir, bank.Processed, "returns-1-again.ach")); err != nil {
		t.Errorf("the repeated file was not set aside: %v", err)
	}
}

func TestACHInboundKeepsNotificationsOfChange(t *testing.T) {
	l := newLive(t)
	inbox, _ := outbox(t)
	id := l.pay(1000, "ach_same_day")
	files := []ach.FileCreated{cutOne(t, l)}
	notice := bankFile(t, files[0], nil, map[string][2]string{files[0].Entries[0].TraceNumber: {"C01", "1918171614"}})
	if err := inbox.Put(l.ctx, "noc.ach", notice); err != nil {
		t.Fatal(err)
	}
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	if n, err := in.Poll(l.ctx); err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	p := l.payment(id)
	if p.Status != payment.StatusSubmitted || p.NotificationOfChange == nil ||
		*p.NotificationOfChange != (queries.ChangeView{Code: "C01", CorrectedData: "1918171614"}) {
		t.Fatalf("after the notice: %s %+v", p.Status, p.NotificationOfChange)
	}
	var events int
	if err := l.a.Pool.QueryRow(l.ctx, `SELECT count(*) FROM events WHERE event_type = 'payment.notification_of_change'`).Scan(&events); err != nil || events != 1 {
		t.Errorf("%d payment.notification_of_change events, %v", events, err)
	}
	// Replayed from the log, the payments' rows are the same.
	if diffs, _, err := rebuild.CompareWithLog(l.ctx, l.a.Pool); err != nil || len(diffs) != 0 {
		t.Errorf("the projections differ from the log: %+v, %v", diffs, err)
	}
}

// A file read while the bank is still writing it is not set aside: the
// next poll, with the whole file there, applies it.
func TestACHInboundWaitsForAFileStillBeingWritten(t *testing.T) {
	l := newLive(t)
	inbox, inDir := outbox(t)
	id := l.pay(1000, "ach_same_day")
	files := []ach.FileCreated{cutOne(t, l)}
	whole := returnFile(t, files[0], map[string]string{files[0].Entries[0].TraceNumber: "R03"})
	path := filepath.Join(inDir, "returns.ach")
	if err := os.WriteFile(path, whole[:len(whole)/2], 0o644); err != nil { // half written
		t.Fatal(err)
	}
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	if n, err := in.Poll(l.ctx); err != nil || n != 0 {
		t.Fatalf("Poll of half a file = %d, %v", n, err)
	}
	if err := os.WriteFile(path, whole, 0o644); err != nil { // the bank finishes
		t.Fatal(err)
	}
	if n, err := in.Poll(l.ctx); err != nil || n != 1 {
		t.Fatalf("Poll of the whole file = %d, %v", n, err)
	}
	if p := l.payment(id); p.Status != payment.StatusFailed {
		t.Errorf("payment %s after its return", p.Status)
	}
	if _, err := os.Stat(filepath.Join(inDir, bank.Rejected, "returns.ach")); err == nil {
		t.Error("the file was set aside as malformed")
	}
}

// A debit to a virtual account is returned R20 (no debits) in the next
// file, the rest of its file applied; a file with an entry of a code not
// taken (a general-ledger credit) is left in the inbox, untouched:
// recorded as applied, it would be skipped for good, and what the bank
// sent lost.
func TestACHInboundDebitsAreReturnedAndUnknownCodesWait(t *testing.T) {
	l := newLive(t)
	inbox, inDir := outbox(t)
	id := l.pay(1000, "ach_same_day")
	f := cutOne(t, l)
	file, err := nacha.Parse(returnFile(t, f, map[string]string{f.Entries[0].TraceNumber: "R03"}))
	if err != nil {
		t.Fatal(err)
	}
	debit := nacha.Batch{Header: file.Batches[0].Header, Entries: []nacha.Entry{{TransactionCode: nacha.CheckingDebit,
		RDFI: "11000000", CheckDigit: '0', AccountNumber: l.accountNumber(), Amount: 5000, Name: "PAYER INC",
		TraceNumber: "011000010000099"}}}
	debit.Header.ServiceClass, debit.Header.Number = nacha.DebitsOnly, 2
	withDebit := file
	withDebit.Batches = append(slices.Clone(file.Batches), debit)
	ledger := debit
	ledger.Entries = []nacha.Entry{debit.Entries[0]}
	ledger.Entries[0].TransactionCode, ledger.Header.ServiceClass = 42, nacha.CreditsOnly // a general-ledger credit
	withLedger := file
	withLedger.Batches = append(slices.Clone(file.Batches), ledger)
	for name, f := range map[string]nacha.File{"debit.ach": withDebit, "ledger.ach": withLedger} {
		data, err := nacha.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := inbox.Put(l.ctx, name, data); err != nil {
			t.Fatal(err)
		}
	}
	before := l.balance()
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	for range 2 { // and again at the next poll
		if _, err := in.Poll(l.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(inDir, "ledger.ach")); err != nil {
		t.Errorf("the file with a code not taken left the inbox: %v", err)
	}
	if _, err := os.Stat(filepath.Join(inDir, bank.Processed, "debit.ach")); err != nil {
		t.Errorf("the file with a debit was not applied: %v", err)
	}
	if p := l.payment(id); p.Status != payment.StatusFailed {
		t.Errorf("its return was not applied: %s", p.Status)
	}
	if b := l.balance(); b.Posted != before.Posted {
		t.Errorf("the debit moved the balance: %+v → %+v", before, b)
	}
	next := cutOne(t, l)
	raw, err := bank.ACHFile(next)
	if err != nil {
		t.Fatal(err)
	}
	out, err := nacha.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(next.Returns) != 1 || next.Returns[0].Code != "R20" || len(out.Batches) != 1 ||
		out.Batches[0].Header.ServiceClass != nacha.DebitsOnly || out.Batches[0].Entries[0].TransactionCode != nacha.CheckingDebitReturn {
		t.Fatalf("the next file: %+v", out.Batches)
	}
	if c := out.Control(); c.TotalDebit != 5000 || c.TotalCredit != 0 || next.TotalCredit() != 0 {
		t.Errorf("the file's totals: %+v; TotalCredit %d", c, next.TotalCredit())
	}
}

// creditFile is a file of credits forwarded by the bank: one CCD batch
// from PAYROLL CO at the bank 01100001, effective today, an entry for each
// account number.
func creditFile(t *testing.T, credits ...nacha.Entry) []byte {
	t.Helper()
	return creditFileOf(t, time.Now().In(rails.Eastern), 'A', credits...)
}

// creditFileOf is creditFile effective on a date, with a file id modifier.
func creditFileOf(t *testing.T, effective time.Time, modifier byte, credits ...nacha.Entry) []byte {
	t.Helper()
	b := nacha.Batch{Header: nacha.BatchHeader{ServiceClass: nacha.CreditsOnly, CompanyName: "PAYROLL CO",
		CompanyID: "9876543210", SEC: "CCD", EntryDescription: "PAYROLL", EffectiveDate: effective, SettlementDate: "331",
		OriginatorStatus: '1', ODFI: "01100001", Number: 1}}
	for i, c := range credits {
		c.RDFI, c.CheckDigit = "11000000", '0'
		if c.TransactionCode == 0 {
			c.TransactionCode = nacha.CheckingCredit
		}
		c.Name, c.IdentificationNumber = "ACME WIDGETS", fmt.Sprintf("INV%04d", i+1)
		c.TraceNumber = fmt.Sprintf("01100001%07d", i+1)
		b.Entries = append(b.Entries, c)
	}
	data, err := nacha.Marshal(nacha.File{Header: nacha.FileHeader{ImmediateDestination: "110000000",
		ImmediateOrigin: "011000015", CreatedAt: time.Now(), IDModifier: modifier}, Batches: []nacha.Batch{b}})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// Credits to live virtual accounts become completed inbound transfers,
// posted at once; an unknown account number is owed back R03, a closed
// account R02, and the next file carries those returns, once. The file
// is applied once, however often it comes.
func TestACHInboundCreditsLiveAccountsAndReturnsTheRest(t *testing.T) {
	l := newLive(t)
	inbox, _ := outbox(t)
	closed, err := l.a.OpenVirtualAccount(l.ctx, app.Meta{}, nil, l.c, app.OpenVirtualAccount{PlatformID: l.c.PlatformID, EntityRef: "biz_2", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	closedView, err := queries.GetVirtualAccount(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Live}, closed.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.a.CloseVirtualAccount(l.ctx, app.Meta{}, l.c, closed.ID); err != nil {
		t.Fatal(err)
	}
	data := creditFile(t,
		nacha.Entry{AccountNumber: l.accountNumber(), Amount: 5000},
		nacha.Entry{AccountNumber: "999999999999", Amount: 700},
		nacha.Entry{AccountNumber: closedView.AccountNumber, Amount: 800},
		nacha.Entry{AccountNumber: l.accountNumber(), Amount: 1200},
		nacha.Entry{AccountNumber: "999999999998", TransactionCode: nacha.CheckingPrenote},
	)
	before := l.balance()
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	for _, name := range []string{"credits.ach", "credits-again.ach"} { // the same file twice
		if err := inbox.Put(l.ctx, name, data); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Poll(l.ctx); err != nil {
			t.Fatal(err)
		}
	}
	after := l.balance()
	if after.Posted-before.Posted != 6200 || after.Available-before.Available != 6200 {
		t.Errorf("balance %+v → %+v: want 62.00 more, posted", before, after)
	}
	var transfers []string
	rows, _ := l.a.Pool.Query(l.ctx, `SELECT id FROM inbound_transfers WHERE virtual_account_id = $1 ORDER BY amount`, l.va)
	for rows.Next() {
		var id string
		rows.Scan(&id)
		transfers = append(transfers, id)
	}
	if len(transfers) != 2 {
		t.Fatalf("%d inbound transfers, want 2", len(transfers))
	}
	it, err := queries.GetInboundTransfer(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Live}, transfers[0])
	if err != nil || it.Status != "completed" || it.Amount != 1200 || it.Originator.Name != "PAYROLL CO" ||
		it.Originator.RoutingNumber != "011000015" {
		t.Errorf("inbound transfer %+v, %v", it, err)
	}

	f := cutOne(t, l)
	if len(f.Entries) != 0 || len(f.Returns) != 3 {
		t.Fatalf("the next file: %d entries, %d returns; want the 3 returns", len(f.Entries), len(f.Returns))
	}
	raw, err := bank.ACHFile(f)
	if err != nil {
		t.Fatal(err)
	}
	file, err := nacha.Parse(raw) // the independent reader checks every count and total
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"011000010000002": "R03", "011000010000003": "R02", "011000010000005": "R03"}
	got := map[string]string{}
	for _, b := range file.Batches {
		if b.Header.CompanyName != "PAYROLL CO" || b.Header.SEC != "CCD" {
			t.Errorf("return batch header %+v: the credit's company, not ours", b.Header)
		}
		for _, e := range b.Entries {
			if e.TransactionCode != nacha.CheckingReturn || e.RDFI != "01100001" || e.CheckDigit != '5' || e.Addenda == nil {
				t.Errorf("return entry %+v", e)
				continue
			}
			got[e.Addenda.OriginalTrace] = e.Addenda.Code
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("returns %v, want %v", got, want)
	}
	if c := file.Control(); c.TotalCredit != 1500 || c.EntryAddendaCount != 6 {
		t.Errorf("file control %+v: 3 returns of 15.00 with their addenda", c)
	}
	// Paid, they are owed no more.
	l.pay(1000, "ach_same_day")
	if f := cutOne(t, l); len(f.Returns) != 0 || len(f.Entries) != 1 {
		t.Errorf("the file after: %d entries, %d returns", len(f.Entries), len(f.Returns))
	}
	if diffs, _, err := rebuild.CompareWithLog(l.ctx, l.a.Pool); err != nil || len(diffs) != 0 {
		t.Errorf("the projections differ from the log: %+v, %v", diffs, err)
	}
}

// A trace number's sequence starts again each ACH day, so payments of two
// days share trace numbers: the second day's cut is not refused, and a
// return names its payment by trace, account number and amount.
func TestACHInboundTraceNumbersRepeatFromDayToDay(t *testing.T) {
	l := newLive(t)
	inbox, _ := outbox(t)
	yesterday, today := l.pay(1000, "ach_same_day"), ""
	first := cutOne(t, l)
	today = l.pay(2000, "ach_same_day")
	second := cutOne(t, l)
	// As if the second file were cut the next day: its sequence starts at 1
	// again. (The projection is set by hand: one process cannot cut on two
	// days within a test.)
	trace := first.Entries[0].TraceNumber
	if _, err := l.a.Pool.Exec(l.ctx, `UPDATE payments SET trace_number = $1 WHERE id = $2`, trace, today); err != nil {
		t.Fatalf("a second day's payment with the first day's trace number: %v", err)
	}
	second.Entries[0].TraceNumber = trace
	if err := inbox.Put(l.ctx, "returns.ach", returnFile(t, second, map[string]string{trace: "R03"})); err != nil {
		t.Fatal(err)
	}
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	if n, err := in.Poll(l.ctx); err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	if p := l.payment(today); p.Status != payment.StatusFailed || p.Failure == nil || p.Failure.NetworkCode != "R03" {
		t.Errorf("the returned payment (today's, 20.00): %s %+v", p.Status, p.Failure)
	}
	if p := l.payment(yesterday); p.Status != payment.StatusSubmitted {
		t.Errorf("yesterday's payment of the same trace number (10.00) is %s", p.Status)
	}
}

// The bank sends a file again with new bytes (another modifier, the same
// entries): its credits, applied or returned from the first, are not
// applied or returned twice.
func TestACHInboundCreditSentAgainInAnotherFile(t *testing.T) {
	l := newLive(t)
	inbox, _ := outbox(t)
	entries := []nacha.Entry{{AccountNumber: l.accountNumber(), Amount: 5000}, {AccountNumber: "999999999999", Amount: 700}}
	before := l.balance()
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	for i, modifier := range []byte{'A', 'B'} {
		if err := inbox.Put(l.ctx, fmt.Sprintf("credits-%d.ach", i), creditFileOf(t, time.Now().In(rails.Eastern), modifier, entries...)); err != nil {
			t.Fatal(err)
		}
		if n, err := in.Poll(l.ctx); err != nil || n != 1 {
			t.Fatalf("Poll %d = %d, %v", i, n, err)
		}
	}
	if got := l.balance().Posted - before.Posted; got != 5000 {
		t.Errorf("credited %d, want 5000 once", got)
	}
	if f := cutOne(t, l); len(f.Returns) != 1 {
		t.Errorf("%d returns in the next file, want the unknown account's once", len(f.Returns))
	}
	var duplicates int
	if err := l.a.Pool.QueryRow(l.ctx, `SELECT sum((data->>'duplicates')::int) FROM events WHERE event_type = 'ach.inbound_file_applied'`).Scan(&duplicates); err != nil || duplicates != 2 {
		t.Errorf("duplicates recorded: %d, %v", duplicates, err)
	}
}

// A credit the bank forwards before its effective date is pending until
// then (pending_inbound, not available), and posts once it has come.
func TestACHInboundCreditPendingUntilItsEffectiveDate(t *testing.T) {
	l := newLive(t)
	inbox, _ := outbox(t)
	before := l.balance()
	effective := time.Now().In(rails.Eastern).AddDate(0, 0, 3)
	if err := inbox.Put(l.ctx, "future.ach", creditFileOf(t, effective, 'A', nacha.Entry{AccountNumber: l.accountNumber(), Amount: 5000})); err != nil {
		t.Fatal(err)
	}
	in := &bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}
	if n, err := in.Poll(l.ctx); err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	b := l.balance()
	if b.PendingInbound-before.PendingInbound != 5000 || b.Available != before.Available || b.Posted != before.Posted {
		t.Errorf("before its date: %+v → %+v, want 50.00 pending inbound, not available", before, b)
	}
	if n, err := l.a.CompleteSettledACHCredits(l.ctx, app.Meta{}, time.Now()); err != nil || n != 0 {
		t.Errorf("posted %d before its date, %v", n, err)
	}
	settles := time.Date(effective.Year(), effective.Month(), effective.Day(), 8, 30, 0, 0, rails.Eastern)
	if n, err := l.a.CompleteSettledACHCredits(l.ctx, app.Meta{}, settles); err != nil || n != 1 {
		t.Fatalf("at 08:30 ET on its date: posted %d, %v", n, err)
	}
	if b := l.balance(); b.Posted-before.Posted != 5000 || b.PendingInbound != before.PendingInbound {
		t.Errorf("after its date: %+v", b)
	}
}

// Live and sandbox stay apart: a credit to the number of a sandbox
// account (account numbers are unique per environment only) finds no live
// account, credits nothing and is returned R03.
func TestACHInboundCreditToASandboxAccountNumberIsReturned(t *testing.T) {
	l := newLive(t)
	inbox, _ := outbox(t)
	sandbox := app.Caller{PlatformID: l.c.PlatformID, Environment: domain.Sandbox}
	open, err := l.a.OpenVirtualAccount(l.ctx, app.Meta{}, nil, sandbox, app.OpenVirtualAccount{PlatformID: l.c.PlatformID, EntityRef: "biz_s", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	view, err := queries.GetVirtualAccount(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Sandbox}, open.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := inbox.Put(l.ctx, "credit.ach", creditFile(t, nacha.Entry{AccountNumber: view.AccountNumber, Amount: 900})); err != nil {
		t.Fatal(err)
	}
	if n, err := (&bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}).Poll(l.ctx); err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	after, err := queries.GetVirtualAccount(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Sandbox}, open.ID)
	if err != nil || after.Balance != view.Balance {
		t.Errorf("the sandbox account moved: %+v → %+v, %v", view.Balance, after.Balance, err)
	}
	if f := cutOne(t, l); len(f.Returns) != 1 || f.Returns[0].Code != "R03" {
		t.Errorf("returns in the next file: %+v, want one R03", f.Returns)
	}
}

// The bank's return of a prenote (a zero-dollar entry) fails the
// counterparty it verified, with the return's code; a prenote not
// returned is verified once its entry settles; a notification of change
// of a prenote changes nothing.
func TestACHInboundReturnOfAPrenoteFailsItsCounterparty(t *testing.T) {
	l := newLive(t)
	cp := func(account string) string {
		res, err := l.a.CreateCounterparty(l.ctx, app.Meta{}, nil, l.c, counterparty.Request{Name: "Initech LLC",
			AccountNumber: account, RoutingNumber: "011000015", AccountType: counterparty.AccountChecking})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.a.VerifyCounterparty(l.ctx, app.Meta{}, l.c, res.ID, counterparty.MethodPrenote); err != nil {
			t.Fatal(err)
		}
		return res.ID
	}
	returned, kept := cp("4000000003"), cp("987654321")
	paid := l.pay(1000, "ach_same_day")
	f := cutOne(t, l)
	trace := map[string]string{}
	for _, e := range f.Entries {
		trace[e.Ref()] = e.TraceNumber
	}
	if len(f.Entries) != 3 || trace[returned] == "" || trace[kept] == "" || trace[paid] == "" {
		t.Fatalf("the file's entries: %+v", f.Entries)
	}
	inbox, _ := outbox(t)
	// With the return, a notification of change of the other prenote: not
	// applied (a counterparty is corrected by saving a new one).
	answer := bankFile(t, f, map[string]string{trace[returned]: "R03"}, map[string][2]string{trace[kept]: {"C01", "4000000099"}})
	if err := inbox.Put(l.ctx, "returns.ach", answer); err != nil {
		t.Fatal(err)
	}
	if n, err := (&bank.ACHInbound{App: l.a, Inbox: inbox, Log: discard}).Poll(l.ctx); err != nil || n != 1 {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	status := func(id string) queries.VerificationView {
		v, err := queries.GetCounterparty(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Live}, id)
		if err != nil {
			t.Fatal(err)
		}
		return v.Verification
	}
	if v := status(returned); v.Status != counterparty.StatusFailed || v.FailureCode != "R03" {
		t.Errorf("the returned prenote's counterparty: %+v", v)
	}
	if v := status(kept); v.Status != counterparty.StatusPending {
		t.Errorf("the other, before its settlement: %+v", v)
	}
	if p := l.payment(paid); p.Status != payment.StatusSubmitted || p.NotificationOfChange != nil {
		t.Errorf("the payment in the same file: %s, change %+v", p.Status, p.NotificationOfChange)
	}
	if n, err := l.a.VerifySettledPrenotes(l.ctx, app.Meta{}, f.Entries[0].SettlesAt); err != nil || n != 1 {
		t.Fatalf("VerifySettledPrenotes = %d, %v", n, err)
	}
	if v := status(kept); v.Status != counterparty.StatusVerified {
		t.Errorf("the other, after its settlement: %+v", v)
	}
}
