package platform_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// A State is snapshotted as JSON: every field must come back exactly,
// environments as map keys, statuses, nil and empty maps and optional
// pointers, times to the nanosecond. (Times are UTC as the app makes
// them; decimals in the normal form their events' JSON gives them.)
func TestStateRoundTripsThroughJSON(t *testing.T) {
	at := time.Date(2026, 11, 25, 17, 4, 5, 123456789, time.UTC)
	revoked, expires := at.Add(time.Hour), at.Add(2*time.Hour)
	threshold, limit := int64(50_000), int64(9_000_000)
	full := platform.State{
		ID: "plt_1", Name: "Acme", ContactEmail: "ops@acme.example.com",
		Metadata: map[string]string{"tier": "gold"}, Status: platform.StatusApproved, LiveEnabled: true,
		Config: platform.Config{
			RevenueShareRate: decimal.RequireFromString("0.25"), InterestRate: decimal.RequireFromString("0.0425"),
			FeeSchedule: map[string]int64{"ach_standard": 25, "wire": 1500},
			RateLimit:   &platform.RateLimit{PerSecond: 10, Burst: 20},
		},
		Settings: map[domain.Environment]platform.Settings{
			domain.Sandbox: {
				WebhookRetryPolicy:       platform.RetryPolicy{MaxAttempts: 5, InitialDelaySeconds: 10, MaxDelaySeconds: 600},
				PaymentApprovalThreshold: &threshold, DailyPaymentLimit: &limit,
				Sandbox: &platform.SandboxSettings{AutoSettle: true, ACHSameDayDelaySeconds: 60, ACHStandardDelaySeconds: 120},
			},
			domain.Live: {WebhookRetryPolicy: platform.RetryPolicy{MaxAttempts: 8}},
		},
		Keys: map[string]platform.Key{
			"key_1": {ID: "key_1", Environment: domain.Live, Name: "ci", CreatedAt: at, RevokedAt: &revoked, ExpiresAt: &expires},
			"key_2": {ID: "key_2", Environment: domain.Sandbox, Name: "dev", CreatedAt: at},
		},
		KeysInUse: map[domain.Environment]int{domain.Sandbox: 3, domain.Live: 1},
		CreatedAt: at,
	}
	// A folded state's rates come from Registered's JSON: never the zero
	// decimal.Decimal, whose nil big.Int decodes as a non-nil zero.
	zero := decimal.RequireFromString("0")
	pending := platform.State{ID: "plt_2", Status: platform.StatusPendingApproval,
		Config:   platform.Config{RevenueShareRate: zero, InterestRate: zero, FeeSchedule: map[string]int64{}},
		Metadata: map[string]string{}, Settings: map[domain.Environment]platform.Settings{}, Keys: map[string]platform.Key{}}
	for name, s := range map[string]platform.State{"every field": full, "empty maps, no keys in use": pending} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var back platform.State
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Errorf("%s: round trip changed the state\n got %+v\nwant %+v\njson %s", name, back, s, b)
		}
	}
}

func TestStatusRefusesAnUnknownName(t *testing.T) {
	var s platform.Status
	if err := json.Unmarshal([]byte(`"suspended"`), &s); err == nil {
		t.Fatalf("unknown status decoded as %q", s)
	}
}
