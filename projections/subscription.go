package projections

import (
	"context"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
)

// SubscriptionName is the checkpoint name of the asynchronous projections.
const SubscriptionName = "projections"

// BatchSize is the most events one batch of the subscription takes: its
// cost is a few round trips whatever its size, so a subscriber behind
// catches up in fewer, larger batches.
const BatchSize = 2000

// liveStreams bounds the streams the subscriber keeps (a payment's is a
// few kilobytes, so some 100 MB): half a minute of payments at 600 a
// second, far more than an instant payment takes to settle; an older
// stream is read from the log again when one of its events comes.
const liveStreams = 20_000

// NewSubscription runs the Async projectors over the log in commit order.
func NewSubscription(pool *pgxpool.Pool, wake <-chan struct{}, log *slog.Logger) *eventstore.Subscription {
	cache := NewLiveCache(liveStreams)
	return &eventstore.Subscription{
		Name: SubscriptionName, Pool: pool, Wake: wake, Log: log, Derived: true, BatchSize: BatchSize,
		ReadAhead: true, Decode: true,
		Handle: func(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
			return ProjectAsync(ctx, tx, events, cache)
		},
	}
}

// PublicEventsFeed is the checkpoint (a public_events seq) of the webhook
// fan-out, which follows public_events in seq order.
const PublicEventsFeed = "webhook_fanout"
