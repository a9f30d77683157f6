package bank_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank"
	"github.com/opentreasury/treasury/bank/instant"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
)

const bankRouting = "021000021"

// syncBuffer is a log that workers write at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// instantBank is a live platform, the simulated bank behind an HTTP
// server (through wrap, if not nil: a proxy that misbehaves), and the
// connector.
type instantBank struct {
	*live
	sim *instant.SimulatedBank
	o   *bank.InstantOutbound
	log *syncBuffer

	mu     sync.Mutex
	msgIDs []string // the MsgId of every pacs.008 that reached the server
}

func newInstantBank(t *testing.T, wrap func(next http.Handler) http.Handler) *instantBank {
	t.Helper()
	ib := &instantBank{live: newLive(t), sim: instant.NewSimulatedBank("Bearer sim"), log: &syncBuffer{}}
	var h http.Handler = ib.sim
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if p, err := instant.ReadCreditTransfer(body); err == nil {
			ib.mu.Lock()
			ib.msgIDs = append(ib.msgIDs, p.ID)
			ib.mu.Unlock()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	client := &instant.Client{BaseURL: srv.URL, Auth: "Bearer sim", Timeout: 2 * time.Second, Attempts: 1}
	ib.o = &bank.InstantOutbound{App: ib.a, Client: client, Log: slog.New(slog.NewTextHandler(ib.log, nil)),
		RoutingNumber: bankRouting, Backoff: time.Millisecond}
	return ib
}

// sent is the MsgId of every pacs.008 that reached the bank's server.
func (ib *instantBank) sent() []string {
	ib.mu.Lock()
	defer ib.mu.Unlock()
	return append([]string(nil), ib.msgIDs...)
}

// payTo makes a live payment to an account number.
func (ib *instantBank) payTo(amount int64, rail, accountNumber string) string {
	ib.t.Helper()
	key := domain.NewID("k_")
	res, err := ib.a.CreatePayment(ib.ctx, app.Meta{}, &app.Idempotency{Scope: ib.c.PlatformID, Environment: "live", Key: key,
		Operation: "create_payment", RequestHash: key}, ib.c, payment.Request{VirtualAccountID: ib.va, Amount: amount, Rail: rail,
		Destination: payment.Destination{AccountNumber: accountNumber, RoutingNumber: "011000015", Name: "Initech LLC"}})
	if err != nil {
		ib.t.Fatal(err)
	}
	return res.ID
}

func (ib *instantBank) poll() int {
	ib.t.Helper()
	n, err := ib.o.Poll(ib.ctx)
	if err != nil {
		ib.t.Fatalf("Poll = %d, %v\nlog:\n%s", n, err, ib.log)
	}
	return n
}

func TestInstantOutboundCompletes(t *testing.T) {
	for _, rail := range []string{"rtp", "fednow"} {
		t.Run(rail, func(t *testing.T) {
			ib := newInstantBank(t, nil)
			before := ib.balance()
			id := ib.payTo(1234, rail, "123456789")
			if n := ib.poll(); n != 1 {
				t.Fatalf("Poll moved %d payments", n)
			}
			p := ib.payment(id)
			if p.Status != payment.StatusCompleted || p.SubmittedAt == nil || p.CompletedAt == nil {
				t.Fatalf("payment %s, submitted %v, completed %v", p.Status, p.SubmittedAt, p.CompletedAt)
			}
			after := ib.balance()
			if after.Posted != before.Posted-1234-p.Fee || after.PendingOutbound != 0 || after.Available != before.Available-1234-p.Fee {
				t.Errorf("balance %+v → %+v (fee %d)", before, after, p.Fee)
			}
			got, st, ok := ib.sim.Payment(id)
			if !ok || st.TxSts != "ACSC" || ib.sim.Payments() != 1 {
				t.Fatalf("the bank holds %+v %+v (%d payments)", got, st, ib.sim.Payments())
			}
			want := instant.Party{Name: "Acme Widgets LLC", AccountNumber: ib.accountNumber(), RoutingNumber: bankRouting}
			if got.Rail != rail || got.Amount != 1234 || got.Debtor != want ||
				got.Creditor != (instant.Party{Name: "Initech LLC", AccountNumber: "123456789", RoutingNumber: "011000015"}) {
				t.Errorf("the bank got %+v", got)
			}
			// Nothing in flight: the next pass sends nothing.
			if n := ib.poll(); n != 0 || ib.sim.Requests() != 1 {
				t.Errorf("a second pass moved %d, the bank read %d", n, ib.sim.Requests())
			}
		})
	}
}

func TestInstantOutboundRejects(t *testing.T) {
	ib := newInstantBank(t, nil)
	before := ib.balance()
	cases := []struct{ account, rail, network, code string }{
		{"4000000002", "rtp", "AC04", "account_closed"},
		{"4000000003", "fednow", "AC03", "no_account"},
		{"4000000004", "rtp", "AC02", "invalid_account_number"},
		{"4000000016", "fednow", "AC06", "account_frozen"},
		{"4000000023", "rtp", "CUST", "credit_refused"},
		{"4000009912", "rtp", "9912", "network_unavailable"},
		{"4000009912", "fednow", "E997", "network_unavailable"},
	}
	ids := make([]string, len(cases))
	for i, c := range cases {
		ids[i] = ib.payTo(1000, c.rail, c.account)
	}
	if n := ib.poll(); n != len(cases) {
		t.Fatalf("Poll moved %d of %d", n, len(cases))
	}
	for i, c := range cases {
		p := ib.payment(ids[i])
		if p.Status != payment.StatusFailed || p.Failure == nil || p.Failure.NetworkCode != c.network || p.Failure.Code != c.code {
			t.Errorf("%s on %s: %s %+v; want failed %s %s", c.account, c.rail, p.Status, p.Failure, c.network, c.code)
		}
	}
	if after := ib.balance(); after != before {
		t.Errorf("balance %+v → %+v: the holds were not all released", before, after)
	}
}

// The bank settles later: ACSP, then a pacs.028 finds it settled.
func TestInstantOutboundPendingThenCompleted(t *testing.T) {
	ib := newInstantBank(t, nil)
	id := ib.payTo(5000, "rtp", instant.PendingAccount)
	if n := ib.poll(); n != 1 {
		t.Fatalf("Poll moved %d", n)
	}
	if p := ib.payment(id); p.Status != payment.StatusSubmitted {
		t.Fatalf("after ACSP the payment is %s", p.Status)
	}
	time.Sleep(10 * time.Millisecond) // the backoff before the first pacs.028
	if n := ib.poll(); n != 1 {
		t.Fatalf("the second Poll moved %d\n%s", n, ib.log)
	}
	if p := ib.payment(id); p.Status != payment.StatusCompleted {
		t.Fatalf("after the pacs.028 the payment is %s", p.Status)
	}
	if ib.sim.Payments() != 1 || ib.sim.Requests() != 1 {
		t.Errorf("the bank took %d payments of %d pacs.008", ib.sim.Payments(), ib.sim.Requests())
	}
}

// A submitted payment is asked about with a growing backoff, not at
// every pass.
func TestInstantOutboundAsksWithBackoff(t *testing.T) {
	var asks []time.Time
	var mu sync.Mutex
	ib := newInstantBank(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/pacs.028") {
				mu.Lock()
				asks = append(asks, time.Now())
				mu.Unlock()
				http.Error(w, "try later", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	ib.o.Backoff = 50 * time.Millisecond
	id := ib.payTo(5000, "fednow", instant.PendingAccount)
	ib.poll()
	asked := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), asks...)
	}
	// A pass every 5 ms: without the backoff it would ask every 5 ms.
	deadline := time.Now().Add(10 * time.Second)
	for len(asked()) < 4 && time.Now().Before(deadline) {
		ib.o.Poll(ib.ctx)
		time.Sleep(5 * time.Millisecond)
	}
	got := asked()
	if len(got) < 4 {
		t.Fatalf("asked %d times in 10 s", len(got))
	}
	// The waits between questions: 50 ms doubling (a slow machine only
	// makes them longer).
	for i, least := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond} {
		if gap := got[i+2].Sub(got[i+1]); gap < least {
			t.Errorf("question %d came %s after the one before, want at least %s", i+3, gap, least)
		}
	}
	if p := ib.payment(id); p.Status != payment.StatusSubmitted {
		t.Errorf("the payment is %s", p.Status)
	}
}

// The bank's server answers 503 once, after the bank took the payment:
// the payment, submitted before it was sent, is asked about and
// completes, one payment at the bank.
func TestInstantOutboundBankDownThenUp(t *testing.T) {
	var calls int
	var mu sync.Mutex
	ib := newInstantBank(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			calls++
			first := calls == 1
			mu.Unlock()
			if first {
				next.ServeHTTP(httptest.NewRecorder(), r) // the bank takes it; its answer is lost
				http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	id := ib.payTo(2500, "rtp", "123456789")
	n, err := ib.o.Poll(ib.ctx)
	if n != 1 || err == nil || !instant.Retryable(err) {
		t.Fatalf("Poll with the bank down = %d, %v", n, err)
	}
	if p := ib.payment(id); p.Status != payment.StatusSubmitted {
		t.Fatalf("the payment is %s with no answer", p.Status)
	}
	if !strings.Contains(ib.log.String(), "did not answer") {
		t.Errorf("log:\n%s", ib.log)
	}
	time.Sleep(10 * time.Millisecond)
	if n := ib.poll(); n != 1 {
		t.Fatalf("Poll with the bank up moved %d", n)
	}
	if p := ib.payment(id); p.Status != payment.StatusCompleted {
		t.Fatalf("the payment is %s", p.Status)
	}
	sent := ib.sent()
	if len(sent) != 1 || sent[0] != id || ib.sim.Payments() != 1 {
		t.Errorf("MsgIds sent %v; the bank took %d payments", sent, ib.sim.Payments())
	}
}

// The process dies after the payment was recorded submitted, before it
// was sent: the bank answers the status request 404 (it never received
// it), and the connector sends it, once.
func TestInstantOutboundCrashBeforeTheSend(t *testing.T) {
	ib := newInstantBank(t, nil)
	id := ib.payTo(4100, "rtp", "123456789")
	if err := ib.a.SubmitPayment(ib.ctx, app.Meta{}, id); err != nil { // then the crash
		t.Fatal(err)
	}
	if n := ib.poll(); n != 1 {
		t.Fatalf("Poll moved %d", n)
	}
	if p := ib.payment(id); p.Status != payment.StatusCompleted {
		t.Fatalf("the payment is %s", p.Status)
	}
	if sent := ib.sent(); len(sent) != 1 || sent[0] != id || ib.sim.Payments() != 1 {
		t.Errorf("MsgIds sent %v; the bank took %d payments", sent, ib.sim.Payments())
	}
	if !strings.Contains(ib.log.String(), "does not know") {
		t.Errorf("log:\n%s", ib.log)
	}
}

// The process dies after the bank took the payment, before the answer was
// recorded: the next run sends it again, and the bank makes no second
// payment of it.
func TestInstantOutboundCrashAfterTheBankAccepted(t *testing.T) {
	ib := newInstantBank(t, nil)
	id := ib.payTo(7700, "fednow", "123456789")
	pays, err := ib.a.LiveInstantPayments(ib.ctx, 10)
	if err != nil || len(pays) != 1 || pays[0].ID != id {
		t.Fatalf("LiveInstantPayments = %+v, %v", pays, err)
	}
	p := pays[0]
	st, err := ib.o.Client.Send(ib.ctx, instant.Payment{ID: p.ID, Rail: p.Rail, Amount: p.Amount, CreatedAt: p.CreatedAt,
		Debtor:   instant.Party{Name: p.AccountHolder, AccountNumber: p.VirtualAccountNumber, RoutingNumber: bankRouting},
		Creditor: instant.Party{Name: p.DestinationName, AccountNumber: p.DestinationAccountNumber, RoutingNumber: p.DestinationRoutingNumber}})
	if err != nil || st.TxSts != "ACSC" {
		t.Fatalf("the first run's Send = %+v, %v", st, err)
	}
	// The crash: nothing recorded.
	if n := ib.poll(); n != 1 {
		t.Fatalf("Poll moved %d", n)
	}
	if got := ib.payment(id); got.Status != payment.StatusCompleted {
		t.Errorf("the payment is %s", got.Status)
	}
	if ib.sim.Payments() != 1 || ib.sim.Requests() != 2 {
		t.Errorf("the bank took %d payments of %d pacs.008", ib.sim.Payments(), ib.sim.Requests())
	}
}

// A sandbox payment belongs to the sandbox's simulator: never sent.
func TestInstantOutboundNeverSendsASandboxPayment(t *testing.T) {
	ib := newInstantBank(t, nil)
	ctx, a := ib.ctx, ib.a
	sc := app.Caller{PlatformID: ib.c.PlatformID, Environment: domain.Sandbox}
	open, err := a.OpenVirtualAccount(ctx, app.Meta{}, nil, sc, app.OpenVirtualAccount{PlatformID: sc.PlatformID, EntityRef: "biz_1", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	addr := kyb.Address{Line1: "1 Main Street", City: "Dover", State: "DE", PostalCode: "19901", Country: "US"}
	if _, err := a.SubmitKYB(ctx, app.Meta{}, nil, sc, open.ID, kyb.Submission{
		Business: kyb.Business{LegalName: "Acme Widgets LLC", EIN: "12-3456789", EntityType: "llc",
			FormationDate: "2015-03-01", FormationState: "DE", Address: addr},
		BeneficialOwner: []kyb.Owner{{FirstName: "Jane", LastName: "Roe", DateOfBirth: "1980-05-17", SSNLast4: "1234",
			OwnershipPercentage: decimal.NewFromInt(60), IsControlPerson: true, Address: addr}},
	}); err != nil {
		t.Fatal(err)
	}
	head, err := eventstore.Head(ctx, a.Pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.KYBDecider(nil).CatchUpTo(ctx, head); err != nil { // the sandbox approves
		t.Fatal(err)
	}
	funds := int64(100_000)
	if _, err := a.FundPlatform(ctx, app.Meta{}, nil, app.FundPlatform{PlatformID: sc.PlatformID, Environment: domain.Sandbox, Amount: &funds}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.PostJournalEntry(ctx, app.Meta{}, nil, sc, app.PostJournalEntry{Type: ledger.TypeAdjustment, Description: "funds",
		VirtualAccountID: open.ID, Direction: "credit", Amount: &funds}); err != nil {
		t.Fatal(err)
	}
	key := domain.NewID("k_")
	res, err := a.CreatePayment(ctx, app.Meta{}, &app.Idempotency{Scope: sc.PlatformID, Environment: "sandbox", Key: key,
		Operation: "create_payment", RequestHash: key}, sc, payment.Request{VirtualAccountID: open.ID, Amount: 1000, Rail: "rtp",
		Destination: payment.Destination{AccountNumber: "123456789", RoutingNumber: "011000015", Name: "Initech LLC"}})
	if err != nil {
		t.Fatal(err)
	}
	if pays, err := a.LiveInstantPayments(ctx, 10); err != nil || len(pays) != 0 {
		t.Errorf("LiveInstantPayments = %+v, %v", pays, err)
	}
	if n := ib.poll(); n != 0 || ib.sim.Requests() != 0 {
		t.Errorf("Poll moved %d; the bank read %d pacs.008 (sandbox payment %s)", n, ib.sim.Requests(), res.ID)
	}
}

// Answers the connector cannot apply change nothing and are logged.
func TestInstantOutboundRefusesBadAnswers(t *testing.T) {
	cases := map[string]struct {
		answer func(id string) string
		log    string
	}{
		"garbage": {func(string) string { return "<html>hello</html>" }, "refused"},
		"unknown status": {func(id string) string {
			return statusReport(id, instant.Status{TxSts: "ZZZZ", OriginalMsgID: id, OriginalEndToEndID: id})
		}, `unknown status \"ZZZZ\"`},
		"another payment": {func(id string) string {
			return statusReport(id, instant.Status{TxSts: "ACSC", OriginalMsgID: "pay_other", OriginalEndToEndID: "pay_other"})
		}, "not payment"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ib := newInstantBank(t, func(http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					p, _ := instant.ReadCreditTransfer(body)
					io.WriteString(w, c.answer(p.ID))
				})
			})
			id := ib.payTo(1000, "rtp", "123456789")
			events, balance := ib.events(), ib.balance()
			n, err := ib.o.Poll(ib.ctx)
			if n != 1 || err == nil {
				t.Fatalf("Poll = %d, %v", n, err)
			}
			// Submitted before it was sent (one event), and no more.
			if p := ib.payment(id); p.Status != payment.StatusSubmitted || ib.events() != events+1 || ib.balance() != balance {
				t.Errorf("payment %s; events %d → %d", p.Status, events, ib.events())
			}
			if log := ib.log.String(); !strings.Contains(log, c.log) || !strings.Contains(log, "level=ERROR") || !strings.Contains(log, id) {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}

// A rejection with a reason code the returns table does not know still
// fails the payment, as "unknown" with the bank's code: the bank has
// spoken, the money did not leave, and the hold must not stay forever.
func TestInstantOutboundUnknownReasonCodeFailsAsUnknown(t *testing.T) {
	ib := newInstantBank(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			p, _ := instant.ReadCreditTransfer(body)
			io.WriteString(w, statusReport(p.ID, instant.Status{TxSts: "RJCT", Reason: "ZZ99", OriginalMsgID: p.ID, OriginalEndToEndID: p.ID}))
		})
	})
	before := ib.balance()
	id := ib.payTo(1000, "fednow", "123456789")
	if n := ib.poll(); n != 1 {
		t.Fatalf("Poll moved %d", n)
	}
	p := ib.payment(id)
	if p.Status != payment.StatusFailed || p.Failure == nil || p.Failure.Code != "unknown" || p.Failure.NetworkCode != "ZZ99" {
		t.Fatalf("the payment: %s %+v", p.Status, p.Failure)
	}
	if after := ib.balance(); after != before {
		t.Errorf("the hold stayed: balance %+v → %+v", before, after)
	}
	if log := ib.log.String(); !strings.Contains(log, "not in the returns table") || !strings.Contains(log, "level=WARN") {
		t.Errorf("log:\n%s", log)
	}
}

func statusReport(id string, s instant.Status) string {
	b, err := instant.StatusReport("BANK1", s, time.Now())
	if err != nil {
		panic(err)
	}
	return string(b)
}

// The platform cancels a payment while its message is with the bank: the
// payment was submitted before it was sent, so the cancel is refused and
// the bank's answer applies — never money gone from a canceled payment.
// A payment canceled before the connector took it is never sent.
func TestInstantOutboundCanceledMeanwhile(t *testing.T) {
	for account, want := range map[string]string{"123456789": payment.StatusCompleted, instant.PendingAccount: payment.StatusSubmitted} {
		t.Run(account, func(t *testing.T) {
			var ib *instantBank
			ib = newInstantBank(t, func(next http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					if p, err := instant.ReadCreditTransfer(body); err == nil {
						var de *domain.Error
						if err := ib.a.CancelPayment(r.Context(), app.Meta{}, ib.c, p.ID); !errors.As(err, &de) || de.Code != domain.CodePaymentNotCancelable {
							t.Errorf("a cancel while the bank has the message: %v", err)
						}
					}
					r.Body = io.NopCloser(bytes.NewReader(body))
					next.ServeHTTP(w, r)
				})
			})
			id := ib.payTo(1000, "rtp", account)
			ib.o.Poll(ib.ctx)
			if p := ib.payment(id); p.Status != want {
				t.Errorf("the payment is %s, want %s", p.Status, want)
			}
		})
	}
	t.Run("canceled first", func(t *testing.T) {
		ib := newInstantBank(t, nil)
		id := ib.payTo(1000, "rtp", "123456789")
		if err := ib.a.CancelPayment(ib.ctx, app.Meta{}, ib.c, id); err != nil {
			t.Fatal(err)
		}
		if n := ib.poll(); n != 0 || ib.sim.Requests() != 0 {
			t.Errorf("Poll moved %d; the bank read %d messages", n, ib.sim.Requests())
		}
		if p := ib.payment(id); p.Status != payment.StatusCanceled {
			t.Errorf("the payment is %s", p.Status)
		}
	})
}

// Run: a slow answer holds no other payment, and a payment whose answer
// is slow is not sent again while it waits.
func TestInstantOutboundRunSendsConcurrently(t *testing.T) {
	release := make(chan struct{})
	var slowOnce sync.Once
	ib := newInstantBank(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if p, _ := instant.ReadCreditTransfer(body); p.Amount == 999 {
				<-release
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			next.ServeHTTP(w, r)
		})
	})
	ib.o.Client.Timeout = time.Minute
	slow := ib.payTo(999, "rtp", "123456789")
	ctx, cancel := context.WithCancel(ib.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ib.o.Run(ctx)
	}()
	defer func() { slowOnce.Do(func() { close(release) }); cancel(); <-done }()

	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in 20 s\n%s", what, ib.log)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitUntil("the slow payment sent", func() bool { return len(ib.sent()) == 1 })
	fast := ib.payTo(1000, "rtp", "123456789")
	ib.o.Wake()
	waitUntil("the fast payment completed", func() bool { return ib.payment(fast).Status == payment.StatusCompleted })
	time.Sleep(600 * time.Millisecond) // passes go by while the slow answer waits
	if p := ib.payment(slow); p.Status != payment.StatusSubmitted {
		t.Fatalf("the slow payment is %s", p.Status)
	}
	count := 0
	for _, id := range ib.sent() {
		if id == slow {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("the slow payment was sent %d times while its answer waited", count)
	}
	slowOnce.Do(func() { close(release) })
	waitUntil("the slow payment completed", func() bool { return ib.payment(slow).Status == payment.StatusCompleted })
	if ib.sim.Payments() != 2 {
		t.Errorf("the bank took %d payments", ib.sim.Payments())
	}
}

// The bank refuses the message itself (400): the payment fails FF01, its
// hold released, rather than being sent and refused for ever. A 401 (our
// credentials) fails nothing.
func TestInstantOutboundMessageRefused(t *testing.T) {
	for status, want := range map[int]string{http.StatusBadRequest: payment.StatusFailed, http.StatusUnauthorized: payment.StatusSubmitted} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			ib := newInstantBank(t, func(http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "no", status)
				})
			})
			before := ib.balance()
			id := ib.payTo(1000, "rtp", "123456789")
			ib.o.Poll(ib.ctx)
			p := ib.payment(id)
			if p.Status != want {
				t.Fatalf("the payment is %s, want %s", p.Status, want)
			}
			if want == payment.StatusFailed && (p.Failure == nil || p.Failure.NetworkCode != bank.MessageRefused || ib.balance() != before) {
				t.Errorf("failure %+v; balance %+v → %+v", p.Failure, before, ib.balance())
			}
		})
	}
}

// A payment submitted long ago that the bank does not know is not sent
// again (the bank may have forgotten a message it paid): it waits for a
// reconciliation, with an error log line.
func TestInstantOutboundDoesNotResendAnOldPayment(t *testing.T) {
	ib := newInstantBank(t, nil)
	id := ib.payTo(4100, "rtp", "123456789")
	if err := ib.a.SubmitPayment(ib.ctx, app.Meta{}, id); err != nil {
		t.Fatal(err)
	}
	// An hour ago. (Set on the read model the connector reads: a test
	// cannot wait an hour.)
	if _, err := ib.a.Pool.Exec(ib.ctx, `UPDATE payments SET submitted_at = now() - interval '1 hour' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if n, err := ib.o.Poll(ib.ctx); n != 0 || err == nil {
		t.Fatalf("Poll = %d, %v", n, err)
	}
	if len(ib.sent()) != 0 || ib.payment(id).Status != payment.StatusSubmitted {
		t.Errorf("sent %v; the payment is %s", ib.sent(), ib.payment(id).Status)
	}
	if !strings.Contains(ib.log.String(), "reconcile") {
		t.Errorf("log:\n%s", ib.log)
	}
}
