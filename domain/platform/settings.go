package platform

import (
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// Settings are what a platform configures for one environment (API.md §3).
type Settings struct {
	WebhookRetryPolicy       RetryPolicy `json:"webhook_retry_policy"`
	PaymentApprovalThreshold *int64      `json:"payment_approval_threshold"`
	DailyPaymentLimit        *int64      `json:"daily_payment_limit"`
	// RequireVerifiedCounterparty: payments go only to verified
	// counterparties (API.md §12); a raw destination is refused too.
	RequireVerifiedCounterparty bool             `json:"require_verified_counterparty"`
	Sandbox                     *SandboxSettings `json:"sandbox"`
}

// RetryPolicy is the webhook retry schedule (API.md §8).
type RetryPolicy struct {
	MaxAttempts         int `json:"max_attempts"`
	InitialDelaySeconds int `json:"initial_delay_seconds"`
	MaxDelaySeconds     int `json:"max_delay_seconds"`
}

// SandboxSettings steer the simulated rails; they exist in sandbox only.
type SandboxSettings struct {
	AutoSettle              bool `json:"auto_settle"`
	ACHSameDayDelaySeconds  int  `json:"ach_same_day_delay_seconds"`
	ACHStandardDelaySeconds int  `json:"ach_standard_delay_seconds"`
}

// Delay is how long the sandbox takes to settle a transfer on rail: the
// configured ACH delays, nothing for the instant rails.
func (s SandboxSettings) Delay(rail rails.Rail) time.Duration {
	switch rail {
	case rails.ACHSameDay:
		return time.Duration(s.ACHSameDayDelaySeconds) * time.Second
	case rails.ACHStandard:
		return time.Duration(s.ACHStandardDelaySeconds) * time.Second
	}
	return 0
}

// DefaultRetryPolicy is API.md §8's default.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 12, InitialDelaySeconds: 5, MaxDelaySeconds: 36000}
}

// DefaultSettings are an environment's settings before any change.
func DefaultSettings(env domain.Environment) Settings {
	s := Settings{WebhookRetryPolicy: DefaultRetryPolicy()}
	if env == domain.Sandbox {
		s.Sandbox = &SandboxSettings{AutoSettle: true, ACHSameDayDelaySeconds: 5, ACHStandardDelaySeconds: 15}
	}
	return s
}

// SettingsPatch is a PATCH of settings: only the fields set change.
type SettingsPatch struct {
	WebhookRetryPolicy          domain.Optional[RetryPolicyPatch]     `json:"webhook_retry_policy"`
	PaymentApprovalThreshold    domain.Optional[int64]                `json:"payment_approval_threshold"`
	DailyPaymentLimit           domain.Optional[int64]                `json:"daily_payment_limit"`
	RequireVerifiedCounterparty domain.Optional[bool]                 `json:"require_verified_counterparty"`
	Sandbox                     domain.Optional[SandboxSettingsPatch] `json:"sandbox"`
}

type RetryPolicyPatch struct {
	MaxAttempts         *int `json:"max_attempts"`
	InitialDelaySeconds *int `json:"initial_delay_seconds"`
	MaxDelaySeconds     *int `json:"max_delay_seconds"`
}

type SandboxSettingsPatch struct {
	AutoSettle              *bool `json:"auto_settle"`
	ACHSameDayDelaySeconds  *int  `json:"ach_same_day_delay_seconds"`
	ACHStandardDelaySeconds *int  `json:"ach_standard_delay_seconds"`
}

// Bounds of the settings.
const (
	MaxRetryAttempts      = 25
	MaxInitialDelay       = 3600
	MaxRetryDelay         = 7 * 24 * 3600
	MaxSandboxDelay       = 24 * 3600
	MaxPaymentLimitAmount = 99_999_999_999 // cents
)

// Apply returns s with the patch applied, or a 400 naming the bad field.
func (s Settings) Apply(env domain.Environment, p SettingsPatch) (Settings, error) {
	next := s
	if p.WebhookRetryPolicy.Set {
		if p.WebhookRetryPolicy.Value == nil {
			next.WebhookRetryPolicy = DefaultRetryPolicy()
		} else {
			rp, err := s.WebhookRetryPolicy.apply(*p.WebhookRetryPolicy.Value)
			if err != nil {
				return s, err
			}
			next.WebhookRetryPolicy = rp
		}
	}
	var err error
	if next.PaymentApprovalThreshold, err = applyAmount("payment_approval_threshold", s.PaymentApprovalThreshold, p.PaymentApprovalThreshold); err != nil {
		return s, err
	}
	if next.DailyPaymentLimit, err = applyAmount("daily_payment_limit", s.DailyPaymentLimit, p.DailyPaymentLimit); err != nil {
		return s, err
	}
	if p.RequireVerifiedCounterparty.Set {
		if p.RequireVerifiedCounterparty.Value == nil {
			return s, domain.Invalid("require_verified_counterparty", "require_verified_counterparty must be true or false")
		}
		next.RequireVerifiedCounterparty = *p.RequireVerifiedCounterparty.Value
	}
	if p.Sandbox.Set {
		if env != domain.Sandbox {
			return s, domain.Invalid("sandbox", "sandbox settings can only be changed with a sandbox key")
		}
		if p.Sandbox.Value == nil {
			return s, domain.Invalid("sandbox", "sandbox must be an object")
		}
		sb := *s.Sandbox
		v := *p.Sandbox.Value
		if v.AutoSettle != nil {
			sb.AutoSettle = *v.AutoSettle
		}
		if v.ACHSameDayDelaySeconds != nil {
			if *v.ACHSameDayDelaySeconds < 0 || *v.ACHSameDayDelaySeconds > MaxSandboxDelay {
				return s, domain.Invalid("sandbox.ach_same_day_delay_seconds", "must be 0 to %d", MaxSandboxDelay)
			}
			sb.ACHSameDayDelaySeconds = *v.ACHSameDayDelaySeconds
		}
		if v.ACHStandardDelaySeconds != nil {
			if *v.ACHStandardDelaySeconds < 0 || *v.ACHStandardDelaySeconds > MaxSandboxDelay {
				return s, domain.Invalid("sandbox.ach_standard_delay_seconds", "must be 0 to %d", MaxSandboxDelay)
			}
			sb.ACHStandardDelaySeconds = *v.ACHStandardDelaySeconds
		}
		next.Sandbox = &sb
	}
	return next, nil
}

func (rp RetryPolicy) apply(p RetryPolicyPatch) (RetryPolicy, error) {
	if p.MaxAttempts != nil {
		rp.MaxAttempts = *p.MaxAttempts
	}
	if p.InitialDelaySeconds != nil {
		rp.InitialDelaySeconds = *p.InitialDelaySeconds
	}
	if p.MaxDelaySeconds != nil {
		rp.MaxDelaySeconds = *p.MaxDelaySeconds
	}
	return rp, rp.Validate("webhook_retry_policy")
}

// Validate checks a retry policy; param prefixes the field names.
func (rp RetryPolicy) Validate(param string) error {
	if rp.MaxAttempts < 1 || rp.MaxAttempts > MaxRetryAttempts {
		return domain.Invalid(param+".max_attempts", "max_attempts must be 1 to %d", MaxRetryAttempts)
	}
	if rp.InitialDelaySeconds < 1 || rp.InitialDelaySeconds > MaxInitialDelay {
		return domain.Invalid(param+".initial_delay_seconds", "initial_delay_seconds must be 1 to %d", MaxInitialDelay)
	}
	if rp.MaxDelaySeconds < rp.InitialDelaySeconds || rp.MaxDelaySeconds > MaxRetryDelay {
		return domain.Invalid(param+".max_delay_seconds", "max_delay_seconds must be between initial_delay_seconds and %d", MaxRetryDelay)
	}
	return nil
}

func applyAmount(param string, cur *int64, p domain.Optional[int64]) (*int64, error) {
	if !p.Set {
		return cur, nil
	}
	if p.Value == nil {
		return nil, nil
	}
	if *p.Value < 1 || *p.Value > MaxPaymentLimitAmount {
		return cur, domain.Invalid(param, "%s must be null or 1 to %d cents", param, int64(MaxPaymentLimitAmount))
	}
	v := *p.Value
	return &v, nil
}
