package ledger

import (
	"strconv"

	"github.com/opentreasury/treasury/domain"
)

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

// MaxBalance bounds every balance a command can produce, in cents ($10
// trillion), and in both directions. Every balance then stays far inside
// int64 (about 9.2 × 10^18): a sum over a platform's bounded accounts, or
// over one account's days in a report, cannot overflow.
const MaxBalance int64 = 1_000_000_000_000_000

// addChecked adds without overflowing: ok is false when a+b is outside int64.
func addChecked(a, b int64) (sum int64, ok bool) {
	sum = a + b
	// Overflow happened iff both operands have the sign the sum lacks.
	if (a > 0 && b > 0 && sum < 0) || (a < 0 && b < 0 && sum >= 0) {
		return 0, false
	}
	return sum, true
}

func limitExceeded(id, what string) error {
	return &domain.Error{Code: domain.CodeLimitExceeded, ResourceID: id,
		Message: what + " would exceed the largest balance an account may hold (" + formatCents(MaxBalance) + " cents)"}
}

// CheckLimits refuses lines that would take a virtual account's posted plus
// pending inbound balance past MaxBalance. Only credits raise it, so only
// credited accounts are checked; pending outbound never exceeds posted
// (available ≥ 0), so this bounds all three of a virtual account's
// balances. before holds the locked balances of the accounts the lines touch.
func CheckLimits(before map[string]Balance, lines []Line) error {
	incoming := map[string]int64{}
	for _, l := range lines {
		if l.VirtualAccountID == "" || l.Direction != Credit {
			continue
		}
		sum, ok := addChecked(incoming[l.VirtualAccountID], l.Amount)
		if !ok {
			return limitExceeded(l.VirtualAccountID, "this credit")
		}
		incoming[l.VirtualAccountID] = sum
	}
	for id, in := range incoming {
		b := before[id]
		held, ok := addChecked(b.Posted, b.PendingInbound)
		if ok {
			held, ok = addChecked(held, in)
		}
		if !ok || held > MaxBalance {
			return limitExceeded(id, "this credit to the virtual account")
		}
	}
	return nil
}

// PlatformBalance is the locked posted balance of a platform-level account
// (see Lockable), in its normal direction.
type PlatformBalance struct {
	Code   string
	Normal Direction
	Posted int64
}

// CheckPlatformBalances refuses lines that would take a lockable platform
// account past ±MaxBalance (limit_exceeded), or, in live, below zero
// (insufficient_funds): live money must come from somewhere real, so
// platform_operating and platform_fees hold only what was posted to them.
// The sandbox keeps its freedom to go negative. before maps ledger
// account ids to their locked balances; lines to other accounts are
// ignored. An account is refused only for moving the wrong way, so an
// entry that brings an account back towards its bounds is always allowed.
func CheckPlatformBalances(before map[string]PlatformBalance, lines []Line, env domain.Environment) error {
	delta := map[string]int64{}
	for _, l := range lines {
		b, ok := before[l.LedgerAccountID]
		if !ok || l.VirtualAccountID != "" {
			continue
		}
		amount := l.Amount
		if l.Direction != b.Normal {
			amount = -amount
		}
		sum, ok := addChecked(delta[l.LedgerAccountID], amount)
		if !ok {
			return limitExceeded(l.LedgerAccountID, "this entry")
		}
		delta[l.LedgerAccountID] = sum
	}
	for id, d := range delta {
		b := before[id]
		after, ok := addChecked(b.Posted, d)
		switch {
		case !ok || (d > 0 && after > MaxBalance) || (d < 0 && after < -MaxBalance):
			return limitExceeded(id, "this entry to "+b.Code)
		case env == domain.Live && d < 0 && after < 0:
			return &domain.Error{Code: domain.CodeInsufficientFunds, ResourceID: id,
				Message: "in live, " + b.Code + " may not go below zero: it holds " + formatCents(b.Posted) +
					" cents; the operator funds platform_operating (POST /v1/operator/platforms/{id}/fund)"}
		}
	}
	return nil
}

func formatCents(n int64) string { return strconv.FormatInt(n, 10) }
