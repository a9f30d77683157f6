// Package booktransfer is the book transfer aggregate: money moved at once
// between two virtual accounts of one platform and environment, as one
// posted journal entry (API.md §12). It has one event: a book transfer is
// completed when it is made, or not made at all.
package booktransfer

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
)

// StreamType names book transfer streams.
const StreamType = "book_transfer"

// StreamID is the stream of one book transfer.
func StreamID(id string) string { return "book_transfer-" + id }

// StatusCompleted is a book transfer's only status.
const StatusCompleted = "completed"

// MaxDescriptionLen bounds a book transfer's description, as a payment's.
const MaxDescriptionLen = 140

// Request is a book transfer as the platform asked for it.
type Request struct {
	FromVirtualAccountID string
	ToVirtualAccountID   string
	Amount               int64
	Description          string
	Metadata             map[string]string
}

// Validate checks a request's fields (400), before any account is read.
func (r Request) Validate() error {
	if !domain.HasPrefix(r.FromVirtualAccountID, domain.PrefixVirtualAccount) {
		return domain.Invalid("from_virtual_account_id", "from_virtual_account_id must be a va_ id")
	}
	if !domain.HasPrefix(r.ToVirtualAccountID, domain.PrefixVirtualAccount) {
		return domain.Invalid("to_virtual_account_id", "to_virtual_account_id must be a va_ id")
	}
	if r.FromVirtualAccountID == r.ToVirtualAccountID {
		return domain.Invalid("to_virtual_account_id", "a book transfer moves money between two different accounts")
	}
	amount := r.Amount
	if err := ledger.CheckManualAmount("amount", &amount); err != nil {
		return err
	}
	if utf8.RuneCountInString(r.Description) > MaxDescriptionLen {
		return domain.Invalid("description", "description must be at most %d characters", MaxDescriptionLen)
	}
	return domain.ValidateMetadata("metadata", r.Metadata)
}

// Completed: money moved from one account to the other, posted at once.
type Completed struct {
	BookTransferID       string             `json:"book_transfer_id"`
	PlatformID           string             `json:"platform_id"`
	Environment          domain.Environment `json:"environment"`
	FromVirtualAccountID string             `json:"from_virtual_account_id"`
	ToVirtualAccountID   string             `json:"to_virtual_account_id"`
	Amount               int64              `json:"amount"`
	Description          string             `json:"description"`
	Metadata             map[string]string  `json:"metadata"`
	IdempotencyKey       string             `json:"idempotency_key"`
	JournalEntryID       string             `json:"journal_entry_id"`
	At                   time.Time          `json:"at"`
}

func (Completed) EventType() string { return "book_transfer.completed" }

func init() { domain.RegisterEvent[Completed]() }

// State of a book transfer: its one event.
type State struct{ Completed }

// Evolve folds one event.
func Evolve(s State, e domain.Event) State {
	if c, ok := e.(Completed); ok {
		s.Completed = c
	}
	return s
}

// Party is one of the two accounts, as read under its balance lock.
type Party struct {
	ID              string
	Status          string // an account.Status name
	LedgerAccountID string
	Balance         ledger.Balance
	KYBStatus       string // of the business behind it
}

// Inputs is everything the creation of a book transfer decides on.
type Inputs struct {
	Request        Request
	PlatformID     string
	Environment    domain.Environment
	IdempotencyKey string
	From, To       Party
	Now            time.Time
	IDs            NewIDs
}

// NewIDs names what a creation records.
type NewIDs struct {
	BookTransfer, JournalEntry string
	LedgerEntry                func() string // once per line, debit first
}

// Decide makes a book transfer, or says the first rule it breaks, in this
// order (each a 422): the sending account is active and its business KYB
// approved (as for a payment), the receiving account is not closed (a
// frozen one still receives, as it receives inbound transfers), the
// sender's available balance covers the amount, and the receiver's balance
// stays within the ledger's bound.
func Decide(in Inputs) ([]domain.Event, error) {
	if err := in.Request.Validate(); err != nil {
		return nil, err
	}
	from, to := in.From, in.To
	if from.Status != account.StatusActive.String() {
		return nil, &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: from.ID,
			Message: "the sending account is " + from.Status + "; only active accounts send money"}
	}
	if from.KYBStatus != kyb.StatusApproved {
		return nil, &domain.Error{Code: domain.CodeKYBNotApproved, ResourceID: from.ID,
			Message: "the business behind the sending account is not KYB approved (kyb_status " + from.KYBStatus + ")"}
	}
	if to.Status == account.StatusClosed.String() {
		return nil, &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: to.ID, Message: "the receiving account is closed"}
	}
	r := in.Request
	lines := []ledger.Line{
		{EntryID: in.IDs.LedgerEntry(), LedgerAccountID: from.LedgerAccountID, VirtualAccountID: from.ID,
			Direction: ledger.Debit, Amount: r.Amount, Type: ledger.TypeBookTransfer},
		{EntryID: in.IDs.LedgerEntry(), LedgerAccountID: to.LedgerAccountID, VirtualAccountID: to.ID,
			Direction: ledger.Credit, Amount: r.Amount, Type: ledger.TypeBookTransfer},
	}
	balances := map[string]ledger.Balance{from.ID: from.Balance, to.ID: to.Balance}
	if err := ledger.CheckFunds(balances, lines, ledger.StatusPosted); err != nil {
		return nil, err
	}
	if err := ledger.CheckLimits(balances, lines); err != nil {
		return nil, err
	}
	desc := r.Description
	if strings.TrimSpace(desc) == "" {
		desc = "Book transfer to " + to.ID
	}
	done := Completed{BookTransferID: in.IDs.BookTransfer, PlatformID: in.PlatformID, Environment: in.Environment,
		FromVirtualAccountID: from.ID, ToVirtualAccountID: to.ID, Amount: r.Amount, Description: r.Description,
		Metadata: r.Metadata, IdempotencyKey: in.IdempotencyKey, JournalEntryID: in.IDs.JournalEntry, At: in.Now}
	entry := ledger.Recorded{JournalEntryID: in.IDs.JournalEntry, PlatformID: in.PlatformID, Environment: in.Environment,
		Type: ledger.TypeBookTransfer, Description: desc, Status: ledger.StatusPosted, Lines: lines,
		Source: ledger.Source{Type: StreamType, ID: in.IDs.BookTransfer}, EffectiveAt: in.Now, At: in.Now}
	return []domain.Event{done, entry}, nil
}
