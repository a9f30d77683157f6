package queries

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/eventstore"
)

// RevenueLine is one line of a revenue share report.
type RevenueLine struct {
	Source        string  `json:"source"` // payment_fees | interest
	Rail          *string `json:"rail,omitempty"`
	Count         *int64  `json:"count,omitempty"`
	BasisAmount   int64   `json:"basis_amount"`
	GrossAmount   int64   `json:"gross_amount"`
	PlatformShare int64   `json:"platform_share"`
}

// RevenueShareView is GET /platform/revenue-share.
type RevenueShareView struct {
	Object             string        `json:"object"`
	From               string        `json:"from"`
	To                 string        `json:"to"`
	Currency           string        `json:"currency"`
	ShareRate          string        `json:"share_rate"`
	InterestRate       string        `json:"interest_rate"`
	Lines              []RevenueLine `json:"lines"`
	TotalGross         int64         `json:"total_gross"`
	TotalPlatformShare int64         `json:"total_platform_share"`
}

// cents rounds an exact amount half-to-even to whole cents, once, at the
// end of a line; an amount outside int64 is 422 limit_exceeded.
func cents(d decimal.Decimal) (int64, error) {
	return CentsFromNumeric(d.RoundBank(0).String(), "")
}

// sumLines totals the lines' gross and platform share without overflowing.
func (v *RevenueShareView) sumLines() error {
	var gross, share decimal.Decimal
	for _, l := range v.Lines {
		gross = gross.Add(decimal.NewFromInt(l.GrossAmount))
		share = share.Add(decimal.NewFromInt(l.PlatformShare))
	}
	var err error
	if v.TotalGross, err = cents(gross); err != nil {
		return err
	}
	v.TotalPlatformShare, err = cents(share)
	return err
}

// RevenueShare reports, for the days from..to (inclusive, UTC), the fees of
// payments completed in the period by rail, and the interest earned on the
// average daily posted balance of the platform's virtual accounts
// (interest_rate × average × days / 365), each line's platform share being
// its exact gross × revenue_share_rate, rounded half-to-even to the cent.
//
// Every sum is numeric in SQL and decimal in Go: nothing can overflow on
// the way. The answers are int64 cents, and they fit: a virtual account's
// posted balance is at most ledger.MaxBalance (10^15), so the interest
// basis (an average balance) fits for any platform of fewer than 9,000
// accounts at that ceiling, and the sum of daily balances is never
// answered itself. A platform past that (or with balances written before
// the bounds existed) gets 422 limit_exceeded, never 500.
func RevenueShare(ctx context.Context, db eventstore.DB, s Scope, from, to time.Time) (RevenueShareView, error) {
	v := RevenueShareView{Object: "revenue_share_report", From: from.Format("2006-01-02"), To: to.Format("2006-01-02"),
		Currency: "USD", Lines: []RevenueLine{}}
	var share, interest decimal.Decimal
	var shareS, interestS string
	if err := db.QueryRow(ctx, `SELECT revenue_share_rate::text, interest_rate::text FROM platforms WHERE id = $1`, s.PlatformID).
		Scan(&shareS, &interestS); err != nil {
		return v, err
	}
	share, _ = decimal.NewFromString(shareS)
	interest, _ = decimal.NewFromString(interestS)
	v.ShareRate, v.InterestRate = rateString(shareS), rateString(interestS)
	end := to.AddDate(0, 0, 1)

	rows, err := db.Query(ctx, `SELECT rail, count(*), coalesce(sum(fee), 0)::text FROM payments
        WHERE platform_id = $1 AND environment = $2 AND status = 'completed' AND completed_at >= $3 AND completed_at < $4
        GROUP BY rail ORDER BY rail`, s.PlatformID, s.Environment.String(), from, end)
	if err != nil {
		return v, err
	}
	type feeRow struct {
		rail  string
		count int64
		fees  string
	}
	fees, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (feeRow, error) {
		var f feeRow
		err := r.Scan(&f.rail, &f.count, &f.fees)
		return f, err
	})
	if err != nil {
		return v, err
	}
	for _, f := range fees {
		rail, count := f.rail, f.count
		total, err := CentsFromNumeric(f.fees, "")
		if err != nil {
			return v, err
		}
		platformShare, err := cents(decimal.NewFromInt(total).Mul(share))
		if err != nil {
			return v, err
		}
		v.Lines = append(v.Lines, RevenueLine{Source: "payment_fees", Rail: &rail, Count: &count, BasisAmount: total,
			GrossAmount: total, PlatformShare: platformShare})
	}

	// The platform's posted balance at the end of each day: the balance
	// before the period plus the running sum of each day's net postings.
	var sumOfDaysText string
	days := int64(end.Sub(from).Hours() / 24)
	if err := db.QueryRow(ctx, `
        WITH entries AS (
            SELECT e.posted_at, CASE WHEN e.direction = 'credit' THEN e.amount ELSE -e.amount END AS signed
            FROM ledger_entries e
            WHERE e.platform_id = $1 AND e.environment = $2 AND e.virtual_account_id IS NOT NULL AND e.posted_at IS NOT NULL
              AND e.posted_at < $4),
        days AS (SELECT generate_series($3::timestamptz, $4::timestamptz - interval '1 day', interval '1 day') AS day)
        SELECT coalesce(sum((SELECT coalesce(sum(signed), 0) FROM entries WHERE posted_at < d.day + interval '1 day')), 0)::text
        FROM days d`, s.PlatformID, s.Environment.String(), from, end).Scan(&sumOfDaysText); err != nil {
		return v, err
	}
	sumOfDays, err := decimal.NewFromString(sumOfDaysText)
	if err != nil {
		return v, err
	}
	if days > 0 {
		line, err := interestLine(sumOfDays, days, interest, share)
		if err != nil {
			return v, err
		}
		v.Lines = append(v.Lines, line)
	}
	return v, v.sumLines()
}

// interestLine: rate × average × days / 365 = rate × (sum of the daily
// balances) / 365, exact until each amount is rounded to the cent.
func interestLine(sumOfDays decimal.Decimal, days int64, interest, share decimal.Decimal) (RevenueLine, error) {
	gross := interest.Mul(sumOfDays).Div(decimal.NewFromInt(365))
	l := RevenueLine{Source: "interest"}
	var err error
	if l.BasisAmount, err = cents(sumOfDays.Div(decimal.NewFromInt(days))); err != nil {
		return l, err
	}
	if l.GrossAmount, err = cents(gross); err != nil {
		return l, err
	}
	l.PlatformShare, err = cents(gross.Mul(share))
	return l, err
}
