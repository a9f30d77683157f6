package instant

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/opentreasury/treasury/domain/rails"
)

// PendingAccount is the simulator's destination account number whose
// payment is not settled at once: the pacs.008 is answered ACSP, and every
// pacs.028 after it ACSC.
const PendingAccount = "4000000090"

// SimulatedBank is the sponsor bank's instant-payments API as
// `treasury bank-sim` and the tests play it. It answers a pacs.008 by the
// sandbox's magic destination account numbers (API.md §5, through
// rails.SandboxOutcome): a rejection with the rail's reason code, or
// ACSC; PendingAccount is answered ACSP, then settled by the first
// pacs.028. It deduplicates on MsgId: the same MsgId again gets the first
// answer, and is never a second payment.
type SimulatedBank struct {
	auth string

	mu       sync.Mutex
	payments map[string]*simPayment // by MsgId
	requests int
}

type simPayment struct {
	Payment
	status Status // the latest
	first  []byte // the pacs.002 that answered the pacs.008
}

// NewSimulatedBank is a bank that takes requests whose Authorization
// header is auth.
func NewSimulatedBank(auth string) *SimulatedBank {
	return &SimulatedBank{auth: auth, payments: map[string]*simPayment{}}
}

// Payments is how many distinct payments (MsgIds) the bank took.
func (b *SimulatedBank) Payments() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.payments)
}

// Requests is how many pacs.008 the bank read, duplicates included.
func (b *SimulatedBank) Requests() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.requests
}

// Payment is the payment the bank took under this MsgId, and its latest
// status.
func (b *SimulatedBank) Payment(msgID string) (Payment, Status, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.payments[msgID]
	if !ok {
		return Payment{}, Status{}, false
	}
	return p.Payment, p.status, true
}

func (b *SimulatedBank) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(b.auth)) != 1 {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxAnswer))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var answer []byte
	switch {
	case strings.HasSuffix(r.URL.Path, "/pacs.008"):
		answer, err = b.transfer(body)
	case strings.HasSuffix(r.URL.Path, "/pacs.028"):
		answer, err = b.statusOf(body)
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errNoPayment) {
			code = http.StatusNotFound
		}
		http.Error(w, err.Error(), code)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Write(answer)
}

func (b *SimulatedBank) transfer(body []byte) ([]byte, error) {
	p, err := ReadCreditTransfer(body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests++
	if seen, ok := b.payments[p.ID]; ok {
		return seen.first, nil
	}
	r, ok := rails.Parse(p.Rail)
	if !ok || !rails.IsInstant(r) {
		return nil, fmt.Errorf("pacs.008: local instrument names no instant rail")
	}
	if p.Amount < 1 || p.Creditor.AccountNumber == "" {
		return nil, fmt.Errorf("pacs.008: no amount or no creditor account")
	}
	s := Status{TxSts: StatusSettled, OriginalMsgID: p.ID, OriginalEndToEndID: p.ID}
	switch code := rails.SandboxOutcome(r, p.Creditor.AccountNumber); {
	case code != "":
		s.TxSts, s.Reason = StatusRejected, code
	case p.Creditor.AccountNumber == PendingAccount:
		s.TxSts = StatusInProgress
	}
	answer, err := StatusReport(answerID(), s, time.Now())
	if err != nil {
		return nil, err
	}
	b.payments[p.ID] = &simPayment{Payment: p, status: s, first: answer}
	return answer, nil
}

var errNoPayment = errors.New("the bank has no payment")

func (b *SimulatedBank) statusOf(body []byte) ([]byte, error) {
	id, err := ReadStatusRequest(body)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	p, ok := b.payments[id]
	if !ok {
		return nil, fmt.Errorf("%w %s", errNoPayment, id)
	}
	if p.status.Outcome() == InProgress {
		p.status.TxSts = StatusSettled
	}
	return StatusReport(answerID(), p.status, time.Now())
}

var answerSeq struct {
	sync.Mutex
	n int
}

// answerID is a MsgId of the bank's own.
func answerID() string {
	answerSeq.Lock()
	defer answerSeq.Unlock()
	answerSeq.n++
	return fmt.Sprintf("SIM%s%06d", time.Now().UTC().Format("20060102150405"), answerSeq.n)
}
