package payment

import (
	"errors"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/rails"
)

// CreateInputs is everything the creation of a payment decides on: plain
// values the caller read in its transaction, under the account's balance
// lock. The decision reads no clock and draws no id of its own.
type CreateInputs struct {
	Request        Request
	PlatformID     string
	Environment    domain.Environment
	IdempotencyKey string
	// Counterparty is the counterparty the payment goes to, as read in the
	// command (nil: a raw destination).
	Counterparty *CounterpartyRef
	// CreatedBy is the API key that asks for the payment: the one key
	// that may not approve it.
	CreatedBy string
	Account   Sender
	// KYBStatus is the kyb.Status* of the business behind the account.
	KYBStatus string
	// Settings of the environment: the daily payment limit and the
	// sandbox's settlement delays are read.
	Settings platform.Settings
	// SpentToday is what the account's payments of the day (DailyWindow)
	// already count toward the limit; read only when a limit is set.
	SpentToday int64
	// FeeSchedule is the platform's fee per rail name; a rail it does not
	// name costs rails.DefaultFee.
	FeeSchedule map[string]int64
	// Chart maps the environment's account codes to ledger account ids.
	Chart map[string]string
	Now   time.Time
	IDs   NewIDs
}

// Sender is the virtual account a payment leaves, as locked.
type Sender struct {
	ID              string
	Status          string // an account.Status name
	LedgerAccountID string
	Balance         ledger.Balance
}

// CounterpartyRef is what a payment's rules read of its counterparty.
type CounterpartyRef struct {
	ID                 string
	VerificationStatus string
}

// NewIDs names what a creation records. The payment's id comes first
// because the caller claims the idempotency key with it before deciding.
type NewIDs struct {
	Payment      string
	JournalEntry string
	LedgerEntry  func() string // once per line, in line order
}

// DecideCreate accepts a payment, returning payment.Created and the
// ledger.Recorded that holds amount + fee (then ApprovalRequired, for an
// amount at or above the platform's approval threshold), or the first
// rule it breaks, in
// this order: the request is valid, the account is active, its business
// is KYB approved, the destination passes screening, the day's payments
// stay within the daily limit, and available ≥ amount + fee.
func DecideCreate(in CreateInputs) ([]domain.Event, error) {
	rail, err := in.Request.Validate()
	if err != nil {
		return nil, err
	}
	if err := CheckParties(in); err != nil {
		return nil, err
	}
	if err := checkCounterpartyVerified(in); err != nil {
		return nil, err
	}
	if in.Request.ScheduledFor != "" {
		return decideSchedule(in, rail)
	}
	return decideHold(in, rail)
}

// decideHold runs the rules of a payment that leaves now and holds its
// amount + fee: Created, ledger.Recorded (then ApprovalRequired).
func decideHold(in CreateInputs, rail rails.Rail) ([]domain.Event, error) {
	if err := CheckParties(in); err != nil {
		return nil, err
	}
	if err := checkDailyLimit(in); err != nil {
		return nil, err
	}
	fee := in.fee(rail)
	acc := in.Account
	lines, err := ledger.PaymentLines(ledger.Holder{VirtualAccountID: acc.ID, LedgerAccountID: acc.LedgerAccountID},
		in.Chart, rail.String(), in.Request.Amount, fee, in.IDs.LedgerEntry)
	if err != nil {
		return nil, err
	}
	if err := ledger.CheckFunds(map[string]ledger.Balance{acc.ID: acc.Balance}, lines, ledger.StatusPending); err != nil {
		return nil, err
	}
	created := in.created(rail, fee)
	events := []domain.Event{created, in.recorded(lines)}
	if t := in.Settings.PaymentApprovalThreshold; t != nil && in.Request.Amount >= *t {
		// Held like any payment, but no rail sees it until a second key
		// approves it (API.md §12).
		created.RequiresApproval = true
		events[0] = created
		events = append(events, ApprovalRequired{CreatedBy: in.CreatedBy, ExpiresAt: in.Now.Add(ApprovalWindow), At: in.Now})
	}
	return events, nil
}

// MaxScheduleAhead is how far ahead a payment may be scheduled (API.md §12).
const MaxScheduleAhead = 365

// ReleaseHour is the Eastern hour a scheduled payment is released at on
// its date (API.md §12: 06:00 ET).
const ReleaseHour = 6

// ReleaseAt is when a payment scheduled for date (YYYY-MM-DD, valid) is
// released: ReleaseHour Eastern that day.
func ReleaseAt(date string) time.Time {
	d, _ := time.ParseInLocation(time.DateOnly, date, rails.Eastern)
	return time.Date(d.Year(), d.Month(), d.Day(), ReleaseHour, 0, 0, 0, rails.Eastern).UTC()
}

// decideSchedule accepts a payment for a later date: a date after today
// (Eastern) and at most MaxScheduleAhead days ahead, from an account that
// may send today. Nothing is held and nothing is recorded in the ledger:
// the funds, the daily limit and the approval threshold are the release's
// to check, on the day.
func decideSchedule(in CreateInputs, rail rails.Rail) ([]domain.Event, error) {
	date, _ := time.ParseInLocation(time.DateOnly, in.Request.ScheduledFor, rails.Eastern)
	et := in.Now.In(rails.Eastern)
	today := time.Date(et.Year(), et.Month(), et.Day(), 0, 0, 0, 0, rails.Eastern)
	if !date.After(today) || date.After(today.AddDate(0, 0, MaxScheduleAhead)) {
		return nil, domain.Invalid("scheduled_for", "scheduled_for must be a date after today (%s, Eastern) and at most %d days ahead",
			today.Format(time.DateOnly), MaxScheduleAhead)
	}
	if err := CheckParties(in); err != nil {
		return nil, err
	}
	release := ReleaseAt(in.Request.ScheduledFor)
	created := in.created(rail, in.fee(rail))
	created.JournalEntryID = ""
	created.ScheduledFor, created.ReleaseAt, created.CreatedBy = in.Request.ScheduledFor, &release, in.CreatedBy
	created.ExpectedSettlementAt = ExpectedSettlement(in.Environment, in.Settings, rail, release)
	return []domain.Event{created}, nil
}

// DecideRelease runs a scheduled payment's rules on its date: in holds
// what they read now (its Request is the payment's, rebuilt by
// ReleaseRequest). It returns Released and the ledger.Recorded that holds
// amount + fee (then ApprovalRequired, at or above the approval
// threshold); or, when a rule refuses it, Failed with the rule's code as
// failure.code and no network code; or nothing, for a payment no longer
// scheduled (released, canceled: a release run twice holds once).
func DecideRelease(s State, in CreateInputs) ([]domain.Event, error) {
	if s.Status != StatusScheduled {
		return nil, nil
	}
	in.IDs.Payment = s.PaymentID
	in.CreatedBy = s.CreatedBy
	rail, err := in.Request.Validate()
	if err != nil {
		return nil, err
	}
	events, err := decideHold(in, rail)
	var refused *domain.Error
	if errors.As(err, &refused) && ruleAdvice[refused.Code] != "" {
		return []domain.Event{Failed{Failure: RuleFailure(refused), At: in.Now}}, nil
	}
	if err != nil {
		return nil, err
	}
	created := events[0].(Created)
	released := Released{JournalEntryID: created.JournalEntryID, Fee: created.Fee, Rail: created.Rail,
		ExpectedSettlementAt: created.ExpectedSettlementAt, RequiresApproval: created.RequiresApproval, At: in.Now}
	return append([]domain.Event{released}, events[1:]...), nil
}

// ReleaseRequest is the request a scheduled payment's rules run on at its
// release: the payment as it was asked for, less its date.
func ReleaseRequest(s State) Request {
	return Request{VirtualAccountID: s.VirtualAccountID, Amount: s.Amount, Rail: s.Rail, Destination: s.Destination,
		CounterpartyID: s.CounterpartyID, Description: s.Description, Metadata: s.Metadata}
}

// ruleAdvice is what a platform should do about a scheduled payment a
// rule refused on its date, per rule.
var ruleAdvice = map[domain.Code]string{
	domain.CodeInsufficientFunds:  rails.ActionRetryLater,
	domain.CodeLimitExceeded:      rails.ActionRetryLater,
	domain.CodeAccountNotActive:   rails.ActionDoNotRetry,
	domain.CodeKYBNotApproved:     rails.ActionDoNotRetry,
	domain.CodeComplianceRejected: rails.ActionDoNotRetry,
}

// RuleFailureCodes are the failure codes a rule gives a scheduled
// payment refused on its date.
func RuleFailureCodes() []string {
	var codes []string
	for c := range ruleAdvice {
		codes = append(codes, string(c))
	}
	return codes
}

// RuleFailure is the failure of a scheduled payment a rule refused on its
// date: the rule's code, no network code (no network saw it).
func RuleFailure(err *domain.Error) rails.Failure {
	return rails.Failure{Code: string(err.Code), Reason: err.Message, Advice: rails.RetryAdvice{Action: ruleAdvice[err.Code]}}
}

// ApprovalWindow is how long a payment waits for its approval before it is
// canceled (API.md §12).
const ApprovalWindow = 7 * 24 * time.Hour

// CheckParties runs the rules on who sends and who receives, which need
// nothing beyond the account and its business: a caller may run it before
// reading what only the later rules need, so that a refused payment costs
// no more reads. DecideCreate runs it too.
func CheckParties(in CreateInputs) error {
	acc := in.Account
	if acc.Status != account.StatusActive.String() {
		return &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: acc.ID,
			Message: "the virtual account is " + acc.Status + "; only active accounts send payments"}
	}
	if in.KYBStatus != kyb.StatusApproved {
		return &domain.Error{Code: domain.CodeKYBNotApproved, ResourceID: acc.ID,
			Message: "the business behind this account is not KYB approved (kyb_status " + in.KYBStatus + ")"}
	}
	if domain.ScreeningHit(in.Request.Destination.Name) {
		return &domain.Error{Code: domain.CodeComplianceRejected, Param: "destination.name",
			Message: "the destination name is on the screening list"}
	}
	return nil
}

// checkCounterpartyVerified is the platform's require_verified_counterparty
// rule (422 counterparty_not_verified): with it on, a payment goes only to
// a verified counterparty; a raw destination is refused too, or the rule
// would be one field away from nothing. It runs at creation only: a
// scheduled payment's release keeps the counterparty it was accepted for.
func checkCounterpartyVerified(in CreateInputs) error {
	if !in.Settings.RequireVerifiedCounterparty {
		return nil
	}
	cp := in.Counterparty
	if cp == nil {
		return &domain.Error{Code: domain.CodeCounterpartyNotVerified, Param: "destination",
			Message: "require_verified_counterparty is on: pay a verified counterparty (counterparty_id), not a raw destination"}
	}
	if cp.VerificationStatus != "verified" {
		return &domain.Error{Code: domain.CodeCounterpartyNotVerified, Param: "counterparty_id", ResourceID: cp.ID,
			Message: "require_verified_counterparty is on and this counterparty is " + cp.VerificationStatus + ", not verified"}
	}
	return nil
}

// DailyWindow is the day whose payments count toward the daily limit of a
// payment created at: the UTC day, [start, end).
func DailyWindow(at time.Time) (start, end time.Time) {
	start = at.UTC().Truncate(24 * time.Hour)
	return start, start.Add(24 * time.Hour)
}

// checkDailyLimit refuses a payment that would take the account's payments
// of the day past the limit. Both are bounded (the limit by the settings,
// the amount by its rail), so the sum cannot overflow.
func checkDailyLimit(in CreateInputs) error {
	limit := in.Settings.DailyPaymentLimit
	if limit == nil || in.SpentToday+in.Request.Amount <= *limit {
		return nil
	}
	return &domain.Error{Code: domain.CodeLimitExceeded, ResourceID: in.Account.ID,
		Message: "this payment would take the account past its daily payment limit"}
}

func (in CreateInputs) fee(rail rails.Rail) int64 {
	if fee, ok := in.FeeSchedule[rail.String()]; ok {
		return fee
	}
	return rails.DefaultFee(rail)
}

func (in CreateInputs) created(rail rails.Rail, fee int64) Created {
	r := in.Request
	return Created{PaymentID: in.IDs.Payment, PlatformID: in.PlatformID, Environment: in.Environment,
		VirtualAccountID: in.Account.ID, Amount: r.Amount, Fee: fee, Rail: rail.String(), Destination: r.Destination,
		CounterpartyID: r.CounterpartyID, IdempotencyKey: in.IdempotencyKey, Description: r.Description, Metadata: r.Metadata,
		JournalEntryID: in.IDs.JournalEntry, ExpectedSettlementAt: in.expectedSettlement(rail), At: in.Now}
}

func (in CreateInputs) recorded(lines []ledger.Line) ledger.Recorded {
	desc := in.Request.Description
	if desc == "" {
		desc = "Payment to " + in.Request.Destination.Name
	}
	return ledger.Recorded{JournalEntryID: in.IDs.JournalEntry, PlatformID: in.PlatformID, Environment: in.Environment,
		Type: ledger.TypePayment, Description: desc, Status: ledger.StatusPending, Lines: lines,
		Source: ledger.Source{Type: "payment", ID: in.IDs.Payment}, EffectiveAt: in.Now, At: in.Now}
}

// expectedSettlement follows the real calendars in live; in the sandbox,
// the platform's simulated delays (RTP and FedNow at once).
func (in CreateInputs) expectedSettlement(rail rails.Rail) time.Time {
	return ExpectedSettlement(in.Environment, in.Settings, rail, in.Now)
}

// ExpectedSettlement is when a payment on rail released at `at` settles:
// by the real calendars in live; in the sandbox, after the platform's
// simulated delays (RTP and FedNow at once).
func ExpectedSettlement(env domain.Environment, settings platform.Settings, rail rails.Rail, at time.Time) time.Time {
	sb := settings.Sandbox
	if env != domain.Sandbox || sb == nil {
		return rails.ExpectedSettlement(rail, at)
	}
	return at.Add(sb.Delay(rail))
}
