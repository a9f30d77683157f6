package bank_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank"
	"github.com/opentreasury/treasury/bank/nacha"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections/queries"
)

var originator = ach.Originator{RoutingNumber: "021000021", Origin: "1234567890", CompanyID: "1234567890", CompanyName: "TREASURY"}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// live is a live platform with an approved, funded account, on a fresh
// database.
type live struct {
	t   *testing.T
	ctx context.Context
	a   *app.App
	c   app.Caller
	va  string
}

func newLive(t *testing.T) *live {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	a := app.New(pgtest.Pool(t), nil, discard)
	must := func(_ app.Result, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	res, err := a.RegisterPlatform(ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Acme", ContactEmail: "ops@acme.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	must(a.ApprovePlatform(ctx, app.Meta{}, res.ID))
	must(a.EnableLive(ctx, app.Meta{}, res.ID))
	c := app.Caller{PlatformID: res.ID, Environment: domain.Live}
	open, err := a.OpenVirtualAccount(ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: c.PlatformID, EntityRef: "biz_1", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	addr := kyb.Address{Line1: "1 Main Street", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}
	sub, err := a.SubmitKYB(ctx, app.Meta{}, nil, c, open.ID, kyb.Submission{
		Business: kyb.Business{LegalName: "Acme Widgets LLC", EIN: "12-3456789", EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE", Address: addr},
		BeneficialOwner: []kyb.Owner{{FirstName: "Jane", LastName: "Roe", DateOfBirth: "1980-05-17", SSNLast4: "1234",
			OwnershipPercentage: decimal.NewFromInt(60), IsControlPerson: true, Address: addr}},
	})
	if err != nil {
		t.Fatal(err)
	}
	head, err := eventstore.Head(ctx, a.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.KYBDecider(nil).CatchUpTo(ctx, head); err != nil { // live: to the review queue
		t.Fatal(err)
	}
	if err := a.DecideKYB(ctx, app.Meta{Actor: "operator"}, nil, kyb.Decide{VerificationID: sub.ID,
		Outcome: kyb.StatusApproved, Method: kyb.MethodManual, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	funds := int64(1_000_000)
	must(a.FundPlatform(ctx, app.Meta{}, nil, app.FundPlatform{PlatformID: c.PlatformID, Environment: domain.Live, Amount: &funds}))
	must(a.PostJournalEntry(ctx, app.Meta{}, nil, c, app.PostJournalEntry{Type: ledger.TypeAdjustment, Description: "funds",
		VirtualAccountID: open.ID, Direction: "credit", Amount: &funds}))
	return &live{t: t, ctx: ctx, a: a, c: c, va: open.ID}
}

func (l *live) pay(amount int64, rail string) string {
	l.t.Helper()
	key := domain.NewID("k_")
	res, err := l.a.CreatePayment(l.ctx, app.Meta{}, &app.Idempotency{Scope: l.c.PlatformID, Environment: "live", Key: key,
		Operation: "create_payment", RequestHash: key}, l.c, payment.Request{VirtualAccountID: l.va, Amount: amount, Rail: rail,
		Destination: payment.Destination{AccountNumber: "123456789", RoutingNumber: "011000015", Name: "Initech LLC"}})
	if err != nil {
		l.t.Fatal(err)
	}
	return res.ID
}

func (l *live) balance() queries.BalanceView {
	l.t.Helper()
	v, err := queries.GetVirtualAccount(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Live}, l.va)
	if err != nil {
		l.t.Fatal(err)
	}
	return v.Balance
}

func (l *live) accountNumber() string {
	l.t.Helper()
	v, err := queries.GetVirtualAccount(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Live}, l.va)
	if err != nil {
		l.t.Fatal(err)
	}
	return v.AccountNumber
}

func (l *live) events() int {
	l.t.Helper()
	var n int
	if err := l.a.Pool.QueryRow(l.ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		l.t.Fatal(err)
	}
	return n
}

func (l *live) payment(id string) queries.PaymentView {
	l.t.Helper()
	p, err := queries.GetPayment(l.ctx, l.a.Pool, queries.Scope{PlatformID: l.c.PlatformID, Environment: domain.Live}, id)
	if err != nil {
		l.t.Fatal(err)
	}
	return p
}

// brokenFolder is an outbox whose Put fails: the process died, or the
// bank's server was down, before the file was written.
type brokenFolder struct{ transport.Folder }

func (brokenFolder) Put(context.Context, string, []byte) error { return errors.New("connection reset") }

func outbox(t *testing.T) (transport.Folder, string) {
	dir := t.TempDir()
	f, err := transport.Open("file://"+dir, transport.SFTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return f, dir
}

// readFiles reads every file of the outbox with nacha.Parse.
func readFiles(t *testing.T, dir string) map[string]nacha.File {
	t.Helper()
	out := map[string]nacha.File{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		f, err := nacha.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out[e.Name()] = f
	}
	return out
}

func TestACHOutboundSendsACutFile(t *testing.T) {
	l := newLive(t)
	folder, dir := outbox(t)
	o := &bank.ACHOutbound{App: l.a, Outbox: folder, Originator: originator, Log: discard}
	a, b := l.pay(1000, "ach_same_day"), l.pay(2500, "ach_standard")

	files, err := o.Cut(l.ctx, true)
	if err != nil || len(files) != 1 {
		t.Fatalf("Cut = %v, %v", files, err)
	}
	onDisk := readFiles(t, dir)
	got, ok := onDisk[files[0].Name]
	if len(onDisk) != 1 || !ok {
		t.Fatalf("the outbox holds %v", onDisk)
	}
	if c := got.Control(); c.TotalCredit != 3500 || c.EntryAddendaCount != 2 {
		t.Errorf("file control %+v", c)
	}
	for _, id := range []string{a, b} {
		p := l.payment(id)
		if p.Status != payment.StatusSubmitted || p.ACHFileID != files[0].ACHFileID || p.TraceNumber == "" {
			t.Errorf("payment %s: %s %q %q", id, p.Status, p.ACHFileID, p.TraceNumber)
		}
	}
	if left, _ := l.a.UntransmittedACHFiles(l.ctx); len(left) != 0 {
		t.Errorf("untransmitted after a cut: %v", left)
	}
	// Nothing waits: no file.
	if files, err := o.Cut(l.ctx, true); err != nil || len(files) != 0 {
		t.Fatalf("a cut with nothing pending = %v, %v", files, err)
	}
}

// The process dies after the cut committed, before the file is written:
// the payments are submitted, the file must still go out, and only once.
func TestACHOutboundRecoversAFileCutButNeverWritten(t *testing.T) {
	l := newLive(t)
	folder, dir := outbox(t)
	first := l.pay(1000, "ach_same_day")

	down := &bank.ACHOutbound{App: l.a, Outbox: brokenFolder{folder}, Originator: originator, Log: discard}
	files, err := down.Cut(l.ctx, false)
	if err == nil || len(files) != 1 {
		t.Fatalf("Cut with the outbox down = %v, %v", files, err)
	}
	if p := l.payment(first); p.Status != payment.StatusSubmitted {
		t.Fatalf("the cut committed, yet the payment is %s", p.Status)
	}
	if n := len(readFiles(t, dir)); n != 0 {
		t.Fatalf("%d files in the outbox", n)
	}

	// The next run: recovery writes the file before anything else, then
	// the cut takes only what came since.
	second := l.pay(2000, "ach_same_day")
	up := &bank.ACHOutbound{App: l.a, Outbox: folder, Originator: originator, Log: discard}
	more, err := up.Cut(l.ctx, false)
	if err != nil || len(more) != 1 || len(more[0].Entries) != 1 || more[0].Entries[0].PaymentID != second {
		t.Fatalf("Cut after recovery = %+v, %v", more, err)
	}
	onDisk := readFiles(t, dir)
	want, _ := bank.ACHFile(files[0])
	data, err := os.ReadFile(filepath.Join(dir, files[0].Name))
	if len(onDisk) != 2 || err != nil || !bytes.Equal(data, want) {
		t.Fatalf("outbox: %d files; the recovered one differs from its cut (%v)", len(onDisk), err)
	}
	if left, _ := l.a.UntransmittedACHFiles(l.ctx); len(left) != 0 {
		t.Errorf("untransmitted: %v", left)
	}
}

// The process dies after the file is in the outbox, before it is recorded:
// recovery writes the same bytes under the same name (the bank refuses the
// duplicate by its header), and the payments stay in that one file.
func TestACHOutboundRecoversAFileWrittenButNotRecorded(t *testing.T) {
	l := newLive(t)
	folder, dir := outbox(t)
	id := l.pay(1000, "ach_same_day")
	f, err := l.a.CutACHFile(l.ctx, app.Meta{}, originator, false) // step 1
	if err != nil || f == nil {
		t.Fatal(f, err)
	}
	data, err := bank.ACHFile(*f)
	if err != nil {
		t.Fatal(err)
	}
	if err := folder.Put(l.ctx, f.Name, data); err != nil { // step 2; the process dies here
		t.Fatal(err)
	}
	o := &bank.ACHOutbound{App: l.a, Outbox: folder, Originator: originator, Log: discard}
	n, err := o.Recover(l.ctx)
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, f.Name))
	if onDisk := readFiles(t, dir); len(onDisk) != 1 || !bytes.Equal(again, data) {
		t.Fatalf("the outbox holds %d files; the rewritten one equal: %v", len(onDisk), bytes.Equal(again, data))
	}
	if n, err := o.Recover(l.ctx); err != nil || n != 0 {
		t.Fatalf("a second Recover = %d, %v", n, err)
	}
	if p := l.payment(id); p.ACHFileID != f.ACHFileID {
		t.Errorf("payment in %q, want %q", p.ACHFileID, f.ACHFileID)
	}
	if files, err := o.Cut(l.ctx, true); err != nil || len(files) != 0 {
		t.Errorf("a cut after recovery = %v, %v (the payment went out already)", files, err)
	}
}

// Run recovers at once when it starts, before waiting for the next window.
func TestACHOutboundRunRecoversAtStart(t *testing.T) {
	l := newLive(t)
	folder, dir := outbox(t)
	l.pay(1000, "ach_same_day")
	down := &bank.ACHOutbound{App: l.a, Outbox: brokenFolder{folder}, Originator: originator, Log: discard}
	if _, err := down.Cut(l.ctx, false); err == nil {
		t.Fatal("the cut wrote to a broken outbox")
	}
	ctx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&bank.ACHOutbound{App: l.a, Outbox: folder, Originator: originator, Log: discard}).Run(ctx)
	}()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := l.a.UntransmittedACHFiles(l.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Run did not recover %d files in 30 s", len(left))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(readFiles(t, dir)); n != 1 {
		t.Errorf("%d files in the outbox", n)
	}
}
