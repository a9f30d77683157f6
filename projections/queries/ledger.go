package queries

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// SourceView names what a transaction or entry records.
type SourceView struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

// TransactionView is one line of a virtual account's history.
type TransactionView struct {
	ID               string     `json:"id"`
	Object           string     `json:"object"`
	VirtualAccountID string     `json:"virtual_account_id"`
	Type             string     `json:"type"`
	Amount           int64      `json:"amount"`
	Currency         string     `json:"currency"`
	Status           string     `json:"status"`
	Description      string     `json:"description"`
	Source           SourceView `json:"source"`
	Environment      string     `json:"environment"`
	CreatedAt        Time       `json:"created_at"`
	PostedAt         *Time      `json:"posted_at"`
	seq              int64
}

// TimeRange is an inclusive lower and exclusive upper bound; zero = open.
type TimeRange struct {
	After  time.Time // created_after (inclusive)
	Before time.Time // created_before (exclusive)
}

func (r TimeRange) args() (any, any) {
	var a, b any
	if !r.After.IsZero() {
		a = r.After
	}
	if !r.Before.IsZero() {
		b = r.Before
	}
	return a, b
}

// TransactionFilter narrows ListTransactions.
type TransactionFilter struct {
	Status  string
	Type    string
	Created TimeRange
}

const transactionColumns = `seq, id, virtual_account_id, type, amount, status, description, source_type, source_id,
    environment, created_at, posted_at`

func scanTransaction(row pgx.Row) (TransactionView, error) {
	var t TransactionView
	var created time.Time
	var posted *time.Time
	err := row.Scan(&t.seq, &t.ID, &t.VirtualAccountID, &t.Type, &t.Amount, &t.Status, &t.Description,
		&t.Source.Type, &t.Source.ID, &t.Environment, &created, &posted)
	t.Object, t.Currency, t.CreatedAt, t.PostedAt = "transaction", "USD", NewTime(created), NewTimePtr(posted)
	return t, err
}

// ListTransactions lists an account's transactions, newest first. New
// transactions get a higher seq, so a walk by cursor sees each once.
func ListTransactions(ctx context.Context, db eventstore.DB, s Scope, accountID string, f TransactionFilter, page Page) (List[TransactionView], error) {
	if _, err := GetVirtualAccount(ctx, db, s, accountID); err != nil {
		return List[TransactionView]{}, err
	}
	after, err := seqCursor(page.After)
	if err != nil {
		return List[TransactionView]{}, err
	}
	from, to := f.Created.args()
	rows, err := db.Query(ctx, `SELECT `+transactionColumns+` FROM account_transactions
        WHERE virtual_account_id = $1 AND ($2 = '' OR status = $2) AND ($3 = '' OR type = $3)
          AND ($4::timestamptz IS NULL OR created_at >= $4) AND ($5::timestamptz IS NULL OR created_at < $5)
          AND ($6 = 0 OR seq < $6)
        ORDER BY seq DESC LIMIT $7`, accountID, f.Status, f.Type, from, to, after, page.Limit+1)
	if err != nil {
		return List[TransactionView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (TransactionView, error) { return scanTransaction(r) })
	if err != nil {
		return List[TransactionView]{}, err
	}
	return NewList(items, page, func(t TransactionView) string { return strconv.FormatInt(t.seq, 10) }), nil
}

func seqCursor(after string) (int64, error) {
	if after == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(after, 10, 64)
	if err != nil || n < 1 {
		return 0, domain.Invalid("cursor", "cursor is not one this API returned")
	}
	return n, nil
}

// LedgerEntryView is one debit or credit.
type LedgerEntryView struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	JournalEntryID   string  `json:"journal_entry_id"`
	LedgerAccountID  string  `json:"ledger_account_id"`
	VirtualAccountID *string `json:"virtual_account_id"`
	Direction        string  `json:"direction"`
	Amount           int64   `json:"amount"`
	Currency         string  `json:"currency"`
	Type             string  `json:"type"`
	Status           string  `json:"status"`
	Description      string  `json:"description"`
	Environment      string  `json:"environment"`
	EffectiveAt      Time    `json:"effective_at"`
	CreatedAt        Time    `json:"created_at"`
	// Source is what made the entry's journal entry (its source).
	Source SourceView `json:"source"`
	seq    int64
}

// EntryFilter narrows ListLedgerEntries. Scope to one account with
// VirtualAccountID or LedgerAccountID; neither means the whole platform.
type EntryFilter struct {
	VirtualAccountID string
	LedgerAccountID  string
	Type             string
	Direction        string
	Status           string
	Created          TimeRange
}

const entryColumns = `seq, id, journal_entry_id, ledger_account_id, virtual_account_id, direction, amount, type, status,
    description, environment, effective_at, created_at, source_type, source_id`

func scanEntry(row pgx.Row) (LedgerEntryView, error) {
	var e LedgerEntryView
	var eff, created time.Time
	err := row.Scan(&e.seq, &e.ID, &e.JournalEntryID, &e.LedgerAccountID, &e.VirtualAccountID, &e.Direction, &e.Amount,
		&e.Type, &e.Status, &e.Description, &e.Environment, &eff, &created, &e.Source.Type, &e.Source.ID)
	e.Object, e.Currency, e.EffectiveAt, e.CreatedAt = "ledger_entry", "USD", NewTime(eff), NewTime(created)
	return e, err
}

// ListLedgerEntries lists the scope's ledger entries, newest first.
func ListLedgerEntries(ctx context.Context, db eventstore.DB, s Scope, f EntryFilter, page Page) (List[LedgerEntryView], error) {
	if f.VirtualAccountID != "" {
		if _, err := GetVirtualAccount(ctx, db, s, f.VirtualAccountID); err != nil {
			return List[LedgerEntryView]{}, err
		}
	}
	if f.LedgerAccountID != "" {
		var ok bool
		if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ledger_accounts WHERE id = $1 AND platform_id = $2 AND environment = $3)`,
			f.LedgerAccountID, s.PlatformID, s.Environment.String()).Scan(&ok); err != nil {
			return List[LedgerEntryView]{}, err
		}
		if !ok {
			return List[LedgerEntryView]{}, domain.NotFound("ledger_account", f.LedgerAccountID)
		}
	}
	after, err := seqCursor(page.After)
	if err != nil {
		return List[LedgerEntryView]{}, err
	}
	from, to := f.Created.args()
	rows, err := db.Query(ctx, `SELECT `+entryColumns+` FROM ledger_entries
        WHERE platform_id = $1 AND environment = $2
          AND ($3 = '' OR virtual_account_id = $3) AND ($4 = '' OR ledger_account_id = $4)
          AND ($5 = '' OR type = $5) AND ($6 = '' OR direction = $6) AND ($7 = '' OR status = $7)
          AND ($8::timestamptz IS NULL OR created_at >= $8) AND ($9::timestamptz IS NULL OR created_at < $9)
          AND ($10 = 0 OR seq < $10)
        ORDER BY seq DESC LIMIT $11`, s.PlatformID, s.Environment.String(), f.VirtualAccountID, f.LedgerAccountID,
		f.Type, f.Direction, f.Status, from, to, after, page.Limit+1)
	if err != nil {
		return List[LedgerEntryView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LedgerEntryView, error) { return scanEntry(r) })
	if err != nil {
		return List[LedgerEntryView]{}, err
	}
	return NewList(items, page, func(e LedgerEntryView) string { return strconv.FormatInt(e.seq, 10) }), nil
}

// LedgerBalancesView are a ledger account's balances in its normal direction.
type LedgerBalancesView struct {
	Posted    int64 `json:"posted"`
	Pending   int64 `json:"pending"`
	Available int64 `json:"available"`
}

// LedgerAccountView is a ledger account with its balances.
type LedgerAccountView struct {
	ID               string             `json:"id"`
	Object           string             `json:"object"`
	Name             string             `json:"name"`
	VirtualAccountID *string            `json:"virtual_account_id"`
	NormalBalance    string             `json:"normal_balance"`
	Currency         string             `json:"currency"`
	Balances         LedgerBalancesView `json:"balances"`
	Environment      string             `json:"environment"`
	CreatedAt        Time               `json:"created_at"`
}

// ListLedgerAccounts lists the scope's ledger accounts with balances
// summed from their entries (the hot accounts' rows are never locked).
//
// The sums stay numeric (exact, unbounded) in SQL and are turned into
// int64 cents in Go with a range check, so a sum can never fail the query.
// They fit: a virtual account's balances and those of the lockable
// platform accounts are bounded by ledger.MaxBalance (10^15) by the
// commands; a hot account (rail clearing, service fee revenue) moves at
// most the largest rail amount (under 10^10) per line, so it would take
// some 9 × 10^8 transfers of the largest size, all one way, to leave int64.
// Should one ever do so (or an account written before the bounds
// existed), the list answers 422 limit_exceeded naming it, never 500.
func ListLedgerAccounts(ctx context.Context, db eventstore.DB, s Scope, page Page) (List[LedgerAccountView], error) {
	rows, err := db.Query(ctx, `SELECT la.id, la.code, la.virtual_account_id, la.normal_balance, la.environment, la.created_at,
          coalesce(sum(CASE WHEN e.direction = la.normal_balance THEN e.amount ELSE -e.amount END) FILTER (WHERE e.status = 'posted'), 0)::text,
          coalesce(sum(CASE WHEN e.direction = la.normal_balance THEN e.amount ELSE -e.amount END) FILTER (WHERE e.status = 'pending'), 0)::text,
          coalesce(sum(CASE WHEN e.direction = la.normal_balance THEN e.amount ELSE -e.amount END) FILTER (WHERE e.status = 'posted'), 0)
            - coalesce(sum(e.amount) FILTER (WHERE e.status = 'pending' AND e.direction <> la.normal_balance), 0)
        FROM ledger_accounts la LEFT JOIN ledger_entries e ON e.ledger_account_id = la.id
        WHERE la.platform_id = $1 AND la.environment = $2 AND ($3 = '' OR la.id < $3)
        GROUP BY la.id ORDER BY la.id DESC LIMIT $4`, s.PlatformID, s.Environment.String(), page.After, page.Limit+1)
	if err != nil {
		return List[LedgerAccountView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LedgerAccountView, error) {
		var a LedgerAccountView
		var created time.Time
		var posted, pending, available string
		if err := r.Scan(&a.ID, &a.Name, &a.VirtualAccountID, &a.NormalBalance, &a.Environment, &created,
			&posted, &pending, &available); err != nil {
			return a, err
		}
		a.Object, a.Currency, a.CreatedAt = "ledger_account", "USD", NewTime(created)
		var err error
		for _, f := range []struct {
			sum string
			to  *int64
		}{{posted, &a.Balances.Posted}, {pending, &a.Balances.Pending}, {available, &a.Balances.Available}} {
			if *f.to, err = CentsFromNumeric(f.sum, a.ID); err != nil {
				return a, err
			}
		}
		return a, nil
	})
	if err != nil {
		return List[LedgerAccountView]{}, err
	}
	return NewList(items, page, func(a LedgerAccountView) string { return a.ID }), nil
}

// JournalEntryView is a journal entry with its ledger entries.
type JournalEntryView struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Type        string  `json:"type"`
	Description string  `json:"description"`
	Status      string  `json:"status"`
	Reverses    *string `json:"reverses"`
	ReversedBy  *string `json:"reversed_by"`
	// Source is what made it: a payment, an inbound transfer, or the
	// journal entry itself (a manual entry, a funding).
	Source      SourceView        `json:"source"`
	Entries     []LedgerEntryView `json:"entries"`
	Metadata    map[string]string `json:"metadata"`
	Environment string            `json:"environment"`
	EffectiveAt Time              `json:"effective_at"`
	CreatedAt   Time              `json:"created_at"`
	seq         int64             // its place in the ledger order (lists only)
}

// JournalEntryFromLog folds a journal entry's stream into its view; it
// reads the log, so it is current the moment the command commits.
func JournalEntryFromLog(ctx context.Context, db eventstore.DB, s Scope, id string) (JournalEntryView, error) {
	recs, _, err := eventstore.Load(ctx, db, ledger.StreamID(id))
	if err != nil {
		return JournalEntryView{}, err
	}
	var v JournalEntryView
	for i := range recs {
		ev, err := recs[i].Decode()
		if err != nil {
			return v, err
		}
		switch e := ev.(type) {
		case ledger.Recorded:
			if e.PlatformID != s.PlatformID || e.Environment != s.Environment {
				return v, domain.NotFound("journal_entry", id)
			}
			v = JournalEntryView{ID: e.JournalEntryID, Object: "journal_entry", Type: e.Type, Description: e.Description,
				Status: e.Status, Source: SourceView{Type: e.Source.Type, ID: e.Source.ID}, Metadata: Metadata(e.Metadata),
				Environment: e.Environment.String(), EffectiveAt: NewTime(e.EffectiveAt), CreatedAt: NewTime(e.At)}
			if e.Reverses != "" {
				rev := e.Reverses
				v.Reverses = &rev
			}
			for _, l := range e.Lines {
				le := LedgerEntryView{ID: l.EntryID, Object: "ledger_entry", JournalEntryID: e.JournalEntryID,
					LedgerAccountID: l.LedgerAccountID, Direction: l.Direction.String(), Amount: l.Amount, Currency: "USD",
					Type: l.Type, Status: e.Status, Description: e.Description, Environment: e.Environment.String(),
					EffectiveAt: NewTime(e.EffectiveAt), CreatedAt: NewTime(e.At), Source: v.Source}
				if l.VirtualAccountID != "" {
					va := l.VirtualAccountID
					le.VirtualAccountID = &va
				}
				v.Entries = append(v.Entries, le)
			}
		case ledger.Posted:
			v.setStatus(ledger.StatusPosted)
		case ledger.Archived:
			v.setStatus(ledger.StatusArchived)
		case ledger.Reversed:
			by := e.ReversedBy
			v.ReversedBy = &by
		}
	}
	if v.ID == "" {
		return v, domain.NotFound("journal_entry", id)
	}
	return v, nil
}

func (v *JournalEntryView) setStatus(s string) {
	v.Status = s
	for i := range v.Entries {
		v.Entries[i].Status = s
	}
}

// CentsFromNumeric turns an exact SQL sum (numeric as text) into int64
// cents; a sum outside int64 is 422 limit_exceeded naming resourceID (the
// amount is too large for the API to answer), never a failed scan.
func CentsFromNumeric(sum, resourceID string) (int64, error) {
	n, err := strconv.ParseInt(sum, 10, 64)
	if err != nil {
		return 0, &domain.Error{Code: domain.CodeLimitExceeded, ResourceID: resourceID,
			Message: "an amount here exceeds the range the API answers in (64-bit integer cents)"}
	}
	return n, nil
}
