package payment_test

import (
	"reflect"
	"testing"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
)

const cpID = "cp_01jx0000000000000000000000"

// A payment goes to exactly one of a destination and a counterparty.
func TestCheckTarget(t *testing.T) {
	dest := request(nil).Destination
	for _, tc := range []struct {
		name string
		r    payment.Request
		ok   bool
	}{
		{"a destination", payment.Request{Destination: dest}, true},
		{"a counterparty", payment.Request{CounterpartyID: cpID}, true},
		{"both", payment.Request{Destination: dest, CounterpartyID: cpID}, false},
		{"neither", payment.Request{}, false},
	} {
		err := tc.r.CheckTarget()
		if tc.ok != (err == nil) {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil {
			if de, _ := err.(*domain.Error); de.Code != domain.CodeInvalidRequest || de.Param != "counterparty_id" {
				t.Errorf("%s: %v", tc.name, err)
			}
		}
	}
	// A counterparty id of another kind is a 400 before any read.
	r := request(nil)
	r.Destination, r.CounterpartyID = payment.Destination{}, "va_01jx0000000000000000000000"
	if _, err := r.Validate(); domain.CodeOf(err) != domain.CodeInvalidRequest {
		t.Errorf("a va_ id as counterparty_id: %v", err)
	}
	// Before the command copies its destination in, a counterparty's
	// request passes validation without one.
	r.CounterpartyID = cpID
	if _, err := r.Validate(); err != nil {
		t.Errorf("a counterparty's request: %v", err)
	}
}

// given the platform's require_verified_counterparty and the payment's
// counterparty / when creating / then accepted, or 422
// counterparty_not_verified.
func TestDecideCreateRequireVerifiedCounterparty(t *testing.T) {
	to := func(status string) func(*payment.CreateInputs) {
		return func(in *payment.CreateInputs) {
			in.Request.CounterpartyID = cpID
			in.Counterparty = &payment.CounterpartyRef{ID: cpID, VerificationStatus: status}
		}
	}
	on := func(mod func(*payment.CreateInputs)) func(*payment.CreateInputs) {
		return func(in *payment.CreateInputs) {
			in.Settings.RequireVerifiedCounterparty = true
			if mod != nil {
				mod(in)
			}
		}
	}
	for _, tc := range []struct {
		given string
		mod   func(*payment.CreateInputs)
		param string // "": accepted
	}{
		{"off, a raw destination", nil, ""},
		{"off, an unverified counterparty", to("unverified"), ""},
		{"on, a verified counterparty", on(to("verified")), ""},
		{"on, an unverified counterparty", on(to("unverified")), "counterparty_id"},
		{"on, a pending counterparty", on(to("pending")), "counterparty_id"},
		{"on, a failed counterparty", on(to("failed")), "counterparty_id"},
		{"on, a raw destination", on(nil), "destination"},
	} {
		events, err := payment.DecideCreate(createInputs(tc.mod))
		if tc.param == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.given, err)
				continue
			}
			c := events[0].(payment.Created)
			want := ""
			if tc.mod != nil && createInputs(tc.mod).Counterparty != nil {
				want = cpID
			}
			if c.CounterpartyID != want {
				t.Errorf("%s: counterparty_id %q, want %q", tc.given, c.CounterpartyID, want)
			}
			if s := payment.Evolve(payment.State{}, c); s.CounterpartyID != want ||
				!reflect.DeepEqual(payment.ReleaseRequest(s).CounterpartyID, want) {
				t.Errorf("%s: state %+v", tc.given, s)
			}
			continue
		}
		de, _ := err.(*domain.Error)
		if de == nil || de.Code != domain.CodeCounterpartyNotVerified || de.Param != tc.param || len(events) != 0 {
			t.Errorf("%s: got %v %v, want counterparty_not_verified on %s", tc.given, events, err, tc.param)
		}
	}
	// The rule comes after the parties' rules: a frozen account is still
	// account_not_active.
	_, err := payment.DecideCreate(createInputs(on(func(in *payment.CreateInputs) { in.Account.Status = "frozen" })))
	if domain.CodeOf(err) != domain.CodeAccountNotActive {
		t.Errorf("frozen: %v", err)
	}
	// And before the funds.
	_, err = payment.DecideCreate(createInputs(on(func(in *payment.CreateInputs) { in.Account.Balance = ledger.Balance{} })))
	if domain.CodeOf(err) != domain.CodeCounterpartyNotVerified {
		t.Errorf("no funds: %v", err)
	}
}
