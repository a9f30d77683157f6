package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// Batch is one batch of events being projected as a set: the events in
// commit order, what the projectors may read (the next free seq of their
// tables, the streams they fold), and the writes they queue.
type Batch struct {
	Events  []eventstore.RecordedEvent
	seq     map[string]int64 // table → last seq used
	streams streamSource
	writes  pgx.Batch
	copies  []copyWrite
}

// copyWrite is rows to COPY into a table, after the statements queued
// before it.
type copyWrite struct {
	after   int // statements of writes that go first
	table   string
	columns []string
	rows    pgx.CopyFromSource
}

// Queue adds a write; all of a batch's writes travel in one round trip.
// Projectors never read the results of their writes.
func (b *Batch) Queue(sql string, args ...any) { b.writes.Queue(sql, args...) }

// Copy adds new rows of a table, written with COPY in the order of the
// writes queued around them, in a round trip of their own. For many rows
// of large values it costs both sides less than INSERT … unnest: the
// projector builds no arrays (pgx grew a buffer to each whole array and
// then copied it into the message: a third of the public events replay's
// allocations), the server unpacks none.
func (b *Batch) Copy(table string, columns []string, rows pgx.CopyFromSource) {
	b.copies = append(b.copies, copyWrite{b.writes.Len(), table, columns, rows})
}

// manyRows is the number of new rows from which Insert writes them with
// COPY: a COPY costs a round trip of its own, worth it for a replay's or a
// reader's large batch, not for a live batch of a few events.
const manyRows = 64

// Insert queues n new rows of table, given as columns (arrays, one per
// column, of the SQL types given) and as rows (row(i), the same values in
// the same order): from manyRows on with COPY, else one INSERT … SELECT
// FROM unnest in the batch's round trip.
func (b *Batch) Insert(table string, columns, types []string, n int, arrays []any, row func(i int) []any) {
	if n == 0 {
		return
	}
	if n >= manyRows {
		b.Copy(table, columns, pgx.CopyFromSlice(n, func(i int) ([]any, error) { return row(i), nil }))
		return
	}
	params := make([]string, len(types))
	for i, t := range types {
		params[i] = fmt.Sprintf("$%d::%s[]", i+1, t)
	}
	b.Queue(`INSERT INTO `+table+` (`+strings.Join(columns, ", ")+`) SELECT * FROM unnest(`+strings.Join(params, ", ")+`)`,
		arrays...)
}

// Send sends the queued writes: the statements in one round trip, and
// each COPY in one more.
func (b *Batch) Send(ctx context.Context, tx pgx.Tx) error {
	w, copies := b.writes, b.copies
	b.writes, b.copies = pgx.Batch{}, nil
	sent := 0
	sendUpTo := func(n int) error {
		if n == sent {
			return nil
		}
		part := pgx.Batch{QueuedQueries: w.QueuedQueries[sent:n]}
		sent = n
		return tx.SendBatch(ctx, &part).Close()
	}
	for _, c := range copies {
		if err := sendUpTo(c.after); err != nil {
			return err
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.columns, c.rows); err != nil {
			return err
		}
	}
	return sendUpTo(w.Len())
}

// ErrCopyInPipeline is MoveWritesTo's refusal of a batch with COPY writes.
var ErrCopyInPipeline = errors.New("projections: a batch with COPY writes cannot join a pipeline")

// MoveWritesTo appends the queued writes to dst, for a caller that sends
// them in its own pipeline (the payment's last round trip, with COMMIT),
// and returns how many there were: the caller reads that many results.
// Only the inline projectors' batches come here, and they queue no COPY
// (a COPY cannot join a pipeline: ErrCopyInPipeline).
func (b *Batch) MoveWritesTo(dst *pgx.Batch) (int, error) {
	if len(b.copies) > 0 {
		return 0, ErrCopyInPipeline
	}
	n := b.writes.Len()
	dst.QueuedQueries = append(dst.QueuedQueries, b.writes.QueuedQueries...)
	b.writes = pgx.Batch{}
	return n, nil
}

// Reader reads through tx after the queued writes: a single-row query
// travels in the same round trip as the writes (and sees them); anything
// else sends the writes first.
func (b *Batch) Reader(tx pgx.Tx) eventstore.DB { return afterWrites{b, tx} }

type afterWrites struct {
	b  *Batch
	tx pgx.Tx
}

func (r afterWrites) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := r.b.Send(ctx, r.tx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return r.tx.Exec(ctx, sql, args...)
}

func (r afterWrites) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := r.b.Send(ctx, r.tx); err != nil {
		return nil, err
	}
	return r.tx.Query(ctx, sql, args...)
}

func (r afterWrites) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if len(r.b.copies) > 0 {
		if err := r.b.Send(ctx, r.tx); err != nil {
			return errRow{err}
		}
	}
	w := r.b.writes
	r.b.writes = pgx.Batch{}
	writes := w.Len()
	w.Queue(sql, args...)
	br := r.tx.SendBatch(ctx, &w)
	for range writes {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return errRow{err}
		}
	}
	return batchRow{br}
}

// batchRow is the last query of a batch; scanning it closes the batch.
type batchRow struct{ br pgx.BatchResults }

func (r batchRow) Scan(dest ...any) error {
	err := r.br.QueryRow().Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// nextSeq numbers a new row of table: one more than the last. The
// subscriber is the only writer of these tables and numbers in commit
// order inside its transaction, so a rolled-back batch leaves no gap and a
// replay of the log gives every row the same number.
func (b *Batch) nextSeq(table string) int64 {
	b.seq[table]++
	return b.seq[table]
}

// streamSource gives the events of a stream that projectors fold.
type streamSource interface {
	stream(id string) []eventstore.RecordedEvent
}

// loadedStreams are streams read from the log for one batch.
type loadedStreams map[string][]eventstore.RecordedEvent

func (l loadedStreams) stream(id string) []eventstore.RecordedEvent { return l[id] }

// before keeps the events of a stream that come before pos in commit
// order: the stream as it was when the event at pos was written.
func before(recs []eventstore.RecordedEvent, pos eventstore.Position) []eventstore.RecordedEvent {
	var out []eventstore.RecordedEvent
	for _, e := range recs {
		if eventstore.PositionOf(e).Less(pos) {
			out = append(out, e)
		}
	}
	return out
}

// foldedStreams names the streams the public events of a batch fold, each
// with the version it is folded up to: the stream of each event shown
// with its resource as it was (up to that event), a journal entry's
// stream for its posting (its first event), a business's stream for a new
// account's KYB status (0: every event before the account's, by
// position, which only the log answers for in the live subscriber).
func foldedStreams(events []eventstore.RecordedEvent) (map[string]int64, error) {
	need := map[string]int64{}
	add := func(id string, upTo int64) {
		if v, ok := need[id]; !ok || (v != 0 && (upTo == 0 || upTo > v)) {
			need[id] = upTo
		}
	}
	for i := range events {
		r := &events[i]
		ev, err := r.Decode()
		if err != nil {
			return nil, err
		}
		switch e := ev.(type) {
		case account.Opened:
			add(kyb.StreamID(e.PlatformID, e.Environment, e.EntityRef), 0)
		case ledger.Posted:
			add(ledger.StreamID(e.JournalEntryID), 1)
		case ledger.Recorded, ledger.Archived:
		default:
			add(r.StreamID, r.StreamVersion)
		}
	}
	return need, nil
}

// jsonString encodes v for a jsonb array element.
func jsonString(v any) string {
	b, _ := json.Marshal(v) // only maps of strings reach here: no error
	return string(b)
}

// setTables lists the tables of the set projectors.
func setTables(ps []Projector) []string {
	var tables []string
	for _, p := range ps {
		tables = append(tables, p.Tables()...)
	}
	return tables
}

// typedProjector reads only some event types.
type typedProjector interface{ EventTypes() []string }

// eventTypes are the only event types ps read, or nil when one of them
// reads every type.
func eventTypes(ps []Projector) []string {
	var types []string
	for _, p := range ps {
		t, ok := p.(typedProjector)
		if !ok {
			return nil
		}
		types = append(types, t.EventTypes()...)
	}
	return types
}

// streamFolder is a projector that folds streams of the log (b.streams).
type streamFolder interface{ foldsStreams() }

func foldsStreams(ps []Projector) bool {
	for _, p := range ps {
		if _, ok := p.(streamFolder); ok {
			return true
		}
	}
	return false
}

// ProjectAsync folds events with the asynchronous projectors ps inside tx,
// in two round trips: one reads the tables' last seqs and, if a projector
// folds streams, those that cache does not hold (all of them without a
// cache), the other sends every write.
func ProjectAsync(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent, cache *StreamCache, ps []Projector) error {
	return projectAsync(ctx, tx, events, cache, ps, nil)
}

// lastSeqsSQL reads the last seq of each table, in the order given.
func lastSeqsSQL(tables []string) string {
	var maxes []string
	for _, t := range tables {
		maxes = append(maxes, fmt.Sprintf(`(SELECT coalesce(max(seq), 0) FROM %s)`, t))
	}
	return `SELECT ` + strings.Join(maxes, ", ")
}

// scanLastSeqs scans lastSeqsSQL's row.
func scanLastSeqs(row pgx.Row, tables []string) (map[string]int64, error) {
	vals := make([]int64, len(tables))
	dest := make([]any, len(tables))
	for i := range vals {
		dest[i] = &vals[i]
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	seqs := make(map[string]int64, len(tables))
	for i, t := range tables {
		seqs[t] = vals[i]
	}
	return seqs, nil
}

// projectAsync is ProjectAsync with the tables' last seqs already read
// in the same transaction (seqs), or not (nil).
func projectAsync(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent, cache *StreamCache, ps []Projector,
	seqs map[string]int64) error {
	if len(events) == 0 {
		return nil
	}
	tables := setTables(ps)
	reads := &pgx.Batch{}
	if seqs == nil {
		reads.Queue(lastSeqsSQL(tables))
	}
	// Decoded once, before the cache copies them: every fold of a stream
	// the cache holds then reuses the decoded value.
	if err := eventstore.DecodeAll(events); err != nil {
		return err
	}
	need := map[string]int64{}
	if foldsStreams(ps) {
		for i := range events {
			cache.add(&events[i])
		}
		var err error
		if need, err = foldedStreams(events); err != nil {
			return err
		}
	}
	// What the cache holds is taken now: adding what the batch reads may
	// make a bounded cache forget some of it.
	streams := loadedStreams{}
	var missing []string
	for id, upTo := range need {
		if cache.holdsUpTo(id, upTo) {
			streams[id] = cache.stream(id)
		} else {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		reads.Queue(`SELECT `+eventstore.SelectColumns+` FROM events WHERE stream_id = ANY($1)
            ORDER BY stream_id, stream_version`, missing)
	}
	if reads.Len() == 0 { // the seqs came with the step, every stream from the cache
		return projectAndSend(ctx, tx, &Batch{Events: events, seq: seqs, streams: streams}, ps)
	}
	br := tx.SendBatch(ctx, reads)
	if seqs == nil {
		var err error
		if seqs, err = scanLastSeqs(br.QueryRow(), tables); err != nil {
			br.Close()
			return err
		}
	}
	if len(missing) > 0 {
		rows, err := br.Query()
		if err != nil {
			br.Close()
			return err
		}
		evs, err := eventstore.ScanEvents(rows)
		if err == nil {
			err = eventstore.DecodeAll(evs)
		}
		if err != nil {
			br.Close()
			return err
		}
		for i := range evs {
			streams[evs[i].StreamID] = append(streams[evs[i].StreamID], evs[i])
			cache.add(&evs[i]) // read whole, from its first event
		}
	}
	if err := br.Close(); err != nil {
		return err
	}
	return projectAndSend(ctx, tx, &Batch{Events: events, seq: seqs, streams: streams}, ps)
}

// projectAndSend runs the projectors over the batch and sends its writes.
func projectAndSend(ctx context.Context, tx pgx.Tx, b *Batch, ps []Projector) error {
	for _, p := range ps {
		if err := p.Project(b); err != nil {
			return fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	return b.Send(ctx, tx)
}
