package projections

import (
	"time"

	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/projections/queries"
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

// EventTypes are the only events Project reads (its switch): its
// subscriber leaves the others in the database, some three fifths of the
// log, undecoded.
func (Ledger) EventTypes() []string {
	return []string{ledger.Recorded{}.EventType(), ledger.Posted{}.EventType(), ledger.Archived{}.EventType()}
}

// TransactionID is the id of the account transaction of a ledger entry.
func TransactionID(entryID string) string { return "txn_" + entryID[len("le_"):] }

// journalRow is a journal entry recorded in the batch, with its lines, as
// the batch leaves it.
type journalRow struct {
	rec        ledger.Recorded
	seq        int64
	status     string
	reversedBy *string
	postedAt   *time.Time
	archivedAt *time.Time
	entrySeq   []int64 // one per line
	txnSeq     []int64 // one per line; 0 for a line of no virtual account
}

// journalChange is what a batch does to a journal entry written before it;
// nil fields stay as they are.
type journalChange struct {
	id         string
	status     *string
	reversedBy *string
	postedAt   *time.Time
	archivedAt *time.Time
	txnIDs     []string
}

// Project folds the batch: an entry recorded in the batch is written once,
// already in the state the batch's later events leave it in; entries
// written before are changed with one UPDATE per table.
func (Ledger) Project(b *Batch) error {
	var added []*journalRow
	byID := map[string]*journalRow{}
	var changes []*journalChange
	changed := map[string]*journalChange{}
	change := func(id string) *journalChange {
		c := changed[id]
		if c == nil {
			c = &journalChange{id: id}
			changed[id] = c
			changes = append(changes, c)
		}
		return c
	}
	// settle posts or archives an entry: in Go if the batch recorded it,
	// else as a change to its rows.
	settle := func(id, status string, at time.Time, lines []ledger.Line) {
		stamp := &at
		if j := byID[id]; j != nil {
			j.status = status
			if status == ledger.StatusPosted {
				j.postedAt = stamp
			} else {
				j.archivedAt = stamp
			}
			return
		}
		c := change(id)
		c.status, c.txnIDs = &status, transactionIDs(lines)
		if status == ledger.StatusPosted {
			c.postedAt = stamp
		} else {
			c.archivedAt = stamp
		}
	}
	for i := range b.Events {
		ev, err := b.Events[i].Decode()
		if err != nil {
			return err
		}
		switch e := ev.(type) {
		case ledger.Recorded:
			j := &journalRow{rec: e, status: e.Status, seq: b.nextSeq("journal_entries")}
			if e.Status == ledger.StatusPosted {
				at := e.At
				j.postedAt = &at
			}
			for _, l := range e.Lines {
				j.entrySeq = append(j.entrySeq, b.nextSeq("ledger_entries"))
				var txn int64
				if l.VirtualAccountID != "" {
					txn = b.nextSeq("account_transactions")
				}
				j.txnSeq = append(j.txnSeq, txn)
			}
			added = append(added, j)
			byID[e.JournalEntryID] = j
			if e.Reverses != "" {
				by := e.JournalEntryID
				if r := byID[e.Reverses]; r != nil {
					r.reversedBy = &by
				} else {
					change(e.Reverses).reversedBy = &by
				}
			}
		case ledger.Posted:
			settle(e.JournalEntryID, ledger.StatusPosted, e.At, e.Lines)
		case ledger.Archived:
			settle(e.JournalEntryID, ledger.StatusArchived, e.At, e.Lines)
		}
	}
	insertJournals(b, added)
	updateJournals(b, changes)
	return nil
}

// insertJournals writes the entries recorded in the batch, their lines
// and their account transactions: one INSERT per table.
func insertJournals(b *Batch, added []*journalRow) {
	if len(added) == 0 {
		return
	}
	var je struct {
		seq                                                        []int64
		id, platform, env, typ, desc, status, srcType, srcID, meta []string
		reverses, reversedBy                                       []*string
		effective, created                                         []time.Time
	}
	var le struct {
		seq, amount                                                       []int64
		id, journal, platform, env, account, direction, typ, status, desc []string
		srcType, srcID                                                    []string
		va                                                                []*string
		effective, created                                                []time.Time
		posted, archived                                                  []*time.Time
	}
	var tx struct {
		seq, amount                                              []int64
		id, platform, env, va, typ, status, desc, srcType, srcID []string
		created                                                  []time.Time
		posted                                                   []*time.Time
	}
	for _, j := range added {
		e := j.rec
		env := e.Environment.String()
		var reverses *string
		if e.Reverses != "" {
			r := e.Reverses
			reverses = &r
		}
		je.seq = append(je.seq, j.seq)
		je.id = append(je.id, e.JournalEntryID)
		je.platform = append(je.platform, e.PlatformID)
		je.env = append(je.env, env)
		je.typ = append(je.typ, e.Type)
		je.desc = append(je.desc, e.Description)
		je.status = append(je.status, j.status)
		je.srcType = append(je.srcType, e.Source.Type)
		je.srcID = append(je.srcID, e.Source.ID)
		je.meta = append(je.meta, jsonString(queries.Metadata(e.Metadata)))
		je.reverses = append(je.reverses, reverses)
		je.reversedBy = append(je.reversedBy, j.reversedBy)
		je.effective = append(je.effective, e.EffectiveAt)
		je.created = append(je.created, e.At)
		for i, l := range e.Lines {
			var va *string
			if l.VirtualAccountID != "" {
				v := l.VirtualAccountID
				va = &v
			}
			le.seq = append(le.seq, j.entrySeq[i])
			le.amount = append(le.amount, l.Amount)
			le.id = append(le.id, l.EntryID)
			le.journal = append(le.journal, e.JournalEntryID)
			le.platform = append(le.platform, e.PlatformID)
			le.env = append(le.env, env)
			le.account = append(le.account, l.LedgerAccountID)
			le.direction = append(le.direction, l.Direction.String())
			le.typ = append(le.typ, l.Type)
			le.status = append(le.status, j.status)
			le.desc = append(le.desc, e.Description)
			le.srcType = append(le.srcType, e.Source.Type)
			le.srcID = append(le.srcID, e.Source.ID)
			le.va = append(le.va, va)
			le.effective = append(le.effective, e.EffectiveAt)
			le.created = append(le.created, e.At)
			le.posted = append(le.posted, j.postedAt)
			le.archived = append(le.archived, j.archivedAt)
			if va == nil {
				continue
			}
			amount := l.Amount
			if l.Direction == ledger.Debit {
				amount = -amount
			}
			tx.seq = append(tx.seq, j.txnSeq[i])
			tx.amount = append(tx.amount, amount)
			tx.id = append(tx.id, TransactionID(l.EntryID))
			tx.platform = append(tx.platform, e.PlatformID)
			tx.env = append(tx.env, env)
			tx.va = append(tx.va, l.VirtualAccountID)
			tx.typ = append(tx.typ, l.Type)
			tx.status = append(tx.status, transactionStatus(j.status))
			tx.desc = append(tx.desc, e.Description)
			tx.srcType = append(tx.srcType, e.Source.Type)
			tx.srcID = append(tx.srcID, e.Source.ID)
			tx.created = append(tx.created, e.At)
			tx.posted = append(tx.posted, j.postedAt)
		}
	}
	b.Insert("journal_entries", []string{"seq", "id", "platform_id", "environment", "type", "description", "status",
		"source_type", "source_id", "metadata", "reverses", "reversed_by", "effective_at", "created_at"},
		[]string{"bigint", "text", "text", "text", "text", "text", "text", "text", "text", "jsonb", "text", "text",
			"timestamptz", "timestamptz"}, len(je.id),
		[]any{je.seq, je.id, je.platform, je.env, je.typ, je.desc, je.status, je.srcType, je.srcID, je.meta,
			je.reverses, je.reversedBy, je.effective, je.created},
		func(i int) []any {
			return []any{je.seq[i], je.id[i], je.platform[i], je.env[i], je.typ[i], je.desc[i], je.status[i],
				je.srcType[i], je.srcID[i], je.meta[i], je.reverses[i], je.reversedBy[i], je.effective[i], je.created[i]}
		})
	b.Insert("ledger_entries", []string{"seq", "amount", "id", "journal_entry_id", "platform_id", "environment",
		"ledger_account_id", "direction", "type", "status", "description", "source_type", "source_id", "virtual_account_id",
		"effective_at", "created_at", "posted_at", "archived_at"},
		[]string{"bigint", "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text", "text",
			"text", "timestamptz", "timestamptz", "timestamptz", "timestamptz"}, len(le.id),
		[]any{le.seq, le.amount, le.id, le.journal, le.platform, le.env, le.account, le.direction, le.typ, le.status,
			le.desc, le.srcType, le.srcID, le.va, le.effective, le.created, le.posted, le.archived},
		func(i int) []any {
			return []any{le.seq[i], le.amount[i], le.id[i], le.journal[i], le.platform[i], le.env[i], le.account[i],
				le.direction[i], le.typ[i], le.status[i], le.desc[i], le.srcType[i], le.srcID[i], le.va[i], le.effective[i],
				le.created[i], le.posted[i], le.archived[i]}
		})
	b.Insert("account_transactions", []string{"seq", "amount", "id", "platform_id", "environment", "virtual_account_id",
		"type", "status", "description", "source_type", "source_id", "created_at", "posted_at"},
		[]string{"bigint", "bigint", "text", "text", "text", "text", "text", "text", "text", "text", "text",
			"timestamptz", "timestamptz"}, len(tx.id),
		[]any{tx.seq, tx.amount, tx.id, tx.platform, tx.env, tx.va, tx.typ, tx.status, tx.desc, tx.srcType, tx.srcID,
			tx.created, tx.posted},
		func(i int) []any {
			return []any{tx.seq[i], tx.amount[i], tx.id[i], tx.platform[i], tx.env[i], tx.va[i], tx.typ[i],
				tx.status[i], tx.desc[i], tx.srcType[i], tx.srcID[i], tx.created[i], tx.posted[i]}
		})
}

// updateJournals changes entries written before the batch: one UPDATE per
// table, a field the batch did not change (NULL in the arrays) keeping its
// value.
func updateJournals(b *Batch, changes []*journalChange) {
	if len(changes) == 0 {
		return
	}
	var ids, txnIDs, txnStatus []string
	var status, reversedBy []*string
	var posted, archived, txnPosted []*time.Time
	for _, c := range changes {
		ids = append(ids, c.id)
		status = append(status, c.status)
		reversedBy = append(reversedBy, c.reversedBy)
		posted = append(posted, c.postedAt)
		archived = append(archived, c.archivedAt)
		if c.status != nil {
			for _, id := range c.txnIDs {
				txnIDs = append(txnIDs, id)
				txnStatus = append(txnStatus, transactionStatus(*c.status))
				txnPosted = append(txnPosted, c.postedAt)
			}
		}
	}
	b.Queue(`UPDATE journal_entries j SET status = coalesce(u.status, j.status), reversed_by = coalesce(u.reversed_by, j.reversed_by)
        FROM unnest($1::text[], $2::text[], $3::text[]) u(id, status, reversed_by) WHERE j.id = u.id`,
		ids, status, reversedBy)
	b.Queue(`UPDATE ledger_entries l SET status = u.status, posted_at = coalesce(u.posted_at, l.posted_at),
            archived_at = coalesce(u.archived_at, l.archived_at)
        FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[]) u(journal_entry_id, status, posted_at, archived_at)
        WHERE l.journal_entry_id = u.journal_entry_id AND u.status IS NOT NULL`,
		ids, status, posted, archived)
	if len(txnIDs) > 0 {
		b.Queue(`UPDATE account_transactions t SET status = u.status, posted_at = coalesce(u.posted_at, t.posted_at)
            FROM unnest($1::text[], $2::text[], $3::timestamptz[]) u(id, status, posted_at) WHERE t.id = u.id`,
			txnIDs, txnStatus, txnPosted)
	}
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
