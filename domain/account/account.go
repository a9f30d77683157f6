// Package account is the virtual account aggregate: opening, freezing,
// unfreezing and closing. Money is not here: balances live in the ledger.
package account

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
)

// StreamType names virtual account streams.
const StreamType = "virtual_account"

// StreamID is the event stream of one virtual account.
func StreamID(id string) string { return "virtual_account-" + id }

// Type is checking or savings.
type Type struct{ name string }

var (
	Checking = Type{"checking"}
	Savings  = Type{"savings"}
)

// ParseType accepts checking or savings.
func ParseType(s string) (Type, bool) {
	switch s {
	case "checking":
		return Checking, true
	case "savings":
		return Savings, true
	}
	return Type{}, false
}

func (t Type) String() string               { return t.name }
func (t Type) MarshalText() ([]byte, error) { return []byte(t.name), nil }
func (t *Type) UnmarshalText(b []byte) error {
	v, ok := ParseType(string(b))
	*t = v
	return okOr(ok, "type", "type must be checking or savings")
}
func okOr(ok bool, param, msg string) error {
	if ok {
		return nil
	}
	return domain.Invalid(param, "%s", msg)
}

// Status of a virtual account: active ⇄ frozen, active → closed (final).
type Status struct{ name string }

var (
	StatusNone   = Status{""}
	StatusActive = Status{"active"}
	StatusFrozen = Status{"frozen"}
	StatusClosed = Status{"closed"}
)

// ParseStatus accepts active, frozen or closed.
func ParseStatus(s string) (Status, bool) {
	for _, st := range []Status{StatusActive, StatusFrozen, StatusClosed} {
		if st.name == s {
			return st, true
		}
	}
	return Status{}, false
}

func (s Status) String() string { return s.name }

// Limits.
const MaxEntityRefLen = 128

// State is a virtual account folded from its events.
type State struct {
	ID              string
	PlatformID      string
	Environment     domain.Environment
	EntityRef       string
	Type            Type
	Status          Status
	AccountNumber   string
	RoutingNumber   string
	LedgerAccountID string
	Metadata        map[string]string
	CreatedAt       time.Time
}

// Exists reports whether the account was opened.
func (s State) Exists() bool { return s.Status != StatusNone }

// Opened: a virtual account was provisioned and can receive funds.
type Opened struct {
	VirtualAccountID string             `json:"virtual_account_id"`
	PlatformID       string             `json:"platform_id"`
	Environment      domain.Environment `json:"environment"`
	EntityRef        string             `json:"entity_ref"`
	Type             Type               `json:"type"`
	AccountNumber    string             `json:"account_number"`
	RoutingNumber    string             `json:"routing_number"`
	LedgerAccountID  string             `json:"ledger_account_id"`
	Metadata         map[string]string  `json:"metadata"`
	At               time.Time          `json:"at"`
}

// Frozen: the account may not send payments until unfrozen.
type Frozen struct {
	At time.Time `json:"at"`
}

// Unfrozen: the account is active again.
type Unfrozen struct {
	At time.Time `json:"at"`
}

// Closed: final; the account rejects inbound funds and sends nothing.
type Closed struct {
	At time.Time `json:"at"`
}

func (Opened) EventType() string   { return "virtual_account.created" }
func (Frozen) EventType() string   { return "virtual_account.frozen" }
func (Unfrozen) EventType() string { return "virtual_account.unfrozen" }
func (Closed) EventType() string   { return "virtual_account.closed" }

func init() {
	domain.RegisterEvent[Opened]()
	domain.RegisterEvent[Frozen]()
	domain.RegisterEvent[Unfrozen]()
	domain.RegisterEvent[Closed]()
}

// Commands.
type (
	Open struct {
		VirtualAccountID string
		PlatformID       string
		Environment      domain.Environment
		EntityRef        string
		Type             string
		AccountNumber    string
		RoutingNumber    string
		LedgerAccountID  string
		Metadata         map[string]string
		At               time.Time
	}
	Freeze   struct{ At time.Time }
	Unfreeze struct{ At time.Time }
	// Close carries the balance the command read under the balance lock.
	Close struct {
		Posted, PendingInbound, PendingOutbound int64
		At                                      time.Time
	}
)

// Decide returns the events a command produces on s, or why it cannot.
func Decide(s State, cmd any) ([]domain.Event, error) {
	if c, ok := cmd.(Open); ok {
		return decideOpen(s, c)
	}
	if !s.Exists() {
		return nil, domain.NotFound("virtual_account", s.ID)
	}
	switch c := cmd.(type) {
	case Freeze:
		if s.Status != StatusActive {
			return nil, domain.Errorf(domain.CodeInvalidState, "only an active account can be frozen; this one is %s", s.Status)
		}
		return []domain.Event{Frozen{At: c.At}}, nil
	case Unfreeze:
		if s.Status != StatusFrozen {
			return nil, domain.Errorf(domain.CodeInvalidState, "only a frozen account can be unfrozen; this one is %s", s.Status)
		}
		return []domain.Event{Unfrozen{At: c.At}}, nil
	case Close:
		if s.Status != StatusActive {
			return nil, domain.Errorf(domain.CodeInvalidState, "only an active account can be closed; this one is %s", s.Status)
		}
		if c.Posted != 0 || c.PendingInbound != 0 || c.PendingOutbound != 0 {
			return nil, domain.Errorf(domain.CodeInvalidState, "an account closes only at zero balance with nothing pending")
		}
		return []domain.Event{Closed{At: c.At}}, nil
	}
	return nil, domain.Errorf(domain.CodeInternal, "unknown account command %T", cmd)
}

func decideOpen(s State, c Open) ([]domain.Event, error) {
	if s.Exists() {
		return nil, domain.Errorf(domain.CodeInvalidState, "virtual account %s already exists", c.VirtualAccountID)
	}
	ref := c.EntityRef
	if strings.TrimSpace(ref) == "" || utf8.RuneCountInString(ref) > MaxEntityRefLen {
		return nil, domain.Invalid("entity_ref", "entity_ref must be 1 to %d characters", MaxEntityRefLen)
	}
	typ, ok := ParseType(c.Type)
	if !ok {
		return nil, domain.Invalid("type", "type must be checking or savings")
	}
	if err := domain.ValidateMetadata("metadata", c.Metadata); err != nil {
		return nil, err
	}
	md := c.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return []domain.Event{Opened{
		VirtualAccountID: c.VirtualAccountID, PlatformID: c.PlatformID, Environment: c.Environment,
		EntityRef: ref, Type: typ, AccountNumber: c.AccountNumber, RoutingNumber: c.RoutingNumber,
		LedgerAccountID: c.LedgerAccountID, Metadata: md, At: c.At,
	}}, nil
}

// Evolve folds one event into the state.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Opened:
		s = State{ID: ev.VirtualAccountID, PlatformID: ev.PlatformID, Environment: ev.Environment,
			EntityRef: ev.EntityRef, Type: ev.Type, Status: StatusActive, AccountNumber: ev.AccountNumber,
			RoutingNumber: ev.RoutingNumber, LedgerAccountID: ev.LedgerAccountID, Metadata: ev.Metadata, CreatedAt: ev.At}
	case Frozen:
		s.Status = StatusFrozen
	case Unfrozen:
		s.Status = StatusActive
	case Closed:
		s.Status = StatusClosed
	}
	return s
}
