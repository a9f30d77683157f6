// Package rails knows the payment rails: their names, limits and default fees.
package rails

// Rail is one of the four payment rails. A struct around an unexported
// string, so that only the four values below exist.
type Rail struct{ name string }

var (
	ACHStandard = Rail{"ach_standard"}
	ACHSameDay  = Rail{"ach_same_day"}
	RTP         = Rail{"rtp"}
	FedNow      = Rail{"fednow"}
)

// All lists the rails in a stable order.
var All = []Rail{ACHStandard, ACHSameDay, RTP, FedNow}

// Parse accepts a rail's API name.
func Parse(s string) (Rail, bool) {
	for _, r := range All {
		if r.name == s {
			return r, true
		}
	}
	return Rail{}, false
}

func (r Rail) String() string { return r.name }

// DefaultFee is the fee in cents charged per payment when the platform's
// fee schedule does not say otherwise (API.md §5).
func DefaultFee(r Rail) int64 {
	switch r {
	case ACHStandard:
		return 25
	case ACHSameDay:
		return 100
	case RTP:
		return 50
	case FedNow:
		return 45
	}
	return 0
}

// DefaultFeeSchedule returns the default fee of every rail, by name.
func DefaultFeeSchedule() map[string]int64 {
	m := make(map[string]int64, len(All))
	for _, r := range All {
		m[r.name] = DefaultFee(r)
	}
	return m
}
