package projections

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
)

// BatchSize is the most events one batch of the subscription takes: its
// cost is a few round trips whatever its size, so a subscriber behind
// catches up in fewer, larger batches.
const BatchSize = 2000

// liveStreams bounds the streams the subscriber keeps (a payment's is a
// few kilobytes, so some 100 MB): half a minute of payments at 600 a
// second, far more than an instant payment takes to settle; an older
// stream is read from the log again when one of its events comes.
const liveStreams = 20_000

// NewSubscription runs s's projectors over the log in commit order.
func NewSubscription(s AsyncSubscriber, pool *pgxpool.Pool, wake <-chan struct{}, log *slog.Logger) *eventstore.Subscription {
	var cache *StreamCache // only for projectors that fold streams
	if foldsStreams(s.Projectors) {
		cache = NewLiveCache(liveStreams)
	}
	// The tables' last seqs are read in the step's first round trip, after
	// the subscription's lock (under which nothing else writes them), not in
	// one of their own: a live batch whose streams the cache holds then
	// costs the step one round trip, its writes.
	tables := setTables(s.Projectors)
	var seqs map[string]int64
	return &eventstore.Subscription{
		Name: s.Name, Pool: pool, Wake: wake, Log: log, Derived: true, BatchSize: BatchSize,
		ReadAhead: true, Decode: true, Types: eventTypes(s.Projectors),
		// The webhooks follow the public events.
		LatencyBound: s.Name == PublicEventsSubscription,
		Prelude: &eventstore.Prelude{SQL: lastSeqsSQL(tables), Scan: func(row pgx.Row) (err error) {
			seqs, err = scanLastSeqs(row, tables)
			return err
		}},
		Handle: func(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
			return projectAsync(ctx, tx, events, cache, s.Projectors, seqs)
		},
	}
}

// PublicEventsFeed is the checkpoint (a public_events seq) of the webhook
// fan-out, which follows public_events in seq order.
const PublicEventsFeed = "webhook_fanout"

// NATSForwarderFeed is the checkpoint (a public_events seq) of the
// forwarder of the public events to NATS JetStream (webhooks/jetstream),
// which follows them as the fan-out does.
const NATSForwarderFeed = "nats_forwarder"

// PublicEventFeeds are the checkpoints that follow public_events by seq: a
// rebuild that changes public_events rewinds them all.
var PublicEventFeeds = []string{PublicEventsFeed, NATSForwarderFeed}

// CatchUp runs every asynchronous subscriber, one after the other, until
// each has passed pos (from eventstore.Head): for tools and tests that
// need the read models current.
func CatchUp(ctx context.Context, pool *pgxpool.Pool, pos eventstore.Position, log *slog.Logger) error {
	for _, s := range NewSubscriptions(pool, log) {
		if err := s.CatchUpTo(ctx, pos); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}

// NewSubscriptions are the AsyncSubscribers' subscriptions, without
// wake-ups (they poll).
func NewSubscriptions(pool *pgxpool.Pool, log *slog.Logger) []*eventstore.Subscription {
	var subs []*eventstore.Subscription
	for _, s := range AsyncSubscribers() {
		subs = append(subs, NewSubscription(s, pool, nil, log))
	}
	return subs
}
