package queries

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// StatementView is a virtual account's monthly statement: posted
// transactions only, by the time they posted.
type StatementView struct {
	Object           string            `json:"object"`
	VirtualAccountID string            `json:"virtual_account_id"`
	Month            string            `json:"month"`
	Currency         string            `json:"currency"`
	PeriodStart      Time              `json:"period_start"`
	PeriodEnd        Time              `json:"period_end"`
	OpeningBalance   int64             `json:"opening_balance"`
	ClosingBalance   int64             `json:"closing_balance"`
	TotalIn          int64             `json:"total_in"`
	TotalOut         int64             `json:"total_out"`
	Transactions     []TransactionView `json:"transactions"`
}

// Statement builds the statement of month (its first instant, UTC).
func Statement(ctx context.Context, db eventstore.DB, s Scope, accountID string, month time.Time) (StatementView, error) {
	if _, err := GetVirtualAccount(ctx, db, s, accountID); err != nil {
		return StatementView{}, err
	}
	start := time.Date(month.Year(), month.Month(), 1, 0, 0, 0, 0, time.UTC)
	end := start.AddDate(0, 1, 0)
	v := StatementView{Object: "statement", VirtualAccountID: accountID, Month: start.Format("2006-01"), Currency: "USD",
		PeriodStart: NewTime(start), PeriodEnd: NewTime(end), Transactions: []TransactionView{}}
	var opening string
	if err := db.QueryRow(ctx, `SELECT coalesce(sum(amount), 0)::text FROM account_transactions
        WHERE virtual_account_id = $1 AND status = 'posted' AND posted_at < $2`, accountID, start).Scan(&opening); err != nil {
		return v, err
	}
	rows, err := db.Query(ctx, `SELECT `+transactionColumns+` FROM account_transactions
        WHERE virtual_account_id = $1 AND status = 'posted' AND posted_at >= $2 AND posted_at < $3
        ORDER BY posted_at, seq`, accountID, start, end)
	if err != nil {
		return v, err
	}
	v.Transactions, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (TransactionView, error) { return scanTransaction(r) })
	if err != nil {
		return v, err
	}
	if v.Transactions == nil {
		v.Transactions = []TransactionView{}
	}
	return v, statementTotals(&v, opening)
}

// statementTotals sums the opening balance (exact, from SQL) and the
// listed transactions exactly, then checks each total fits int64
// (CentsFromNumeric: 422 limit_exceeded, never a wrapped total). Balances
// are bounded, but money in and out are not: an entry may credit and
// debit one account, so they can pass int64 while the balance stays small.
func statementTotals(v *StatementView, opening string) error {
	closing, ok := new(big.Int).SetString(opening, 10)
	if !ok {
		return fmt.Errorf("statement of %s: opening balance %q", v.VirtualAccountID, opening)
	}
	openingSum := new(big.Int).Set(closing)
	in, out := new(big.Int), new(big.Int)
	for _, t := range v.Transactions {
		amount := big.NewInt(t.Amount)
		if t.Amount > 0 {
			in.Add(in, amount)
		} else {
			out.Sub(out, amount)
		}
		closing.Add(closing, amount)
	}
	var err error
	for _, f := range []struct {
		sum *big.Int
		to  *int64
	}{{openingSum, &v.OpeningBalance}, {in, &v.TotalIn}, {out, &v.TotalOut}, {closing, &v.ClosingBalance}} {
		if *f.to, err = CentsFromNumeric(f.sum.String(), v.VirtualAccountID); err != nil {
			return err
		}
	}
	return nil
}

// WriteStatementCSV writes a statement as CSV: a header block, then one
// row per transaction with the balance after it.
func WriteStatementCSV(w io.Writer, v StatementView) error {
	cw := csv.NewWriter(w)
	// One table, so that it loads as one (a spreadsheet, a data frame, a
	// COPY): the summary (opening, totals, closing) is the JSON form's.
	rows := [][]string{
		{"transaction_id", "posted_at", "type", "description", "amount", "balance", "source_type", "source_id"},
	}
	// Exact: between an opening and a closing that fit int64 the balance
	// can pass it (old data), and the CSV has no reason to refuse.
	balance := big.NewInt(v.OpeningBalance)
	for _, t := range v.Transactions {
		balance.Add(balance, big.NewInt(t.Amount))
		rows = append(rows, []string{t.ID, t.PostedAt.UTC().Format(TimeFormat), t.Type, t.Description,
			itoa64(t.Amount), balance.String(), t.Source.Type, t.Source.ID})
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}

// WriteLedgerExport writes every ledger entry of the scope created in the
// range as CSV, with each account's running posted balance (in the
// account's normal direction, in ledger order). The running balance is
// the exact numeric sum written as text: a hot account's sum, or old data,
// may pass int64, and a CSV already streaming cannot turn into a 422.
func WriteLedgerExport(ctx context.Context, db eventstore.DB, s Scope, r TimeRange, w io.Writer) error {
	from, to := r.args()
	rows, err := db.Query(ctx, `SELECT id, journal_entry_id, ledger_account_id, code, coalesce(virtual_account_id, ''),
            direction, amount, type, status, description, effective_at, created_at, posted_at, running::text
        FROM (
            SELECT e.*, la.code,
                sum(CASE WHEN e.status <> 'posted' THEN 0 WHEN e.direction = la.normal_balance THEN e.amount ELSE -e.amount END)
                    OVER (PARTITION BY e.ledger_account_id ORDER BY e.seq) AS running
            FROM ledger_entries e JOIN ledger_accounts la ON la.id = e.ledger_account_id
            WHERE e.platform_id = $1 AND e.environment = $2
        ) x
        WHERE ($3::timestamptz IS NULL OR created_at >= $3) AND ($4::timestamptz IS NULL OR created_at < $4)
        ORDER BY ledger_account_id, seq`, s.PlatformID, s.Environment.String(), from, to)
	if err != nil {
		return err
	}
	defer rows.Close()
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"entry_id", "journal_entry_id", "ledger_account_id", "ledger_account_name",
		"virtual_account_id", "direction", "amount", "currency", "type", "status", "description",
		"effective_at", "created_at", "posted_at", "running_balance"}); err != nil {
		return err
	}
	for rows.Next() {
		var id, je, la, code, va, dir, typ, status, desc string
		var amount int64
		var running string // the exact numeric sum: it may pass int64
		var eff, created time.Time
		var posted *time.Time
		if err := rows.Scan(&id, &je, &la, &code, &va, &dir, &amount, &typ, &status, &desc, &eff, &created, &posted, &running); err != nil {
			return err
		}
		postedS := ""
		if posted != nil {
			postedS = posted.UTC().Format(TimeFormat)
		}
		if err := cw.Write([]string{id, je, la, code, va, dir, itoa64(amount), "USD", typ, status, desc,
			eff.UTC().Format(TimeFormat), created.UTC().Format(TimeFormat), postedS, running}); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
