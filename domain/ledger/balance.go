package ledger

import "github.com/opentreasury/treasury/domain"

// Balance of a virtual account (a credit-normal ledger account).
// available = posted − pending_outbound: inbound funds count once settled.
type Balance struct {
	Posted          int64 `json:"posted"`
	PendingInbound  int64 `json:"pending_inbound"`
	PendingOutbound int64 `json:"pending_outbound"`
}

// Available is what the account can send now.
func (b Balance) Available() int64 { return b.Posted - b.PendingOutbound }

// Record applies a line written with status (pending or posted).
func (b Balance) Record(l Line, status string) Balance {
	switch {
	case status == StatusPosted && l.Direction == Credit:
		b.Posted += l.Amount
	case status == StatusPosted && l.Direction == Debit:
		b.Posted -= l.Amount
	case status == StatusPending && l.Direction == Credit:
		b.PendingInbound += l.Amount
	case status == StatusPending && l.Direction == Debit:
		b.PendingOutbound += l.Amount
	}
	return b
}

// Post moves a pending line to posted.
func (b Balance) Post(l Line) Balance {
	return b.Archive(l).Record(l, StatusPosted)
}

// Archive releases a pending line.
func (b Balance) Archive(l Line) Balance {
	if l.Direction == Credit {
		b.PendingInbound -= l.Amount
	} else {
		b.PendingOutbound -= l.Amount
	}
	return b
}

// CheckFunds refuses lines that would take a virtual account's available
// balance below zero. before holds the locked balances of every virtual
// account the lines touch.
func CheckFunds(before map[string]Balance, lines []Line, status string) error {
	after := make(map[string]Balance, len(before))
	for id, b := range before {
		after[id] = b
	}
	debited := map[string]bool{}
	for _, l := range lines {
		if l.VirtualAccountID == "" {
			continue
		}
		after[l.VirtualAccountID] = after[l.VirtualAccountID].Record(l, status)
		if l.Direction == Debit {
			debited[l.VirtualAccountID] = true
		}
	}
	for id := range debited {
		if after[id].Available() < 0 {
			return &domain.Error{Code: domain.CodeInsufficientFunds, ResourceID: id,
				Message: "the virtual account's available balance is too low for this debit"}
		}
	}
	return nil
}

// State of a journal entry, for reversals and status changes.
type State struct {
	ID          string
	PlatformID  string
	Environment domain.Environment
	Type        string
	Status      string
	Lines       []Line
	ReversedBy  string
}

// Evolve folds a journal entry event.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Recorded:
		s = State{ID: ev.JournalEntryID, PlatformID: ev.PlatformID, Environment: ev.Environment,
			Type: ev.Type, Status: ev.Status, Lines: ev.Lines}
	case Posted:
		s.Status = StatusPosted
	case Archived:
		s.Status = StatusArchived
	case Reversed:
		s.ReversedBy = ev.ReversedBy
	}
	return s
}

// CanReverse says whether a manual reversal of s is allowed: only posted
// manual entries (adjustment, fee, correction); payments and transfers
// are undone by their own lifecycle (a failed payment reverses itself).
func (s State) CanReverse() error {
	if !IsManualType(s.Type) {
		return domain.Errorf(domain.CodeInvalidState, "a %s entry cannot be reversed by hand; only adjustment, fee and correction entries can", s.Type)
	}
	if s.Status != StatusPosted {
		return domain.Errorf(domain.CodeInvalidState, "only a posted journal entry can be reversed; this one is %s", s.Status)
	}
	if s.ReversedBy != "" {
		return &domain.Error{Code: domain.CodeInvalidState, ResourceID: s.ReversedBy, Message: "this journal entry was already reversed"}
	}
	return nil
}
