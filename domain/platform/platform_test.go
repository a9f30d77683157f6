package platform_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// Fixed times: commands carry their time, so the expected events are exact.
var (
	t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC) // registered
	t1 = t0.Add(1 * time.Hour)                       // approved, sandbox key
	t2 = t0.Add(2 * time.Hour)                       // live enabled, live key
	t3 = t0.Add(3 * time.Hour)                       // the command under test
	t4 = t0.Add(4 * time.Hour)
)

// ---- fixtures -------------------------------------------------------------

var (
	evRegistered = platform.Registered{
		PlatformID: "plt_x", Name: "Acme", ContactEmail: "ops@acme.com",
		Metadata: map[string]string{}, Config: platform.DefaultConfig(), At: t0,
	}
	evApproved   = platform.Approved{At: t1}
	evSandboxKey = created("key_sb", domain.Sandbox, "Sandbox key", t1)
	evLive       = platform.LiveEnabled{At: t2}
	evLiveKey    = created("key_live", domain.Live, "Live key", t2)
)

// Histories the tables start from.
var (
	none     []domain.Event
	pending  = []domain.Event{evRegistered}
	approved = []domain.Event{evRegistered, evApproved, evSandboxKey}
	live     = []domain.Event{evRegistered, evApproved, evSandboxKey, evLive, evLiveKey}
)

// and returns a copy of history with more events appended.
func and(history []domain.Event, more ...domain.Event) []domain.Event {
	out := make([]domain.Event, 0, len(history)+len(more))
	out = append(out, history...)
	return append(out, more...)
}

func newKey(id string, env domain.Environment, name string) platform.NewKey {
	return platform.NewKey{ID: id, Environment: env, Name: name, Prefix: "pfx_" + id, SecretHash: "hash_" + id}
}

func created(id string, env domain.Environment, name string, at time.Time) platform.KeyCreated {
	return platform.KeyCreated{KeyID: id, Environment: env, Name: name, Prefix: "pfx_" + id, SecretHash: "hash_" + id, At: at}
}

func ptr[T any](v T) *T { return &v }

// null is a PATCH field explicitly set to null.
func null[T any]() domain.Optional[T] { return domain.Optional[T]{Set: true} }

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// config returns the default config changed by f.
func config(f func(*platform.Config)) platform.Config {
	c := platform.DefaultConfig()
	if f != nil {
		f(&c)
	}
	return c
}

// settings returns env's default settings changed by f.
func settings(env domain.Environment, f func(*platform.Settings)) platform.Settings {
	s := platform.DefaultSettings(env)
	if f != nil {
		f(&s)
	}
	return s
}

// ---- the table runner -------------------------------------------------------

// tc is one given-events / when-command / then-events case. Either then (the
// exact events; empty means none) or code and param (the expected error).
type tc struct {
	name  string
	given []domain.Event
	when  any
	then  []domain.Event
	code  domain.Code
	param string
}

// fold replays events onto the zero state of platform plt_x.
func fold(events []domain.Event) platform.State {
	s := platform.State{ID: "plt_x"}
	for _, e := range events {
		s = platform.Evolve(s, e)
	}
	return s
}

func dump(events []domain.Event) string {
	var b strings.Builder
	for _, e := range events {
		j, err := json.Marshal(e)
		if err != nil {
			j = []byte(err.Error())
		}
		fmt.Fprintf(&b, "\n  %s %s", e.EventType(), j)
	}
	if b.Len() == 0 {
		return " (none)"
	}
	return b.String()
}

func run(t *testing.T, cases []tc) {
	t.Helper()
	seen := map[string]bool{}
	for _, c := range cases {
		if seen[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			s := fold(c.given)
			got, err := platform.Decide(s, c.when)
			if !reflect.DeepEqual(s, fold(c.given)) {
				t.Errorf("Decide changed the state it was given")
			}
			if c.code != "" {
				var de *domain.Error
				if !errors.As(err, &de) {
					t.Fatalf("want error %s (param %q), got err %v and events%s", c.code, c.param, err, dump(got))
				}
				if de.Code != c.code || de.Param != c.param {
					t.Errorf("want error %s (param %q), got %s (param %q): %v", c.code, c.param, de.Code, de.Param, de)
				}
				if got != nil {
					t.Errorf("an error must come with no events, got%s", dump(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(c.then) == 0 {
				if len(got) != 0 {
					t.Errorf("want no events, got%s", dump(got))
				}
				return
			}
			if !reflect.DeepEqual(got, c.then) {
				t.Errorf("events differ\n got:%s\nwant:%s", dump(got), dump(c.then))
			}
			for _, e := range got { // the events must fold
				s = platform.Evolve(s, e)
			}
		})
	}
}

// ---- Register ---------------------------------------------------------------

func TestRegister(t *testing.T) {
	reg := func(name, email string, md map[string]string) platform.Register {
		return platform.Register{PlatformID: "plt_x", Name: name, ContactEmail: email, Metadata: md, At: t0}
	}
	registeredWith := func(f func(*platform.Registered)) []domain.Event {
		e := evRegistered
		e.Metadata = map[string]string{}
		f(&e)
		return []domain.Event{e}
	}
	manyKeys := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("k%02d", i)] = "v"
		}
		return m
	}
	long := func(n int) string { return strings.Repeat("é", n) }                      // multibyte: limits count characters
	longEmail := strings.Repeat("a", 64) + "@" + strings.Repeat("b", 185) + ".com"    // 254 bytes
	tooLongEmail := strings.Repeat("a", 64) + "@" + strings.Repeat("b", 186) + ".com" // 255 bytes
	key41 := strings.Repeat("k", 41)

	run(t, []tc{
		{name: "new platform", given: none,
			when: reg("Acme", "ops@acme.com", nil),
			then: []domain.Event{evRegistered}},
		{name: "name is trimmed", given: none,
			when: reg("  Acme \t", "ops@acme.com", nil),
			then: []domain.Event{evRegistered}},
		{name: "metadata kept", given: none,
			when: reg("Acme", "ops@acme.com", map[string]string{"crm": "42", "tier": ""}),
			then: registeredWith(func(e *platform.Registered) { e.Metadata = map[string]string{"crm": "42", "tier": ""} })},
		{name: "name of 200 characters", given: none,
			when: reg(long(200), "ops@acme.com", nil),
			then: registeredWith(func(e *platform.Registered) { e.Name = long(200) })},
		{name: "email of 254 bytes", given: none,
			when: reg("Acme", longEmail, nil),
			then: registeredWith(func(e *platform.Registered) { e.ContactEmail = longEmail })},
		{name: "50 metadata keys, 40-character key, 500-character value", given: none,
			when: reg("Acme", "ops@acme.com", func() map[string]string {
				m := manyKeys(49)
				m[long(40)] = long(500)
				return m
			}()),
			then: registeredWith(func(e *platform.Registered) {
				e.Metadata = manyKeys(49)
				e.Metadata[long(40)] = long(500)
			})},

		{name: "already registered", given: pending, when: reg("Acme", "ops@acme.com", nil), code: domain.CodeInvalidState},
		{name: "already approved", given: live, when: reg("Other", "x@acme.com", nil), code: domain.CodeInvalidState},

		{name: "empty name", given: none, when: reg("", "ops@acme.com", nil), code: domain.CodeInvalidRequest, param: "name"},
		{name: "blank name", given: none, when: reg("   ", "ops@acme.com", nil), code: domain.CodeInvalidRequest, param: "name"},
		{name: "name of 201 characters", given: none, when: reg(long(201), "ops@acme.com", nil), code: domain.CodeInvalidRequest, param: "name"},
		{name: "bad name is reported before bad email", given: none, when: reg("", "nope", nil), code: domain.CodeInvalidRequest, param: "name"},

		{name: "empty email", given: none, when: reg("Acme", "", nil), code: domain.CodeInvalidRequest, param: "contact_email"},
		{name: "email without @", given: none, when: reg("Acme", "ops.acme.com", nil), code: domain.CodeInvalidRequest, param: "contact_email"},
		{name: "email without dot in domain", given: none, when: reg("Acme", "ops@localhost", nil), code: domain.CodeInvalidRequest, param: "contact_email"},
		{name: "email with display name", given: none, when: reg("Acme", "Ops <ops@acme.com>", nil), code: domain.CodeInvalidRequest, param: "contact_email"},
		{name: "email with surrounding space", given: none, when: reg("Acme", " ops@acme.com", nil), code: domain.CodeInvalidRequest, param: "contact_email"},
		{name: "email with two @", given: none, when: reg("Acme", "ops@@acme.com", nil), code: domain.CodeInvalidRequest, param: "contact_email"},
		{name: "email of 255 bytes", given: none, when: reg("Acme", tooLongEmail, nil), code: domain.CodeInvalidRequest, param: "contact_email"},

		{name: "51 metadata keys", given: none, when: reg("Acme", "ops@acme.com", manyKeys(51)), code: domain.CodeInvalidRequest, param: "metadata"},
		{name: "metadata key of 41 characters", given: none,
			when: reg("Acme", "ops@acme.com", map[string]string{key41: "v"}), code: domain.CodeInvalidRequest, param: "metadata." + key41},
		{name: "empty metadata key", given: none,
			when: reg("Acme", "ops@acme.com", map[string]string{"": "v"}), code: domain.CodeInvalidRequest, param: "metadata"},
		{name: "metadata value of 501 characters", given: none,
			when: reg("Acme", "ops@acme.com", map[string]string{"note": long(501)}), code: domain.CodeInvalidRequest, param: "metadata.note"},
	})
}

// ---- Approve and EnableLive -------------------------------------------------

func TestApprove(t *testing.T) {
	approve := platform.Approve{SandboxKey: newKey("key_sb", domain.Sandbox, "Sandbox key"), At: t1}
	run(t, []tc{
		{name: "pending", given: pending, when: approve,
			then: []domain.Event{evApproved, evSandboxKey}},
		{name: "key name is trimmed", given: pending,
			when: platform.Approve{SandboxKey: newKey("key_sb", domain.Sandbox, " Sandbox key "), At: t1},
			then: []domain.Event{evApproved, evSandboxKey}},
		{name: "approved", given: approved, when: approve, code: domain.CodeInvalidState},
		{name: "live", given: live, when: approve, code: domain.CodeInvalidState},
		{name: "missing", given: none, when: approve, code: domain.CodeNotFound},
	})
}

func TestEnableLive(t *testing.T) {
	enable := platform.EnableLive{LiveKey: newKey("key_live", domain.Live, "Live key"), At: t2}
	run(t, []tc{
		{name: "approved", given: approved, when: enable,
			then: []domain.Event{evLive, evLiveKey}},
		{name: "pending", given: pending, when: enable, code: domain.CodeInvalidState},
		{name: "already live", given: live, when: enable, code: domain.CodeInvalidState},
		{name: "missing", given: none, when: enable, code: domain.CodeNotFound},
	})
}

// ---- Configure --------------------------------------------------------------

func TestConfigure(t *testing.T) {
	configure := func(p platform.ConfigPatch) platform.Configure { return platform.Configure{Patch: p, At: t3} }
	configured := func(f func(*platform.Config)) []domain.Event {
		return []domain.Event{platform.Configured{Config: config(f), At: t3}}
	}
	fees := func(m map[string]int64) domain.Optional[map[string]int64] { return domain.Some(m) }
	earlier := platform.Configured{At: t2, Config: config(func(c *platform.Config) {
		c.RevenueShareRate = dec("0.25")
		c.InterestRate = dec("0.04")
		c.FeeSchedule["ach_standard"] = 30
		c.RateLimit = &platform.RateLimit{PerSecond: 10, Burst: 20}
	})}

	cases := []tc{
		{name: "empty patch records nothing", given: approved, when: configure(platform.ConfigPatch{}),
			then: nil},
		{name: "pending platform may be configured", given: pending,
			when: configure(platform.ConfigPatch{InterestRate: domain.Some("0.05")}),
			then: configured(func(c *platform.Config) { c.InterestRate = dec("0.05") })},
		{name: "missing platform", given: none, when: configure(platform.ConfigPatch{}), code: domain.CodeNotFound},

		// fee schedule
		{name: "one rail's fee, the others keep their defaults", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{"rtp": 10})}),
			then: configured(func(c *platform.Config) { c.FeeSchedule["rtp"] = 10 })},
		{name: "partial fee schedule merges with earlier changes", given: and(approved, earlier),
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{"fednow": 0})}),
			then: []domain.Event{platform.Configured{At: t3, Config: func() platform.Config {
				c := earlier.Config
				c.FeeSchedule = map[string]int64{"ach_standard": 30, "ach_same_day": 100, "rtp": 50, "fednow": 0}
				return c
			}()}}},
		{name: "all rails, bounds 0 and max", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{
				"ach_standard": 0, "ach_same_day": platform.MaxFeeCents, "rtp": 1, "fednow": 2})}),
			then: configured(func(c *platform.Config) {
				c.FeeSchedule = map[string]int64{"ach_standard": 0, "ach_same_day": platform.MaxFeeCents, "rtp": 1, "fednow": 2}
			})},
		{name: "empty fee schedule changes nothing", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{})}),
			then: nil},
		{name: "negative fee", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{"rtp": -1})}),
			code: domain.CodeInvalidRequest, param: "fee_schedule.rtp"},
		{name: "fee above max", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{"ach_same_day": platform.MaxFeeCents + 1})}),
			code: domain.CodeInvalidRequest, param: "fee_schedule.ach_same_day"},
		{name: "unknown rail", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{"wire": 10})}),
			code: domain.CodeInvalidRequest, param: "fee_schedule.wire"},
		{name: "rail names are case sensitive", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: fees(map[string]int64{"RTP": 10})}),
			code: domain.CodeInvalidRequest, param: "fee_schedule.RTP"},
		{name: "null fee schedule", given: approved,
			when: configure(platform.ConfigPatch{FeeSchedule: null[map[string]int64]()}),
			code: domain.CodeInvalidRequest, param: "fee_schedule"},

		// rate limit
		{name: "rate limit set", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: 5, Burst: 7})}),
			then: configured(func(c *platform.Config) { c.RateLimit = &platform.RateLimit{PerSecond: 5, Burst: 7} })},
		{name: "rate limit lower bounds", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: 1, Burst: 1})}),
			then: configured(func(c *platform.Config) { c.RateLimit = &platform.RateLimit{PerSecond: 1, Burst: 1} })},
		{name: "rate limit upper bounds", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: platform.MaxRatePerSecond, Burst: platform.MaxRateLimitBurst})}),
			then: configured(func(c *platform.Config) {
				c.RateLimit = &platform.RateLimit{PerSecond: platform.MaxRatePerSecond, Burst: platform.MaxRateLimitBurst}
			})},
		{name: "rate limit null resets to defaults", given: and(approved, earlier),
			when: configure(platform.ConfigPatch{RateLimit: null[platform.RateLimit]()}),
			then: []domain.Event{platform.Configured{At: t3, Config: func() platform.Config {
				c := earlier.Config
				c.RateLimit = nil
				return c
			}()}}},
		{name: "rate limit null when already default records nothing", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: null[platform.RateLimit]()}),
			then: nil},
		{name: "per_second 0", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: 0, Burst: 10})}),
			code: domain.CodeInvalidRequest, param: "rate_limit.per_second"},
		{name: "per_second negative", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: -5, Burst: 10})}),
			code: domain.CodeInvalidRequest, param: "rate_limit.per_second"},
		{name: "per_second above max", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: platform.MaxRatePerSecond + 1, Burst: 10})}),
			code: domain.CodeInvalidRequest, param: "rate_limit.per_second"},
		{name: "burst 0", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: 10, Burst: 0})}),
			code: domain.CodeInvalidRequest, param: "rate_limit.burst"},
		{name: "burst above max", given: approved,
			when: configure(platform.ConfigPatch{RateLimit: domain.Some(platform.RateLimit{PerSecond: 10, Burst: platform.MaxRateLimitBurst + 1})}),
			code: domain.CodeInvalidRequest, param: "rate_limit.burst"},

		// all at once, and atomicity
		{name: "every field at once", given: approved,
			when: configure(platform.ConfigPatch{
				RevenueShareRate: domain.Some("0.30"), InterestRate: domain.Some("0.045"),
				FeeSchedule: fees(map[string]int64{"ach_standard": 20}),
				RateLimit:   domain.Some(platform.RateLimit{PerSecond: 50, Burst: 100}),
			}),
			then: configured(func(c *platform.Config) {
				c.RevenueShareRate = dec("0.30")
				c.InterestRate = dec("0.045")
				c.FeeSchedule["ach_standard"] = 20
				c.RateLimit = &platform.RateLimit{PerSecond: 50, Burst: 100}
			})},
		{name: "one bad field rejects the whole patch", given: approved,
			when: configure(platform.ConfigPatch{
				RevenueShareRate: domain.Some("0.30"),
				FeeSchedule:      fees(map[string]int64{"rtp": 10}),
				RateLimit:        domain.Some(platform.RateLimit{PerSecond: 50, Burst: 0}),
			}),
			code: domain.CodeInvalidRequest, param: "rate_limit.burst"},
	}

	// The two rates share their rules.
	type rateField struct {
		param string
		patch func(domain.Optional[string]) platform.ConfigPatch
		set   func(*platform.Config, decimal.Decimal)
	}
	for _, f := range []rateField{
		{"revenue_share_rate",
			func(v domain.Optional[string]) platform.ConfigPatch { return platform.ConfigPatch{RevenueShareRate: v} },
			func(c *platform.Config, d decimal.Decimal) { c.RevenueShareRate = d }},
		{"interest_rate",
			func(v domain.Optional[string]) platform.ConfigPatch { return platform.ConfigPatch{InterestRate: v} },
			func(c *platform.Config, d decimal.Decimal) { c.InterestRate = d }},
	} {
		for _, ok := range []string{"0.30", "0.5", "1", "1.0", "1.000", "0.0001", "0.12345678901234567"} {
			cases = append(cases, tc{name: f.param + " " + ok, given: approved,
				when: configure(f.patch(domain.Some(ok))),
				then: configured(func(c *platform.Config) { f.set(c, dec(ok)) })})
		}
		// The default rate is 0: setting it again, however written, records nothing.
		for _, same := range []string{"0", "0.0", "0.00"} {
			cases = append(cases, tc{name: f.param + " unchanged " + same, given: approved,
				when: configure(f.patch(domain.Some(same))), then: nil})
		}
		for _, bad := range []string{"-0.01", "1.01", "2", "-1", "100"} {
			cases = append(cases, tc{name: f.param + " out of range " + bad, given: approved,
				when: configure(f.patch(domain.Some(bad))), code: domain.CodeInvalidRequest, param: f.param})
		}
		for _, bad := range []string{"", "abc", "0,30", "30%", " 0.3", "0.3 ", "NaN", "Infinity", "0x1", "0.000000000000000000001"} {
			cases = append(cases, tc{name: fmt.Sprintf("%s not a decimal %q", f.param, bad), given: approved,
				when: configure(f.patch(domain.Some(bad))), code: domain.CodeInvalidRequest, param: f.param})
		}
		cases = append(cases, tc{name: f.param + " null", given: approved,
			when: configure(f.patch(null[string]())), code: domain.CodeInvalidRequest, param: f.param})
	}
	run(t, cases)
}

// TestConfigureRejectsExponentNotation: rates are plain decimal strings
// (API.md §1, "0.30"), and Config.Apply bounds their length to 20 characters
// to bound their precision. Exponent notation slips past that bound: "1e-40"
// is 5 characters yet is stored as a 42-character "0.000…1"; "1e-9999" (7
// characters, the decimal library's limit) is stored and shown as a
// 10,001-character string.
func TestConfigureRejectsExponentNotation(t *testing.T) {
	cases := []tc{}
	for _, s := range []string{"1e-40", "3e-1"} {
		cases = append(cases, tc{name: "revenue_share_rate " + s, given: approved,
			when: platform.Configure{Patch: platform.ConfigPatch{RevenueShareRate: domain.Some(s)}, At: t3},
			code: domain.CodeInvalidRequest, param: "revenue_share_rate"})
	}
	run(t, cases)
}

// The Configured event owns its fee schedule: changing it later does not
// reach into the state it was decided from.
func TestConfigureDoesNotShareTheFeeSchedule(t *testing.T) {
	s := fold(approved)
	events, err := platform.Decide(s, platform.Configure{Patch: platform.ConfigPatch{InterestRate: domain.Some("0.01")}, At: t3})
	if err != nil {
		t.Fatal(err)
	}
	events[0].(platform.Configured).Config.FeeSchedule["rtp"] = 1
	if got := s.Config.FeeSchedule["rtp"]; got != 50 {
		t.Errorf("state's rtp fee = %d after changing the event, want 50", got)
	}
}

// ---- UpdateSettings ---------------------------------------------------------

func TestUpdateSettings(t *testing.T) {
	update := func(env domain.Environment, p platform.SettingsPatch) platform.UpdateSettings {
		return platform.UpdateSettings{Environment: env, Patch: p, At: t3}
	}
	updated := func(env domain.Environment, f func(*platform.Settings)) []domain.Event {
		return []domain.Event{platform.SettingsUpdated{Environment: env, Settings: settings(env, f), At: t3}}
	}
	retry := func(p platform.RetryPolicyPatch) domain.Optional[platform.RetryPolicyPatch] { return domain.Some(p) }
	earlierSandbox := platform.SettingsUpdated{Environment: domain.Sandbox, At: t2, Settings: settings(domain.Sandbox, func(s *platform.Settings) {
		s.WebhookRetryPolicy = platform.RetryPolicy{MaxAttempts: 5, InitialDelaySeconds: 10, MaxDelaySeconds: 100}
		s.PaymentApprovalThreshold = ptr[int64](50_000)
		s.DailyPaymentLimit = ptr[int64](1_000_000)
		s.Sandbox = &platform.SandboxSettings{AutoSettle: false, ACHSameDayDelaySeconds: 1, ACHStandardDelaySeconds: 2}
	})}
	earlierLive := platform.SettingsUpdated{Environment: domain.Live, At: t2, Settings: settings(domain.Live, func(s *platform.Settings) {
		s.DailyPaymentLimit = ptr[int64](7)
	})}
	after := func(base platform.SettingsUpdated, f func(*platform.Settings)) []domain.Event {
		s := base.Settings
		f(&s)
		return []domain.Event{platform.SettingsUpdated{Environment: base.Environment, Settings: s, At: t3}}
	}
	sb := domain.Sandbox

	run(t, []tc{
		{name: "missing platform", given: none, when: update(sb, platform.SettingsPatch{}), code: domain.CodeNotFound},

		// defaults
		{name: "a change shows the sandbox defaults", given: approved, when: update(sb, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](7)}),
			then: []domain.Event{platform.SettingsUpdated{Environment: sb, At: t3, Settings: platform.Settings{
				DailyPaymentLimit:  ptr[int64](7),
				WebhookRetryPolicy: platform.RetryPolicy{MaxAttempts: 12, InitialDelaySeconds: 5, MaxDelaySeconds: 36000},
				Sandbox:            &platform.SandboxSettings{AutoSettle: true, ACHSameDayDelaySeconds: 5, ACHStandardDelaySeconds: 15},
			}}}},
		{name: "a change shows the live defaults, without sandbox block", given: live, when: update(domain.Live, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](7)}),
			then: []domain.Event{platform.SettingsUpdated{Environment: domain.Live, At: t3, Settings: platform.Settings{
				DailyPaymentLimit:  ptr[int64](7),
				WebhookRetryPolicy: platform.RetryPolicy{MaxAttempts: 12, InitialDelaySeconds: 5, MaxDelaySeconds: 36000},
			}}}},
		{name: "empty patch records nothing", given: and(approved, earlierSandbox), when: update(sb, platform.SettingsPatch{}),
			then: nil},
		{name: "sandbox changes do not leak into live", given: and(live, earlierSandbox),
			when: update(domain.Live, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](7)}),
			then: updated(domain.Live, func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](7) })},
		{name: "live changes do not leak into sandbox", given: and(live, earlierLive), when: update(sb, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](7)}),
			then: updated(sb, func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](7) })},

		// webhook_retry_policy
		{name: "retry policy, every field", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxAttempts: ptr(3), InitialDelaySeconds: ptr(2), MaxDelaySeconds: ptr(60)})}),
			then: updated(sb, func(s *platform.Settings) {
				s.WebhookRetryPolicy = platform.RetryPolicy{MaxAttempts: 3, InitialDelaySeconds: 2, MaxDelaySeconds: 60}
			})},
		{name: "retry policy, one field keeps the others", given: and(approved, earlierSandbox),
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxAttempts: ptr(20)})}),
			then: after(earlierSandbox, func(s *platform.Settings) { s.WebhookRetryPolicy.MaxAttempts = 20 })},
		{name: "retry policy null resets to defaults", given: and(approved, earlierSandbox),
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: null[platform.RetryPolicyPatch]()}),
			then: after(earlierSandbox, func(s *platform.Settings) { s.WebhookRetryPolicy = platform.DefaultRetryPolicy() })},
		{name: "retry policy bounds: 1 attempt, 1 s, max = initial", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxAttempts: ptr(1), InitialDelaySeconds: ptr(1), MaxDelaySeconds: ptr(1)})}),
			then: updated(sb, func(s *platform.Settings) {
				s.WebhookRetryPolicy = platform.RetryPolicy{MaxAttempts: 1, InitialDelaySeconds: 1, MaxDelaySeconds: 1}
			})},
		{name: "retry policy bounds: 25 attempts, 3600 s, 7 days", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxAttempts: ptr(25), InitialDelaySeconds: ptr(3600), MaxDelaySeconds: ptr(7 * 24 * 3600)})}),
			then: updated(sb, func(s *platform.Settings) {
				s.WebhookRetryPolicy = platform.RetryPolicy{MaxAttempts: 25, InitialDelaySeconds: 3600, MaxDelaySeconds: 7 * 24 * 3600}
			})},
		{name: "max_attempts 0", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxAttempts: ptr(0)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.max_attempts"},
		{name: "max_attempts 26", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxAttempts: ptr(26)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.max_attempts"},
		{name: "initial_delay_seconds 0", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{InitialDelaySeconds: ptr(0)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.initial_delay_seconds"},
		{name: "initial_delay_seconds 3601", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{InitialDelaySeconds: ptr(3601)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.initial_delay_seconds"},
		{name: "max_delay_seconds below initial", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{InitialDelaySeconds: ptr(10), MaxDelaySeconds: ptr(9)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.max_delay_seconds"},
		{name: "initial above the stored max_delay", given: and(approved, earlierSandbox), // stored max is 100
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{InitialDelaySeconds: ptr(101)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.max_delay_seconds"},
		{name: "max_delay_seconds above 7 days", given: approved,
			when: update(sb, platform.SettingsPatch{WebhookRetryPolicy: retry(platform.RetryPolicyPatch{MaxDelaySeconds: ptr(7*24*3600 + 1)})}),
			code: domain.CodeInvalidRequest, param: "webhook_retry_policy.max_delay_seconds"},

		// amounts
		{name: "approval threshold and daily limit set", given: approved,
			when: update(sb, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some[int64](1), DailyPaymentLimit: domain.Some[int64](platform.MaxPaymentLimitAmount)}),
			then: updated(sb, func(s *platform.Settings) {
				s.PaymentApprovalThreshold = ptr[int64](1)
				s.DailyPaymentLimit = ptr[int64](platform.MaxPaymentLimitAmount)
			})},
		{name: "amounts null clear them", given: and(approved, earlierSandbox),
			when: update(sb, platform.SettingsPatch{PaymentApprovalThreshold: null[int64](), DailyPaymentLimit: null[int64]()}),
			then: after(earlierSandbox, func(s *platform.Settings) {
				s.PaymentApprovalThreshold = nil
				s.DailyPaymentLimit = nil
			})},
		{name: "one amount changed, the other kept", given: and(approved, earlierSandbox),
			when: update(sb, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](9)}),
			then: after(earlierSandbox, func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](9) })},
		{name: "approval threshold 0", given: approved,
			when: update(sb, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some[int64](0)}),
			code: domain.CodeInvalidRequest, param: "payment_approval_threshold"},
		{name: "approval threshold negative", given: approved,
			when: update(sb, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some[int64](-1)}),
			code: domain.CodeInvalidRequest, param: "payment_approval_threshold"},
		{name: "approval threshold above max", given: approved,
			when: update(sb, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some[int64](platform.MaxPaymentLimitAmount + 1)}),
			code: domain.CodeInvalidRequest, param: "payment_approval_threshold"},
		{name: "daily limit 0", given: live,
			when: update(domain.Live, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](0)}),
			code: domain.CodeInvalidRequest, param: "daily_payment_limit"},
		{name: "daily limit above max", given: approved,
			when: update(sb, platform.SettingsPatch{DailyPaymentLimit: domain.Some[int64](platform.MaxPaymentLimitAmount + 1)}),
			code: domain.CodeInvalidRequest, param: "daily_payment_limit"},
		{name: "live amounts", given: live,
			when: update(domain.Live, platform.SettingsPatch{PaymentApprovalThreshold: domain.Some[int64](100)}),
			then: updated(domain.Live, func(s *platform.Settings) { s.PaymentApprovalThreshold = ptr[int64](100) })},

		// sandbox block
		{name: "sandbox auto_settle off", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{AutoSettle: ptr(false)})}),
			then: updated(sb, func(s *platform.Settings) { s.Sandbox.AutoSettle = false })},
		{name: "sandbox delays, bounds", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHSameDayDelaySeconds: ptr(0), ACHStandardDelaySeconds: ptr(24 * 3600)})}),
			then: updated(sb, func(s *platform.Settings) {
				s.Sandbox.ACHSameDayDelaySeconds = 0
				s.Sandbox.ACHStandardDelaySeconds = 24 * 3600
			})},
		{name: "sandbox partial block keeps earlier fields", given: and(approved, earlierSandbox),
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHStandardDelaySeconds: ptr(30)})}),
			then: after(earlierSandbox, func(s *platform.Settings) {
				s.Sandbox = &platform.SandboxSettings{AutoSettle: false, ACHSameDayDelaySeconds: 1, ACHStandardDelaySeconds: 30}
			})},
		{name: "sandbox empty block", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{})}),
			then: nil},
		{name: "sandbox same-day delay negative", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHSameDayDelaySeconds: ptr(-1)})}),
			code: domain.CodeInvalidRequest, param: "sandbox.ach_same_day_delay_seconds"},
		{name: "sandbox same-day delay above a day", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHSameDayDelaySeconds: ptr(24*3600 + 1)})}),
			code: domain.CodeInvalidRequest, param: "sandbox.ach_same_day_delay_seconds"},
		{name: "sandbox standard delay negative", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHStandardDelaySeconds: ptr(-1)})}),
			code: domain.CodeInvalidRequest, param: "sandbox.ach_standard_delay_seconds"},
		{name: "sandbox standard delay above a day", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{ACHStandardDelaySeconds: ptr(24*3600 + 1)})}),
			code: domain.CodeInvalidRequest, param: "sandbox.ach_standard_delay_seconds"},
		{name: "sandbox null", given: approved,
			when: update(sb, platform.SettingsPatch{Sandbox: null[platform.SandboxSettingsPatch]()}),
			code: domain.CodeInvalidRequest, param: "sandbox"},
		{name: "sandbox block refused for live", given: live,
			when: update(domain.Live, platform.SettingsPatch{Sandbox: domain.Some(platform.SandboxSettingsPatch{AutoSettle: ptr(false)})}),
			code: domain.CodeInvalidRequest, param: "sandbox"},
		{name: "sandbox null refused for live", given: live,
			when: update(domain.Live, platform.SettingsPatch{Sandbox: null[platform.SandboxSettingsPatch]()}),
			code: domain.CodeInvalidRequest, param: "sandbox"},
		{name: "one bad field rejects the whole patch", given: approved,
			when: update(sb, platform.SettingsPatch{
				DailyPaymentLimit: domain.Some[int64](5),
				Sandbox:           domain.Some(platform.SandboxSettingsPatch{AutoSettle: ptr(false), ACHStandardDelaySeconds: ptr(-1)}),
			}),
			code: domain.CodeInvalidRequest, param: "sandbox.ach_standard_delay_seconds"},
	})
}

// ---- CreateKey --------------------------------------------------------------

func TestCreateKey(t *testing.T) {
	create := func(caller domain.Environment, env domain.Environment, name string) platform.CreateKey {
		return platform.CreateKey{CallerEnvironment: caller, Key: newKey("key_new", env, name), At: t3}
	}
	sb, lv := domain.Sandbox, domain.Live
	name100 := strings.Repeat("ñ", 100)
	run(t, []tc{
		{name: "sandbox caller, sandbox key", given: approved, when: create(sb, sb, "ci"),
			then: []domain.Event{created("key_new", sb, "ci", t3)}},
		{name: "name is trimmed", given: approved, when: create(sb, sb, "  ci  "),
			then: []domain.Event{created("key_new", sb, "ci", t3)}},
		{name: "name of 100 characters", given: approved, when: create(sb, sb, name100),
			then: []domain.Event{created("key_new", sb, name100, t3)}},
		{name: "same name twice is fine", given: and(approved, created("key_other", sb, "ci", t2)), when: create(sb, sb, "ci"),
			then: []domain.Event{created("key_new", sb, "ci", t3)}},
		{name: "live caller, live key", given: live, when: create(lv, lv, "prod"),
			then: []domain.Event{created("key_new", lv, "prod", t3)}},
		{name: "live caller, sandbox key", given: live, when: create(lv, sb, "test"),
			then: []domain.Event{created("key_new", sb, "test", t3)}},

		{name: "empty name", given: approved, when: create(sb, sb, ""), code: domain.CodeInvalidRequest, param: "name"},
		{name: "blank name", given: approved, when: create(sb, sb, " \t "), code: domain.CodeInvalidRequest, param: "name"},
		{name: "name of 101 characters", given: approved, when: create(sb, sb, name100+"x"), code: domain.CodeInvalidRequest, param: "name"},

		{name: "sandbox caller, live key, live enabled", given: live, when: create(sb, lv, "prod"), code: domain.CodeForbidden},
		{name: "sandbox caller, live key, live not enabled", given: approved, when: create(sb, lv, "prod"), code: domain.CodeForbidden},
		{name: "live caller, live key, live not enabled", given: approved, when: create(lv, lv, "prod"), code: domain.CodeLiveNotEnabled},
		{name: "missing platform", given: none, when: create(sb, sb, "ci"), code: domain.CodeNotFound},
	})
}

// ---- RevokeKey --------------------------------------------------------------

func TestRevokeKey(t *testing.T) {
	revoke := func(caller domain.Environment, id string) platform.RevokeKey {
		return platform.RevokeKey{CallerEnvironment: caller, KeyID: id, At: t3}
	}
	revoked := func(id string) []domain.Event { return []domain.Event{platform.KeyRevoked{KeyID: id, At: t3}} }
	sb, lv := domain.Sandbox, domain.Live
	run(t, []tc{
		{name: "sandbox caller, sandbox key", given: approved, when: revoke(sb, "key_sb"), then: revoked("key_sb")},
		{name: "live caller, live key", given: live, when: revoke(lv, "key_live"), then: revoked("key_live")},
		{name: "live caller may revoke a sandbox key", given: live, when: revoke(lv, "key_sb"), then: revoked("key_sb")},
		{name: "a key may revoke itself", given: live, when: revoke(sb, "key_sb"), then: revoked("key_sb")},
		{name: "revoking twice changes nothing", given: and(approved, platform.KeyRevoked{KeyID: "key_sb", At: t2}),
			when: revoke(sb, "key_sb"), then: nil},
		{name: "a rolled key may still be revoked", given: and(approved,
			created("key_sb2", sb, "Sandbox key", t2),
			platform.KeyRolled{KeyID: "key_sb", ReplacedBy: "key_sb2", ExpiresAt: t4, At: t2}),
			when: revoke(sb, "key_sb"), then: revoked("key_sb")},

		{name: "unknown key", given: live, when: revoke(lv, "key_nope"), code: domain.CodeNotFound},
		{name: "sandbox caller, live key", given: live, when: revoke(sb, "key_live"), code: domain.CodeNotFound},
		{name: "missing platform", given: none, when: revoke(sb, "key_sb"), code: domain.CodeNotFound},
	})
}

// ---- RollKey ----------------------------------------------------------------

func TestRollKey(t *testing.T) {
	const day = 24 * time.Hour
	roll := func(caller domain.Environment, id string, grace time.Duration, nk platform.NewKey) platform.RollKey {
		return platform.RollKey{CallerEnvironment: caller, KeyID: id, Grace: grace, NewKey: nk, At: t3}
	}
	rolled := func(oldID, newID string, env domain.Environment, name string, expires time.Time) []domain.Event {
		return []domain.Event{
			created(newID, env, name, t3),
			platform.KeyRolled{KeyID: oldID, ReplacedBy: newID, ExpiresAt: expires, At: t3},
		}
	}
	sb, lv := domain.Sandbox, domain.Live
	rolledEarlier := func(expires time.Time) []domain.Event {
		return and(live,
			created("key_mid", sb, "Sandbox key", t2),
			platform.KeyRolled{KeyID: "key_sb", ReplacedBy: "key_mid", ExpiresAt: expires, At: t2})
	}

	run(t, []tc{
		{name: "one day grace", given: approved, when: roll(sb, "key_sb", day, newKey("key_new", sb, "Sandbox key")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3.Add(day))},
		{name: "no grace expires at once", given: approved, when: roll(sb, "key_sb", 0, newKey("key_new", sb, "Sandbox key")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3)},
		{name: "seven days grace", given: approved, when: roll(sb, "key_sb", 7*day, newKey("key_new", sb, "Sandbox key")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3.Add(7*day))},
		{name: "new key takes the old key's name when none given", given: approved, when: roll(sb, "key_sb", day, newKey("key_new", sb, "")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3.Add(day))},
		{name: "new key takes the old key's environment", given: live, when: roll(lv, "key_sb", day, newKey("key_new", lv, "")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3.Add(day))},
		{name: "new key takes the old key's environment when none given", given: live, when: roll(lv, "key_live", day, newKey("key_new", domain.Environment{}, "")),
			then: rolled("key_live", "key_new", lv, "Live key", t3.Add(day))},
		{name: "live caller rolls a live key", given: live, when: roll(lv, "key_live", time.Hour, newKey("key_new", lv, "Live key")),
			then: rolled("key_live", "key_new", lv, "Live key", t3.Add(time.Hour))},
		{name: "roll never extends an already shorter expiry", given: rolledEarlier(t3.Add(time.Hour)),
			when: roll(sb, "key_sb", day, newKey("key_new", sb, "")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3.Add(time.Hour))},
		{name: "roll may shorten a longer expiry", given: rolledEarlier(t3.Add(2 * day)),
			when: roll(sb, "key_sb", time.Hour, newKey("key_new", sb, "")),
			then: rolled("key_sb", "key_new", sb, "Sandbox key", t3.Add(time.Hour))},
		{name: "replacement may itself be rolled", given: rolledEarlier(t4),
			when: roll(sb, "key_mid", day, newKey("key_new", sb, "")),
			then: rolled("key_mid", "key_new", sb, "Sandbox key", t3.Add(day))},

		{name: "grace above seven days", given: approved, when: roll(sb, "key_sb", 7*day+time.Second, newKey("key_new", sb, "")),
			code: domain.CodeInvalidRequest, param: "grace_seconds"},
		{name: "negative grace", given: approved, when: roll(sb, "key_sb", -time.Second, newKey("key_new", sb, "")),
			code: domain.CodeInvalidRequest, param: "grace_seconds"},
		{name: "revoked key", given: and(approved, platform.KeyRevoked{KeyID: "key_sb", At: t2}),
			when: roll(sb, "key_sb", day, newKey("key_new", sb, "")), code: domain.CodeInvalidState},
		{name: "expired key", given: rolledEarlier(t3.Add(-time.Minute)),
			when: roll(sb, "key_sb", day, newKey("key_new", sb, "")), code: domain.CodeInvalidState},
		{name: "key expiring exactly now", given: rolledEarlier(t3),
			when: roll(sb, "key_sb", day, newKey("key_new", sb, "")), code: domain.CodeInvalidState},
		{name: "unknown key", given: live, when: roll(lv, "key_nope", day, newKey("key_new", lv, "")), code: domain.CodeNotFound},
		{name: "sandbox caller, live key", given: live, when: roll(sb, "key_live", day, newKey("key_new", sb, "")), code: domain.CodeNotFound},
		{name: "missing platform", given: none, when: roll(sb, "key_sb", day, newKey("key_new", sb, "")), code: domain.CodeNotFound},
	})
}

// ---- unknown commands -------------------------------------------------------

func TestUnknownCommand(t *testing.T) {
	type bogus struct{}
	run(t, []tc{
		{name: "on a platform", given: approved, when: bogus{}, code: domain.CodeInternal},
		{name: "on a missing platform", given: none, when: bogus{}, code: domain.CodeNotFound},
		{name: "pointer to a command", given: approved, when: &platform.Approve{}, code: domain.CodeInternal},
	})
}

// ---- Evolve -----------------------------------------------------------------

func TestEvolveSequence(t *testing.T) {
	cfg := config(func(c *platform.Config) {
		c.RevenueShareRate = dec("0.3")
		c.RateLimit = &platform.RateLimit{PerSecond: 9, Burst: 18}
	})
	sbSettings := settings(domain.Sandbox, func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](100) })
	liveSettings := settings(domain.Live, func(s *platform.Settings) { s.WebhookRetryPolicy.MaxAttempts = 3 })
	history := and(live,
		platform.Configured{Config: cfg, At: t2},
		platform.SettingsUpdated{Environment: domain.Sandbox, Settings: sbSettings, At: t2},
		platform.SettingsUpdated{Environment: domain.Live, Settings: liveSettings, At: t2},
		created("key_ci", domain.Sandbox, "ci", t3),
		platform.KeyRevoked{KeyID: "key_ci", At: t3},
		created("key_live2", domain.Live, "Live key", t3),
		platform.KeyRolled{KeyID: "key_live", ReplacedBy: "key_live2", ExpiresAt: t4, At: t3},
	)
	got := fold(history)

	want := platform.State{
		ID: "plt_x", Name: "Acme", ContactEmail: "ops@acme.com", Metadata: map[string]string{},
		Status: platform.StatusApproved, LiveEnabled: true, Config: cfg, CreatedAt: t0,
		Settings: map[domain.Environment]platform.Settings{domain.Sandbox: sbSettings, domain.Live: liveSettings},
		Keys: map[string]platform.Key{
			"key_sb":    {ID: "key_sb", Environment: domain.Sandbox, Name: "Sandbox key", CreatedAt: t1},
			"key_live":  {ID: "key_live", Environment: domain.Live, Name: "Live key", CreatedAt: t2, ExpiresAt: &t4},
			"key_ci":    {ID: "key_ci", Environment: domain.Sandbox, Name: "ci", CreatedAt: t3, RevokedAt: &t3},
			"key_live2": {ID: "key_live2", Environment: domain.Live, Name: "Live key", CreatedAt: t3},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("state differs\n got %+v\nwant %+v", got, want)
	}
	if !got.Exists() || got.Status.String() != "approved" {
		t.Errorf("Exists() = %v, Status = %q", got.Exists(), got.Status)
	}
	if got.SettingsFor(domain.Live).WebhookRetryPolicy.MaxAttempts != 3 || *got.SettingsFor(domain.Sandbox).DailyPaymentLimit != 100 {
		t.Errorf("SettingsFor does not return the stored settings")
	}

	usable := []struct {
		key  string
		at   time.Time
		want bool
	}{
		{"key_sb", t4.Add(1000 * time.Hour), true}, // never revoked nor rolled
		{"key_ci", t3.Add(-time.Second), false},    // revoked: unusable whatever the time
		{"key_ci", t3, false},
		{"key_live", t4.Add(-time.Nanosecond), true}, // rolled: usable until the expiry...
		{"key_live", t4, false},                      // ...which is exclusive
		{"key_live", t4.Add(time.Hour), false},
		{"key_live2", t4.Add(time.Hour), true},
	}
	for _, u := range usable {
		if got := got.Keys[u.key].Usable(u.at); got != u.want {
			t.Errorf("%s.Usable(%s) = %v, want %v", u.key, u.at.Format(time.RFC3339Nano), got, u.want)
		}
	}
}

func TestEvolveStates(t *testing.T) {
	zero := fold(none)
	if zero.Exists() || zero.Status != platform.StatusNone || zero.Status.String() != "" {
		t.Errorf("zero state exists: %+v", zero)
	}
	if got := zero.SettingsFor(domain.Sandbox); !reflect.DeepEqual(got, platform.DefaultSettings(domain.Sandbox)) {
		t.Errorf("zero state's sandbox settings = %+v, want defaults", got)
	}

	p := fold(pending)
	if !p.Exists() || p.Status != platform.StatusPendingApproval || p.Status.String() != "pending_approval" || p.LiveEnabled {
		t.Errorf("pending: %+v", p)
	}
	if len(p.Keys) != 0 || p.Keys == nil || p.Settings == nil {
		t.Errorf("pending platform: keys %v, settings %v; want empty, non-nil maps", p.Keys, p.Settings)
	}
	if !reflect.DeepEqual(p.SettingsFor(domain.Live), platform.DefaultSettings(domain.Live)) {
		t.Errorf("pending platform live settings are not the defaults")
	}
	if !reflect.DeepEqual(p.Config, platform.DefaultConfig()) {
		t.Errorf("config = %+v, want defaults", p.Config)
	}

	a := fold(approved)
	if a.Status != platform.StatusApproved || a.LiveEnabled || len(a.Keys) != 1 {
		t.Errorf("approved: %+v", a)
	}
	l := fold(live)
	if l.Status != platform.StatusApproved || !l.LiveEnabled || len(l.Keys) != 2 {
		t.Errorf("live: %+v", l)
	}
}

// Decide then Evolve, command after command, as the application does.
func TestLifecycle(t *testing.T) {
	s := platform.State{ID: "plt_x"}
	step := func(cmd any) []domain.Event {
		t.Helper()
		events, err := platform.Decide(s, cmd)
		if err != nil {
			t.Fatalf("%T: %v", cmd, err)
		}
		for _, e := range events {
			s = platform.Evolve(s, e)
		}
		return events
	}
	step(platform.Register{PlatformID: "plt_x", Name: "Acme", ContactEmail: "ops@acme.com", At: t0})
	step(platform.Approve{SandboxKey: newKey("key_sb", domain.Sandbox, "Sandbox key"), At: t1})
	step(platform.EnableLive{LiveKey: newKey("key_live", domain.Live, "Live key"), At: t2})
	step(platform.CreateKey{CallerEnvironment: domain.Live, Key: newKey("key_ci", domain.Sandbox, "ci"), At: t2})
	step(platform.RollKey{CallerEnvironment: domain.Live, KeyID: "key_live", Grace: time.Hour, NewKey: newKey("key_live2", domain.Live, ""), At: t3})
	step(platform.RevokeKey{CallerEnvironment: domain.Sandbox, KeyID: "key_ci", At: t3})
	if events := step(platform.RevokeKey{CallerEnvironment: domain.Sandbox, KeyID: "key_ci", At: t4}); len(events) != 0 {
		t.Errorf("second revoke: %s", dump(events))
	}

	if s.Keys["key_ci"].RevokedAt == nil || !s.Keys["key_ci"].RevokedAt.Equal(t3) {
		t.Errorf("key_ci revoked at %v, want %v (the first revoke)", s.Keys["key_ci"].RevokedAt, t3)
	}
	if !s.Keys["key_live"].Usable(t3.Add(59*time.Minute)) || s.Keys["key_live"].Usable(t3.Add(time.Hour)) {
		t.Errorf("rolled key should work for exactly the grace: %+v", s.Keys["key_live"])
	}
	if k := s.Keys["key_live2"]; k.Name != "Live key" || k.Environment != domain.Live || !k.Usable(t4) {
		t.Errorf("replacement key: %+v", k)
	}
	if _, err := platform.Decide(s, platform.RollKey{CallerEnvironment: domain.Live, KeyID: "key_live", Grace: time.Hour, At: t3.Add(2 * time.Hour)}); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Errorf("rolling an expired key: %v, want invalid_state", err)
	}
	if _, err := platform.Decide(s, platform.RollKey{CallerEnvironment: domain.Sandbox, KeyID: "key_ci", Grace: time.Hour, At: t4}); domain.CodeOf(err) != domain.CodeInvalidState {
		t.Errorf("rolling a revoked key: %v, want invalid_state", err)
	}
}

// ---- events as stored -------------------------------------------------------

// canon rewrites the decimals of an event in their canonical form: JSON keeps
// a decimal's value, not its internal representation ("0.30" reads back as
// "0.3", decimal.Zero as a parsed "0").
func canon(e domain.Event) domain.Event {
	c := func(cfg platform.Config) platform.Config {
		cfg.RevenueShareRate = decimal.RequireFromString(cfg.RevenueShareRate.String())
		cfg.InterestRate = decimal.RequireFromString(cfg.InterestRate.String())
		return cfg
	}
	switch v := e.(type) {
	case platform.Registered:
		v.Config = c(v.Config)
		return v
	case platform.Configured:
		v.Config = c(v.Config)
		return v
	}
	return e
}

func TestEventsRoundTrip(t *testing.T) {
	ms := time.Date(2025, 3, 1, 9, 0, 0, 123_000_000, time.UTC)
	samples := []domain.Event{
		evRegistered,
		platform.Registered{PlatformID: "plt_y", Name: "Ünïcode ✓", ContactEmail: "a@b.co",
			Metadata: map[string]string{"k": "v", "empty": ""}, At: ms,
			Config: config(func(c *platform.Config) {
				c.RevenueShareRate = dec("0.30")
				c.InterestRate = dec("0.0425")
				c.FeeSchedule["rtp"] = 0
				c.RateLimit = &platform.RateLimit{PerSecond: 1, Burst: 2}
			})},
		platform.Approved{At: t1},
		platform.LiveEnabled{At: ms},
		platform.Configured{Config: platform.DefaultConfig(), At: t3},
		platform.Configured{Config: config(func(c *platform.Config) { c.RevenueShareRate = dec("1") }), At: t3},
		platform.SettingsUpdated{Environment: domain.Sandbox, Settings: platform.DefaultSettings(domain.Sandbox), At: t3},
		platform.SettingsUpdated{Environment: domain.Live, At: t3, Settings: settings(domain.Live, func(s *platform.Settings) {
			s.PaymentApprovalThreshold = ptr[int64](platform.MaxPaymentLimitAmount)
			s.DailyPaymentLimit = ptr[int64](1)
		})},
		evSandboxKey,
		evLiveKey,
		platform.KeyRevoked{KeyID: "key_sb", At: t3},
		platform.KeyRolled{KeyID: "key_sb", ReplacedBy: "key_new", ExpiresAt: t4, At: t3},
	}
	seen := map[string]bool{}
	for _, e := range samples {
		seen[e.EventType()] = true
		t.Run(e.EventType(), func(t *testing.T) {
			data, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			got, err := domain.DecodeEvent(e.EventType(), data)
			if err != nil {
				t.Fatalf("DecodeEvent: %v\n%s", err, data)
			}
			if reflect.TypeOf(got) != reflect.TypeOf(e) {
				t.Fatalf("decoded a %T, want a %T", got, e)
			}
			if !reflect.DeepEqual(canon(got), canon(e)) {
				t.Errorf("round trip differs\n got %+v\nwant %+v\njson %s", got, e, data)
			}
		})
	}
	want := []string{
		"platform.registered", "platform.approved", "platform.live_enabled", "platform.configured",
		"platform.settings_updated", "api_key.created", "api_key.revoked", "api_key.rolled",
	}
	for _, name := range want {
		if !seen[name] {
			t.Errorf("no round-trip sample for %s", name)
		}
	}
	if len(seen) != len(want) {
		t.Errorf("event types %v, want exactly %v", seen, want)
	}
}

// Events never change once written: documents stored by this version must
// keep decoding to the same values.
func TestEventsStoredForm(t *testing.T) {
	cases := []struct {
		typ  string
		json string
		want domain.Event
	}{
		{"platform.registered",
			`{"platform_id":"plt_x","name":"Acme","contact_email":"ops@acme.com","metadata":{},
			  "config":{"revenue_share_rate":"0.3","interest_rate":"0","fee_schedule":{"ach_standard":25,"ach_same_day":100,"rtp":50,"fednow":45},"rate_limit":null},
			  "at":"2025-03-01T09:00:00Z"}`,
			platform.Registered{PlatformID: "plt_x", Name: "Acme", ContactEmail: "ops@acme.com", Metadata: map[string]string{},
				Config: config(func(c *platform.Config) { c.RevenueShareRate = dec("0.3") }), At: t0}},
		{"platform.approved", `{"at":"2025-03-01T10:00:00Z"}`, platform.Approved{At: t1}},
		{"platform.live_enabled", `{"at":"2025-03-01T11:00:00Z"}`, platform.LiveEnabled{At: t2}},
		{"platform.configured",
			`{"config":{"revenue_share_rate":"0","interest_rate":"0.05","fee_schedule":{"rtp":7},"rate_limit":{"per_second":3,"burst":4}},"at":"2025-03-01T12:00:00Z"}`,
			platform.Configured{At: t3, Config: platform.Config{RevenueShareRate: dec("0"), InterestRate: dec("0.05"),
				FeeSchedule: map[string]int64{"rtp": 7}, RateLimit: &platform.RateLimit{PerSecond: 3, Burst: 4}}}},
		{"platform.settings_updated",
			`{"environment":"sandbox","settings":{"webhook_retry_policy":{"max_attempts":12,"initial_delay_seconds":5,"max_delay_seconds":36000},
			  "payment_approval_threshold":null,"daily_payment_limit":500,
			  "sandbox":{"auto_settle":true,"ach_same_day_delay_seconds":5,"ach_standard_delay_seconds":15}},"at":"2025-03-01T12:00:00Z"}`,
			platform.SettingsUpdated{Environment: domain.Sandbox, At: t3,
				Settings: settings(domain.Sandbox, func(s *platform.Settings) { s.DailyPaymentLimit = ptr[int64](500) })}},
		{"api_key.created",
			`{"key_id":"key_live","environment":"live","name":"Live key","prefix":"pfx_key_live","secret_hash":"hash_key_live","at":"2025-03-01T11:00:00Z"}`,
			evLiveKey},
		{"api_key.revoked", `{"key_id":"key_sb","at":"2025-03-01T12:00:00Z"}`, platform.KeyRevoked{KeyID: "key_sb", At: t3}},
		{"api_key.rolled", `{"key_id":"key_sb","replaced_by":"key_new","expires_at":"2025-03-01T13:00:00Z","at":"2025-03-01T12:00:00Z"}`,
			platform.KeyRolled{KeyID: "key_sb", ReplacedBy: "key_new", ExpiresAt: t4, At: t3}},
	}
	for _, c := range cases {
		t.Run(c.typ, func(t *testing.T) {
			got, err := domain.DecodeEvent(c.typ, []byte(c.json))
			if err != nil {
				t.Fatal(err)
			}
			if got.EventType() != c.typ {
				t.Errorf("EventType() = %q", got.EventType())
			}
			if !reflect.DeepEqual(canon(got), canon(c.want)) {
				t.Errorf("decoded %+v\nwant    %+v", got, c.want)
			}
		})
	}
}

func TestDecodeEventErrors(t *testing.T) {
	for _, c := range []struct{ typ, json string }{
		{"platform.nope", `{}`},
		{"api_key.created", `{"key_id":"k","environment":"staging"}`},
		{"api_key.created", `{"key_id":`},
		{"platform.configured", `{"config":{"revenue_share_rate":"abc"}}`},
		{"platform.approved", `{"at":"yesterday"}`},
	} {
		if e, err := domain.DecodeEvent(c.typ, []byte(c.json)); err == nil {
			t.Errorf("DecodeEvent(%s, %s) = %+v, want an error", c.typ, c.json, e)
		}
	}
}

func TestStreamID(t *testing.T) {
	if got := platform.StreamID("plt_x"); got != "platform-plt_x" {
		t.Errorf("StreamID = %q", got)
	}
	if platform.StreamType != "platform" {
		t.Errorf("StreamType = %q", platform.StreamType)
	}
}

// ---- the cap on keys in use ---------------------------------------------------

// TestKeysInUseCap: at most MaxKeysInUse keys of one environment work at
// once. Creating one more is 422 limit_exceeded; a roll, which replaces a
// key, still goes through at the cap (not one past it); the environments
// count apart.
func TestKeysInUseCap(t *testing.T) {
	sb, lv := domain.Sandbox, domain.Live
	create := func(env domain.Environment) platform.CreateKey {
		return platform.CreateKey{CallerEnvironment: lv, Key: newKey("key_new", env, "ci"), At: t3}
	}
	roll := platform.RollKey{CallerEnvironment: sb, KeyID: "key_sb", Grace: time.Hour, NewKey: newKey("key_new", sb, ""), At: t3}
	limit := platform.MaxKeysInUse
	for _, c := range []struct {
		name  string
		inUse map[domain.Environment]int
		when  any
		want  domain.Code // "" = accepted
	}{
		{"create below the cap", map[domain.Environment]int{sb: limit - 1}, create(sb), ""},
		{"create at the cap", map[domain.Environment]int{sb: limit}, create(sb), domain.CodeLimitExceeded},
		{"create past the cap", map[domain.Environment]int{sb: limit + 1}, create(sb), domain.CodeLimitExceeded},
		{"live keys do not count against sandbox", map[domain.Environment]int{lv: limit}, create(sb), ""},
		{"live create at the live cap", map[domain.Environment]int{lv: limit, sb: 1}, create(lv), domain.CodeLimitExceeded},
		{"roll at the cap replaces a key", map[domain.Environment]int{sb: limit}, roll, ""},
		{"roll one past the cap (a grace running)", map[domain.Environment]int{sb: limit + 1}, roll, domain.CodeLimitExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := fold(live)
			s.KeysInUse = c.inUse
			evs, err := platform.Decide(s, c.when)
			if c.want == "" {
				if err != nil || len(evs) == 0 {
					t.Fatalf("want accepted, got %v and events%s", err, dump(evs))
				}
				return
			}
			if domain.CodeOf(err) != c.want || evs != nil {
				t.Fatalf("want %s, got %v and events%s", c.want, err, dump(evs))
			}
			if !strings.Contains(err.Error(), "at most 100") {
				t.Errorf("message %q does not say the cap", err.Error())
			}
		})
	}
}

func TestKeyEventsAreTold(t *testing.T) {
	for _, c := range []struct {
		e   domain.Event
		key string
	}{
		{evSandboxKey, "key_sb"},
		{platform.KeyRevoked{KeyID: "key_a"}, "key_a"},
		{platform.KeyRolled{KeyID: "key_b", ReplacedBy: "key_c"}, "key_b"},
		{evRegistered, ""}, {evApproved, ""}, {evLive, ""}, {platform.Configured{}, ""}, {platform.SettingsUpdated{}, ""},
	} {
		if got := platform.KeyOf(c.e); got != c.key || platform.IsKeyEvent(c.e) != (c.key != "") {
			t.Errorf("%s: KeyOf = %q, IsKeyEvent = %v; want %q", c.e.EventType(), got, platform.IsKeyEvent(c.e), c.key)
		}
	}
}
