// Package counterparty is the counterparty aggregate: a bank account a
// platform pays again and again, saved once (API.md §12). Its account
// number is kept (a payment to it copies it) but never shown whole. A
// counterparty may be verified by a zero-dollar ACH prenote:
// unverified → pending (prenote sent) → verified | failed (the receiving
// bank returned it, failure_code the R code); a failed one may be verified
// again. Deleted, it is gone for the API; payments already made to it keep
// the destination they copied.
package counterparty

import (
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// StreamType names counterparty streams.
const StreamType = "counterparty"

// StreamID is the stream of one counterparty.
func StreamID(id string) string { return "counterparty-" + id }

// Verification statuses.
const (
	StatusUnverified = "unverified"
	StatusPending    = "pending"
	StatusVerified   = "verified"
	StatusFailed     = "failed"
)

// Statuses are the verification statuses, for filters.
var Statuses = map[string]bool{StatusUnverified: true, StatusPending: true, StatusVerified: true, StatusFailed: true}

// MethodPrenote is the one verification method: a zero-dollar ACH entry.
const MethodPrenote = "prenote"

// Account types.
const (
	AccountChecking = "checking"
	AccountSavings  = "savings"
)

// Request is a counterparty as the platform asked for it.
type Request struct {
	Name          string
	AccountNumber string
	RoutingNumber string
	AccountType   string
	Metadata      map[string]string
}

// Validate checks a request's fields (400), as a payment's destination is
// checked: routing number checksum, account number digits, name length.
func (r Request) Validate() error {
	if err := rails.CheckCounterparty("", r.AccountNumber, r.RoutingNumber, r.Name); err != nil {
		return err
	}
	if r.AccountType != AccountChecking && r.AccountType != AccountSavings {
		return domain.Invalid("account_type", "account_type must be checking or savings")
	}
	return domain.ValidateMetadata("metadata", r.Metadata)
}

// Created: a counterparty was saved.
type Created struct {
	CounterpartyID string             `json:"counterparty_id"`
	PlatformID     string             `json:"platform_id"`
	Environment    domain.Environment `json:"environment"`
	Name           string             `json:"name"`
	AccountNumber  string             `json:"account_number"`
	RoutingNumber  string             `json:"routing_number"`
	AccountType    string             `json:"account_type"`
	Metadata       map[string]string  `json:"metadata"`
	At             time.Time          `json:"at"`
}

// VerificationRequested: a prenote was asked for. Sandbox: its answer is
// expected at ExpectedAt, after the platform's ACH same-day delay. Live:
// ExpectedAt is zero; the prenote waits for the next ACH file.
type VerificationRequested struct {
	Method     string    `json:"method"`
	ExpectedAt time.Time `json:"expected_at"`
	At         time.Time `json:"at"`
}

// PrenoteSubmitted: a live prenote left in an ACH file (domain/ach's cut),
// with its trace number, by which the bank's return names it, and the
// time its entry settles.
type PrenoteSubmitted struct {
	ACHFileID   string    `json:"ach_file_id"`
	TraceNumber string    `json:"trace_number"`
	SettlesAt   time.Time `json:"settles_at"`
	At          time.Time `json:"at"`
}

// Verified: the prenote's entry settled without a return (sandbox: its
// simulated answer came).
type Verified struct {
	At time.Time `json:"at"`
}

// VerificationFailed: the receiving bank returned the prenote with
// FailureCode (an ACH return code: R03, R04, …).
type VerificationFailed struct {
	FailureCode string    `json:"failure_code"`
	At          time.Time `json:"at"`
}

// Deleted: the counterparty is gone for the API.
type Deleted struct {
	At time.Time `json:"at"`
}

func (Created) EventType() string               { return "counterparty.created" }
func (VerificationRequested) EventType() string { return "counterparty.verification_requested" }
func (PrenoteSubmitted) EventType() string      { return "counterparty.prenote_submitted" }
func (Verified) EventType() string              { return "counterparty.verified" }
func (VerificationFailed) EventType() string    { return "counterparty.verification_failed" }
func (Deleted) EventType() string               { return "counterparty.deleted" }

func init() {
	domain.RegisterEvent[Created]()
	domain.RegisterEvent[VerificationRequested]()
	domain.RegisterEvent[PrenoteSubmitted]()
	domain.RegisterEvent[Verified]()
	domain.RegisterEvent[VerificationFailed]()
	domain.RegisterEvent[Deleted]()
}

// State of a counterparty.
type State struct {
	Created
	Status      string // verification status
	Method      string // "" until a verification is asked for
	FailureCode string
	// Prenote is the live prenote in a file, if one is: zero until its
	// cut, and again when a new one is asked for.
	Prenote   PrenoteSubmitted
	Deleted   bool
	UpdatedAt time.Time
}

// Exists says whether the counterparty is there for the API.
func (s State) Exists() bool { return s.CounterpartyID != "" && !s.Deleted }

// Evolve folds one event.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Created:
		s = State{Created: ev, Status: StatusUnverified, UpdatedAt: ev.At}
	case VerificationRequested:
		s.Status, s.Method, s.FailureCode, s.Prenote, s.UpdatedAt = StatusPending, ev.Method, "", PrenoteSubmitted{}, ev.At
	case PrenoteSubmitted:
		s.Prenote, s.UpdatedAt = ev, ev.At
	case Verified:
		s.Status, s.UpdatedAt = StatusVerified, ev.At
	case VerificationFailed:
		s.Status, s.FailureCode, s.UpdatedAt = StatusFailed, ev.FailureCode, ev.At
	case Deleted:
		s.Deleted, s.UpdatedAt = true, ev.At
	}
	return s
}

// CreateInputs is everything the creation of a counterparty decides on.
type CreateInputs struct {
	Request     Request
	ID          string
	PlatformID  string
	Environment domain.Environment
	Now         time.Time
}

// DecideCreate saves a counterparty, unverified, or says which field is
// wrong.
func DecideCreate(in CreateInputs) ([]domain.Event, error) {
	r := in.Request
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return []domain.Event{Created{CounterpartyID: in.ID, PlatformID: in.PlatformID, Environment: in.Environment,
		Name: r.Name, AccountNumber: r.AccountNumber, RoutingNumber: r.RoutingNumber, AccountType: r.AccountType,
		Metadata: r.Metadata, At: in.Now}}, nil
}

// VerifyInputs is what a verification decides on.
type VerifyInputs struct {
	Method      string
	Environment domain.Environment
	// SandboxDelay is the platform's ACH same-day delay (sandbox only):
	// the prenote is answered after it. Live prenotes wait for a file.
	SandboxDelay time.Duration
	Now          time.Time
}

// DecideVerify sends a prenote: the method must be prenote (400); a
// counterparty whose prenote is out (pending) or that is verified already
// is 409 invalid_state (a verified account is not verified twice; a
// failed one may be tried again, say after the platform fixed nothing but
// the recipient reopened the account). A live prenote waits for the next
// ACH file (no ExpectedAt: its cut sets when it settles).
func DecideVerify(s State, in VerifyInputs) ([]domain.Event, error) {
	if in.Method != MethodPrenote {
		return nil, domain.Invalid("method", "method must be prenote")
	}
	switch s.Status {
	case StatusPending:
		return nil, &domain.Error{Code: domain.CodeInvalidState, ResourceID: s.CounterpartyID,
			Message: "a prenote for this counterparty is already pending"}
	case StatusVerified:
		return nil, &domain.Error{Code: domain.CodeInvalidState, ResourceID: s.CounterpartyID,
			Message: "this counterparty is verified already"}
	}
	if in.Environment != domain.Sandbox {
		return []domain.Event{VerificationRequested{Method: MethodPrenote, At: in.Now}}, nil
	}
	return []domain.Event{VerificationRequested{Method: MethodPrenote, ExpectedAt: in.Now.Add(in.SandboxDelay), At: in.Now}}, nil
}

// AwaitsFile says whether a live prenote was asked for and waits for the
// next ACH file.
func (s State) AwaitsFile() bool {
	return s.Exists() && s.Environment == domain.Live && s.Status == StatusPending && s.Prenote.TraceNumber == ""
}

// DecidePrenoteSubmitted records that the prenote left in a file (the
// cut's decision: its file, trace number and settlement). Only a prenote
// that awaits a file is submitted; the cut reads the stream it appends to,
// so a counterparty deleted or submitted meanwhile is refused with
// invalid_state and the cut retried without it.
func DecidePrenoteSubmitted(s State, sub PrenoteSubmitted) ([]domain.Event, error) {
	if !s.AwaitsFile() {
		return nil, &domain.Error{Code: domain.CodeInvalidState, ResourceID: s.CounterpartyID,
			Message: "this counterparty has no live prenote waiting for a file"}
	}
	return []domain.Event{sub}, nil
}

// DecidePrenoteSettled verifies, at now, a live counterparty whose
// prenote's entry settled by asOf without a return. Anything else (not
// submitted, not settled yet, answered already, deleted) gets nothing.
func DecidePrenoteSettled(s State, asOf, now time.Time) []domain.Event {
	if !s.Exists() || s.Status != StatusPending || s.Prenote.TraceNumber == "" || s.Prenote.SettlesAt.After(asOf) {
		return nil
	}
	return []domain.Event{Verified{At: now}}
}

// DecidePrenoteReturned fails a live counterparty whose prenote (of this
// trace number) the receiving bank returned with code: pending, or
// verified already (a return within the return window comes after the
// entry settled). A return of an earlier prenote (the counterparty was
// verified again since), of a failed or deleted counterparty, changes
// nothing: the bank's answer applied twice is applied once.
func DecidePrenoteReturned(s State, trace, code string, now time.Time) []domain.Event {
	if !s.Exists() || s.Prenote.TraceNumber == "" || s.Prenote.TraceNumber != trace {
		return nil
	}
	if s.Status != StatusPending && s.Status != StatusVerified {
		return nil
	}
	return []domain.Event{VerificationFailed{FailureCode: code, At: now}}
}

// DecideSandboxPrenote answers a sandbox prenote: §5's magic account
// numbers whose ACH result is a return fail it with that return code;
// every other number verifies. A counterparty whose prenote is no longer
// pending (answered already, or deleted meanwhile) gets nothing: an answer
// applied twice changes nothing.
func DecideSandboxPrenote(s State, now time.Time) []domain.Event {
	if s.Status != StatusPending || s.Deleted {
		return nil
	}
	if code := rails.SandboxOutcome(rails.ACHSameDay, s.AccountNumber); code != "" {
		return []domain.Event{VerificationFailed{FailureCode: code, At: now}}
	}
	return []domain.Event{Verified{At: now}}
}

// DecideDelete deletes a counterparty (once: a deleted one is not found
// by the caller, which loads only existing ones).
func DecideDelete(s State, now time.Time) []domain.Event {
	if s.Deleted {
		return nil
	}
	return []domain.Event{Deleted{At: now}}
}

// Last4 is what the API shows of an account number.
func Last4(accountNumber string) string {
	if len(accountNumber) <= 4 {
		return accountNumber
	}
	return accountNumber[len(accountNumber)-4:]
}
