package queries

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/eventstore"
)

// CounterpartyView is a counterparty as the API shows it: never its whole
// account number.
type CounterpartyView struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	Name               string            `json:"name"`
	AccountNumberLast4 string            `json:"account_number_last4"`
	RoutingNumber      string            `json:"routing_number"`
	AccountType        string            `json:"account_type"`
	Verification       VerificationView  `json:"verification"`
	Metadata           map[string]string `json:"metadata"`
	Environment        string            `json:"environment"`
	CreatedAt          Time              `json:"created_at"`
}

// VerificationView is a counterparty's verification: method is null
// until one is asked for; failure_code is there only when it failed.
type VerificationView struct {
	Status      string  `json:"status"`
	Method      *string `json:"method"`
	FailureCode string  `json:"failure_code,omitempty"`
}

// NewCounterpartyView shows a counterparty folded from the log.
func NewCounterpartyView(s counterparty.State) CounterpartyView {
	return CounterpartyView{ID: s.CounterpartyID, Object: "counterparty", Name: s.Name,
		AccountNumberLast4: counterparty.Last4(s.AccountNumber), RoutingNumber: s.RoutingNumber, AccountType: s.AccountType,
		Verification: VerificationView{Status: s.Status, Method: nonEmpty(s.Method), FailureCode: s.FailureCode},
		Metadata:     Metadata(s.Metadata), Environment: s.Environment.String(), CreatedAt: NewTime(s.At)}
}

const counterpartyColumns = `id, name, account_number, routing_number, account_type, verification_status,
    verification_method, coalesce(failure_code, ''), metadata, environment, created_at`

func scanCounterparty(row pgx.Row) (CounterpartyView, error) {
	var v CounterpartyView
	var account string
	var created time.Time
	err := row.Scan(&v.ID, &v.Name, &account, &v.RoutingNumber, &v.AccountType, &v.Verification.Status,
		&v.Verification.Method, &v.Verification.FailureCode, &v.Metadata, &v.Environment, &created)
	v.Object, v.AccountNumberLast4, v.CreatedAt = "counterparty", counterparty.Last4(account), NewTime(created)
	return v, err
}

// GetCounterparty returns one of the scope's counterparties (a deleted
// one is not found).
func GetCounterparty(ctx context.Context, db eventstore.DB, s Scope, id string) (CounterpartyView, error) {
	v, err := scanCounterparty(db.QueryRow(ctx, `SELECT `+counterpartyColumns+` FROM counterparties
        WHERE id = $1 AND platform_id = $2 AND environment = $3 AND NOT deleted`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("counterparty", id)
	}
	return v, err
}

// CounterpartyFilter narrows ListCounterparties.
type CounterpartyFilter struct {
	VerificationStatus string
	Created            TimeRange
	Metadata           map[string]string // every pair must be in the counterparty's metadata
}

// ListCounterparties lists the scope's counterparties, newest first,
// deleted ones left out.
func ListCounterparties(ctx context.Context, db eventstore.DB, s Scope, f CounterpartyFilter, page Page) (List[CounterpartyView], error) {
	w := &where{args: []any{s.PlatformID, s.Environment.String()}}
	w.add("verification_status = ?", f.VerificationStatus)
	w.add("metadata @> ?::jsonb", metadataFilter(f.Metadata))
	w.add("created_at >= ?", f.Created.After)
	w.add("created_at < ?", f.Created.Before)
	w.add("id < ?", page.After)
	w.args = append(w.args, page.Limit+1)
	rows, err := db.Query(ctx, `SELECT `+counterpartyColumns+` FROM counterparties
        WHERE platform_id = $1 AND environment = $2 AND NOT deleted`+w.sql+`
        ORDER BY id DESC LIMIT $`+strconv.Itoa(len(w.args)), w.args...)
	if err != nil {
		return List[CounterpartyView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (CounterpartyView, error) { return scanCounterparty(r) })
	if err != nil {
		return List[CounterpartyView]{}, err
	}
	return NewList(items, page, func(v CounterpartyView) string { return v.ID }), nil
}
