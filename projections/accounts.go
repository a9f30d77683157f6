package projections

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// Accounts projects virtual accounts, their balance rows, ledger accounts
// and inbound transfers: the state payment and ledger commands decide on.
type Accounts struct{}

func (Accounts) Name() string { return "accounts" }
func (Accounts) Tables() []string {
	return []string{"virtual_accounts", "account_balances", "ledger_accounts", "inbound_transfers"}
}

func (Accounts) Apply(ctx context.Context, tx pgx.Tx, r *eventstore.RecordedEvent) error {
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	switch e := ev.(type) {
	case account.Opened:
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO virtual_accounts (id, platform_id, environment, entity_ref, type, status, account_number,
            routing_number, ledger_account_id, metadata, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $9, $10, $10)`,
			e.VirtualAccountID, e.PlatformID, e.Environment.String(), e.EntityRef, e.Type.String(),
			e.AccountNumber, e.RoutingNumber, e.LedgerAccountID, e.Metadata, e.At)
		b.Queue(`INSERT INTO account_balances (virtual_account_id) VALUES ($1)`, e.VirtualAccountID)
		b.Queue(`INSERT INTO ledger_accounts (id, platform_id, environment, code, virtual_account_id, normal_balance, created_at)
            VALUES ($1, $2, $3, $4, $5, 'credit', $6)`,
			e.LedgerAccountID, e.PlatformID, e.Environment.String(), ledger.CodeVirtualAccount, e.VirtualAccountID, e.At)
		return tx.SendBatch(ctx, b).Close()
	case account.Frozen:
		return setAccountStatus(ctx, tx, r, account.StatusFrozen, e.At)
	case account.Unfrozen:
		return setAccountStatus(ctx, tx, r, account.StatusActive, e.At)
	case account.Closed:
		return setAccountStatus(ctx, tx, r, account.StatusClosed, e.At)
	case ledger.ChartOpened:
		b := &pgx.Batch{}
		for code, id := range e.Accounts {
			b.Queue(`INSERT INTO ledger_accounts (id, platform_id, environment, code, normal_balance, created_at)
                VALUES ($1, $2, $3, $4, $5, $6)`, id, e.PlatformID, e.Environment.String(), code,
				ledger.NormalBalance(code).String(), e.At)
		}
		return tx.SendBatch(ctx, b).Close()
	case ledger.Recorded:
		return applyBalances(ctx, tx, e.Lines, func(b ledger.Balance, l ledger.Line) ledger.Balance { return b.Record(l, e.Status) })
	case ledger.Posted:
		return applyBalances(ctx, tx, e.Lines, ledger.Balance.Post)
	case ledger.Archived:
		return applyBalances(ctx, tx, e.Lines, ledger.Balance.Archive)
	case inbound.Received:
		_, err = tx.Exec(ctx, `INSERT INTO inbound_transfers (id, platform_id, environment, virtual_account_id, amount, rail,
            originator, description, status, journal_entry_id, expected_at, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, $11)`,
			e.InboundTransferID, r.PlatformID, r.Environment, e.VirtualAccountID, e.Amount, e.Rail,
			e.Originator, e.Description, e.JournalEntryID, e.ExpectedAt, e.At)
		return err
	case inbound.Completed:
		_, err = tx.Exec(ctx, `UPDATE inbound_transfers SET status = 'completed', completed_at = $2 WHERE id = $1`, e.InboundTransferID, e.At)
		return err
	}
	return nil
}

func setAccountStatus(ctx context.Context, tx pgx.Tx, r *eventstore.RecordedEvent, s account.Status, at any) error {
	id := r.StreamID[len(account.StreamID("")):]
	_, err := tx.Exec(ctx, `UPDATE virtual_accounts SET status = $2, updated_at = $3 WHERE id = $1`, id, s.String(), at)
	return err
}

// applyBalances adds each virtual account line's effect to its balance row.
func applyBalances(ctx context.Context, tx pgx.Tx, lines []ledger.Line, f func(ledger.Balance, ledger.Line) ledger.Balance) error {
	deltas := map[string]ledger.Balance{}
	var order []string
	for _, l := range lines {
		if l.VirtualAccountID == "" {
			continue
		}
		if _, seen := deltas[l.VirtualAccountID]; !seen {
			order = append(order, l.VirtualAccountID)
		}
		deltas[l.VirtualAccountID] = f(deltas[l.VirtualAccountID], l)
	}
	for _, id := range order {
		d := deltas[id]
		if _, err := tx.Exec(ctx, `UPDATE account_balances SET posted = posted + $2,
            pending_inbound = pending_inbound + $3, pending_outbound = pending_outbound + $4
            WHERE virtual_account_id = $1`, id, d.Posted, d.PendingInbound, d.PendingOutbound); err != nil {
			return err
		}
	}
	return nil
}
