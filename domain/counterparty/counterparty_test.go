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
		// A live prenote waits for the next ACH file: no expected answer yet.
		{[]domain.Event{created("987654321")}, "prenote", domain.Live,
			[]domain.Event{counterparty.VerificationRequested{Method: "prenote", At: at}}, ""},
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

func liveCreated(account string) counterparty.Created {
	c := created(account)
	c.Environment = domain.Live
	return c
}

func TestDecideLivePrenote(t *testing.T) {
	requested := counterparty.VerificationRequested{Method: "prenote", At: at}
	settles := at.Add(3 * time.Hour)
	submitted := counterparty.PrenoteSubmitted{ACHFileID: "achf_1", TraceNumber: "021000020000001", SettlesAt: settles, At: at}
	resubmitted := counterparty.PrenoteSubmitted{ACHFileID: "achf_2", TraceNumber: "021000020000009", SettlesAt: settles, At: at}
	verified := counterparty.Verified{At: settles}
	failed := counterparty.VerificationFailed{FailureCode: "R03", At: settles}
	deleted := counterparty.Deleted{At: at}
	sandbox := created("987654321")
	sandboxRequested := counterparty.VerificationRequested{Method: "prenote", ExpectedAt: at, At: at}

	t.Run("awaits a file", func(t *testing.T) {
		for _, tc := range []struct {
			given []domain.Event
			want  bool
		}{
			{[]domain.Event{liveCreated("987654321")}, false},
			{[]domain.Event{liveCreated("987654321"), requested}, true},
			{[]domain.Event{liveCreated("987654321"), requested, submitted}, false},
			{[]domain.Event{liveCreated("987654321"), requested, deleted}, false},
			{[]domain.Event{liveCreated("987654321"), requested, submitted, failed, requested}, true}, // asked again
			{[]domain.Event{sandbox, sandboxRequested}, false},                                        // the simulator answers it
		} {
			s := given(tc.given...)
			if got := s.AwaitsFile(); got != tc.want {
				t.Errorf("given %d events ending %T: %v, want %v", len(tc.given), tc.given[len(tc.given)-1], got, tc.want)
			}
			_, err := counterparty.DecidePrenoteSubmitted(s, submitted)
			if tc.want != (err == nil) {
				t.Errorf("given %d events ending %T: submitted: %v", len(tc.given), tc.given[len(tc.given)-1], err)
			}
		}
		again := given(liveCreated("987654321"), requested, submitted, failed, requested)
		if again.Prenote.TraceNumber != "" || again.FailureCode != "" {
			t.Errorf("a new request keeps the old prenote: %+v", again)
		}
	})

	t.Run("settled", func(t *testing.T) {
		for _, tc := range []struct {
			given []domain.Event
			asOf  time.Time
			then  []domain.Event
		}{
			{[]domain.Event{liveCreated("987654321"), requested, submitted}, settles, []domain.Event{counterparty.Verified{At: at}}},
			{[]domain.Event{liveCreated("987654321"), requested, submitted}, settles.Add(-time.Second), nil},
			{[]domain.Event{liveCreated("987654321"), requested}, settles, nil}, // in no file yet
			{[]domain.Event{liveCreated("987654321"), requested, submitted, verified}, settles, nil},
			{[]domain.Event{liveCreated("987654321"), requested, submitted, failed}, settles, nil},
			{[]domain.Event{liveCreated("987654321"), requested, submitted, deleted}, settles, nil},
		} {
			if got := counterparty.DecidePrenoteSettled(given(tc.given...), tc.asOf, at); !reflect.DeepEqual(got, tc.then) {
				t.Errorf("given %d events ending %T, as of %v: %v, want %v", len(tc.given), tc.given[len(tc.given)-1], tc.asOf, got, tc.then)
			}
		}
	})

	t.Run("returned", func(t *testing.T) {
		fails := []domain.Event{counterparty.VerificationFailed{FailureCode: "R04", At: at}}
		for _, tc := range []struct {
			given []domain.Event
			trace string
			then  []domain.Event
		}{
			{[]domain.Event{liveCreated("987654321"), requested, submitted}, submitted.TraceNumber, fails},
			// After it settled: a late return still fails it.
			{[]domain.Event{liveCreated("987654321"), requested, submitted, verified}, submitted.TraceNumber, fails},
			// Returned already: once.
			{[]domain.Event{liveCreated("987654321"), requested, submitted, failed}, submitted.TraceNumber, nil},
			// The return of an earlier prenote, after a new one went.
			{[]domain.Event{liveCreated("987654321"), requested, submitted, failed, requested, resubmitted}, submitted.TraceNumber, nil},
			{[]domain.Event{liveCreated("987654321"), requested, submitted, failed, requested, resubmitted}, resubmitted.TraceNumber, fails},
			{[]domain.Event{liveCreated("987654321"), requested}, submitted.TraceNumber, nil},
			{[]domain.Event{liveCreated("987654321"), requested, submitted, deleted}, submitted.TraceNumber, nil},
		} {
			s := given(tc.given...)
			got := counterparty.DecidePrenoteReturned(s, tc.trace, "R04", at)
			if !reflect.DeepEqual(got, tc.then) {
				t.Errorf("given %d events ending %T, trace %s: %v, want %v", len(tc.given), tc.given[len(tc.given)-1], tc.trace, got, tc.then)
			}
			if len(got) > 0 {
				if next := given(append(tc.given, got...)...); next.Status != counterparty.StatusFailed || next.FailureCode != "R04" {
					t.Errorf("after the return: %+v", next)
				}
			}
		}
	})
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
