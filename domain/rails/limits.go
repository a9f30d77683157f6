package rails

// MaxAmount is the largest single payment a rail carries, in cents (API.md §5).
func MaxAmount(r Rail) int64 {
	switch r {
	case ACHSameDay:
		return 1_000_000_00
	case RTP, FedNow:
		return 10_000_000_00
	case ACHStandard:
		return 99_999_999_99
	}
	return 0
}

// IsInstant reports whether the rail settles at once (RTP, FedNow).
func IsInstant(r Rail) bool { return r == RTP || r == FedNow }

// ValidABA checks a 9-digit ABA routing number's checksum (weights 3, 7, 1).
func ValidABA(s string) bool {
	if len(s) != 9 {
		return false
	}
	weights := [9]int{3, 7, 1, 3, 7, 1, 3, 7, 1}
	sum := 0
	for i := 0; i < 9; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return false
		}
		sum += int(c-'0') * weights[i]
	}
	return sum%10 == 0
}
