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

// NewSubscription runs the Async projectors over the log in commit order.
func NewSubscription(pool *pgxpool.Pool, wake <-chan struct{}, log *slog.Logger) *eventstore.Subscription {
	return &eventstore.Subscription{
		Name: SubscriptionName, Pool: pool, Wake: wake, Log: log, Derived: true,
		Handle: func(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
			return ProjectAsync(ctx, tx, events, nil)
		},
	}
}

// PublicEventsFeed is the checkpoint (a public_events seq) of the webhook
// fan-out, which follows public_events in seq order.
const PublicEventsFeed = "webhook_fanout"
