package platform_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/rails"
)

func TestDefaultConfig(t *testing.T) {
	c := platform.DefaultConfig()
	if !c.RevenueShareRate.IsZero() || !c.InterestRate.IsZero() || c.RateLimit != nil {
		t.Errorf("default config = %+v", c)
	}
	want := map[string]int64{"ach_standard": 25, "ach_same_day": 100, "rtp": 50, "fednow": 45}
	if !reflect.DeepEqual(c.FeeSchedule, want) {
		t.Errorf("default fees = %v, want %v", c.FeeSchedule, want)
	}
	for _, r := range rails.All {
		if c.FeeSchedule[r.String()] != rails.DefaultFee(r) {
			t.Errorf("%s: %d, want rails.DefaultFee %d", r, c.FeeSchedule[r.String()], rails.DefaultFee(r))
		}
	}
	c.FeeSchedule["rtp"] = 1
	if platform.DefaultConfig().FeeSchedule["rtp"] != 50 {
		t.Errorf("DefaultConfig shares its fee schedule between calls")
	}
}

// The operator's PATCH body, decoded as the HTTP layer does, then applied.
func TestConfigApplyJSON(t *testing.T) {
	base := config(func(c *platform.Config) {
		c.RevenueShareRate = dec("0.2")
		c.InterestRate = dec("0.01")
		c.FeeSchedule["rtp"] = 60
		c.RateLimit = &platform.RateLimit{PerSecond: 10, Burst: 20}
	})
	cases := []struct {
		name  string
		body  string
		want  func(*platform.Config)
		param string // expected invalid_request param, if any
	}{
		{name: "absent fields change nothing", body: `{}`, want: func(*platform.Config) {}},
		{name: "revenue share", body: `{"revenue_share_rate":"0.35"}`, want: func(c *platform.Config) { c.RevenueShareRate = dec("0.35") }},
		{name: "interest", body: `{"interest_rate":"0"}`, want: func(c *platform.Config) { c.InterestRate = dec("0") }},
		{name: "fees merge", body: `{"fee_schedule":{"fednow":1}}`, want: func(c *platform.Config) { c.FeeSchedule["fednow"] = 1 }},
		{name: "rate limit replaced", body: `{"rate_limit":{"per_second":2,"burst":3}}`,
			want: func(c *platform.Config) { c.RateLimit = &platform.RateLimit{PerSecond: 2, Burst: 3} }},
		{name: "rate limit null resets", body: `{"rate_limit":null}`, want: func(c *platform.Config) { c.RateLimit = nil }},
		{name: "rate limit with burst missing", body: `{"rate_limit":{"per_second":2}}`, param: "rate_limit.burst"},
		{name: "revenue share null", body: `{"revenue_share_rate":null}`, param: "revenue_share_rate"},
		{name: "interest null", body: `{"interest_rate":null}`, param: "interest_rate"},
		{name: "fee schedule null", body: `{"fee_schedule":null}`, param: "fee_schedule"},
		{name: "unknown rail", body: `{"fee_schedule":{"swift":1}}`, param: "fee_schedule.swift"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p platform.ConfigPatch
			if err := json.Unmarshal([]byte(c.body), &p); err != nil {
				t.Fatal(err)
			}
			got, err := base.Apply(p)
			if c.param != "" {
				var de *domain.Error
				if !errorsAs(err, &de) || de.Code != domain.CodeInvalidRequest || de.Param != c.param {
					t.Fatalf("got %v, want invalid_request on %s", err, c.param)
				}
				if !reflect.DeepEqual(got, base) {
					t.Errorf("on error Apply must return the config unchanged, got %+v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := base
			want.FeeSchedule = map[string]int64{}
			for k, v := range base.FeeSchedule {
				want.FeeSchedule[k] = v
			}
			c.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
			if base.FeeSchedule["fednow"] != 45 {
				t.Errorf("Apply changed the receiver's fee schedule")
			}
		})
	}
}

// An error on a later field leaves no trace of the earlier ones.
func TestConfigApplyIsAtomic(t *testing.T) {
	base := platform.DefaultConfig()
	_, err := base.Apply(platform.ConfigPatch{
		RevenueShareRate: domain.Some("0.5"),
		FeeSchedule:      domain.Some(map[string]int64{"rtp": 1, "ach_standard": -1}),
	})
	if domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Fatalf("err = %v", err)
	}
	if !reflect.DeepEqual(base, platform.DefaultConfig()) {
		t.Errorf("a failed Apply changed its receiver: %+v", base)
	}
}

// A stored configuration round-trips through JSON with its values.
func TestConfigJSON(t *testing.T) {
	c := config(func(c *platform.Config) {
		c.RevenueShareRate = dec("0.30")
		c.RateLimit = &platform.RateLimit{PerSecond: 1, Burst: 1}
	})
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"revenue_share_rate":"0.3","interest_rate":"0","fee_schedule":{"ach_same_day":100,"ach_standard":25,"fednow":45,"rtp":50},"rate_limit":{"per_second":1,"burst":1}}`
	if string(b) != want {
		t.Errorf("json\n got %s\nwant %s", b, want)
	}
	var back platform.Config
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !back.RevenueShareRate.Equal(c.RevenueShareRate) || !back.InterestRate.Equal(c.InterestRate) ||
		!reflect.DeepEqual(back.FeeSchedule, c.FeeSchedule) || !reflect.DeepEqual(back.RateLimit, c.RateLimit) {
		t.Errorf("round trip: %+v, want %+v", back, c)
	}
}
