package projections

import (
	"maps"
	"slices"
	"strings"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// Accounts projects virtual accounts, their balance rows, ledger accounts,
// inbound transfers and book transfers: the state payment and ledger
// commands decide on, and the transfers that move it.
type Accounts struct{}

func (Accounts) Name() string { return "accounts" }
func (Accounts) Tables() []string {
	return []string{"virtual_accounts", "account_balances", "ledger_accounts", "inbound_transfers", "book_transfers"}
}

// Project writes accounts and inbound transfers event by event (they are
// few) and the balance rows as a set: every ledger event's effect is
// summed per account over the batch, then one UPDATE adds the sums.
func (Accounts) Project(b *Batch) error {
	deltas := map[string]ledger.Balance{}
	add := func(lines []ledger.Line, f func(ledger.Balance, ledger.Line) ledger.Balance) {
		for _, l := range lines {
			if l.VirtualAccountID != "" {
				deltas[l.VirtualAccountID] = f(deltas[l.VirtualAccountID], l)
			}
		}
	}
	for i := range b.Events {
		r := &b.Events[i]
		ev, err := r.Decode()
		if err != nil {
			return err
		}
		switch e := ev.(type) {
		case ledger.Recorded:
			add(e.Lines, func(b ledger.Balance, l ledger.Line) ledger.Balance { return b.Record(l, e.Status) })
		case ledger.Posted:
			add(e.Lines, ledger.Balance.Post)
		case ledger.Archived:
			add(e.Lines, ledger.Balance.Archive)
		default:
			applyAccountEvent(b, r, ev)
		}
	}
	addBalances(b, deltas)
	return nil
}

func applyAccountEvent(b *Batch, r *eventstore.RecordedEvent, ev domain.Event) {
	switch e := ev.(type) {
	case account.Opened:
		b.Queue(`INSERT INTO virtual_accounts (id, platform_id, environment, entity_ref, type, status, account_number,
            routing_number, ledger_account_id, metadata, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, 'active', $6, $7, $8, $9, $10, $10)`,
			e.VirtualAccountID, e.PlatformID, e.Environment.String(), e.EntityRef, e.Type.String(),
			e.AccountNumber, e.RoutingNumber, e.LedgerAccountID, e.Metadata, e.At)
		b.Queue(`INSERT INTO account_balances (virtual_account_id) VALUES ($1)`, e.VirtualAccountID)
		b.Queue(`INSERT INTO ledger_accounts (id, platform_id, environment, code, virtual_account_id, normal_balance, created_at)
            VALUES ($1, $2, $3, $4, $5, 'credit', $6)`,
			e.LedgerAccountID, e.PlatformID, e.Environment.String(), ledger.CodeVirtualAccount, e.VirtualAccountID, e.At)
	case account.Frozen:
		setAccountStatus(b, r, account.StatusFrozen, e.At)
	case account.Unfrozen:
		setAccountStatus(b, r, account.StatusActive, e.At)
	case account.Closed:
		setAccountStatus(b, r, account.StatusClosed, e.At)
	case ledger.ChartOpened:
		for code, id := range e.Accounts {
			b.Queue(`INSERT INTO ledger_accounts (id, platform_id, environment, code, normal_balance, created_at)
                VALUES ($1, $2, $3, $4, $5, $6)`, id, e.PlatformID, e.Environment.String(), code,
				ledger.NormalBalance(code).String(), e.At)
		}
	case inbound.Received:
		b.Queue(`INSERT INTO inbound_transfers (id, platform_id, environment, virtual_account_id, amount, rail,
            originator, description, status, journal_entry_id, expected_at, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'pending', $9, $10, $11)`,
			e.InboundTransferID, r.PlatformID, r.Environment, e.VirtualAccountID, e.Amount, e.Rail,
			e.Originator, e.Description, e.JournalEntryID, e.ExpectedAt, e.At)
	case inbound.Completed:
		b.Queue(`UPDATE inbound_transfers SET status = 'completed', completed_at = $2 WHERE id = $1`, e.InboundTransferID, e.At)
	case booktransfer.Completed:
		b.Queue(`INSERT INTO book_transfers (id, platform_id, environment, from_virtual_account_id, to_virtual_account_id,
            amount, description, metadata, idempotency_key, journal_entry_id, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			e.BookTransferID, e.PlatformID, e.Environment.String(), e.FromVirtualAccountID, e.ToVirtualAccountID,
			e.Amount, e.Description, queries.Metadata(e.Metadata), e.IdempotencyKey, e.JournalEntryID, e.At)
	}
}

func setAccountStatus(b *Batch, r *eventstore.RecordedEvent, s account.Status, at any) {
	id, ok := strings.CutPrefix(r.StreamID, account.StreamID(""))
	if !ok {
		return // only an account's stream holds its events
	}
	b.Queue(`UPDATE virtual_accounts SET status = $2, updated_at = $3 WHERE id = $1`, id, s.String(), at)
}

// addBalances adds each account's summed effect to its balance row: one
// row with one UPDATE; several locked in id order first (as commands lock
// them), then updated with one statement.
func addBalances(b *Batch, deltas map[string]ledger.Balance) {
	if len(deltas) == 0 {
		return
	}
	if len(deltas) == 1 {
		// One row needs no lock order, and a statement without arrays gets
		// a generic plan: the arrays' form was planned afresh at every
		// execution (a generic plan takes unnest for 100 rows, so
		// PostgreSQL kept choosing custom plans), twice per payment.
		for id, d := range deltas {
			b.Queue(`UPDATE account_balances SET posted = posted + $2, pending_inbound = pending_inbound + $3,
            pending_outbound = pending_outbound + $4 WHERE virtual_account_id = $1`, id, d.Posted, d.PendingInbound, d.PendingOutbound)
		}
		return
	}
	ids := slices.Sorted(maps.Keys(deltas))
	posted := make([]int64, len(ids))
	in := make([]int64, len(ids))
	out := make([]int64, len(ids))
	for i, id := range ids {
		d := deltas[id]
		posted[i], in[i], out[i] = d.Posted, d.PendingInbound, d.PendingOutbound
	}
	// Lock the rows in id order first, as commands do: an UPDATE joined to
	// the arrays locks them in whatever order its plan walks, and two
	// batches (the sandbox settler's) touching the same accounts deadlocked.
	b.Queue(`SELECT 1 FROM account_balances WHERE virtual_account_id = ANY($1) ORDER BY virtual_account_id FOR UPDATE`, ids)
	b.Queue(`UPDATE account_balances a SET posted = a.posted + d.posted,
            pending_inbound = a.pending_inbound + d.pending_inbound, pending_outbound = a.pending_outbound + d.pending_outbound
        FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[]) d(id, posted, pending_inbound, pending_outbound)
        WHERE a.virtual_account_id = d.id`, ids, posted, in, out)
}
