package app

import (
	"context"
	"crypto/rand"
	"math/big"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// Caller is the platform and environment a command acts for. Objects of
// other platforms or environments do not exist for it.
type Caller struct {
	PlatformID  string
	Environment domain.Environment
	// VerifyKeyID, if set, is the API key the request authenticated with
	// from the API's credential cache, not from the database: a command
	// that supports it (CreatePayment) checks in its transaction that the
	// key is still usable, and fails with ErrKeyNotUsable if not. Other
	// commands are only reached through a lookup and ignore it.
	VerifyKeyID string
}

// scope is the caller's platform and environment, without the key: what
// owns aggregates.
func (c Caller) scope() Caller { return Caller{PlatformID: c.PlatformID, Environment: c.Environment} }

// lockedAccount is a virtual account whose balance row this transaction holds.
type lockedAccount struct {
	ID              string
	Status          string
	EntityRef       string
	LedgerAccountID string
	Balance         ledger.Balance
}

// lockAccounts locks the balance rows of the caller's virtual accounts ids
// in sorted order (so that two commands never deadlock on them) and
// returns them; an id that is not the caller's is not found.
func lockAccounts(ctx context.Context, tx pgx.Tx, c Caller, ids []string) (map[string]lockedAccount, error) {
	uniq := map[string]bool{}
	var sorted []string
	for _, id := range ids {
		if !uniq[id] {
			uniq[id] = true
			sorted = append(sorted, id)
		}
	}
	sort.Strings(sorted)
	// Two statements: the first locks the balance rows (in sorted order);
	// the second, with a snapshot taken after the locks were granted, reads
	// the account's status as committed by whoever held the lock before
	// (a join in the locking statement would see the status as it was when
	// the statement started: a close could slip through).
	b := &pgx.Batch{}
	b.Queue(`SELECT b.virtual_account_id, b.posted, b.pending_inbound, b.pending_outbound
        FROM account_balances b JOIN virtual_accounts v ON v.id = b.virtual_account_id
        WHERE b.virtual_account_id = ANY($1) AND v.platform_id = $2 AND v.environment = $3
        ORDER BY b.virtual_account_id FOR UPDATE OF b`, sorted, c.PlatformID, c.Environment.String())
	b.Queue(`SELECT id, status, entity_ref, ledger_account_id FROM virtual_accounts WHERE id = ANY($1)`, sorted)
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	out := map[string]lockedAccount{}
	rows, err := br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var a lockedAccount
		if err := rows.Scan(&a.ID, &a.Balance.Posted, &a.Balance.PendingInbound, &a.Balance.PendingOutbound); err != nil {
			rows.Close()
			return nil, err
		}
		out[a.ID] = a
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = br.Query()
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, status, ref, la string
		if err := rows.Scan(&id, &status, &ref, &la); err != nil {
			rows.Close()
			return nil, err
		}
		if a, ok := out[id]; ok {
			a.Status, a.EntityRef, a.LedgerAccountID = status, ref, la
			out[id] = a
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, id := range sorted {
		if _, ok := out[id]; !ok {
			return nil, domain.NotFound("virtual_account", id)
		}
	}
	return out, nil
}

func accountStream(c Caller, id string) eventstore.Stream {
	return accounts.stream(c, id)
}

// ensureChart returns the platform's system ledger accounts in the
// caller's environment, opening the chart on first use. Two commands that
// race to open it conflict on the chart stream, and the loser retries.
func (a *App) ensureChart(ctx context.Context, tx pgx.Tx, meta Meta, c Caller) (map[string]string, error) {
	rows, err := tx.Query(ctx, `SELECT code, id FROM ledger_accounts
        WHERE platform_id = $1 AND environment = $2 AND virtual_account_id IS NULL`, c.PlatformID, c.Environment.String())
	if err != nil {
		return nil, err
	}
	chart := map[string]string{}
	for rows.Next() {
		var code, id string
		if err := rows.Scan(&code, &id); err != nil {
			rows.Close()
			return nil, err
		}
		chart[code] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(chart) > 0 {
		return chart, nil
	}
	for _, code := range chartCodes() {
		chart[code] = domain.NewID(domain.PrefixLedgerAccount)
	}
	s := eventstore.Stream{ID: ledger.ChartStreamID(c.PlatformID, c.Environment), Type: "ledger_chart",
		PlatformID: c.PlatformID, Environment: c.Environment.String()}
	_, err = appendAndProject(ctx, tx, s, 0, meta, []domain.Event{ledger.ChartOpened{
		PlatformID: c.PlatformID, Environment: c.Environment, Accounts: chart, At: now()}})
	return chart, err
}

func chartCodes() []string {
	codes := []string{ledger.CodePlatformOperating, ledger.CodePlatformFees, ledger.CodeServiceFeeRevenue}
	for _, r := range rails.All {
		codes = append(codes, ledger.RailClearing(r.String()))
	}
	return codes
}

// newAccountNumber draws 12 random digits, not starting with 0.
func newAccountNumber() string {
	n, err := rand.Int(rand.Reader, big.NewInt(900_000_000_000))
	if err != nil {
		panic(err)
	}
	return n.Add(n, big.NewInt(100_000_000_000)).String()
}
