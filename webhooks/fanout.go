package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections"
)

// Topic is the watermill topic of public events.
const Topic = "public_events"

// FanoutName is the fan-out's checkpoint name.
const FanoutName = projections.PublicEventsFeed

// FeedSubscriber is a watermill Subscriber over the public events table:
// it emits each event in order (public events are numbered in commit order
// by their projection) and moves its checkpoint when the event is acked.
// After a restart it emits again from the checkpoint, so an event is
// handled at least once; the handler's inserts are idempotent, so each
// event becomes exactly one delivery per endpoint.
type FeedSubscriber struct {
	Pool *pgxpool.Pool
	Wake <-chan struct{}
	Poll time.Duration // fallback when no wake-up comes; default 250 ms
	Log  *slog.Logger
}

var _ message.Subscriber = (*FeedSubscriber)(nil)

// Subscribe emits public events from the checkpoint until ctx ends.
func (f *FeedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic != Topic {
		return nil, errors.New("webhooks: unknown topic " + topic)
	}
	if _, err := f.Pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING`, FanoutName); err != nil {
		return nil, err
	}
	out := make(chan *message.Message)
	go f.run(ctx, out)
	return out, nil
}

// Close is a no-op: subscriptions end with their context.
func (f *FeedSubscriber) Close() error { return nil }

func (f *FeedSubscriber) run(ctx context.Context, out chan<- *message.Message) {
	defer close(out)
	poll := f.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	for ctx.Err() == nil {
		n, err := f.emitBatch(ctx, out)
		if err != nil && ctx.Err() == nil && f.Log != nil {
			f.Log.Warn("webhook feed", "error", err)
		}
		if n > 0 && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
		case <-f.Wake:
		case <-time.After(poll):
		}
	}
}

type feedEvent struct {
	seq         int64
	id, typ     string
	platformID  string
	environment string
	createdAt   time.Time
	payload     []byte
}

func (f *FeedSubscriber) emitBatch(ctx context.Context, out chan<- *message.Message) (int, error) {
	var cp int64
	if err := f.Pool.QueryRow(ctx, `SELECT global_position FROM subscription_checkpoints WHERE name = $1`, FanoutName).Scan(&cp); err != nil {
		return 0, err
	}
	rows, err := f.Pool.Query(ctx, `SELECT seq, id, type, platform_id, environment, created_at,
            json_build_object('id', id, 'object', 'event', 'type', type, 'platform_id', platform_id,
                'environment', environment, 'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                'data', data)
        FROM public_events WHERE seq > $1 ORDER BY seq LIMIT 200`, cp)
	if err != nil {
		return 0, err
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (feedEvent, error) {
		var e feedEvent
		err := r.Scan(&e.seq, &e.id, &e.typ, &e.platformID, &e.environment, &e.createdAt, &e.payload)
		return e, err
	})
	if err != nil || len(events) == 0 {
		return 0, err
	}
	// Emit the whole batch at once: the router handles messages
	// concurrently. The checkpoint moves past the batch once every message
	// is acked; a nacked one is sent again after a pause. A crash before
	// that emits the batch again, which the idempotent handler absorbs.
	pending := make([]*message.Message, len(events))
	for i, e := range events {
		msg := message.NewMessage(e.id, e.payload)
		msg.Metadata.Set("type", e.typ)
		msg.Metadata.Set("platform_id", e.platformID)
		msg.Metadata.Set("environment", e.environment)
		msg.Metadata.Set("created_at", e.createdAt.Format(time.RFC3339Nano))
		pending[i] = msg
	}
	for len(pending) > 0 {
		for _, msg := range pending {
			select {
			case out <- msg:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		var nacked []*message.Message
		for _, msg := range pending {
			select {
			case <-msg.Acked():
			case <-msg.Nacked():
				nacked = append(nacked, msg.Copy())
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		if pending = nacked; len(pending) > 0 {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	last := events[len(events)-1].seq
	// Compare and set: a rebuild may have rewound the feed meanwhile, and
	// its position wins (what this batch emitted is fanned out idempotently).
	if _, err := f.Pool.Exec(ctx, `UPDATE subscription_checkpoints SET global_position = $2, updated_at = now()
        WHERE name = $1 AND global_position = $3`, FanoutName, last, cp); err != nil {
		return 0, err
	}
	return len(events), nil
}

// Fanout turns each public event into one delivery per endpoint of its
// platform and environment that wants it.
type Fanout struct {
	Pool *pgxpool.Pool
	// Delivered is signalled when new deliveries are due (wakes the sender).
	Delivered func()
}

// Handle is the watermill handler: one delivery per endpoint that wants
// the event, inserted once (a second handling of the event inserts
// nothing).
func (h *Fanout) Handle(msg *message.Message) error {
	ctx := msg.Context()
	created, _ := time.Parse(time.RFC3339Nano, msg.Metadata.Get("created_at"))
	typ := msg.Metadata.Get("type")
	rows, err := h.Pool.Query(ctx, `SELECT id FROM webhook_endpoints
        WHERE platform_id = $1 AND environment = $2 AND status = 'enabled' AND NOT deleted
          AND ('*' = ANY(events) OR $3 = ANY(events))`, msg.Metadata.Get("platform_id"), msg.Metadata.Get("environment"), typ)
	if err != nil {
		return err
	}
	endpoints, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(endpoints) == 0 {
		return err
	}
	b := &pgx.Batch{}
	for _, endpoint := range endpoints {
		b.Queue(`INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status,
                next_attempt_at, committed_at, created_at)
            VALUES ($1, $2, $3, $4, $5, 'pending', now(), $6, now()) ON CONFLICT (endpoint_id, event_id) DO NOTHING`,
			domain.NewID(domain.PrefixDelivery), endpoint, msg.UUID, typ, json.RawMessage(msg.Payload), created)
	}
	if err := h.Pool.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if h.Delivered != nil {
		h.Delivered()
	}
	return nil
}

// NewRouter wires the feed and the fan-out into a watermill router.
func NewRouter(feed *FeedSubscriber, fanout *Fanout, log *slog.Logger) (*message.Router, error) {
	if log == nil {
		log = slog.Default()
	}
	r, err := message.NewRouter(message.RouterConfig{}, watermill.NewSlogLogger(log))
	if err != nil {
		return nil, err
	}
	r.AddNoPublisherHandler("webhook_fanout", Topic, feed, fanout.Handle)
	return r, nil
}
