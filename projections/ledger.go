package projections

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// Ledger projects journal entries into journal_entries, ledger_entries and
// each virtual account's transaction list. It runs asynchronously, in
// commit order, so new rows always get a higher seq: lists paginate on seq
// and a walk sees neither duplicates nor gaps while entries arrive.
type Ledger struct{}

func (Ledger) Name() string { return "ledger" }
func (Ledger) Tables() []string {
	return []string{"journal_entries", "ledger_entries", "account_transactions"}
}

// TransactionID is the id of the account transaction of a ledger entry.
func TransactionID(entryID string) string { return "txn_" + entryID[len("le_"):] }

func (Ledger) Apply(ctx context.Context, tx pgx.Tx, r *eventstore.RecordedEvent) error {
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	b := &pgx.Batch{}
	switch e := ev.(type) {
	case ledger.Recorded:
		var postedAt any
		if e.Status == ledger.StatusPosted {
			postedAt = e.At
		}
		b.Queue(`INSERT INTO journal_entries (id, platform_id, environment, type, description, status, source_type,
            source_id, reverses, metadata, effective_at, created_at, seq)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''), $10, $11, $12, `+nextSeq("journal_entries")+`)`,
			e.JournalEntryID, e.PlatformID, e.Environment.String(), e.Type, e.Description, e.Status,
			e.Source.Type, e.Source.ID, e.Reverses, orEmpty(e.Metadata), e.EffectiveAt, e.At)
		for _, l := range e.Lines {
			b.Queue(`INSERT INTO ledger_entries (id, journal_entry_id, platform_id, environment, ledger_account_id,
                virtual_account_id, direction, amount, type, status, description, effective_at, created_at, posted_at, seq)
                VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7, $8, $9, $10, $11, $12, $13, $14, `+nextSeq("ledger_entries")+`)`,
				l.EntryID, e.JournalEntryID, e.PlatformID, e.Environment.String(), l.LedgerAccountID,
				l.VirtualAccountID, l.Direction.String(), l.Amount, l.Type, e.Status, e.Description, e.EffectiveAt, e.At, postedAt)
			if l.VirtualAccountID != "" {
				amount := l.Amount
				if l.Direction == ledger.Debit {
					amount = -amount
				}
				b.Queue(`INSERT INTO account_transactions (id, platform_id, environment, virtual_account_id, type, amount,
                    status, description, source_type, source_id, created_at, posted_at, seq)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, `+nextSeq("account_transactions")+`)`,
					TransactionID(l.EntryID), e.PlatformID, e.Environment.String(), l.VirtualAccountID, l.Type, amount,
					transactionStatus(e.Status), e.Description, e.Source.Type, e.Source.ID, e.At, postedAt)
			}
		}
		if e.Reverses != "" {
			b.Queue(`UPDATE journal_entries SET reversed_by = $2 WHERE id = $1`, e.Reverses, e.JournalEntryID)
		}
	case ledger.Posted:
		b.Queue(`UPDATE journal_entries SET status = 'posted' WHERE id = $1`, e.JournalEntryID)
		b.Queue(`UPDATE ledger_entries SET status = 'posted', posted_at = $2 WHERE journal_entry_id = $1`, e.JournalEntryID, e.At)
		b.Queue(`UPDATE account_transactions SET status = 'posted', posted_at = $2 WHERE id = ANY($1)`, transactionIDs(e.Lines), e.At)
	case ledger.Archived:
		b.Queue(`UPDATE journal_entries SET status = 'archived' WHERE id = $1`, e.JournalEntryID)
		b.Queue(`UPDATE ledger_entries SET status = 'archived', archived_at = $2 WHERE journal_entry_id = $1`, e.JournalEntryID, e.At)
		b.Queue(`UPDATE account_transactions SET status = 'void' WHERE id = ANY($1)`, transactionIDs(e.Lines))
	default:
		return nil
	}
	return tx.SendBatch(ctx, b).Close()
}

// nextSeq numbers a new row of an asynchronous projection: one more than
// the last. The subscriber is the only writer of these tables and numbers
// in commit order inside its transaction, so a rolled-back batch leaves no
// gap and a replay of the log gives every row the same number.
func nextSeq(table string) string {
	return `(SELECT coalesce(max(seq), 0) + 1 FROM ` + table + `)`
}

func transactionStatus(entryStatus string) string {
	if entryStatus == ledger.StatusArchived {
		return "void"
	}
	return entryStatus
}

func transactionIDs(lines []ledger.Line) []string {
	var ids []string
	for _, l := range lines {
		if l.VirtualAccountID != "" {
			ids = append(ids, TransactionID(l.EntryID))
		}
	}
	return ids
}

func orEmpty(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
