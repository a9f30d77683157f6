package platform_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

func errorsAs(err error, target **domain.Error) bool { return errors.As(err, target) }

func TestDefaultSettings(t *testing.T) {
	rp := platform.RetryPolicy{MaxAttempts: 12, InitialDelaySeconds: 5, MaxDelaySeconds: 36000}
	if got := platform.DefaultRetryPolicy(); got != rp {
		t.Errorf("DefaultRetryPolicy = %+v, want %+v (API.md §8)", got, rp)
	}
	if err := rp.Validate("x"); err != nil {
		t.Errorf("the default retry policy is invalid: %v", err)
	}
	sb := platform.DefaultSettings(domain.Sandbox)
	wantSB := platform.Settings{WebhookRetryPolicy: rp,
		Sandbox: &platform.SandboxSettings{AutoSettle: true, ACHSameDayDelaySeconds: 5, ACHStandardDelaySeconds: 15}}
	if !reflect.DeepEqual(sb, wantSB) {
		t.Errorf("sandbox defaults = %+v", sb)
	}
	if lv := platform.DefaultSettings(domain.Live); !reflect.DeepEqual(lv, platform.Settings{WebhookRetryPolicy: rp}) {
		t.Errorf("live defaults = %+v, want no sandbox block and no limits", lv)
	}
	sb.Sandbox.AutoSettle = false
	if !platform.DefaultSettings(domain.Sandbox).Sandbox.AutoSettle {
		t.Errorf("DefaultSettings shares its sandbox block between calls")
	}
}

func TestRetryPolicyValidate(t *testing.T) {
	cases := []struct {
		rp    platform.RetryPolicy
		param string // "" when valid
	}{
		{platform.RetryPolicy{MaxAttempts: 1, InitialDelaySeconds: 1, MaxDelaySeconds: 1}, ""},
		{platform.RetryPolicy{MaxAttempts: 25, InitialDelaySeconds: 3600, MaxDelaySeconds: 604800}, ""},
		{platform.RetryPolicy{MaxAttempts: 0, InitialDelaySeconds: 1, MaxDelaySeconds: 1}, "p.max_attempts"},
		{platform.RetryPolicy{MaxAttempts: 26, InitialDelaySeconds: 1, MaxDelaySeconds: 1}, "p.max_attempts"},
		{platform.RetryPolicy{MaxAttempts: 1, InitialDelaySeconds: 0, MaxDelaySeconds: 1}, "p.initial_delay_seconds"},
		{platform.RetryPolicy{MaxAttempts: 1, InitialDelaySeconds: 3601, MaxDelaySeconds: 4000}, "p.initial_delay_seconds"},
		{platform.RetryPolicy{MaxAttempts: 1, InitialDelaySeconds: 2, MaxDelaySeconds: 1}, "p.max_delay_seconds"},
		{platform.RetryPolicy{MaxAttempts: 1, InitialDelaySeconds: 1, MaxDelaySeconds: 604801}, "p.max_delay_seconds"},
	}
	for _, c := range cases {
		err := c.rp.Validate("p")
		if c.param == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.rp, err)
			}
			continue
		}
		var de *domain.Error
		if !errorsAs(err, &de) || de.Code != domain.CodeInvalidRequest || de.Param != c.param {
			t.Errorf("%+v: got %v, want invalid_request on %s", c.rp, err, c.param)
		}
	}
}

// The platform's PATCH body, decoded as the HTTP layer does, then applied.
func TestSettingsApplyJSON(t *testing.T) {
	base := settings(domain.Sandbox, func(s *platform.Settings) {
		s.PaymentApprovalThreshold = ptr[int64](10)
		s.WebhookRetryPolicy.MaxAttempts = 3
	})
	cases := []struct {
		name  string
		env   domain.Environment
		body  string
		want  func(*platform.Settings)
		param string
	}{
		{name: "absent fields change nothing", env: domain.Sandbox, body: `{}`, want: func(*platform.Settings) {}},
		{name: "threshold null clears", env: domain.Sandbox, body: `{"payment_approval_threshold":null}`,
			want: func(s *platform.Settings) { s.PaymentApprovalThreshold = nil }},
		{name: "daily limit set", env: domain.Sandbox, body: `{"daily_payment_limit":250}`,
			want: func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](250) }},
		{name: "retry policy null resets", env: domain.Sandbox, body: `{"webhook_retry_policy":null}`,
			want: func(s *platform.Settings) { s.WebhookRetryPolicy = platform.DefaultRetryPolicy() }},
		{name: "retry policy partial", env: domain.Sandbox, body: `{"webhook_retry_policy":{"max_delay_seconds":60}}`,
			want: func(s *platform.Settings) { s.WebhookRetryPolicy.MaxDelaySeconds = 60 }},
		{name: "retry policy field null is left alone", env: domain.Sandbox, body: `{"webhook_retry_policy":{"max_attempts":null}}`,
			want: func(*platform.Settings) {}},
		{name: "sandbox partial", env: domain.Sandbox, body: `{"sandbox":{"auto_settle":false}}`,
			want: func(s *platform.Settings) {
				s.Sandbox = &platform.SandboxSettings{ACHSameDayDelaySeconds: 5, ACHStandardDelaySeconds: 15}
			}},
		{name: "require verified counterparty on", env: domain.Live, body: `{"require_verified_counterparty":true}`,
			want: func(s *platform.Settings) { s.RequireVerifiedCounterparty = true }},
		{name: "require verified counterparty null", env: domain.Sandbox, body: `{"require_verified_counterparty":null}`, param: "require_verified_counterparty"},
		{name: "sandbox null", env: domain.Sandbox, body: `{"sandbox":null}`, param: "sandbox"},
		{name: "sandbox in live", env: domain.Live, body: `{"sandbox":{}}`, param: "sandbox"},
		{name: "threshold zero", env: domain.Sandbox, body: `{"payment_approval_threshold":0}`, param: "payment_approval_threshold"},
		{name: "retry attempts 26", env: domain.Sandbox, body: `{"webhook_retry_policy":{"max_attempts":26}}`, param: "webhook_retry_policy.max_attempts"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p platform.SettingsPatch
			if err := json.Unmarshal([]byte(c.body), &p); err != nil {
				t.Fatal(err)
			}
			got, err := base.Apply(c.env, p)
			if c.param != "" {
				var de *domain.Error
				if !errorsAs(err, &de) || de.Code != domain.CodeInvalidRequest || de.Param != c.param {
					t.Fatalf("got %v, want invalid_request on %s", err, c.param)
				}
				if !reflect.DeepEqual(got, base) {
					t.Errorf("on error Apply must return the settings unchanged, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base
			sb := *base.Sandbox
			want.Sandbox = &sb
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if !base.Sandbox.AutoSettle || *base.PaymentApprovalThreshold != 10 {
				t.Errorf("Apply changed its receiver: %+v", base)
			}
		})
	}
}

func TestSettingsJSON(t *testing.T) {
	s := settings(domain.Live, func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](9) })
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"webhook_retry_policy":{"max_attempts":12,"initial_delay_seconds":5,"max_delay_seconds":36000},"payment_approval_threshold":null,"daily_payment_limit":9,"require_verified_counterparty":false,"sandbox":null}`
	if string(b) != want {
		t.Errorf("json\n got %s\nwant %s", b, want)
	}
	var back platform.Settings
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("round trip %+v, want %+v", back, s)
	}
}
