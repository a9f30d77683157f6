// Package kyb is Know-Your-Business verification. The status belongs to a
// business — (platform, environment, entity_ref) — and every virtual
// account of that business shares it. A business has one stream; each
// submission is a verification inside it.
package kyb

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/opentreasury/treasury/domain"
)

// StreamType names the business streams.
const StreamType = "kyb_entity"

// StreamID is the stream of one business. The entity_ref is hashed: it is
// the platform's free text.
func StreamID(platformID string, env domain.Environment, entityRef string) string {
	h := sha256.Sum256([]byte(entityRef))
	return "kyb_entity-" + platformID + "-" + env.String() + "-" + hex.EncodeToString(h[:12])
}

// Statuses of a verification, and of a business (plus not_started).
const (
	StatusNotStarted    = "not_started"
	StatusPending       = "pending"
	StatusPendingReview = "pending_review"
	StatusApproved      = "approved"
	StatusRejected      = "rejected"
)

// Methods of a decision.
const (
	MethodAutomatic = "automatic"
	MethodManual    = "manual"
)

// Reason explains a decision.
type Reason struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

// MaskedAddress, MaskedBusiness and MaskedOwner are what the log and the
// API keep of a submission: the EIN's last four digits, no SSN digits.
type MaskedBusiness struct {
	LegalName      string  `json:"legal_name"`
	DBA            *string `json:"dba"`
	EIN            string  `json:"ein"`
	EntityType     string  `json:"entity_type"`
	FormationDate  string  `json:"formation_date"`
	FormationState string  `json:"formation_state"`
	Address        Address `json:"address"`
	Website        *string `json:"website"`
	NAICSCode      *string `json:"naics_code"`
	Phone          *string `json:"phone"`
}

type MaskedOwner struct {
	FirstName           string  `json:"first_name"`
	LastName            string  `json:"last_name"`
	DateOfBirth         string  `json:"date_of_birth"`
	SSNLast4            string  `json:"ssn_last4"`
	OwnershipPercentage string  `json:"ownership_percentage"`
	IsControlPerson     bool    `json:"is_control_person"`
	Title               *string `json:"title"`
	Address             Address `json:"address"`
}

// Mask keeps what may be stored and shown.
func (s Submission) Mask() (MaskedBusiness, []MaskedOwner) {
	b := s.Business
	mb := MaskedBusiness{LegalName: b.LegalName, DBA: b.DBA, EIN: "**-***" + s.EINLast4(), EntityType: b.EntityType,
		FormationDate: b.FormationDate, FormationState: b.FormationState, Address: b.Address, Website: b.Website,
		NAICSCode: b.NAICSCode, Phone: b.Phone}
	owners := make([]MaskedOwner, len(s.BeneficialOwner))
	for i, o := range s.BeneficialOwner {
		owners[i] = MaskedOwner{FirstName: o.FirstName, LastName: o.LastName, DateOfBirth: o.DateOfBirth,
			SSNLast4: "****", OwnershipPercentage: o.OwnershipPercentage.String(), IsControlPerson: o.IsControlPerson,
			Title: o.Title, Address: o.Address}
	}
	return mb, owners
}

// Submitted: a verification was filed for a business.
type Submitted struct {
	VerificationID   string             `json:"verification_id"`
	PlatformID       string             `json:"platform_id"`
	Environment      domain.Environment `json:"environment"`
	EntityRef        string             `json:"entity_ref"`
	VirtualAccountID string             `json:"virtual_account_id"`
	Business         MaskedBusiness     `json:"business"`
	BeneficialOwners []MaskedOwner      `json:"beneficial_owners"`
	// EINLast4 is what automatic decisions may look at (no full EIN is kept).
	EINLast4 string    `json:"ein_last4"`
	At       time.Time `json:"at"`
}

// ReviewRequested: the verification went to the manual review queue.
type ReviewRequested struct {
	VerificationID string    `json:"verification_id"`
	ETA            time.Time `json:"eta"`
	At             time.Time `json:"at"`
}

// Approved: the business passed verification.
type Approved struct {
	VerificationID string    `json:"verification_id"`
	Method         string    `json:"method"`
	Reasons        []Reason  `json:"reasons"`
	At             time.Time `json:"at"`
}

// Rejected: the business failed verification.
type Rejected struct {
	VerificationID string    `json:"verification_id"`
	Method         string    `json:"method"`
	Reasons        []Reason  `json:"reasons"`
	At             time.Time `json:"at"`
}

func (Submitted) EventType() string       { return "kyb.submitted" }
func (ReviewRequested) EventType() string { return "kyb.review_requested" }
func (Approved) EventType() string        { return "kyb.approved" }
func (Rejected) EventType() string        { return "kyb.rejected" }

func init() {
	domain.RegisterEvent[Submitted]()
	domain.RegisterEvent[ReviewRequested]()
	domain.RegisterEvent[Approved]()
	domain.RegisterEvent[Rejected]()
}

// Verification is one submission's state.
type Verification struct {
	Submitted
	Status    string
	Decision  *Decision
	ReviewETA *time.Time
	UpdatedAt time.Time
}

// Decision is how a verification ended.
type Decision struct {
	Outcome   string
	Method    string
	Reasons   []Reason
	DecidedAt time.Time
}

// State is a business's verifications.
type State struct {
	Verifications map[string]*Verification
	Order         []string // submission order
}

// Status is the business's status: its latest verification's.
func (s State) Status() string {
	if len(s.Order) == 0 {
		return StatusNotStarted
	}
	return s.Verifications[s.Order[len(s.Order)-1]].Status
}

// Evolve folds one event.
func Evolve(s State, e domain.Event) State {
	if s.Verifications == nil {
		s.Verifications = map[string]*Verification{}
	}
	switch ev := e.(type) {
	case Submitted:
		s.Verifications[ev.VerificationID] = &Verification{Submitted: ev, Status: StatusPending, UpdatedAt: ev.At}
		s.Order = append(s.Order, ev.VerificationID)
	case ReviewRequested:
		if v := s.Verifications[ev.VerificationID]; v != nil {
			v.Status, v.UpdatedAt = StatusPendingReview, ev.At
			eta := ev.ETA
			v.ReviewETA = &eta
		}
	case Approved:
		if v := s.Verifications[ev.VerificationID]; v != nil {
			v.Status, v.UpdatedAt = StatusApproved, ev.At
			v.Decision = &Decision{Outcome: StatusApproved, Method: ev.Method, Reasons: ev.Reasons, DecidedAt: ev.At}
		}
	case Rejected:
		if v := s.Verifications[ev.VerificationID]; v != nil {
			v.Status, v.UpdatedAt = StatusRejected, ev.At
			v.Decision = &Decision{Outcome: StatusRejected, Method: ev.Method, Reasons: ev.Reasons, DecidedAt: ev.At}
		}
	}
	return s
}

// Submit files a verification. Screening runs here, at once: a name on the
// list rejects the verification in the same breath.
type Submit struct {
	VerificationID   string
	PlatformID       string
	Environment      domain.Environment
	EntityRef        string
	VirtualAccountID string
	Submission       Submission
	At               time.Time
}

// Decide is a decision on a verification: automatic ones act on pending
// verifications, manual ones (operator, simulation) on pending_review.
type Decide struct {
	VerificationID string
	Outcome        string // approved | rejected | pending_review
	Method         string
	Reasons        []Reason
	ETA            time.Time // for pending_review
	At             time.Time
}

// ReviewETA is how long the manual review queue takes.
const ReviewETA = 24 * time.Hour

// DecideCommand returns the events of a command, or why not.
func DecideCommand(s State, cmd any) ([]domain.Event, error) {
	switch c := cmd.(type) {
	case Submit:
		switch s.Status() {
		case StatusPending, StatusPendingReview:
			return nil, &domain.Error{Code: domain.CodeKYBInProgress, ResourceID: s.Order[len(s.Order)-1],
				Message: "a verification of this business is in progress"}
		case StatusApproved:
			return nil, &domain.Error{Code: domain.CodeKYBAlreadyApproved, ResourceID: s.Order[len(s.Order)-1],
				Message: "this business is already approved"}
		}
		mb, mo := c.Submission.Mask()
		events := []domain.Event{Submitted{VerificationID: c.VerificationID, PlatformID: c.PlatformID,
			Environment: c.Environment, EntityRef: c.EntityRef, VirtualAccountID: c.VirtualAccountID,
			Business: mb, BeneficialOwners: mo, EINLast4: c.Submission.EINLast4(), At: c.At}}
		if hits := screen(c.Submission); len(hits) > 0 {
			events = append(events, Rejected{VerificationID: c.VerificationID, Method: MethodAutomatic, Reasons: hits, At: c.At})
		}
		return events, nil
	case Decide:
		v := s.Verifications[c.VerificationID]
		if v == nil {
			return nil, domain.NotFound("kyb_verification", c.VerificationID)
		}
		want := StatusPending
		if c.Method == MethodManual {
			want = StatusPendingReview
		}
		if v.Status != want {
			if c.Method == MethodAutomatic {
				return nil, nil // already decided: deciding again changes nothing
			}
			return nil, domain.Errorf(domain.CodeInvalidState, "only a verification in pending_review can be decided by hand; this one is %s", v.Status)
		}
		switch c.Outcome {
		case StatusApproved:
			return []domain.Event{Approved{VerificationID: c.VerificationID, Method: c.Method, Reasons: orEmpty(c.Reasons), At: c.At}}, nil
		case StatusRejected:
			return []domain.Event{Rejected{VerificationID: c.VerificationID, Method: c.Method, Reasons: orEmpty(c.Reasons), At: c.At}}, nil
		case StatusPendingReview:
			if c.Method == MethodAutomatic {
				return []domain.Event{ReviewRequested{VerificationID: c.VerificationID, ETA: c.ETA, At: c.At}}, nil
			}
		}
		return nil, domain.Invalid("outcome", "outcome must be approved or rejected")
	}
	return nil, domain.Errorf(domain.CodeInternal, "unknown kyb command %T", cmd)
}

func screen(s Submission) []Reason {
	var hits []Reason
	for _, n := range s.Names() {
		if domain.ScreeningHit(n.Name) {
			hits = append(hits, Reason{Code: "screening_match", Field: n.Field,
				Message: "the name is on the screening list"})
		}
	}
	return hits
}

func orEmpty(r []Reason) []Reason {
	if r == nil {
		return []Reason{}
	}
	return r
}

// Verifier decides a filed verification: a KYB vendor plugs in here.
// Verify must be quick and pure; a vendor that calls out over the network
// would run outside any transaction and report back through Decide.
type Verifier interface {
	Verify(v Submitted, now time.Time) Decide
}

// SandboxVerifier decides by the EIN's last four digits (API.md §6):
// 0000 rejects, 1111 goes to manual review, anything else approves.
type SandboxVerifier struct{}

func (SandboxVerifier) Verify(v Submitted, now time.Time) Decide {
	d := Decide{VerificationID: v.VerificationID, Method: MethodAutomatic, At: now}
	switch v.EINLast4 {
	case "0000":
		d.Outcome = StatusRejected
		d.Reasons = []Reason{{Code: "ein_mismatch", Field: "business.ein", Message: "the EIN does not match the legal name"}}
	case "1111":
		d.Outcome, d.ETA = StatusPendingReview, now.Add(ReviewETA)
	default:
		d.Outcome = StatusApproved
	}
	return d
}

// ManualReviewVerifier sends everything to the operator's review queue:
// live mode has no vendor yet.
type ManualReviewVerifier struct{}

func (ManualReviewVerifier) Verify(v Submitted, now time.Time) Decide {
	return Decide{VerificationID: v.VerificationID, Method: MethodAutomatic, Outcome: StatusPendingReview, ETA: now.Add(ReviewETA), At: now}
}

// VerifierFor picks the verifier of an environment.
func VerifierFor(env domain.Environment) Verifier {
	if env == domain.Sandbox {
		return SandboxVerifier{}
	}
	return ManualReviewVerifier{}
}
