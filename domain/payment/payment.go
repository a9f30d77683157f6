// Package payment is the payment aggregate: a transfer out of a virtual
// account over a rail. pending (amount + fee held) → submitted → completed
// (posted) | failed (hold released, or reversed if it had posted);
// pending → canceled. A payment at or above the platform's approval
// threshold starts requires_approval (held, not sent): → pending when a
// second key approves it, → denied, or → canceled (by the platform, or
// unapproved after ApprovalWindow). A payment scheduled for a later date
// starts scheduled (nothing held): on that date it is released — the
// rules run then, and it goes on as if created then — or fails with the
// rule it broke; it may be canceled until then.
package payment

import (
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// StreamType names payment streams.
const StreamType = "payment"

// StreamID is the stream of one payment.
func StreamID(id string) string { return "payment-" + id }

// Statuses.
const (
	StatusPending   = "pending"
	StatusSubmitted = "submitted"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCanceled  = "canceled"
	// StatusRequiresApproval: held, waiting for a second key (API.md §12).
	StatusRequiresApproval = "requires_approval"
	// StatusDenied: a key refused the approval; final, hold released.
	StatusDenied = "denied"
	// StatusScheduled: waiting for its date; nothing held (API.md §12).
	StatusScheduled = "scheduled"
)

// Statuses are every status a payment has, in the order one may reach
// them (the console's filter lists them so).
var Statuses = []string{StatusScheduled, StatusRequiresApproval, StatusPending, StatusSubmitted,
	StatusCompleted, StatusFailed, StatusCanceled, StatusDenied}

// Cancelable says whether a payment of this status can be canceled: not
// yet handed to a rail.
func Cancelable(status string) bool {
	return status == StatusPending || status == StatusRequiresApproval || status == StatusScheduled
}

// CancelReasonApprovalExpired is a Canceled payment's reason when no key
// approved it within ApprovalWindow.
const CancelReasonApprovalExpired = "approval_expired"

// Destination is where the money goes.
type Destination struct {
	AccountNumber string `json:"account_number"`
	RoutingNumber string `json:"routing_number"`
	Name          string `json:"name"`
}

// Limits of a payment request.
const (
	MaxDescriptionLen = 140
	MaxDestNameLen    = rails.MaxNameLen
)

// Request is a payment as the platform asked for it.
type Request struct {
	VirtualAccountID string
	Amount           int64
	Rail             string
	Destination      Destination
	// CounterpartyID, instead of Destination, names a saved counterparty
	// whose account the payment goes to (API.md §12): the command copies
	// its destination into Destination before deciding.
	CounterpartyID string
	Description    string
	Metadata       map[string]string
	// ScheduledFor, if set, is the date (YYYY-MM-DD, Eastern) the payment
	// is released on.
	ScheduledFor string
}

// CheckTarget refuses a request that names both a destination and a
// counterparty, or neither (400): a payment goes to exactly one.
func (r Request) CheckTarget() error {
	hasDest := r.Destination != (Destination{})
	if hasDest == (r.CounterpartyID != "") {
		return domain.Invalid("counterparty_id", "exactly one of destination and counterparty_id is required")
	}
	return nil
}

// Validate checks a request's fields (400): amount, rail and its limit,
// the destination, description and metadata.
func (r Request) Validate() (rails.Rail, error) {
	rail, ok := rails.Parse(r.Rail)
	if !ok {
		return rail, domain.Invalid("rail", "rail must be one of ach_standard, ach_same_day, rtp, fednow")
	}
	if err := rails.CheckAmount(rail, r.Amount); err != nil {
		return rail, err
	}
	d := r.Destination
	if r.CounterpartyID != "" {
		if !domain.HasPrefix(r.CounterpartyID, domain.PrefixCounterparty) {
			return rail, domain.Invalid("counterparty_id", "counterparty_id must be a cp_ id")
		}
	}
	if r.CounterpartyID == "" || d != (Destination{}) { // a counterparty's destination is copied in later
		if err := rails.CheckCounterparty("destination", d.AccountNumber, d.RoutingNumber, d.Name); err != nil {
			return rail, err
		}
	}
	if utf8.RuneCountInString(r.Description) > MaxDescriptionLen {
		return rail, domain.Invalid("description", "description must be at most %d characters", MaxDescriptionLen)
	}
	if r.ScheduledFor != "" {
		if _, err := time.ParseInLocation(time.DateOnly, r.ScheduledFor, rails.Eastern); err != nil {
			return rail, domain.Invalid("scheduled_for", "scheduled_for must be a date, YYYY-MM-DD")
		}
	}
	return rail, domain.ValidateMetadata("metadata", r.Metadata)
}

// Created: a payment was accepted and amount + fee are held.
type Created struct {
	PaymentID        string             `json:"payment_id"`
	PlatformID       string             `json:"platform_id"`
	Environment      domain.Environment `json:"environment"`
	VirtualAccountID string             `json:"virtual_account_id"`
	Amount           int64              `json:"amount"`
	Fee              int64              `json:"fee"`
	Rail             string             `json:"rail"`
	Destination      Destination        `json:"destination"`
	// CounterpartyID: the counterparty whose destination was copied (absent
	// for a payment to a raw destination).
	CounterpartyID       string            `json:"counterparty_id,omitempty"`
	IdempotencyKey       string            `json:"idempotency_key"`
	Description          string            `json:"description"`
	Metadata             map[string]string `json:"metadata"`
	JournalEntryID       string            `json:"journal_entry_id"`
	ExpectedSettlementAt time.Time         `json:"expected_settlement_at"`
	// RequiresApproval: an ApprovalRequired follows in the same append;
	// no rail may take the payment until it is approved.
	RequiresApproval bool `json:"requires_approval,omitempty"`
	// ScheduledFor, set on a scheduled payment (nothing held, no journal
	// entry yet), is its date; ReleaseAt the instant it is released
	// (06:00 Eastern that day); CreatedBy the key that scheduled it, which
	// may not approve it once released.
	ScheduledFor string     `json:"scheduled_for,omitempty"`
	ReleaseAt    *time.Time `json:"release_at,omitempty"`
	CreatedBy    string     `json:"created_by,omitempty"`
	At           time.Time  `json:"at"`
}

// Released: a scheduled payment's date came and it passed the rules:
// amount + fee are held under JournalEntryID and it is pending from now on
// (or, RequiresApproval, waits for its approval: an ApprovalRequired
// follows in the same append). Fee is the fee of the day of release.
type Released struct {
	JournalEntryID       string    `json:"journal_entry_id"`
	Fee                  int64     `json:"fee"`
	Rail                 string    `json:"rail"`
	ExpectedSettlementAt time.Time `json:"expected_settlement_at"`
	RequiresApproval     bool      `json:"requires_approval,omitempty"`
	At                   time.Time `json:"at"`
}

// ApprovalRequired: the payment waits for a key other than CreatedBy to
// approve it, until ExpiresAt.
type ApprovalRequired struct {
	CreatedBy string    `json:"created_by"`
	ExpiresAt time.Time `json:"expires_at"`
	At        time.Time `json:"at"`
}

// Approved: a second key approved the payment; it is pending from now on
// and settles from now on. Rail is the payment's, for the rail's readers.
type Approved struct {
	ApprovedBy           string    `json:"approved_by"`
	Rail                 string    `json:"rail"`
	ExpectedSettlementAt time.Time `json:"expected_settlement_at"`
	At                   time.Time `json:"at"`
}

// Denied: a key refused the approval; the hold is released.
type Denied struct {
	DeniedBy string    `json:"denied_by"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Submitted: the payment was handed to the rail. A live ACH payment
// carries the trace number and the file it went out in (API.md §10).
type Submitted struct {
	TraceNumber string `json:"trace_number,omitempty"`
	ACHFileID   string `json:"ach_file_id,omitempty"`
	// SettlesAt, set for a payment in an ACH file, is when the file's
	// entry settles: the payment's expected settlement from then on.
	SettlesAt *time.Time `json:"settles_at,omitempty"`
	At        time.Time  `json:"at"`
}

// Completed: the payment settled; amount and fee are posted.
type Completed struct {
	At time.Time `json:"at"`
}

// Failed: the rail refused or returned the payment.
type Failed struct {
	Failure rails.Failure `json:"failure"`
	// ReversalJournalEntryID is set when the payment had posted and its
	// entries were reversed; otherwise the hold was released.
	ReversalJournalEntryID string    `json:"reversal_journal_entry_id,omitempty"`
	At                     time.Time `json:"at"`
}

// NotificationOfChange: the receiving bank took a live ACH payment but
// says the destination's details have changed (NACHA addenda 98): what
// to use for the next payment.
type NotificationOfChange struct {
	Code          string    `json:"code"`           // C01…
	CorrectedData string    `json:"corrected_data"` // as the bank wrote it
	At            time.Time `json:"at"`
}

// Canceled: the platform canceled a pending payment (or one awaiting its
// approval, or the approval expired: Reason); the hold is released.
type Canceled struct {
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

func (Created) EventType() string   { return "payment.created" }
func (Submitted) EventType() string { return "payment.submitted" }
func (Completed) EventType() string { return "payment.completed" }
func (Failed) EventType() string    { return "payment.failed" }
func (Canceled) EventType() string  { return "payment.canceled" }
func (ApprovalRequired) EventType() string {
	return "payment.requires_approval"
}
func (Approved) EventType() string { return "payment.approved" }
func (Released) EventType() string { return "payment.released" }
func (Denied) EventType() string   { return "payment.denied" }
func (NotificationOfChange) EventType() string {
	return "payment.notification_of_change"
}

func init() {
	domain.RegisterEvent[Created]()
	domain.RegisterEvent[Submitted]()
	domain.RegisterEvent[Completed]()
	domain.RegisterEvent[Failed]()
	domain.RegisterEvent[Canceled]()
	domain.RegisterEvent[NotificationOfChange]()
	domain.RegisterEvent[ApprovalRequired]()
	domain.RegisterEvent[Approved]()
	domain.RegisterEvent[Denied]()
	domain.RegisterEvent[Released]()
}

// Approval is where a payment that needed one stands.
type Approval struct {
	CreatedBy  string
	ExpiresAt  time.Time
	ApprovedBy string
	ApprovedAt *time.Time
	DeniedBy   string
	DeniedAt   *time.Time
	Reason     string // the denial's
}

// State is a payment folded from its events.
type State struct {
	Created
	Status       string
	TraceNumber  string // live ACH, once in a file
	ACHFileID    string
	Failure      *rails.Failure
	Change       *NotificationOfChange // the latest the bank sent
	Approval     *Approval             // nil unless it needed one
	CancelReason string
	ReleasedAt   *time.Time // a scheduled payment's, once released
	SubmittedAt  *time.Time
	CompletedAt  *time.Time
	FailedAt     *time.Time
	CanceledAt   *time.Time
	UpdatedAt    time.Time
}

// Evolve folds one event.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Created:
		s = State{Created: ev, Status: StatusPending, UpdatedAt: ev.At}
		if ev.RequiresApproval {
			s.Status = StatusRequiresApproval // its ApprovalRequired follows in the same append
		}
		if ev.ScheduledFor != "" {
			s.Status = StatusScheduled
		}
	case Released:
		s.Status, s.ReleasedAt, s.UpdatedAt = StatusPending, ptr(ev.At), ev.At
		s.JournalEntryID, s.Fee, s.ExpectedSettlementAt = ev.JournalEntryID, ev.Fee, ev.ExpectedSettlementAt
		if ev.RequiresApproval {
			s.Status = StatusRequiresApproval
		}
	case Submitted:
		s.Status, s.SubmittedAt, s.UpdatedAt = StatusSubmitted, ptr(ev.At), ev.At
		s.TraceNumber, s.ACHFileID = ev.TraceNumber, ev.ACHFileID
		if ev.SettlesAt != nil {
			s.ExpectedSettlementAt = *ev.SettlesAt
		}
	case Completed:
		s.Status, s.CompletedAt, s.UpdatedAt = StatusCompleted, ptr(ev.At), ev.At
	case Failed:
		f := ev.Failure
		s.Status, s.Failure, s.FailedAt, s.UpdatedAt = StatusFailed, &f, ptr(ev.At), ev.At
	case Canceled:
		s.Status, s.CanceledAt, s.UpdatedAt, s.CancelReason = StatusCanceled, ptr(ev.At), ev.At, ev.Reason
	case ApprovalRequired:
		s.Status, s.UpdatedAt = StatusRequiresApproval, ev.At
		s.Approval = &Approval{CreatedBy: ev.CreatedBy, ExpiresAt: ev.ExpiresAt}
	case Approved:
		s.Status, s.UpdatedAt, s.ExpectedSettlementAt = StatusPending, ev.At, ev.ExpectedSettlementAt
		a := *s.Approval
		a.ApprovedBy, a.ApprovedAt = ev.ApprovedBy, ptr(ev.At)
		s.Approval = &a
	case Denied:
		s.Status, s.UpdatedAt = StatusDenied, ev.At
		a := *s.Approval
		a.DeniedBy, a.DeniedAt, a.Reason = ev.DeniedBy, ptr(ev.At), ev.Reason
		s.Approval = &a
	case NotificationOfChange:
		c := ev
		s.Change, s.UpdatedAt = &c, ev.At
	}
	return s
}

func ptr(t time.Time) *time.Time { return &t }

// Commands on an existing payment.
type (
	Submit struct {
		TraceNumber, ACHFileID string // a live ACH payment's file
		SettlesAt              *time.Time
		At                     time.Time
	}
	Complete struct{ At time.Time }
	Fail     struct {
		Failure                rails.Failure
		ReversalJournalEntryID string
		At                     time.Time
	}
	Cancel struct{ At time.Time }
	// Approve releases a payment waiting for its approval to the rails;
	// By is the approving key, ExpectedSettlementAt the new settlement.
	Approve struct {
		By                   string
		ExpectedSettlementAt time.Time
		At                   time.Time
	}
	// Deny refuses it.
	Deny struct {
		By, Reason string
		At         time.Time
	}
	// Expire cancels a payment still waiting for its approval once its
	// window has passed; otherwise it does nothing.
	Expire struct{ At time.Time }
	// NoteChange records a notification of change from the receiving bank.
	NoteChange struct {
		Code, CorrectedData string
		At                  time.Time
	}
	// Settle is the rail's verdict on a payment still in flight: Failure
	// nil settles it, otherwise it is rejected. A payment already settled,
	// failed or canceled is left alone (the verdict came too late).
	Settle struct {
		Failure *rails.Failure
		At      time.Time
	}
)

// Decide returns the events of a command on s, or why not. Rail events
// that arrive twice (a simulator repeating itself) change nothing.
func Decide(s State, cmd any) ([]domain.Event, error) {
	if s.Status == "" {
		return nil, domain.NotFound("payment", s.PaymentID)
	}
	switch c := cmd.(type) {
	case Submit:
		if s.Status != StatusPending {
			return nil, nil
		}
		return []domain.Event{Submitted{TraceNumber: c.TraceNumber, ACHFileID: c.ACHFileID, SettlesAt: c.SettlesAt, At: c.At}}, nil
	case Complete:
		switch s.Status {
		case StatusPending:
			return []domain.Event{Submitted{At: c.At}, Completed{At: c.At}}, nil
		case StatusSubmitted:
			return []domain.Event{Completed{At: c.At}}, nil
		case StatusCompleted:
			return nil, nil
		}
		return nil, domain.Errorf(domain.CodeInvalidState, "a %s payment cannot complete", s.Status)
	case Settle:
		if s.Status != StatusPending && s.Status != StatusSubmitted {
			return nil, nil
		}
		if c.Failure != nil {
			return []domain.Event{Failed{Failure: *c.Failure, At: c.At}}, nil
		}
		return Decide(s, Complete{At: c.At})
	case Fail:
		switch s.Status {
		case StatusPending, StatusSubmitted, StatusCompleted:
			if r, _ := rails.Parse(s.Rail); s.Status == StatusCompleted && rails.IsInstant(r) {
				return nil, domain.Errorf(domain.CodeInvalidState, "an instant (%s) payment is final once completed: it cannot be returned", s.Rail)
			}
			if s.Status == StatusCompleted && c.ReversalJournalEntryID == "" {
				return nil, domain.Errorf(domain.CodeInternal, "failing a completed payment needs a reversal entry")
			}
			if s.Status != StatusCompleted {
				c.ReversalJournalEntryID = ""
			}
			return []domain.Event{Failed{Failure: c.Failure, ReversalJournalEntryID: c.ReversalJournalEntryID, At: c.At}}, nil
		case StatusFailed:
			return nil, nil
		}
		return nil, domain.Errorf(domain.CodeInvalidState, "a %s payment cannot fail", s.Status)
	case NoteChange:
		if s.SubmittedAt == nil {
			return nil, domain.Errorf(domain.CodeInvalidState, "a %s payment was never sent: no change can be notified", s.Status)
		}
		if s.Change != nil && s.Change.Code == c.Code && s.Change.CorrectedData == c.CorrectedData {
			return nil, nil // the same notice again
		}
		return []domain.Event{NotificationOfChange{Code: c.Code, CorrectedData: c.CorrectedData, At: c.At}}, nil
	case Cancel:
		if !Cancelable(s.Status) {
			return nil, domain.Errorf(domain.CodePaymentNotCancelable, "only a pending, scheduled or awaiting-approval payment can be canceled; this one is %s", s.Status)
		}
		return []domain.Event{Canceled{At: c.At}}, nil
	case Approve:
		if s.Status != StatusRequiresApproval {
			return nil, domain.Errorf(domain.CodeInvalidState, "only a payment awaiting approval can be approved; this one is %s", s.Status)
		}
		if c.By == s.Approval.CreatedBy {
			return nil, domain.Errorf(domain.CodeForbidden, "the key that created a payment cannot approve it: approve with another key")
		}
		return []domain.Event{Approved{ApprovedBy: c.By, Rail: s.Rail, ExpectedSettlementAt: c.ExpectedSettlementAt, At: c.At}}, nil
	case Deny:
		if s.Status != StatusRequiresApproval {
			return nil, domain.Errorf(domain.CodeInvalidState, "only a payment awaiting approval can be denied; this one is %s", s.Status)
		}
		return []domain.Event{Denied{DeniedBy: c.By, Reason: c.Reason, At: c.At}}, nil
	case Expire:
		if s.Status != StatusRequiresApproval || c.At.Before(s.Approval.ExpiresAt) {
			return nil, nil
		}
		return []domain.Event{Canceled{Reason: CancelReasonApprovalExpired, At: c.At}}, nil
	}
	return nil, domain.Errorf(domain.CodeInternal, "unknown payment command %T", cmd)
}
