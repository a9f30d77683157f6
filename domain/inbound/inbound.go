// Package inbound is the inbound transfer aggregate: funds arriving in a
// virtual account (in the sandbox, by simulation). RTP and FedNow credit at
// once; ACH stays pending until it settles.
package inbound

import (
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// StreamType names inbound transfer streams.
const StreamType = "inbound_transfer"

// StreamID is the stream of one inbound transfer.
func StreamID(id string) string { return "inbound_transfer-" + id }

// Statuses.
const (
	StatusPending   = "pending"
	StatusCompleted = "completed"
)

// Originator is who sent the funds.
type Originator struct {
	Name          string `json:"name"`
	AccountNumber string `json:"account_number"`
	RoutingNumber string `json:"routing_number"`
}

// Received: funds are on their way to a virtual account.
type Received struct {
	InboundTransferID string     `json:"inbound_transfer_id"`
	VirtualAccountID  string     `json:"virtual_account_id"`
	Amount            int64      `json:"amount"`
	Rail              string     `json:"rail"`
	Originator        Originator `json:"originator"`
	Description       string     `json:"description"`
	JournalEntryID    string     `json:"journal_entry_id"`
	ExpectedAt        time.Time  `json:"expected_at"`
	At                time.Time  `json:"at"`
}

// Completed: the funds settled and are posted to the account.
type Completed struct {
	InboundTransferID string    `json:"inbound_transfer_id"`
	At                time.Time `json:"at"`
}

func (Received) EventType() string  { return "inbound_transfer.received" }
func (Completed) EventType() string { return "inbound_transfer.completed" }

func init() {
	domain.RegisterEvent[Received]()
	domain.RegisterEvent[Completed]()
}

// State of an inbound transfer.
type State struct {
	Received
	Status      string
	CompletedAt *time.Time
}

// Evolve folds one event.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Received:
		s = State{Received: ev, Status: StatusPending}
	case Completed:
		s.Status = StatusCompleted
		at := ev.At
		s.CompletedAt = &at
	}
	return s
}

// Validate checks a simulated inbound transfer request.
func Validate(amount int64, rail string, o Originator, description string) (rails.Rail, error) {
	r, ok := rails.Parse(rail)
	if !ok {
		return r, domain.Invalid("rail", "rail must be one of ach_standard, ach_same_day, rtp, fednow")
	}
	if err := rails.CheckAmount(r, amount); err != nil {
		return r, err
	}
	if err := rails.CheckCounterparty("originator", o.AccountNumber, o.RoutingNumber, o.Name); err != nil {
		return r, err
	}
	if utf8.RuneCountInString(description) > 140 {
		return r, domain.Invalid("description", "description must be at most 140 characters")
	}
	return r, nil
}
