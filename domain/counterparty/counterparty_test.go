package counterparty_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/counterparty"
)

var at = time.Date(2026, 3, 2, 15, 0, 0, 0, time.UTC)

func request(mod func(*counterparty.Request)) counterparty.Request {
	r := counterparty.Request{Name: "Initech LLC", AccountNumber: "987654321", RoutingNumber: "021000021", AccountType: "checking"}
	if mod != nil {
		mod(&r)
	}
	return r
}

// given is a state folded from events.
func given(events ...domain.Event) counterparty.State {
	var s counterparty.State
	for _, e := range events {
		s = counterparty.Evolve(s, e)
	}
	return s
}

func created(account string) counterparty.Created {
	return counterparty.Created{CounterpartyID: "cp_1", PlatformID: "plt_x", Environment: domain.Sandbox, Name: "Initech LLC",
		AccountNumber: account, RoutingNumber: "021000021", AccountType: "checking", At: at}
}

func TestDecideCreate(t *testing.T) {
	for _, tc := range []struct {
		when  string
		mod   func(*counterparty.Request)
		param string // "" : accepted
	}{
		{"a valid checking account", nil, ""},
		{"a savings account", func(r *counterparty.Request) { r.AccountType = "savings" }, ""},
		{"a routing number with a bad checksum", func(r *counterparty.Request) { r.RoutingNumber = "021000022" }, "routing_number"},
		{"a routing number of 8 digits", func(r *counterparty.Request) { r.RoutingNumber = "02100002" }, "routing_number"},
		{"an account number of 3 digits", func(r *counterparty.Request) { r.AccountNumber = "123" }, "account_number"},
		{"an account number of 18 digits", func(r *counterparty.Request) { r.AccountNumber = "123456789012345678" }, "account_number"},
		{"an account number with a letter", func(r *counterparty.Request) { r.AccountNumber = "12345a" }, "account_number"},
		{"no name", func(r *counterparty.Request) { r.Name = " " }, "name"},
		{"a name of 81 characters", func(r *counterparty.Request) { r.Name = string(make([]byte, 81)) + "x" }, "name"},
		{"no account type", func(r *counterparty.Request) { r.AccountType = "" }, "account_type"},
		{"an unknown account type", func(r *counterparty.Request) { r.AccountType = "brokerage" }, "account_type"},
		{"a metadata value too long", func(r *counterparty.Request) { r.Metadata = map[string]string{"k": string(make([]byte, 501))} }, "metadata.k"},
	} {
		t.Run(tc.when, func(t *testing.T) {
			events, err := counterparty.DecideCreate(counterparty.CreateInputs{Request: request(tc.mod), ID: "cp_1",
				PlatformID: "plt_x", Environment: domain.Sandbox, Now: at})
			if tc.param == "" {
				if err != nil || len(events) != 1 {
					t.Fatalf("got %v, %v", events, err)
				}
				c := events[0].(counterparty.Created)
				if s := given(c); s.Status != counterparty.StatusUnverified || !s.Exists() || s.AccountNumber != c.AccountNumber {
					t.Errorf("state after Created: %+v", s)
				}
				return
			}
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.CodeInvalidRequest || de.Param != tc.param {
				t.Errorf("got %v, want invalid_request on %s", err, tc.param)
			}
		})
	}
}

func TestDecideVerify(t *testing.T) {
	requested := counterparty.VerificationRequested{Method: "prenote", ExpectedAt: at.Add(5 * time.Second), At: at}
	for _, tc := range []struct {
		given  []domain.Event
		method string
		env    domain.Environment
		then   []domain.Event
		code   domain.Code
	}{
		{[]domain.Event{created("987654321")}, "prenote", domain.Sandbox, []domain.Event{requested}, ""},
		{[]domain.Event{created("987654321")}, "micro_deposits", domain.Sandbox, nil, domain.CodeInvalidRequest},
		{[]domain.Event{created("987654321")}, "", domain.Sandbox, nil, domain.CodeInvalidRequest},
		{[]domain.Event{created("987654321"), requested}, "prenote", domain.Sandbox, nil, domain.CodeInvalidState},
		{[]domain.Event{created("987654321"), requested, counterparty.Verified{At: at}}, "prenote", domain.Sandbox, nil, domain.CodeInvalidState},
		// A failed prenote may be sent again.
		{[]domain.Event{created("4000000003"), requested, counterparty.VerificationFailed{FailureCode: "R03", At: at}}, "prenote", domain.Sandbox,
			[]domain.Event{requested}, ""},
		// Live prenotes do not leave yet.
		{[]domain.Event{created("987654321")}, "prenote", domain.Live, nil, domain.CodeNotImplemented},
	} {
		s := given(tc.given...)
		events, err := counterparty.DecideVerify(s, counterparty.VerifyInputs{Method: tc.method, Environment: tc.env,
			SandboxDelay: 5 * time.Second, Now: at})
		if tc.code != "" {
			if domain.CodeOf(err) != tc.code {
				t.Errorf("given %T… status %s, verify %q in %s: got %v, want %s", tc.given[len(tc.given)-1], s.Status, tc.method, tc.env, err, tc.code)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(events, tc.then) {
			t.Errorf("given status %s: got %v, %v; want %v", s.Status, events, err, tc.then)
			continue
		}
		if next := given(append(tc.given, events...)...); next.Status != counterparty.StatusPending || next.FailureCode != "" || next.Method != "prenote" {
			t.Errorf("after the request: %+v", next)
		}
	}
}

func TestDecideSandboxPrenote(t *testing.T) {
	requested := counterparty.VerificationRequested{Method: "prenote", ExpectedAt: at, At: at}
	for _, tc := range []struct {
		account string
		then    []domain.Event
	}{
		{"987654321", []domain.Event{counterparty.Verified{At: at}}},
		{"4000000002", []domain.Event{counterparty.VerificationFailed{FailureCode: "R02", At: at}}},
		{"4000000003", []domain.Event{counterparty.VerificationFailed{FailureCode: "R03", At: at}}},
		{"4000000004", []domain.Event{counterparty.VerificationFailed{FailureCode: "R04", At: at}}},
		{"4000000016", []domain.Event{counterparty.VerificationFailed{FailureCode: "R16", At: at}}},
		{"4000000023", []domain.Event{counterparty.VerificationFailed{FailureCode: "R23", At: at}}},
		// ACH succeeds for the instant rails' network outage number.
		{"4000009912", []domain.Event{counterparty.Verified{At: at}}},
	} {
		s := given(created(tc.account), requested)
		if got := counterparty.DecideSandboxPrenote(s, at); !reflect.DeepEqual(got, tc.then) {
			t.Errorf("account %s: got %v, want %v", tc.account, got, tc.then)
		}
		next := given(created(tc.account), requested, tc.then[0])
		if f, ok := tc.then[0].(counterparty.VerificationFailed); ok && (next.Status != "failed" || next.FailureCode != f.FailureCode) {
			t.Errorf("account %s: state %+v", tc.account, next)
		}
		// Answered once: a second answer changes nothing.
		if again := counterparty.DecideSandboxPrenote(next, at); again != nil {
			t.Errorf("account %s: answered twice: %v", tc.account, again)
		}
	}
	// Nothing pending, nothing to answer; a deleted one neither.
	if got := counterparty.DecideSandboxPrenote(given(created("987654321")), at); got != nil {
		t.Errorf("unverified: %v", got)
	}
	if got := counterparty.DecideSandboxPrenote(given(created("987654321"), requested, counterparty.Deleted{At: at}), at); got != nil {
		t.Errorf("deleted while pending: %v", got)
	}
}

func TestDecideDelete(t *testing.T) {
	s := given(created("987654321"))
	events := counterparty.DecideDelete(s, at)
	if !reflect.DeepEqual(events, []domain.Event{counterparty.Deleted{At: at}}) {
		t.Fatalf("got %v", events)
	}
	if next := given(created("987654321"), events[0]); next.Exists() {
		t.Errorf("deleted one exists: %+v", next)
	}
	if again := counterparty.DecideDelete(given(created("987654321"), events[0]), at); again != nil {
		t.Errorf("deleted twice: %v", again)
	}
	if counterparty.Last4("987654321") != "4321" || counterparty.Last4("1234") != "1234" {
		t.Error("Last4")
	}
}
