package ledger

import (
	"strconv"

	"github.com/opentreasury/treasury/domain"
)

// ManualLine is one line of a manual journal entry as the platform wrote
// it: exactly one of the two accounts, a direction and an amount.
type ManualLine struct {
	LedgerAccountID  string
	VirtualAccountID string
	Direction        string
	Amount           *int64
}

// ValidateManualLines checks the lines of a manual entry one by one: at
// most MaxLines, each naming exactly one account, with a direction and an
// amount from 1 to MaxAmount. Whether they balance is ValidateLines'.
func ValidateManualLines(lines []ManualLine) error {
	if len(lines) > MaxLines {
		return domain.Invalid("lines", "a journal entry has at most %d lines", MaxLines)
	}
	for i, l := range lines {
		p := linePath(i)
		if (l.LedgerAccountID == "") == (l.VirtualAccountID == "") {
			return domain.Invalid(p, "each line names exactly one of ledger_account_id and virtual_account_id")
		}
		if _, ok := ParseDirection(l.Direction); !ok {
			return domain.Invalid(p+".direction", "direction must be debit or credit")
		}
		if err := CheckManualAmount(p+".amount", l.Amount); err != nil {
			return err
		}
	}
	return nil
}

// CheckManualAmount refuses a missing amount or one outside 1..MaxAmount.
func CheckManualAmount(param string, amount *int64) error {
	if amount == nil || *amount < 1 || *amount > MaxAmount {
		return domain.Invalid(param, "amount must be an integer number of cents from 1 to %d", MaxAmount)
	}
	return nil
}

// PostableByHand reports whether a platform may post to an account by
// hand: its virtual accounts and its own two accounts, not the service's
// clearing and fee revenue accounts (which payments keep).
func PostableByHand(code string) bool {
	return code == CodeVirtualAccount || code == CodePlatformOperating || code == CodePlatformFees
}

// KnownAccount is a ledger account of the platform that a manual line
// names: its code and, for a virtual account's own ledger account, that
// virtual account.
type KnownAccount struct {
	Code             string
	VirtualAccountID string
}

// ManualLines turns validated manual lines into ledger lines of type typ.
// known holds the platform's ledger accounts the lines name (an id not in
// it is not the platform's); a virtual account's ledger account counts as
// that virtual account, so the funds check sees it.
func ManualLines(in []ManualLine, known map[string]KnownAccount, typ string, newEntryID func() string) ([]Line, error) {
	out := make([]Line, len(in))
	for i, l := range in {
		dir, _ := ParseDirection(l.Direction)
		line := Line{EntryID: newEntryID(), Direction: dir, Amount: *l.Amount, Type: typ,
			LedgerAccountID: l.LedgerAccountID, VirtualAccountID: l.VirtualAccountID}
		if l.LedgerAccountID != "" {
			k, ok := known[l.LedgerAccountID]
			if !ok {
				return nil, &domain.Error{Code: domain.CodeNotFound, Param: linePath(i) + ".ledger_account_id",
					Message: "no such ledger account: " + l.LedgerAccountID}
			}
			if !PostableByHand(k.Code) {
				return nil, domain.Invalid(linePath(i)+".ledger_account_id",
					"%s is the service's own account: manual entries post to virtual accounts, platform_operating and platform_fees", k.Code)
			}
			line.VirtualAccountID = k.VirtualAccountID
		}
		out[i] = line
	}
	return out, nil
}

// ShorthandLines is the shorthand manual entry: the virtual account on one
// side, the platform's own account on the other (platform_fees for a fee,
// platform_operating otherwise).
func ShorthandLines(virtualAccountID string, dir Direction, amount int64, typ string, chart map[string]string, newEntryID func() string) ([]Line, error) {
	code := CodePlatformOperating
	if typ == TypeFee {
		code = CodePlatformFees
	}
	offset, err := chartAccount(chart, code)
	if err != nil {
		return nil, err
	}
	return []Line{
		{EntryID: newEntryID(), VirtualAccountID: virtualAccountID, Direction: dir, Amount: amount, Type: typ},
		{EntryID: newEntryID(), LedgerAccountID: offset, Direction: dir.Opposite(), Amount: amount, Type: typ},
	}, nil
}

func linePath(i int) string { return "lines[" + strconv.Itoa(i) + "]" }
