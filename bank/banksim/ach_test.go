package banksim_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/opentreasury/treasury/bank/banksim"
	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/bank/transport"
)

// folder is a file:// folder in a temporary directory.
func folder(t *testing.T) (transport.Folder, string) {
	t.Helper()
	dir := t.TempDir()
	f, err := transport.Open("file://"+dir, transport.SFTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// sim is a bank-sim on fresh outbox and inbox folders.
type sim struct {
	*banksim.ACH
	outDir, inDir string
}

func newSim(t *testing.T) *sim {
	t.Helper()
	out, outDir := folder(t)
	in, inDir := folder(t)
	accepted, err := transport.Open("file://"+filepath.Join(outDir, banksim.Accepted), transport.SFTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return &sim{ACH: &banksim.ACH{Outbox: out, Inbox: in, Accepted: accepted}, outDir: outDir, inDir: inDir}
}

// again is a second bank-sim on the same folders: a restarted one.
func (s *sim) again() *sim {
	return &sim{ACH: &banksim.ACH{Outbox: s.Outbox, Inbox: s.Inbox, Accepted: s.Accepted}, outDir: s.outDir, inDir: s.inDir}
}

func (s *sim) poll(t *testing.T, want int) {
	t.Helper()
	if n, err := s.Poll(context.Background()); err != nil || n != want {
		t.Fatalf("Poll = %d, %v; want %d", n, err, want)
	}
}

// files names the regular files of dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			names = append(names, e.Name())
		}
	}
	return names
}

func write(t *testing.T, dir, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	serviceODFI   = "11000000" // TREASURY_ROUTING_NUMBER's first 8 digits
	serviceOrigin = "1234567890"
	outName       = "ach-20261127-103000-A.ach"
)

var created = time.Date(2026, 11, 27, 10, 15, 0, 0, time.UTC)

// credit is an entry as the service writes it (bank/achfile.go).
func credit(seq int, account string, amount int64) nacha.Entry {
	return nacha.Entry{TransactionCode: nacha.CheckingCredit, RDFI: "02100002", CheckDigit: '1', AccountNumber: account,
		Amount: amount, IdentificationNumber: fmt.Sprintf("pay_%011d", seq), Name: "JANE DOE LLC",
		TraceNumber: fmt.Sprintf("%s%07d", serviceODFI, seq)}
}

// outbound is a file as the service writes it, a batch for each list of
// entries.
func outbound(t *testing.T, batches ...[]nacha.Entry) []byte {
	t.Helper()
	f := nacha.File{Header: nacha.FileHeader{ImmediateDestination: "110000000", ImmediateOrigin: serviceOrigin,
		CreatedAt: created, IDModifier: 'A', OriginName: "TREASURY"}}
	for i, entries := range batches {
		f.Batches = append(f.Batches, nacha.Batch{Header: nacha.BatchHeader{ServiceClass: nacha.CreditsOnly,
			CompanyName: "TREASURY", CompanyID: serviceOrigin, SEC: "CCD", EntryDescription: "PAYMENT",
			EffectiveDate: created, ODFI: serviceODFI, Number: i + 1}, Entries: entries})
	}
	data, err := nacha.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// answered reads the one answer in the inbox.
func answered(t *testing.T, s *sim) nacha.File {
	t.Helper()
	names := files(t, s.inDir)
	if len(names) != 1 || names[0] != banksim.AnswerName(outName) {
		t.Fatalf("inbox holds %v; want [%s]", names, banksim.AnswerName(outName))
	}
	data, err := os.ReadFile(filepath.Join(s.inDir, names[0]))
	if err != nil {
		t.Fatal(err)
	}
	f, err := nacha.Parse(data)
	if err != nil {
		t.Fatalf("the answer does not read: %v\n%s", err, data)
	}
	return f
}

func TestBankSimAnswersMagicNumbers(t *testing.T) {
	s := newSim(t)
	write(t, s.outDir, outName, outbound(t,
		[]nacha.Entry{credit(1, "123456789", 1000), credit(2, "4000000002", 2002), credit(3, "4000000003", 2003),
			credit(4, banksim.NOCAccount, 2098), credit(5, "4000009912", 2912)},
		[]nacha.Entry{credit(6, "4000000004", 2004), credit(7, "4000000016", 2016), credit(8, "4000000023", 2023),
			credit(9, "987654321", 3000)},
	))
	s.poll(t, 1)

	f := answered(t, s)
	if f.Header.ImmediateDestination != serviceOrigin || f.Header.ImmediateOrigin != banksim.DefaultRouting {
		t.Errorf("the answer's header: %+v", f.Header)
	}
	type answer struct {
		addenda, code, corrected string
		txCode                   int
		amount                   int64
	}
	got := map[string]answer{} // by original trace
	for _, b := range f.Batches {
		if b.Header.ODFI != "02100002" {
			t.Errorf("batch %d comes from %s, not the receiving bank", b.Header.Number, b.Header.ODFI)
		}
		for _, e := range b.Entries {
			a := e.Addenda
			if a == nil || (a.Type != nacha.AddendaReturn && a.Type != nacha.AddendaNOC) {
				t.Fatalf("entry %s is neither a return nor a change: the service would not apply the file", e.TraceNumber)
			}
			if wantSEC := map[string]string{nacha.AddendaReturn: "CCD", nacha.AddendaNOC: "COR"}[a.Type]; b.Header.SEC != wantSEC {
				t.Errorf("addenda %s in a %s batch", a.Type, b.Header.SEC)
			}
			if e.RDFI != serviceODFI || a.OriginalRDFI != "02100002" || a.TraceNumber != e.TraceNumber {
				t.Errorf("entry %s: RDFI %s, original RDFI %s, addenda trace %s", e.TraceNumber, e.RDFI, a.OriginalRDFI, a.TraceNumber)
			}
			if _, dup := got[a.OriginalTrace]; dup {
				t.Errorf("trace %s answered twice", a.OriginalTrace)
			}
			got[a.OriginalTrace] = answer{a.Type, a.Code, a.CorrectedData, e.TransactionCode, e.Amount}
		}
	}
	trace := func(seq int) string { return fmt.Sprintf("%s%07d", serviceODFI, seq) }
	want := map[string]answer{
		trace(2): {"99", "R02", "", 21, 2002},
		trace(3): {"99", "R03", "", 21, 2003},
		trace(4): {"98", "C01", banksim.CorrectedAccount, 21, 0},
		trace(6): {"99", "R04", "", 21, 2004},
		trace(7): {"99", "R16", "", 21, 2016},
		trace(8): {"99", "R23", "", 21, 2023},
	}
	if len(got) != len(want) {
		t.Errorf("%d entries answered, want %d: %+v", len(got), len(want), got)
	}
	for tr, w := range want {
		if got[tr] != w {
			t.Errorf("trace %s answered %+v, want %+v", tr, got[tr], w)
		}
	}
	if st := s.Stats(); st != (banksim.Stats{Files: 1, Returned: 5, Changed: 1, Settled: 4}) {
		t.Errorf("stats %+v", st)
	}
	if names := files(t, s.outDir); len(names) != 0 {
		t.Errorf("the outbox still holds %v", names)
	}
	if names := files(t, filepath.Join(s.outDir, banksim.Accepted)); len(names) != 1 || names[0] != outName {
		t.Errorf("accepted/ holds %v", names)
	}
	s.poll(t, 0)
}

// A prenote (a zero-dollar entry, 23, or 33 to a savings account) to a
// magic number is returned like a payment, with the zero amount and the
// return code of its account type (21, 31); any other settles unanswered.
func TestBankSimAnswersPrenotes(t *testing.T) {
	s := newSim(t)
	prenote := func(seq, code int, account string) nacha.Entry {
		e := credit(seq, account, 0)
		e.TransactionCode = code
		return e
	}
	write(t, s.outDir, outName, outbound(t, []nacha.Entry{
		prenote(1, nacha.CheckingPrenote, "4000000003"), prenote(2, nacha.SavingsPrenote, "4000000004"),
		prenote(3, nacha.CheckingPrenote, "123456789")}))
	s.poll(t, 1)
	got := map[string][3]any{}
	for _, b := range answered(t, s).Batches {
		for _, e := range b.Entries {
			got[e.Addenda.OriginalTrace] = [3]any{e.TransactionCode, e.Amount, e.Addenda.Code}
		}
	}
	trace := func(seq int) string { return fmt.Sprintf("%s%07d", serviceODFI, seq) }
	want := map[string][3]any{trace(1): {21, int64(0), "R03"}, trace(2): {31, int64(0), "R04"}}
	if len(got) != len(want) || got[trace(1)] != want[trace(1)] || got[trace(2)] != want[trace(2)] {
		t.Errorf("answers %v, want %v", got, want)
	}
	if st := s.Stats(); st != (banksim.Stats{Files: 1, Returned: 2, Settled: 1}) {
		t.Errorf("stats %+v", st)
	}
}

// The service writes a file again after a crash (same name, same bytes):
// it is answered once, by this bank-sim and by a restarted one.
func TestBankSimAnswersAFileOnce(t *testing.T) {
	s := newSim(t)
	data := outbound(t, []nacha.Entry{credit(1, "4000000003", 1000), credit(2, "123456789", 2000)})
	write(t, s.outDir, outName, data)
	s.poll(t, 1)
	answer, err := os.ReadFile(filepath.Join(s.inDir, banksim.AnswerName(outName)))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(s.inDir, banksim.AnswerName(outName))) // the service took it

	write(t, s.outDir, outName, data)
	s.poll(t, 0)
	restarted := s.again()
	write(t, s.outDir, outName, data)
	restarted.poll(t, 0)
	if names := files(t, s.inDir); len(names) != 0 {
		t.Errorf("a file sent again was answered again: %v", names)
	}
	if names := files(t, s.outDir); len(names) != 0 {
		t.Errorf("the outbox still holds %v", names)
	}
	if s.Stats().Duplicates != 1 || restarted.Stats().Duplicates != 1 {
		t.Errorf("duplicates %d, %d", s.Stats().Duplicates, restarted.Stats().Duplicates)
	}

	// Other bytes under an answered name are no file a bank takes.
	write(t, s.outDir, outName, outbound(t, []nacha.Entry{credit(1, "4000000002", 1000)}))
	restarted.poll(t, 0)
	if names := files(t, filepath.Join(s.outDir, banksim.Rejected)); len(names) != 1 {
		t.Errorf("rejected/ holds %v", names)
	}
	if names := files(t, s.inDir); len(names) != 0 {
		t.Errorf("answered: %v", names)
	}

	// The answer is the file's: another bank-sim answers the same bytes.
	other := newSim(t)
	write(t, other.outDir, outName, data)
	other.poll(t, 1)
	if again, _ := os.ReadFile(filepath.Join(other.inDir, banksim.AnswerName(outName))); !bytes.Equal(again, answer) {
		t.Errorf("the same file answered with other bytes:\n%s\n%s", answer, again)
	}
}

func TestBankSimSettlesWithoutAnswer(t *testing.T) {
	s := newSim(t)
	write(t, s.outDir, outName, outbound(t, []nacha.Entry{credit(1, "123456789", 1000), credit(2, "4000009912", 2000)}))
	s.poll(t, 1)
	if names := files(t, s.inDir); len(names) != 0 {
		t.Errorf("settled entries were answered: %v", names)
	}
	if st := s.Stats(); st.Settled != 2 || st.Files != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestBankSimRejectsBrokenFiles(t *testing.T) {
	s := newSim(t)
	write(t, s.outDir, "ach-20261127-103000-B.ach", []byte("not a NACHA file\n"))
	write(t, s.outDir, ".ach-20261127-103000-C.ach.1234.tmp", []byte("half a file")) // a Put under way
	write(t, s.outDir, "notes.txt", []byte("not the service's"))
	os.Mkdir(filepath.Join(s.outDir, "ach-sub.ach"), 0o755)
	s.poll(t, 0)
	// Perhaps still being copied in: set aside when the same bytes are
	// there at the next poll.
	if _, err := os.Stat(filepath.Join(s.outDir, "ach-20261127-103000-B.ach")); err != nil {
		t.Fatalf("set aside at first sight: %v", err)
	}
	s.poll(t, 0)
	if names := files(t, filepath.Join(s.outDir, banksim.Rejected)); len(names) != 1 || names[0] != "ach-20261127-103000-B.ach" {
		t.Errorf("rejected/ holds %v", names)
	}
	if names := files(t, s.outDir); len(names) != 2 {
		t.Errorf("the outbox holds %v; want the temporary file and notes.txt left alone", names)
	}
	if names := files(t, s.inDir); len(names) != 0 {
		t.Errorf("a broken file was answered: %v", names)
	}
	if s.Stats().Rejected != 1 {
		t.Errorf("stats %+v", s.Stats())
	}
}

// The service's own returns (credits it could not apply) are recorded,
// never answered, whatever their account number.
func TestBankSimRecordsTheServiceReturns(t *testing.T) {
	s := newSim(t)
	ret := nacha.Entry{TransactionCode: nacha.CheckingReturn, RDFI: "02100002", CheckDigit: '1', AccountNumber: "4000000002",
		Amount: 5000, IdentificationNumber: "BANKSIM0000001", Name: "ACME", TraceNumber: serviceODFI + "0000002",
		Addenda: &nacha.Addenda{Type: nacha.AddendaReturn, Code: "R03", OriginalTrace: "021000020000001",
			OriginalRDFI: serviceODFI, TraceNumber: serviceODFI + "0000002"}}
	write(t, s.outDir, outName, outbound(t, []nacha.Entry{credit(1, "123456789", 1000)}, []nacha.Entry{ret}))
	s.poll(t, 1)
	if names := files(t, s.inDir); len(names) != 0 {
		t.Errorf("the service's return was answered: %v", names)
	}
	got := s.ServiceReturns()
	if len(got) != 1 || got[0] != (banksim.ServiceReturn{File: outName, Addenda: "99", Code: "R03", OriginalTrace: "021000020000001",
		TraceNumber: serviceODFI + "0000002", AccountNumber: "4000000002", Amount: 5000}) {
		t.Errorf("service returns %+v", got)
	}
}

func TestBankSimCredit(t *testing.T) {
	s := newSim(t)
	s.Now = func() time.Time { return time.Date(2026, 11, 27, 15, 4, 5, 0, time.UTC) }
	ctx := context.Background()
	name, err := s.Credit(ctx,
		banksim.CreditRequest{AccountNumber: "110000000123", Amount: 12345, Name: "Initech LLC", OriginatorName: "Globex"},
		banksim.CreditRequest{AccountNumber: "999999999999", Amount: 500, OriginatorName: "Globex"})
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^credit-20261127-100405-1\.ach$`).MatchString(name) { // Eastern time
		t.Errorf("name %q", name)
	}
	data, err := os.ReadFile(filepath.Join(s.inDir, name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := nacha.Parse(data) // Parse checks every count, hash and total against the entries
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	c := f.Control()
	if len(f.Batches) != 1 || c.TotalCredit != 12845 || c.TotalDebit != 0 || c.EntryAddendaCount != 2 || c.EntryHash != 2*11000000 {
		t.Fatalf("%d batches, control %+v", len(f.Batches), c)
	}
	h := f.Batches[0].Header
	if h.ServiceClass != nacha.CreditsOnly || h.SEC != "CCD" || h.CompanyName != "GLOBEX" || h.ODFI != "02100002" {
		t.Errorf("batch header %+v", h)
	}
	traces := map[string]bool{}
	for i, e := range f.Batches[0].Entries {
		if e.TransactionCode != nacha.CheckingCredit || e.RDFI != "11000000" || e.CheckDigit != '0' || e.Addenda != nil {
			t.Errorf("entry %d: %+v", i, e)
		}
		if e.TraceNumber[:8] != "02100002" || traces[e.TraceNumber] {
			t.Errorf("entry %d: trace %s", i, e.TraceNumber)
		}
		traces[e.TraceNumber] = true
	}
	if e := f.Batches[0].Entries; e[0].AccountNumber != "110000000123" || e[0].Name != "INITECH LLC" || e[0].Amount != 12345 ||
		e[1].AccountNumber != "999999999999" || e[1].Name != banksim.DefaultReceiverName {
		t.Errorf("entries %+v", e)
	}

	// Another file of the same second: another name, other traces.
	name2, err := s.Credit(ctx, banksim.CreditRequest{AccountNumber: "110000000123", Amount: 1})
	if err != nil || name2 == name {
		t.Fatalf("second credit: %q, %v", name2, err)
	}
	data, _ = os.ReadFile(filepath.Join(s.inDir, name2))
	f2, err := nacha.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if tr := f2.Batches[0].Entries[0].TraceNumber; traces[tr] {
		t.Errorf("trace %s used again", tr)
	}

	for _, bad := range []banksim.CreditRequest{{AccountNumber: "", Amount: 1}, {AccountNumber: "1", Amount: 0},
		{AccountNumber: "123456789012345678", Amount: 1}} {
		if _, err := s.Credit(ctx, bad); err == nil {
			t.Errorf("Credit(%+v) = nil error", bad)
		}
	}
	if _, err := s.Credit(ctx); err == nil {
		t.Error("Credit() of nothing = nil error")
	}
}

func TestBankSimRun(t *testing.T) {
	s := newSim(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	write(t, s.outDir, outName, outbound(t, []nacha.Entry{credit(1, "4000000016", 1000)}))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(s.inDir, banksim.AnswerName(outName))); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if f := answered(t, s); f.Batches[0].Entries[0].Addenda.Code != "R16" {
		t.Errorf("answered %+v", f.Batches[0].Entries[0].Addenda)
	}
}
