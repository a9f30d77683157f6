// Package app holds the use cases: one command handler per file. Each is a
// load, a pure decision (in domain) and an append with its inline
// projections, run by the one command runner (execute, runner.go), which
// owns the transaction, the idempotency claim and replay, the retries, the
// commit and the wake-up of the subscribers.
package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/readreplica"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// App runs commands against the event store.
type App struct {
	Pool     *pgxpool.Pool
	Notifier *eventstore.Notifier
	Log      *slog.Logger
	// MaxAttempts bounds the retries of a command that lost a race.
	MaxAttempts int
	// RoutingNumber is shown on every virtual account (TREASURY_ROUTING_NUMBER).
	RoutingNumber string
	// Projected follows the asynchronous projections; when set, reads of
	// them wait until they show every write committed before the read
	// (AwaitProjections), at most ReadYourWritesWithin.
	Projected            *eventstore.Progress
	ReadYourWritesWithin time.Duration
	// Pacer, if set, holds every command back while a reader of the log is
	// too far behind (the API's App has one; the readers' own has none).
	Pacer *eventstore.Pacer
	// Replica, if set, serves lists and exports (ReadList): a streaming
	// replica of Pool's database (DATABASE_REPLICA_URL).
	Replica *readreplica.Replica
}

// New wires an App with the inline projectors.
func New(pool *pgxpool.Pool, notifier *eventstore.Notifier, log *slog.Logger) *App {
	if log == nil {
		log = slog.Default()
	}
	return &App{Pool: pool, Notifier: notifier, Log: log, MaxAttempts: 20, RoutingNumber: DefaultRoutingNumber,
		ReadYourWritesWithin: DefaultReadYourWritesWithin}
}

// DefaultReadYourWritesWithin bounds how long a write waits for the
// asynchronous projections before it answers anyway.
const DefaultReadYourWritesWithin = 5 * time.Second

// DefaultRoutingNumber is the bank's routing number unless configured.
const DefaultRoutingNumber = "110000000"

// Meta says who asked for a command; it is stored with every event.
type Meta = eventstore.Metadata

// Result is what a command created or changed, and whether it was an
// idempotent replay of an earlier request.
type Result struct {
	ID       string
	Secret   string // a newly minted key's secret, shown once
	Replayed bool
	// Payment is the payment as CreatePayment's transaction wrote it (nil
	// when the request replayed an earlier one: read it then).
	Payment *queries.PaymentView
}

// appendAndProject appends events to a stream and applies the inline
// projectors to them in the same transaction.
func appendAndProject(ctx context.Context, tx pgx.Tx, s eventstore.Stream, expected int64, meta Meta, events []domain.Event) ([]eventstore.RecordedEvent, error) {
	recs, err := eventstore.Append(ctx, tx, s, expected, meta, events...)
	if err != nil {
		return nil, err
	}
	b, err := projections.ProjectInline(recs)
	if err != nil {
		return nil, err
	}
	return recs, b.Send(ctx, tx)
}

// appendAndProjectAll appends to several streams in one round trip and
// sends the inline projectors' writes for all of them in a second one.
func appendAndProjectAll(ctx context.Context, tx pgx.Tx, meta Meta, reqs ...eventstore.AppendRequest) error {
	return appendProjectAndRead(ctx, tx, meta, nil, reqs...)
}

// appendProjectAndRead is appendAndProjectAll followed by read, whose
// first single-row query travels in the same batch as the inline
// projections' writes (and sees them).
func appendProjectAndRead(ctx context.Context, tx pgx.Tx, meta Meta, read func(eventstore.DB) error, reqs ...eventstore.AppendRequest) error {
	recs, err := eventstore.AppendAll(ctx, tx, meta, reqs...)
	if err != nil {
		return err
	}
	var all []eventstore.RecordedEvent
	for _, r := range recs {
		all = append(all, r...)
	}
	b, err := projections.ProjectInline(all)
	if err != nil {
		return err
	}
	if read != nil {
		if err := read(b.Reader(tx)); err != nil {
			return err
		}
	}
	return b.Send(ctx, tx)
}

func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// appendProjectReadAndCommit is appendProjectAndRead for a pipelined
// command's last round trip: what beforeAppend queued, the appends (which
// fail on a conflict, so that nothing after them runs), the inline projections' writes, read's
// single-row query and COMMIT, in one batch. Not pipelined, it is
// appendProjectAndRead and the runner commits.
func (tx *commandTx) appendProjectReadAndCommit(ctx context.Context, meta Meta, read func(eventstore.DB) error, reqs ...eventstore.AppendRequest) error {
	if tx.claim != nil && tx.cmd.claimAtCommit && tx.claim.outcome != claimWon {
		return errClaimNotMade // committing would store the resource without its key
	}
	if !tx.cmd.pipelined {
		if tx.head != nil {
			if err := tx.SendBatch(ctx, tx.head).Close(); err != nil {
				return err
			}
		}
		return appendProjectAndRead(ctx, tx, meta, read, reqs...)
	}
	b := &pgx.Batch{}
	if tx.head != nil {
		b.QueuedQueries = append(b.QueuedQueries, tx.head.QueuedQueries...)
	}
	var all []eventstore.RecordedEvent
	for _, r := range reqs {
		recs, err := eventstore.QueueAppend(b, r, meta)
		if err != nil {
			return err
		}
		all = append(all, recs...)
	}
	p, err := projections.ProjectInline(all)
	if err != nil {
		return err
	}
	queued := b.Len()
	moved, err := p.MoveWritesTo(b)
	if err != nil {
		return err
	}
	last := &lastBatch{tx: tx, b: b, writes: queued + moved}
	if read == nil {
		return last.send(ctx)
	}
	return read(last)
}

// lastBatch is a pipelined command's last batch, as the eventstore.DB its
// read goes through: the read's one single-row query joins the batch,
// between the writes and COMMIT. Only QueryRow may be used, once.
type lastBatch struct {
	tx     *commandTx
	b      *pgx.Batch
	writes int // the statements queued before the read
	sent   bool
}

var errLastBatchRead = errors.New("app: a command's last batch reads one row, with QueryRow, once")

// sendBatch sends the batch with COMMIT queued after query (none if
// empty) and reads every write's result; the caller reads the query's and
// COMMIT's.
func (l *lastBatch) sendBatch(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	if l.sent {
		return nil, errLastBatchRead
	}
	l.sent = true
	if sql != "" {
		l.b.Queue(sql, args...)
	}
	l.b.Queue("COMMIT")
	br := l.tx.SendBatch(ctx, l.b)
	for range l.writes {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

// send sends the batch with no read.
func (l *lastBatch) send(ctx context.Context) error {
	br, err := l.sendBatch(ctx, "", nil)
	if err != nil {
		return err
	}
	return l.commitAndClose(br, nil)
}

// commitAndClose reads COMMIT's result and closes the batch; an earlier
// error wins. A read that failed in Go (a scan, no row) did not stop
// PostgreSQL, which ran COMMIT after it: when the batch closes cleanly
// with the session out of its transaction, the command committed
// (tx.committed) although its read returns an error, and the command
// answers without its read instead of failing what it made.
func (l *lastBatch) commitAndClose(br pgx.BatchResults, err error) error {
	readFailed := err != nil
	if err == nil {
		var tag pgconn.CommandTag
		if tag, err = br.Exec(); err == nil && tag.String() == "ROLLBACK" {
			err = pgx.ErrTxCommitRollback
		}
	}
	cerr := br.Close()
	if readFailed && cerr == nil && l.committedDespite(err) {
		l.tx.committed = true
		return err
	}
	if err == nil {
		err = cerr
	}
	l.tx.committed = err == nil
	return err
}

// committedDespite reports whether the transaction committed although
// its read failed with err: the error came from Go, not from the server
// (which would have skipped COMMIT), and the session is idle.
func (l *lastBatch) committedDespite(err error) bool {
	var pgErr *pgconn.PgError
	conn := l.tx.conn
	return !errors.As(err, &pgErr) && conn != nil && !conn.IsClosed() && conn.PgConn().TxStatus() == 'I'
}

func (l *lastBatch) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	br, err := l.sendBatch(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return lastRow{l, br}
}

func (l *lastBatch) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errLastBatchRead
}

func (l *lastBatch) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errLastBatchRead
}

// lastRow is the read's row: scanning it also reads COMMIT's result.
type lastRow struct {
	l  *lastBatch
	br pgx.BatchResults
}

func (r lastRow) Scan(dest ...any) error {
	return r.l.commitAndClose(r.br, r.br.QueryRow().Scan(dest...))
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
