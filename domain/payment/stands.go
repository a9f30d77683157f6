package payment

import (
	"time"

	"github.com/opentreasury/treasury/domain/ledger"
)

// StandsIf is what a creation decided on that may change while no lock is
// held: a caller that read the inputs without the account's balance lock
// checks it once the lock is held, and decides again if it no longer
// holds. It is as weak as the rules allow: money the account received
// meanwhile, or a payment of the day that failed, never makes it decide
// again.
type StandsIf struct {
	AccountID     string
	AccountStatus string // unchanged
	KYBStatus     string // unchanged
	// MinAvailable is the least available balance the hold fits in: the
	// hold itself (amount + fee).
	MinAvailable int64
	// MaxSpentToday, when the settings set a daily limit, is the most the
	// day's other payments (DailyWindow) may count toward it.
	MaxSpentToday    *int64
	DayStart, DayEnd time.Time
}

// DecidedOn returns what the creation of in, which DecideCreate accepted
// with recorded as its hold, relied on.
func DecidedOn(in CreateInputs, recorded ledger.Recorded) StandsIf {
	acc := in.Account
	s := StandsIf{AccountID: acc.ID, AccountStatus: acc.Status, KYBStatus: in.KYBStatus}
	// The same arithmetic as the funds rule (ledger.CheckFunds): what the
	// hold takes from the available balance.
	after := acc.Balance
	for _, l := range recorded.Lines {
		if l.VirtualAccountID == acc.ID {
			after = after.Record(l, recorded.Status)
		}
	}
	s.MinAvailable = acc.Balance.Available() - after.Available()
	if limit := in.Settings.DailyPaymentLimit; limit != nil {
		most := *limit - in.Request.Amount
		s.MaxSpentToday = &most
		s.DayStart, s.DayEnd = DailyWindow(in.Now)
	}
	return s
}
