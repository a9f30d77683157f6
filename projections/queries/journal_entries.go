package queries

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// JournalEntryFilter narrows ListJournalEntries; a zero field is no filter.
type JournalEntryFilter struct {
	Type   string
	Status string
	// VirtualAccountID: entries with a line on this virtual account.
	VirtualAccountID string
	// SourceType and SourceID: entries whose source is of this type, or is
	// this object (a payment's hold and its return's reversal, say).
	SourceType string
	SourceID   string
	Created    TimeRange
	// Metadata: every pair must be in the entry's metadata.
	Metadata map[string]string
}

const journalColumns = `seq, id, type, description, status, reverses, reversed_by, source_type, source_id, metadata,
    environment, effective_at, created_at`

// ListJournalEntries lists the scope's journal entries with their lines,
// newest first (in ledger order: seq, as ListLedgerEntries), each as
// JournalEntryFromLog shows it. Like ListPayments, the statement names
// only the filters given, so each combination gets a plan of its own; the
// lines of the page come in a second statement.
func ListJournalEntries(ctx context.Context, db eventstore.DB, s Scope, f JournalEntryFilter, page Page) (List[JournalEntryView], error) {
	after, err := seqCursor(page.After)
	if err != nil {
		return List[JournalEntryView]{}, err
	}
	w := &where{args: []any{s.PlatformID, s.Environment.String()}}
	w.add("type = ?", f.Type)
	w.add("status = ?", f.Status)
	w.add(`id IN (SELECT journal_entry_id FROM ledger_entries
          WHERE virtual_account_id = ? AND platform_id = $1 AND environment = $2)`, f.VirtualAccountID)
	w.add("source_type = ?", f.SourceType)
	w.add("source_id = ?", f.SourceID)
	w.add("metadata @> ?::jsonb", metadataFilter(f.Metadata))
	w.add("created_at >= ?", f.Created.After)
	w.add("created_at < ?", f.Created.Before)
	if after > 0 {
		w.add("seq < ?", after)
	}
	w.args = append(w.args, page.Limit+1)
	rows, err := db.Query(ctx, `SELECT `+journalColumns+` FROM journal_entries
        WHERE platform_id = $1 AND environment = $2`+w.sql+`
        ORDER BY seq DESC LIMIT $`+strconv.Itoa(len(w.args)), w.args...)
	if err != nil {
		return List[JournalEntryView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (JournalEntryView, error) {
		var v JournalEntryView
		var eff, created time.Time
		err := r.Scan(&v.seq, &v.ID, &v.Type, &v.Description, &v.Status, &v.Reverses, &v.ReversedBy, &v.Source.Type,
			&v.Source.ID, &v.Metadata, &v.Environment, &eff, &created)
		v.Object, v.Metadata, v.EffectiveAt, v.CreatedAt = "journal_entry", Metadata(v.Metadata), NewTime(eff), NewTime(created)
		return v, err
	})
	if err != nil {
		return List[JournalEntryView]{}, err
	}
	list := NewList(items, page, func(v JournalEntryView) string { return strconv.FormatInt(v.seq, 10) })
	if err := journalLines(ctx, db, list.Data); err != nil {
		return List[JournalEntryView]{}, err
	}
	return list, nil
}

// journalLines fills the entries' lines, in the order they were recorded
// (the projector gives a journal entry's lines increasing seq).
func journalLines(ctx context.Context, db eventstore.DB, items []JournalEntryView) error {
	if len(items) == 0 {
		return nil
	}
	ids := make([]string, len(items))
	at := make(map[string]int, len(items))
	for i, v := range items {
		ids[i], at[v.ID] = v.ID, i
	}
	rows, err := db.Query(ctx, `SELECT `+entryColumns+` FROM ledger_entries
        WHERE journal_entry_id = ANY($1) ORDER BY seq`, ids)
	if err != nil {
		return err
	}
	lines, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (LedgerEntryView, error) { return scanEntry(r) })
	if err != nil {
		return err
	}
	for _, l := range lines {
		v := &items[at[l.JournalEntryID]]
		v.Entries = append(v.Entries, l)
	}
	return nil
}
