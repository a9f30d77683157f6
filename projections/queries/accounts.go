package queries

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// Scope is the platform and environment a query reads for.
type Scope struct {
	PlatformID  string
	Environment domain.Environment
}

// BalanceView is a virtual account's balance.
type BalanceView struct {
	Posted          int64 `json:"posted"`
	PendingInbound  int64 `json:"pending_inbound"`
	PendingOutbound int64 `json:"pending_outbound"`
	Available       int64 `json:"available"`
}

// VirtualAccountView is a virtual account as the API shows it.
type VirtualAccountView struct {
	ID            string            `json:"id"`
	Object        string            `json:"object"`
	PlatformID    string            `json:"platform_id"`
	EntityRef     string            `json:"entity_ref"`
	Type          string            `json:"type"`
	Status        string            `json:"status"`
	AccountNumber string            `json:"account_number"`
	RoutingNumber string            `json:"routing_number"`
	Currency      string            `json:"currency"`
	Balance       BalanceView       `json:"balance"`
	KYBStatus     string            `json:"kyb_status"`
	Metadata      map[string]string `json:"metadata"`
	Environment   string            `json:"environment"`
	CreatedAt     Time              `json:"created_at"`
}

// kybStatusSQL is the KYB status of the account's business (shared by
// every account of the business); kybJoin brings it in.
const (
	kybStatusSQL = `coalesce(k.status, 'not_started')`
	kybJoin      = ` LEFT JOIN kyb_entities k ON k.platform_id = v.platform_id AND k.environment = v.environment
        AND k.entity_ref = v.entity_ref`
)

const accountColumns = `v.id, v.platform_id, v.entity_ref, v.type, v.status, v.account_number, v.routing_number,
    b.posted, b.pending_inbound, b.pending_outbound, ` + kybStatusSQL + `, v.metadata, v.environment, v.created_at`

func scanAccount(row pgx.Row) (VirtualAccountView, error) {
	var v VirtualAccountView
	var created time.Time
	err := row.Scan(&v.ID, &v.PlatformID, &v.EntityRef, &v.Type, &v.Status, &v.AccountNumber, &v.RoutingNumber,
		&v.Balance.Posted, &v.Balance.PendingInbound, &v.Balance.PendingOutbound, &v.KYBStatus, &v.Metadata,
		&v.Environment, &created)
	v.Object, v.Currency, v.CreatedAt = "virtual_account", "USD", NewTime(created)
	v.Balance.Available = v.Balance.Posted - v.Balance.PendingOutbound
	return v, err
}

// GetVirtualAccount returns one of the scope's accounts with its balance.
func GetVirtualAccount(ctx context.Context, db eventstore.DB, s Scope, id string) (VirtualAccountView, error) {
	v, err := scanAccount(db.QueryRow(ctx, `SELECT `+accountColumns+`
        FROM virtual_accounts v JOIN account_balances b ON b.virtual_account_id = v.id`+kybJoin+`
        WHERE v.id = $1 AND v.platform_id = $2 AND v.environment = $3`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("virtual_account", id)
	}
	return v, err
}

// AccountFilter narrows ListVirtualAccounts.
type AccountFilter struct {
	EntityRef string
	Status    string
	// Metadata: every pair must be in the account's metadata.
	Metadata map[string]string
}

// ListVirtualAccounts lists the scope's accounts, newest first.
func ListVirtualAccounts(ctx context.Context, db eventstore.DB, s Scope, f AccountFilter, page Page) (List[VirtualAccountView], error) {
	rows, err := db.Query(ctx, `SELECT `+accountColumns+`
        FROM virtual_accounts v JOIN account_balances b ON b.virtual_account_id = v.id`+kybJoin+`
        WHERE v.platform_id = $1 AND v.environment = $2 AND ($3 = '' OR v.entity_ref = $3)
          AND ($4 = '' OR v.status = $4) AND ($5 = '' OR v.id < $5) AND ($7 = '' OR v.metadata @> $7::jsonb)
        ORDER BY v.id DESC LIMIT $6`, s.PlatformID, s.Environment.String(), f.EntityRef, f.Status, page.After, page.Limit+1,
		metadataFilter(f.Metadata))
	if err != nil {
		return List[VirtualAccountView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (VirtualAccountView, error) { return scanAccount(r) })
	if err != nil {
		return List[VirtualAccountView]{}, err
	}
	return NewList(items, page, func(v VirtualAccountView) string { return v.ID }), nil
}

// BalanceAtView is a balance as it was at an instant.
type BalanceAtView struct {
	Object           string `json:"object"`
	VirtualAccountID string `json:"virtual_account_id"`
	Currency         string `json:"currency"`
	AsOf             Time   `json:"as_of"`
	BalanceView
}

// BalanceAsOf rebuilds an account's balance at t from its ledger entries,
// whose timestamps are those of the events that recorded, posted and
// archived them.
func BalanceAsOf(ctx context.Context, db eventstore.DB, s Scope, id string, t time.Time) (BalanceAtView, error) {
	if _, err := GetVirtualAccount(ctx, db, s, id); err != nil {
		return BalanceAtView{}, err
	}
	v := BalanceAtView{Object: "balance", VirtualAccountID: id, Currency: "USD", AsOf: NewTime(t)}
	err := db.QueryRow(ctx, `SELECT
        coalesce(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END) FILTER (WHERE posted_at <= $2), 0),
        coalesce(sum(amount) FILTER (WHERE direction = 'credit' AND created_at <= $2
            AND (posted_at IS NULL OR posted_at > $2) AND (archived_at IS NULL OR archived_at > $2)), 0),
        coalesce(sum(amount) FILTER (WHERE direction = 'debit' AND created_at <= $2
            AND (posted_at IS NULL OR posted_at > $2) AND (archived_at IS NULL OR archived_at > $2)), 0)
        FROM ledger_entries WHERE virtual_account_id = $1`, id, t).
		Scan(&v.Posted, &v.PendingInbound, &v.PendingOutbound)
	v.Available = v.Posted - v.PendingOutbound
	return v, err
}

// BalancePoint is an account's posted balance just after an entry posted.
type BalancePoint struct {
	At      time.Time
	Balance int64
}

// PostedBalanceSeries is the account's posted balance over time: the
// balance after each of its last limit posted entries, oldest first (the
// console's chart). Entries that posted at one instant make one point.
func PostedBalanceSeries(ctx context.Context, db eventstore.DB, s Scope, id string, limit int) ([]BalancePoint, error) {
	if _, err := GetVirtualAccount(ctx, db, s, id); err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, `SELECT posted_at, balance FROM (
            SELECT posted_at, sum(sum(CASE WHEN direction = 'credit' THEN amount ELSE -amount END)) OVER (ORDER BY posted_at) AS balance
            FROM ledger_entries WHERE virtual_account_id = $1 AND posted_at IS NOT NULL GROUP BY posted_at) points
        ORDER BY posted_at DESC LIMIT $2`, id, limit)
	if err != nil {
		return nil, err
	}
	points, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (BalancePoint, error) {
		var p BalancePoint
		err := r.Scan(&p.At, &p.Balance)
		return p, err
	})
	slices.Reverse(points)
	return points, err
}
