package projections

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opentreasury/treasury/eventstore"
)

// Deferred wraps a transaction so that the projectors' writes travel in
// one batch instead of one round trip each: Exec and SendBatch only queue,
// and the queue is sent before any read through the wrapper (so reads see
// the writes) and at Flush. Projectors ignore the command tags of their
// writes, which is what makes queueing them safe; an error surfaces at
// the next flush and aborts the transaction like any other.
type Deferred struct {
	pgx.Tx
	queue pgx.Batch
}

// Defer starts queueing the projectors' writes on tx.
func Defer(tx pgx.Tx) *Deferred { return &Deferred{Tx: tx} }

func (d *Deferred) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	d.queue.Queue(sql, args...)
	return pgconn.CommandTag{}, nil
}

func (d *Deferred) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	d.queue.QueuedQueries = append(d.queue.QueuedQueries, b.QueuedQueries...)
	return queuedResults{}
}

func (d *Deferred) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := d.Flush(ctx); err != nil {
		return nil, err
	}
	return d.Tx.Query(ctx, sql, args...)
}

// QueryRow sends the queued writes and the query in one batch: the read
// sees the writes and costs no round trip of its own.
func (d *Deferred) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if d.queue.Len() == 0 {
		return d.Tx.QueryRow(ctx, sql, args...)
	}
	b := d.queue
	d.queue = pgx.Batch{}
	writes := b.Len()
	b.Queue(sql, args...)
	br := d.Tx.SendBatch(ctx, &b)
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

// Flush sends the queued writes.
func (d *Deferred) Flush(ctx context.Context) error {
	if d.queue.Len() == 0 {
		return nil
	}
	b := d.queue
	d.queue = pgx.Batch{}
	return d.Tx.SendBatch(ctx, &b).Close()
}

// StreamCache holds, during a replay from the start of the log, the events
// replayed so far of the streams projectors fold (payments, businesses,
// inbound transfers; of a journal entry only its first event, the only one
// read), so that a projector folding a stream up to the event at hand need
// not read it back from the log. Other streams are read from the log.
type StreamCache map[string][]eventstore.RecordedEvent

// cacheable says whether the cache holds the stream (and so answers for it).
func cacheable(streamID string) bool {
	for _, p := range []string{"payment-", "kyb_entity-", "inbound_transfer-", "journal_entry-"} {
		if strings.HasPrefix(streamID, p) {
			return true
		}
	}
	return false
}

// add records e in version order, once: an event replayed again after a
// rolled-back attempt is already there, and the log's order (by
// transaction id) may bring a stream's versions out of order.
func (c StreamCache) add(e *eventstore.RecordedEvent) {
	if c == nil || !cacheable(e.StreamID) {
		return
	}
	if strings.HasPrefix(e.StreamID, "journal_entry-") && e.StreamVersion != 1 {
		return
	}
	s := c[e.StreamID]
	i := sort.Search(len(s), func(i int) bool { return s[i].StreamVersion >= e.StreamVersion })
	if i < len(s) && s[i].StreamVersion == e.StreamVersion {
		return
	}
	s = append(s, eventstore.RecordedEvent{})
	copy(s[i+1:], s[i:])
	s[i] = *e
	c[e.StreamID] = s
}

// forgetAfter drops the events after pos: a failed transaction replayed
// them, and the next attempt replays them again.
func (c StreamCache) forgetAfter(pos eventstore.Position) {
	for id, s := range c {
		kept := s[:0]
		for _, e := range s {
			if !pos.Less(eventstore.PositionOf(e)) {
				kept = append(kept, e)
			}
		}
		c[id] = kept
	}
}

var errQueued = errors.New("projections: the results of a deferred batch are not available")

// queuedResults stands for a batch that was queued, not sent: projectors
// only Close their batches.
type queuedResults struct{}

func (queuedResults) Exec() (pgconn.CommandTag, error) { return pgconn.CommandTag{}, errQueued }
func (queuedResults) Query() (pgx.Rows, error)         { return nil, errQueued }
func (queuedResults) QueryRow() pgx.Row                { return errRow{errQueued} }
func (queuedResults) Close() error                     { return nil }
func (queuedResults) Tx() pgx.Tx                       { return nil }

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
