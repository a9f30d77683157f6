package payment_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
)

// ---- DecidedOn: given an accepted creation / then what it must still find under the lock --

func TestDecidedOn(t *testing.T) {
	day := time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		given func(*payment.CreateInputs)
		want  payment.StandsIf
	}{
		{"the hold is amount + fee", nil,
			payment.StandsIf{AccountID: vaID, AccountStatus: "active", KYBStatus: "approved", MinAvailable: 1000 + 25}},
		{"no fee: the amount", func(in *payment.CreateInputs) { in.FeeSchedule = map[string]int64{"ach_standard": 0} },
			payment.StandsIf{AccountID: vaID, AccountStatus: "active", KYBStatus: "approved", MinAvailable: 1000}},
		{"pending funds on either side do not change the hold",
			func(in *payment.CreateInputs) {
				in.Account.Balance = ledger.Balance{Posted: 10000, PendingInbound: 500, PendingOutbound: 700}
			},
			payment.StandsIf{AccountID: vaID, AccountStatus: "active", KYBStatus: "approved", MinAvailable: 1025}},
		{"a daily limit: the day's other payments may count up to limit − amount",
			func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit, in.SpentToday = limit(50000), 1200 },
			payment.StandsIf{AccountID: vaID, AccountStatus: "active", KYBStatus: "approved", MinAvailable: 1025,
				MaxSpentToday: limit(49000), DayStart: day, DayEnd: day.Add(24 * time.Hour)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := createInputs(c.given)
			events, err := payment.DecideCreate(in)
			if err != nil {
				t.Fatalf("given inputs every rule accepts, DecideCreate refused: %v", err)
			}
			if got := payment.DecidedOn(in, events[1].(ledger.Recorded)); !reflect.DeepEqual(got, c.want) {
				t.Errorf("DecidedOn\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// What DecidedOn asks of the locked state is exactly the rules' boundary:
// at MinAvailable and MaxSpentToday DecideCreate still accepts, one cent
// beyond either it refuses. A weaker check would let a payment overdraw or
// pass its limit; a stronger one would decide again for nothing.
func TestDecidedOnIsTheRulesBoundary(t *testing.T) {
	in := createInputs(func(in *payment.CreateInputs) { in.Settings.DailyPaymentLimit, in.SpentToday = limit(50000), 0 })
	events, err := payment.DecideCreate(in)
	if err != nil {
		t.Fatal(err)
	}
	s := payment.DecidedOn(in, events[1].(ledger.Recorded))
	for _, c := range []struct {
		name      string
		available int64
		spent     int64
		want      domain.Code // "" accepted
	}{
		{"at both bounds", s.MinAvailable, *s.MaxSpentToday, ""},
		{"a cent short of funds", s.MinAvailable - 1, *s.MaxSpentToday, domain.CodeInsufficientFunds},
		{"a cent past the limit", s.MinAvailable, *s.MaxSpentToday + 1, domain.CodeLimitExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			again := in
			again.Account.Balance = ledger.Balance{Posted: c.available + 300, PendingOutbound: 300}
			again.SpentToday = c.spent
			_, err := payment.DecideCreate(again)
			var de *domain.Error
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (!errors.As(err, &de) || de.Code != c.want):
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
}
