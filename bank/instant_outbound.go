package bank

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/instant"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/projections/queries"
)

// InstantOutbound sends live mode's RTP and FedNow payments to the sponsor
// bank's instant-payments API and applies its answers (API.md §10). A
// pending payment is first recorded submitted — handed to the rail, no
// longer cancelable — then sent (pacs.008); a submitted one is asked about
// (pacs.028) until the bank says it settled or rejected it.
//
// Submitting before sending closes a race: a payment still pending while
// its message is in flight could be canceled, and then settled by the
// bank, money gone from a canceled payment. A cancel that wins the race
// leaves nothing to send.
//
// The payment's id is the message's MsgId, and the bank deduplicates on
// it: a payment whose answer was lost (a timeout, a crash before the
// answer was recorded) is asked about, and one the bank never received (a
// crash between the submit and the send: the status request answers 404)
// is sent again, the same message. No request is made inside a
// transaction.
type InstantOutbound struct {
	App    *app.App
	Client *instant.Client
	Log    *slog.Logger
	// RoutingNumber is the sponsor bank's (TREASURY_ROUTING_NUMBER): the
	// debtor agent of every transfer.
	RoutingNumber string
	// Workers bounds the exchanges with the bank at once; 0: 8.
	Workers int
	// Backoff is the first wait before a payment is tried again (asked
	// about once the bank said it is settling it, or sent again after no
	// answer), doubled each time up to a minute; 0: 1 s.
	Backoff time.Duration

	once     sync.Once
	wake     chan struct{}
	sem      chan struct{}
	mu       sync.Mutex
	payments map[string]*instantState
	running  sync.WaitGroup
}

// instantState is what this process knows of a payment in flight.
type instantState struct {
	busy  bool          // an exchange with the bank is running: never two at once
	next  time.Time     // not tried before
	delay time.Duration // the last wait
	// ended is when the last exchange ended: a list read before it may
	// show the payment as it was before the answer.
	ended time.Time
}

// instantMeta is what the connector's commands record as their actor.
var instantMeta = app.Meta{Actor: "instant_connector"}

const (
	instantEvery    = 250 * time.Millisecond
	instantBatch    = 500 // payments read per pass
	instantMaxDelay = time.Minute
)

func (o *InstantOutbound) init() {
	o.once.Do(func() {
		n := o.Workers
		if n < 1 {
			n = 8
		}
		o.wake, o.sem, o.payments = make(chan struct{}, 1), make(chan struct{}, n), map[string]*instantState{}
	})
}

// Wake makes Run look for payments now (a live instant payment was
// created) rather than at its next tick.
func (o *InstantOutbound) Wake() {
	o.init()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Run sends and asks, every 250 ms and whenever woken, until ctx ends;
// then it waits for the exchanges under way. The exchanges run on their
// own (Workers at most): a slow answer holds up no other payment.
func (o *InstantOutbound) Run(ctx context.Context) {
	o.init()
	defer o.running.Wait()
	t := time.NewTicker(instantEvery)
	defer t.Stop()
	for {
		if _, err := o.pass(ctx, false); err != nil && ctx.Err() == nil {
			o.Log.Error("live instant payments not read: will try again", "err", err, "in", 5*time.Second)
			if !sleep(ctx, 5*time.Second) {
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-o.wake:
		}
	}
}

// Poll is one pass: it sends the pending payments and asks about the
// submitted ones that are due, waits for the answers, and says how many
// payments it moved (submitted, completed or failed). Its error joins
// those of the payments it left as they were (each also logged).
func (o *InstantOutbound) Poll(ctx context.Context) (int, error) {
	return o.pass(ctx, true)
}

func (o *InstantOutbound) pass(ctx context.Context, wait bool) (int, error) {
	o.init()
	if o.RoutingNumber == "" {
		return 0, errors.New("instant payments: no RoutingNumber (the debtor agent)")
	}
	listed := time.Now()
	pays, err := o.App.LiveInstantPayments(ctx, instantBatch)
	if err != nil {
		return 0, err
	}
	o.forget(pays, listed)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		moved int
		errs  []error
	)
dispatch:
	for _, p := range pays {
		if !o.claim(p.ID, listed) {
			continue
		}
		select {
		case o.sem <- struct{}{}:
		default:
			if !wait { // every worker busy: the next pass takes the rest
				o.release(p.ID)
				break dispatch
			}
			select {
			case o.sem <- struct{}{}:
			case <-ctx.Done():
				o.release(p.ID)
				break dispatch
			}
		}
		wg.Add(1)
		o.running.Add(1)
		go func() {
			defer func() { <-o.sem; o.release(p.ID); wg.Done(); o.running.Done() }()
			ok, err := o.exchange(ctx, p)
			mu.Lock()
			defer mu.Unlock()
			if ok {
				moved++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	if !wait {
		return 0, nil
	}
	wg.Wait()
	return moved, errors.Join(errs...)
}

// claim marks a payment busy if it is due, not busy, and the list that
// shows it was read after its last exchange ended.
func (o *InstantOutbound) claim(id string, listed time.Time) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.payments[id]
	if s == nil {
		s = &instantState{}
		o.payments[id] = s
	}
	if s.busy || listed.Before(s.ended) || time.Now().Before(s.next) {
		return false
	}
	s.busy = true
	return true
}

func (o *InstantOutbound) release(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if s := o.payments[id]; s != nil {
		s.busy, s.ended = false, time.Now()
	}
}

// retryLater makes a payment wait before it is tried again: first
// Backoff, then twice the last wait, up to a minute; restart begins again
// at Backoff.
func (o *InstantOutbound) retryLater(id string, restart bool) time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.payments[id]
	if s == nil {
		return 0
	}
	first := o.Backoff
	if first <= 0 {
		first = time.Second
	}
	if restart || s.delay == 0 {
		s.delay = first
	} else {
		s.delay = min(2*s.delay, instantMaxDelay)
	}
	s.next = time.Now().Add(s.delay)
	return s.delay
}

// forget drops what it knows of the payments no longer in flight.
func (o *InstantOutbound) forget(pays []app.InstantPayment, listed time.Time) {
	if len(pays) == instantBatch {
		return // the list is not all of them
	}
	in := make(map[string]bool, len(pays))
	for _, p := range pays {
		in[p.ID] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, s := range o.payments {
		if !in[id] && !s.busy && s.ended.Before(listed) {
			delete(o.payments, id)
		}
	}
}

// message is the payment's credit transfer: the same for every attempt.
func (o *InstantOutbound) message(p app.InstantPayment) instant.Payment {
	return instant.Payment{ID: p.ID, Rail: p.Rail, Amount: p.Amount, CreatedAt: p.CreatedAt,
		Debtor: instant.Party{Name: p.AccountHolder, AccountNumber: p.VirtualAccountNumber, RoutingNumber: o.RoutingNumber},
		Creditor: instant.Party{Name: p.DestinationName, AccountNumber: p.DestinationAccountNumber,
			RoutingNumber: p.DestinationRoutingNumber}}
}

// exchange sends a pending payment or asks about a submitted one, and
// applies the answer. It says whether the payment moved.
func (o *InstantOutbound) exchange(ctx context.Context, p app.InstantPayment) (bool, error) {
	var (
		st        instant.Status
		err       error
		submitted bool // by this exchange: the payment moved
	)
	switch {
	case p.Status == payment.StatusPending:
		if submitted, err = o.submit(ctx, p); err != nil || !submitted {
			return false, err
		}
		p.Status = payment.StatusSubmitted
		st, err = o.Client.Send(ctx, o.message(p))
	default:
		st, err = o.Client.Ask(ctx, p.ID)
		var unknown *instant.HTTPError
		if errors.As(err, &unknown) && unknown.StatusCode == http.StatusNotFound {
			if p.SubmittedAt == nil || time.Since(*p.SubmittedAt) > resendWithin {
				// Long after it was handed over, the bank may have forgotten
				// a message it did pay: sending it again could pay twice.
				wait := o.retryLater(p.ID, false)
				o.Log.Error("the bank does not know an instant payment submitted long ago: not sent again, reconcile with the bank",
					"payment_id", p.ID, "rail", p.Rail, "submitted_at", p.SubmittedAt, "again_in", wait)
				return false, fmt.Errorf("payment %s: unknown to the bank", p.ID)
			}
			// Submitted moments ago, never received: the process stopped
			// between the submit and the send.
			o.Log.Warn("the bank does not know a submitted instant payment: sending it", "payment_id", p.ID, "rail", p.Rail)
			st, err = o.Client.Send(ctx, o.message(p))
		}
	}
	if refused(err) {
		// The bank refused the message itself (400 or 422): the money did
		// not leave, and the same message would be refused again.
		st, err = instant.Status{TxSts: "RJCT", Reason: MessageRefused, OriginalMsgID: p.ID, OriginalEndToEndID: p.ID}, nil
		o.Log.Error("the bank refused an instant payment's message: the payment fails", "payment_id", p.ID, "rail", p.Rail)
	}
	if err != nil {
		wait := o.retryLater(p.ID, false)
		if ctx.Err() != nil {
			return false, err
		}
		msg := "the bank's answer about an instant payment is refused: the payment is left as it is"
		if instant.Retryable(err) {
			msg = "the bank did not answer about an instant payment: it is left as it is"
		}
		o.Log.Error(msg, "payment_id", p.ID, "rail", p.Rail, "status", p.Status, "err", err, "again_in", wait)
		return submitted, err
	}
	moved, err := o.apply(ctx, p, st)
	return moved || submitted, err
}

// resendWithin is how long after its submit a payment the bank does not
// know is sent (again): longer than any crash between the submit and the
// send, shorter than any bank's memory of the messages it took.
const resendWithin = 10 * time.Minute

// MessageRefused is the reason code a payment fails with when the bank
// refuses its message (ISO 20022 FF01, invalid file format).
const MessageRefused = "FF01"

// refused says whether the bank refused a message as such: a 400 or 422.
// Not 401 or 403, which are ours to fix (TREASURY_INSTANT_AUTH): failing
// every payment for them would be wrong.
func refused(err error) bool {
	var e *instant.HTTPError
	return errors.As(err, &e) && (e.StatusCode == http.StatusBadRequest || e.StatusCode == http.StatusUnprocessableEntity)
}

// submit records a pending payment submitted, before it is sent, and says
// whether it is: a payment canceled meanwhile is not, and is not sent.
func (o *InstantOutbound) submit(ctx context.Context, p app.InstantPayment) (bool, error) {
	if err := o.App.SubmitPayment(ctx, instantMeta, p.ID); err != nil {
		wait := o.retryLater(p.ID, false)
		o.Log.Error("an instant payment could not be submitted: not sent", "payment_id", p.ID, "err", err, "again_in", wait)
		return false, err
	}
	v, err := queries.GetPayment(ctx, o.App.Pool, queries.Scope{PlatformID: p.PlatformID, Environment: domain.Live}, p.ID)
	if err != nil {
		o.retryLater(p.ID, false)
		return false, err
	}
	if v.Status != payment.StatusSubmitted {
		o.Log.Info("an instant payment moved before it was sent: not sent", "payment_id", p.ID, "status", v.Status)
		return false, nil
	}
	return true, nil
}

// apply records the bank's answer about a payment.
func (o *InstantOutbound) apply(ctx context.Context, p app.InstantPayment, st instant.Status) (bool, error) {
	log := o.Log.With("payment_id", p.ID, "rail", p.Rail, "tx_sts", st.TxSts)
	switch st.Outcome() {
	case instant.Completed:
		if err := o.App.CompletePayment(ctx, instantMeta, nil, p.ID); err != nil {
			return false, o.notApplied(log, p, st, err)
		}
		log.Info("instant payment completed")
		return true, nil
	case instant.Rejected:
		log = log.With("reason", st.Reason)
		if r, _ := rails.Parse(p.Rail); !rails.KnownNetworkCode(r, st.Reason) {
			log.Warn("the bank rejected an instant payment with a reason code not in the returns table: failed as unknown")
		}
		if err := o.App.RejectPayment(ctx, instantMeta, p.ID, st.Reason); err != nil {
			return false, o.notApplied(log, p, st, err)
		}
		log.Info("instant payment rejected by the bank")
		return true, nil
	}
	// In progress: ask again later.
	o.retryLater(p.ID, false)
	log.Info("the bank is settling an instant payment")
	return false, nil
}

// notApplied logs an answer the payment did not take: the decider refused
// it (the payment was canceled, say, between the list and the answer) or
// the database failed (then it is tried again later).
func (o *InstantOutbound) notApplied(log *slog.Logger, p app.InstantPayment, st instant.Status, err error) error {
	wait := o.retryLater(p.ID, false)
	if errors.Is(err, &domain.Error{Code: domain.CodeInvalidState}) {
		if st.Outcome() == instant.Rejected {
			log.Warn("the bank rejected an instant payment that cannot fail any more", "err", err)
		} else {
			log.Error("the bank's answer does not apply to the instant payment: reconcile with the bank", "err", err)
		}
		return fmt.Errorf("payment %s: %s not applied: %w", p.ID, st.TxSts, err)
	}
	log.Error("the bank's answer about an instant payment is not recorded: it will be asked again", "err", err, "again_in", wait)
	return fmt.Errorf("payment %s: %s not recorded: %w", p.ID, st.TxSts, err)
}
