// Package ledger is the double-entry sub-ledger: ledger accounts, journal
// entries that always balance, and the balance arithmetic of virtual
// accounts. Posted entries never change; corrections reverse.
package ledger

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/opentreasury/treasury/domain"
)

// Direction is debit or credit; also used as an account's normal balance.
type Direction struct{ name string }

var (
	Debit  = Direction{"debit"}
	Credit = Direction{"credit"}
)

// ParseDirection accepts debit or credit.
func ParseDirection(s string) (Direction, bool) {
	switch s {
	case "debit":
		return Debit, true
	case "credit":
		return Credit, true
	}
	return Direction{}, false
}

func (d Direction) String() string { return d.name }

// Opposite flips a direction.
func (d Direction) Opposite() Direction {
	if d == Debit {
		return Credit
	}
	return Debit
}

func (d Direction) MarshalText() ([]byte, error) { return []byte(d.name), nil }
func (d *Direction) UnmarshalText(b []byte) error {
	v, ok := ParseDirection(string(b))
	if !ok {
		return domain.Invalid("direction", "direction must be debit or credit")
	}
	*d = v
	return nil
}

// Codes of the chart of accounts of a platform in one environment.
const (
	CodeVirtualAccount    = "virtual_account"
	CodePlatformOperating = "platform_operating"
	CodePlatformFees      = "platform_fees"
	CodeServiceFeeRevenue = "service_fee_revenue"
	// CodeOperatorFunding is the operator's side of a funding: the money
	// the operator placed at the bank for the platform (an asset, debit).
	CodeOperatorFunding = "operator_funding"
	railClearingPrefix  = "rail_clearing_"
)

// RailClearing is the code of a rail's clearing account.
func RailClearing(rail string) string { return railClearingPrefix + rail }

// NormalBalance of an account code: clearing and operator funding accounts
// are assets (debit); the rest are what the service owes or earns (credit).
func NormalBalance(code string) Direction {
	if code == CodeOperatorFunding || len(code) > len(railClearingPrefix) && code[:len(railClearingPrefix)] == railClearingPrefix {
		return Debit
	}
	return Credit
}

// Lockable reports whether a platform-level account keeps a locked balance
// row (platform_balances) that commands check before posting to it. These
// are the accounts only manual entries and fundings touch, so the lock
// never sits on the payment path; the hot accounts (rail clearing, service
// fee revenue) stay lock-free and are summed from their entries.
func Lockable(code string) bool {
	return code == CodePlatformOperating || code == CodePlatformFees || code == CodeOperatorFunding
}

// Entry types. The first three are the manual ones.
const (
	TypeAdjustment      = "adjustment"
	TypeFee             = "fee"
	TypeCorrection      = "correction"
	TypeInboundTransfer = "inbound_transfer"
	TypePayment         = "payment"
	TypePaymentFee      = "payment_fee"
	TypePaymentReversal = "payment_reversal"
	// TypeBookTransfer: money moved between two virtual accounts of a
	// platform (POST /book-transfers).
	TypeBookTransfer = "book_transfer"
	// TypeFunding: the operator funded the platform's platform_operating
	// account (POST /operator/platforms/:id/fund).
	TypeFunding = "funding"
)

// JournalTypes are the types a journal entry can have: the manual ones and
// those the service posts. payment_fee is only ever a line's type (a
// payment's entry is of type payment, with a payment_fee line).
var JournalTypes = []string{TypeAdjustment, TypeFee, TypeCorrection, TypeInboundTransfer, TypePayment,
	TypePaymentReversal, TypeBookTransfer, TypeFunding}

// IsJournalType reports whether t is one of JournalTypes.
func IsJournalType(t string) bool { return slices.Contains(JournalTypes, t) }

// Statuses are a journal entry's (and its lines') statuses.
var Statuses = []string{StatusPending, StatusPosted, StatusArchived}

// SourceTypes name what a journal entry can record (Source.Type): a
// payment (its hold and post, or its return's reversal), an inbound
// transfer, a book transfer, or the entry itself (a manual entry, a
// funding).
var SourceTypes = []string{"payment", "inbound_transfer", "book_transfer", "journal_entry"}

// IsManualType reports whether a platform may post this type by hand.
func IsManualType(t string) bool {
	return t == TypeAdjustment || t == TypeFee || t == TypeCorrection
}

// Status of a journal entry and its lines.
const (
	StatusPending  = "pending"
	StatusPosted   = "posted"
	StatusArchived = "archived"
)

// MaxAmount bounds one manual or funding line, in cents ($100 billion).
// With at most MaxLines lines an entry's debits sum to at most 10^15, and
// a payment or inbound transfer is bounded by its rail (under 10^10), so
// no sum of one command's lines can overflow int64.
const MaxAmount int64 = 10_000_000_000_000

// MaxLines bounds the lines of a manual journal entry.
const MaxLines = 100

// Line is one ledger entry of a journal entry.
type Line struct {
	EntryID          string    `json:"entry_id"`
	LedgerAccountID  string    `json:"ledger_account_id"`
	VirtualAccountID string    `json:"virtual_account_id,omitempty"`
	Direction        Direction `json:"direction"`
	Amount           int64     `json:"amount"`
	// Type is the line's transaction type (a payment has a payment line
	// and a payment_fee line); it defaults to the journal entry's type.
	Type string `json:"type"`
}

// Source names what a journal entry records.
type Source struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// StreamType names journal entry streams.
const StreamType = "journal_entry"

// StreamID is the event stream of one journal entry.
func StreamID(id string) string { return "journal_entry-" + id }

// Recorded: a balanced journal entry was written, pending or posted.
type Recorded struct {
	JournalEntryID string             `json:"journal_entry_id"`
	PlatformID     string             `json:"platform_id"`
	Environment    domain.Environment `json:"environment"`
	Type           string             `json:"type"`
	Description    string             `json:"description"`
	Status         string             `json:"status"`
	Lines          []Line             `json:"lines"`
	Source         Source             `json:"source"`
	Reverses       string             `json:"reverses,omitempty"`
	Metadata       map[string]string  `json:"metadata,omitempty"`
	EffectiveAt    time.Time          `json:"effective_at"`
	At             time.Time          `json:"at"`
}

// Posted: a pending entry settled. Lines repeat the entry's lines so that
// projections need no lookups.
type Posted struct {
	JournalEntryID string    `json:"journal_entry_id"`
	Lines          []Line    `json:"lines"`
	At             time.Time `json:"at"`
}

// Archived: a pending entry was released without posting.
type Archived struct {
	JournalEntryID string    `json:"journal_entry_id"`
	Lines          []Line    `json:"lines"`
	At             time.Time `json:"at"`
}

// Reversed: a posted entry was reversed by another (its mirror image).
type Reversed struct {
	JournalEntryID string    `json:"journal_entry_id"`
	ReversedBy     string    `json:"reversed_by"`
	At             time.Time `json:"at"`
}

func (Recorded) EventType() string { return "ledger.journal_entry.recorded" }
func (Posted) EventType() string   { return "ledger.journal_entry.posted" }
func (Archived) EventType() string { return "ledger.journal_entry.archived" }
func (Reversed) EventType() string { return "ledger.journal_entry.reversed" }

// ChartOpened: the platform's system accounts in one environment exist.
type ChartOpened struct {
	PlatformID  string             `json:"platform_id"`
	Environment domain.Environment `json:"environment"`
	Accounts    map[string]string  `json:"accounts"` // code → la_ id
	At          time.Time          `json:"at"`
}

func (ChartOpened) EventType() string { return "ledger.chart_opened" }

// ChartStreamID is the stream of a platform's chart in one environment.
func ChartStreamID(platformID string, env domain.Environment) string {
	return "ledger_chart-" + platformID + "-" + env.String()
}

func init() {
	domain.RegisterEvent[Recorded]()
	domain.RegisterEvent[Posted]()
	domain.RegisterEvent[Archived]()
	domain.RegisterEvent[Reversed]()
	domain.RegisterEvent[ChartOpened]()
}

// ValidateLines checks that lines form a balanced journal entry.
func ValidateLines(lines []Line) error { return validateLines(lines, MaxAmount) }

// ValidateBalanced is ValidateLines without today's bound on a line's
// amount: a reversal mirrors an entry recorded before that bound existed,
// and undoing it must stay possible. Its sums are checked for overflow.
func ValidateBalanced(lines []Line) error { return validateLines(lines, math.MaxInt64) }

func validateLines(lines []Line, maxAmount int64) error {
	if len(lines) < 2 {
		return domain.Invalid("lines", "a journal entry needs at least 2 lines")
	}
	var debits, credits int64
	for _, l := range lines {
		if l.Amount < 1 || l.Amount > maxAmount {
			return domain.Invalid("amount", "amount must be an integer number of cents from 1 to %d", maxAmount)
		}
		var ok bool
		switch l.Direction {
		case Debit:
			debits, ok = addChecked(debits, l.Amount)
		case Credit:
			credits, ok = addChecked(credits, l.Amount)
		default:
			return domain.Invalid("direction", "direction must be debit or credit")
		}
		if !ok {
			return domain.Invalid("lines", "the entry's debits or credits exceed the largest sum the ledger holds")
		}
	}
	if debits != credits {
		return &domain.Error{Code: domain.CodeUnbalancedEntry, Param: "lines",
			Message: "debits and credits must be equal: debits " + strconv.FormatInt(debits, 10) + ", credits " + strconv.FormatInt(credits, 10)}
	}
	return nil
}

// Mirror returns the reversing lines of a posted entry with new entry ids.
func Mirror(lines []Line, newIDs func() string, typ string) []Line {
	out := make([]Line, len(lines))
	for i, l := range lines {
		l.EntryID = newIDs()
		l.Direction = l.Direction.Opposite()
		if typ != "" {
			l.Type = typ
		}
		out[i] = l
	}
	return out
}
