package kyb

import (
	"regexp"
	"strconv"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
)

var reasonCode = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

// ManualDecision is a person's decision of verification id (the
// operator's, or a sandbox simulation's): approved or rejected, with at
// most 10 reasons, or which field is wrong (400). The API and the console
// both decide through it.
func ManualDecision(id, outcome string, reasons []Reason) (Decide, error) {
	if outcome != StatusApproved && outcome != StatusRejected {
		return Decide{}, domain.Invalid("outcome", "outcome must be approved or rejected")
	}
	if len(reasons) > 10 {
		return Decide{}, domain.Invalid("reasons", "at most 10 reasons")
	}
	for i, reason := range reasons {
		if !reasonCode.MatchString(reason.Code) {
			return Decide{}, domain.Invalid("reasons["+strconv.Itoa(i)+"].code", "a reason code is 1 to 64 characters of a-z, 0-9 and _")
		}
		if utf8.RuneCountInString(reason.Message) > 500 {
			return Decide{}, domain.Invalid("reasons["+strconv.Itoa(i)+"].message", "a reason's message is at most 500 characters")
		}
		if utf8.RuneCountInString(reason.Field) > 100 {
			return Decide{}, domain.Invalid("reasons["+strconv.Itoa(i)+"].field", "a reason's field is at most 100 characters")
		}
	}
	return Decide{VerificationID: id, Outcome: outcome, Method: MethodManual, Reasons: reasons}, nil
}
