package ledger

import "github.com/opentreasury/treasury/domain"

// Holder is the virtual account a payment's money leaves: its id (the
// balance the funds check reads) and its own ledger account.
type Holder struct {
	VirtualAccountID string
	LedgerAccountID  string
}

// PaymentLines is the payment → journal entry policy: the amount goes to
// the rail's clearing account and the fee to service fee revenue, both out
// of the holder's account; no fee, no fee lines. chart maps account
// codes to ledger account ids; newEntryID names each line. A chart that
// lacks an account is a broken invariant (every chart is opened whole),
// refused here rather than recorded as a line to no account.
func PaymentLines(from Holder, chart map[string]string, rail string, amount, fee int64, newEntryID func() string) ([]Line, error) {
	clearing, err := chartAccount(chart, RailClearing(rail))
	if err != nil {
		return nil, err
	}
	lines := []Line{
		{EntryID: newEntryID(), LedgerAccountID: from.LedgerAccountID, VirtualAccountID: from.VirtualAccountID,
			Direction: Debit, Amount: amount, Type: TypePayment},
		{EntryID: newEntryID(), LedgerAccountID: clearing, Direction: Credit, Amount: amount, Type: TypePayment},
	}
	if fee <= 0 {
		return lines, nil
	}
	revenue, err := chartAccount(chart, CodeServiceFeeRevenue)
	if err != nil {
		return nil, err
	}
	return append(lines,
		Line{EntryID: newEntryID(), LedgerAccountID: from.LedgerAccountID, VirtualAccountID: from.VirtualAccountID,
			Direction: Debit, Amount: fee, Type: TypePaymentFee},
		Line{EntryID: newEntryID(), LedgerAccountID: revenue, Direction: Credit, Amount: fee, Type: TypePaymentFee}), nil
}

func chartAccount(chart map[string]string, code string) (string, error) {
	id := chart[code]
	if id == "" {
		return "", domain.Errorf(domain.CodeInternal, "the chart of accounts has no %s account", code)
	}
	return id, nil
}
