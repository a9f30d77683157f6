package platform

import (
	"maps"
	"regexp"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// Config holds the commercial terms the operator sets for a platform.
type Config struct {
	RevenueShareRate decimal.Decimal  `json:"revenue_share_rate"`
	InterestRate     decimal.Decimal  `json:"interest_rate"`
	FeeSchedule      map[string]int64 `json:"fee_schedule"`
	RateLimit        *RateLimit       `json:"rate_limit"`
}

// Equal compares by value: rates "0.3" and "0.30" are the same rate.
func (c Config) Equal(o Config) bool {
	return c.RevenueShareRate.Equal(o.RevenueShareRate) && c.InterestRate.Equal(o.InterestRate) &&
		maps.Equal(c.FeeSchedule, o.FeeSchedule) &&
		(c.RateLimit == nil) == (o.RateLimit == nil) && (c.RateLimit == nil || *c.RateLimit == *o.RateLimit)
}

// RateLimit overrides the default token bucket of the platform's keys.
type RateLimit struct {
	PerSecond int `json:"per_second"`
	Burst     int `json:"burst"`
}

// DefaultConfig is a new platform's configuration: no revenue share, no
// interest, the default fees, the default rate limits.
func DefaultConfig() Config {
	return Config{
		RevenueShareRate: decimal.Zero,
		InterestRate:     decimal.Zero,
		FeeSchedule:      rails.DefaultFeeSchedule(),
	}
}

// ConfigPatch is the operator's PATCH: only the fields set change.
type ConfigPatch struct {
	RevenueShareRate domain.Optional[string]           `json:"revenue_share_rate"`
	InterestRate     domain.Optional[string]           `json:"interest_rate"`
	FeeSchedule      domain.Optional[map[string]int64] `json:"fee_schedule"`
	RateLimit        domain.Optional[RateLimit]        `json:"rate_limit"`
}

// Limits of the operator's settings.
const (
	MaxFeeCents       = 100_000 // $1,000 per payment
	MaxRatePerSecond  = 100_000
	MaxRateLimitBurst = 1_000_000
)

// Apply returns c with the patch applied, or a 400 naming the bad field.
func (c Config) Apply(p ConfigPatch) (Config, error) {
	next := c
	next.FeeSchedule = make(map[string]int64, len(c.FeeSchedule))
	for k, v := range c.FeeSchedule {
		next.FeeSchedule[k] = v
	}
	var err error
	if p.RevenueShareRate.Set {
		if next.RevenueShareRate, err = parseRate("revenue_share_rate", p.RevenueShareRate.Value); err != nil {
			return c, err
		}
	}
	if p.InterestRate.Set {
		if next.InterestRate, err = parseRate("interest_rate", p.InterestRate.Value); err != nil {
			return c, err
		}
	}
	if p.FeeSchedule.Set {
		if p.FeeSchedule.Value == nil {
			return c, domain.Invalid("fee_schedule", "fee_schedule must be an object of rail to cents")
		}
		for rail, fee := range *p.FeeSchedule.Value {
			if _, ok := rails.Parse(rail); !ok {
				return c, domain.Invalid("fee_schedule."+rail, "unknown rail %q: one of ach_standard, ach_same_day, rtp, fednow", rail)
			}
			if fee < 0 || fee > MaxFeeCents {
				return c, domain.Invalid("fee_schedule."+rail, "fee must be 0 to %d cents", MaxFeeCents)
			}
			next.FeeSchedule[rail] = fee
		}
	}
	if p.RateLimit.Set {
		if p.RateLimit.Value == nil {
			next.RateLimit = nil // back to the defaults
		} else {
			rl := *p.RateLimit.Value
			if rl.PerSecond < 1 || rl.PerSecond > MaxRatePerSecond {
				return c, domain.Invalid("rate_limit.per_second", "per_second must be 1 to %d", MaxRatePerSecond)
			}
			if rl.Burst < 1 || rl.Burst > MaxRateLimitBurst {
				return c, domain.Invalid("rate_limit.burst", "burst must be 1 to %d", MaxRateLimitBurst)
			}
			next.RateLimit = &rl
		}
	}
	return next, nil
}

// plainDecimal is a rate as API.md writes them: digits, a point, at most
// 18 decimals; no exponent, sign or spaces.
var plainDecimal = regexp.MustCompile(`^[0-9]{1,2}(\.[0-9]{1,18})?$`)

// parseRate reads a decimal string in [0, 1].
func parseRate(param string, s *string) (decimal.Decimal, error) {
	if s == nil {
		return decimal.Zero, domain.Invalid(param, "%s must be a decimal string such as \"0.30\"", param)
	}
	if !plainDecimal.MatchString(*s) {
		return decimal.Zero, domain.Invalid(param, "%s must be a decimal string such as \"0.30\"", param)
	}
	d, err := decimal.NewFromString(*s)
	if err != nil {
		return decimal.Zero, domain.Invalid(param, "%s must be a decimal string such as \"0.30\"", param)
	}
	if d.IsNegative() || d.GreaterThan(decimal.NewFromInt(1)) {
		return decimal.Zero, domain.Invalid(param, "%s must be between 0 and 1", param)
	}
	return d, nil
}
