// Package app holds the use cases: one command handler per file. Each is a
// load, a pure decision (in domain) and an append with its inline
// projections, run by the one command runner (execute, runner.go), which
// owns the transaction, the idempotency claim and replay, the retries, the
// commit and the wake-up of the subscribers.
package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
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
