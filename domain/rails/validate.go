package rails

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
)

// CheckAmount refuses an amount under a cent or over the rail's limit.
func CheckAmount(r Rail, amount int64) error {
	if amount < 1 {
		return domain.Invalid("amount", "amount must be an integer number of cents of at least 1")
	}
	if limit := MaxAmount(r); amount > limit {
		return &domain.Error{Code: domain.CodeAmountExceedsRailLimit, Param: "amount",
			Message: fmt.Sprintf("amount exceeds the %s limit of $%d.%02d", r, limit/100, limit%100)}
	}
	return nil
}

// MaxNameLen bounds a counterparty's name.
const MaxNameLen = 80

// CheckCounterparty checks a bank account at the other end of a transfer:
// an ABA routing number with a valid checksum, 4 to 17 digits of account
// number, a name of 1 to 80 characters. param prefixes the field names
// ("": the fields are top-level, as in POST /counterparties).
func CheckCounterparty(param, accountNumber, routingNumber, name string) error {
	if param != "" {
		param += "."
	}
	if !ValidABA(routingNumber) {
		return domain.Invalid(param+"routing_number", "routing_number must be 9 digits with a valid ABA checksum")
	}
	if !allDigits(accountNumber, 4, 17) {
		return domain.Invalid(param+"account_number", "account_number must be 4 to 17 digits")
	}
	if strings.TrimSpace(name) == "" || utf8.RuneCountInString(name) > MaxNameLen {
		return domain.Invalid(param+"name", "name must be 1 to %d characters", MaxNameLen)
	}
	return nil
}

func allDigits(s string, min, max int) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
