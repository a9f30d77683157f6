package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// Topic is the watermill topic of public events.
const Topic = "public_events"

// FeedBatch is how many public events one message carries at most. The
// fan-out's cost is mostly per batch (a checkpoint, a lookup, an insert,
// an ack), and one batch is in flight at a time: at 200 it fell tens of
// thousands of events behind 600 payments/s.
const FeedBatch = 2000

// FanoutName is the fan-out's checkpoint name.
const FanoutName = projections.PublicEventsFeed

// FeedSubscriber is a watermill Subscriber over the public events table:
// it emits the events in order (public events are numbered in commit order
// by their projection), a batch of up to FeedBatch per message, and moves its
// checkpoint past a batch when its message is acked; one batch is in
// flight at a time. After a restart it emits again from the checkpoint, so
// an event is handled at least once; the handler's inserts are idempotent,
// so each event becomes exactly one delivery per endpoint.
type FeedSubscriber struct {
	Pool *pgxpool.Pool
	Wake <-chan struct{}
	Poll time.Duration // fallback when no wake-up comes; default 250 ms
	Log  *slog.Logger
	// Pacer, if set, hears how far behind the feed is (see eventstore.Pacer).
	Pacer *eventstore.Pacer
	// Partition, if not the whole feed, is the part of it this feed emits:
	// the public events of the platforms that fall in it (so each
	// platform's in order), from a checkpoint of its own (Name).
	Partition eventstore.Partition
	// Lease, if set, says when this process runs the feed (see
	// eventstore.Leases): it emits only while it holds the lease of its Name.
	Lease *eventstore.Leases
}

// Name is the feed's checkpoint (and lease) name.
func (f *FeedSubscriber) Name() string { return f.Partition.Name(FanoutName) }

var _ message.Subscriber = (*FeedSubscriber)(nil)

// Subscribe emits public events from the checkpoint until ctx ends.
func (f *FeedSubscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	if topic != Topic {
		return nil, errors.New("webhooks: unknown topic " + topic)
	}
	if err := eventstore.StartCheckpoint(ctx, f.Pool, f.Name(), f.Partition); err != nil {
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
	name := f.Name()
	f.Pacer.Woke(name)
	for ctx.Err() == nil {
		if !f.Lease.Holds(name) {
			// Another replica emits it (or will): wait for the lease.
			f.Pacer.Idle(name)
			f.Lease.Await(ctx, name)
			f.Pacer.Woke(name)
			continue
		}
		n, err := f.emitBatch(ctx, out)
		if err != nil && ctx.Err() == nil && f.Log != nil {
			f.Log.Warn("webhook feed", "error", err)
		}
		if n > 0 && err == nil {
			continue
		}
		f.Pacer.Idle(name)
		select {
		case <-ctx.Done():
		case <-f.Wake:
		case <-time.After(poll):
		}
		f.Pacer.Woke(name)
	}
	f.Pacer.Idle(name)
}

// feedEvent is one public event as the feed carries it to the fan-out:
// what endpoints are matched by, without its data. The fan-out reads the
// data of the events some endpoint wants, and only those: most events of
// a busy log have no listener, and reading, building and passing on
// their bodies was most of the fan-out's time.
type feedEvent struct {
	Seq         int64     `json:"seq"`
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	PlatformID  string    `json:"platform_id"`
	Environment string    `json:"environment"`
	CreatedAt   time.Time `json:"created_at"`
}

// A message carries a whole batch of public events (in seq order, as a
// JSON array of feedEvent): the fan-out then looks the endpoints up once
// per batch, not once per event. The router runs a goroutine per message,
// so one message per batch also means one handler, and one pool
// connection, at a time (a message per event put a whole batch of
// handlers on the pool at once).
func batchMessage(events []feedEvent) (*message.Message, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(events); err != nil {
		return nil, err
	}
	first, last := events[0].Seq, events[len(events)-1].Seq
	msg := message.NewMessage(fmt.Sprintf("%s:%d-%d", Topic, first, last), buf.Bytes())
	msg.Metadata.Set("first_seq", strconv.FormatInt(first, 10))
	msg.Metadata.Set("last_seq", strconv.FormatInt(last, 10))
	msg.Metadata.Set("count", strconv.Itoa(len(events)))
	return msg, nil
}

func (f *FeedSubscriber) emitBatch(ctx context.Context, out chan<- *message.Message) (int, error) {
	// The checkpoint's updated_at is its version: a rebuild that changed
	// public_events bumps it even when the position stays, so a batch read
	// before the change cannot move the feed past what it corrected.
	start := time.Now()
	name := f.Name()
	part := ""
	if c := f.Partition.SQL("platform_id"); c != "" {
		part = " AND " + c
	}
	// The checkpoint and the batch after it in one round trip: a row per
	// event, or one row without an event when none follows.
	rows, err := f.Pool.Query(ctx, `SELECT c.global_position, c.updated_at, p.seq, p.id, p.type, p.platform_id,
            p.environment, p.created_at
        FROM subscription_checkpoints c
        LEFT JOIN LATERAL (SELECT seq, id, type, platform_id, environment, created_at FROM public_events
            WHERE seq > c.global_position`+part+` ORDER BY seq LIMIT $2) p ON true
        WHERE c.name = $1`, name, FeedBatch)
	if err != nil {
		return 0, err
	}
	var cp int64
	var version time.Time
	var events []feedEvent
	found := false
	_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		var seq *int64
		var e feedEvent
		var id, typ, platform, env *string
		var created *time.Time
		if err := r.Scan(&cp, &version, &seq, &id, &typ, &platform, &env, &created); err != nil {
			return struct{}{}, err
		}
		found = true
		if seq != nil {
			e = feedEvent{Seq: *seq, ID: *id, Type: *typ, PlatformID: *platform, Environment: *env, CreatedAt: *created}
			events = append(events, e)
		}
		return struct{}{}, nil
	})
	if err == nil && !found {
		err = errors.New("webhooks: the feed's checkpoint is gone")
	}
	if err == nil && len(events) == 0 {
		f.Pacer.Read(name, start, true)
	}
	if err != nil || len(events) == 0 {
		return 0, err
	}
	// The batch is one message. The checkpoint moves past the batch once
	// it is acked; a nacked one is sent again (whole) after a pause. A
	// crash before that emits the batch again, which the idempotent
	// handler absorbs.
	msg, err := batchMessage(events)
	if err != nil {
		return 0, err
	}
	for {
		select {
		case out <- msg:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		acked := false
		select {
		case <-msg.Acked():
			acked = true
		case <-msg.Nacked():
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if acked {
			break // out of the for: the batch is done
		}
		msg = msg.Copy()
		// A failing fan-out is not short of time: it must not hold the
		// commands back while it pauses (see eventstore.Pacer).
		f.Pacer.Idle(name)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		f.Pacer.Woke(name)
	}
	last := events[len(events)-1].Seq
	// Compare and set: a rebuild may have rewound the feed meanwhile, and
	// its position wins (what this batch emitted is fanned out idempotently).
	// Not flushed at commit (see eventstore.ExecDerived): a crash that
	// loses it emits the batch again, which the fan-out absorbs.
	if _, err := eventstore.ExecDerived(ctx, f.Pool, `UPDATE subscription_checkpoints SET global_position = $2, updated_at = clock_timestamp()
        WHERE name = $1 AND global_position = $3 AND updated_at = $4`, name, last, cp, version); err != nil {
		return 0, err
	}
	f.Pacer.Read(name, start, len(events) < FeedBatch)
	return len(events), nil
}

// Fanout turns each public event into one delivery per endpoint of its
// platform and environment that wants it.
type Fanout struct {
	Pool *pgxpool.Pool
	// Delivered is signalled after an insert that left deliveries to the
	// sender's claim (wakes the sender); a batch handed over whole, none.
	Delivered func()
	// Sender, if set, is handed the deliveries it has a round free for,
	// leased to it at their insert and sent as soon as they commit (see
	// handover); the others are inserted due, for its claim.
	Sender *Sender
}

// endpointKey is the scope endpoints are looked up by.
type endpointKey struct{ platformID, environment string }

// Handle is the watermill handler of a batch of public events: one
// delivery per event and endpoint that wants it, inserted once (a second
// handling of the batch inserts nothing). It sends at most three
// statements whatever the batch's size: the endpoints of every platform
// and environment in the batch, the bodies of the events they want, then
// the batch's deliveries.
func (h *Fanout) Handle(msg *message.Message) error {
	ctx := msg.Context()
	var events []feedEvent
	if err := json.Unmarshal(msg.Payload, &events); err != nil {
		return fmt.Errorf("webhooks: fan-out message %s: %w", msg.UUID, err)
	}
	if len(events) == 0 {
		return nil
	}
	var platforms, envs []string
	seen := map[endpointKey]bool{}
	for _, e := range events {
		k := endpointKey{e.PlatformID, e.Environment}
		if !seen[k] {
			seen[k] = true
			platforms = append(platforms, k.platformID)
			envs = append(envs, k.environment)
		}
	}
	// One query for every platform and environment of the batch, with what
	// the sender needs of an endpoint (as its claim reads it) for the
	// deliveries handed to it.
	rows, err := h.Pool.Query(ctx, `SELECT e.id, e.platform_id, e.environment, e.events, e.url, e.retry_policy,
            ARRAY(SELECT secret FROM webhook_secrets w WHERE w.endpoint_id = e.id
                AND (w.expires_at IS NULL OR w.expires_at > now()) ORDER BY w.created_at DESC)
        FROM webhook_endpoints e
        JOIN unnest($1::text[], $2::text[]) AS s (platform_id, environment)
          ON e.platform_id = s.platform_id AND e.environment = s.environment
        WHERE e.status = 'enabled' AND NOT e.deleted
        ORDER BY e.id`, platforms, envs)
	if err != nil {
		return err
	}
	type endpoint struct {
		id      string
		events  []string
		url     string
		policy  platform.RetryPolicy
		secrets []string
	}
	byScope := map[endpointKey][]*endpoint{}
	if _, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		var ep endpoint
		var k endpointKey
		if err := r.Scan(&ep.id, &k.platformID, &k.environment, &ep.events, &ep.url, &ep.policy, &ep.secrets); err != nil {
			return struct{}{}, err
		}
		byScope[k] = append(byScope[k], &ep)
		return struct{}{}, nil
	}); err != nil {
		return err
	}
	if len(byScope) == 0 {
		return nil // nobody listens to any event of the batch
	}
	// Matched in Go by the rules the lookup used to apply per event: the
	// endpoint's platform and environment, enabled and not deleted (in the
	// query above), and subscribed to the type or to "*".
	type delivery struct {
		endpoint *endpoint
		event    *feedEvent
	}
	var wanted []delivery
	var seqs []int64
	for i := range events { // in seq order, so delivery ids are too
		e := &events[i]
		for _, ep := range byScope[endpointKey{e.PlatformID, e.Environment}] {
			if (webhook.Config{Events: ep.events}).Wants(e.Type) {
				if len(seqs) == 0 || seqs[len(seqs)-1] != e.Seq {
					seqs = append(seqs, e.Seq)
				}
				wanted = append(wanted, delivery{ep, e})
			}
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	bodies, err := h.bodies(ctx, seqs)
	if err != nil {
		return err
	}
	round := h.Sender.takeHandover() // nil: every delivery goes to the claim
	defer round.send(nil)            // given back if nothing was sent (a panic included)
	var ids, endpointIDs, eventIDs, types, payloads []string
	var committed []time.Time
	var leased []bool
	handed := map[string]job{} // delivery id → its job, if leased
	for _, d := range wanted {
		body, ok := bodies[d.event.Seq]
		if e := body.event; !ok || e.ID != d.event.ID || e.Type != d.event.Type || e.PlatformID != d.event.PlatformID ||
			e.Environment != d.event.Environment || !e.CreatedAt.Equal(d.event.CreatedAt) {
			// A rebuild changed the row since the feed read it; it has
			// rewound the feed, which brings the corrected row again.
			continue
		}
		id := domain.NewID(domain.PrefixDelivery)
		ids = append(ids, id)
		endpointIDs = append(endpointIDs, d.endpoint.id)
		eventIDs = append(eventIDs, d.event.ID)
		types = append(types, d.event.Type)
		payloads = append(payloads, body.payload)
		committed = append(committed, d.event.CreatedAt)
		take := round.take(d.endpoint.id)
		leased = append(leased, take)
		if take {
			handed[id] = job{id: id, endpointID: d.endpoint.id, eventType: d.event.Type, url: d.endpoint.url,
				platformID: d.event.PlatformID, environment: d.event.Environment, payload: []byte(body.payload),
				policy: d.endpoint.policy, secrets: d.endpoint.secrets}
		}
	}
	inserted, err := h.insert(ctx, len(handed) > 0, ids, endpointIDs, eventIDs, types, payloads, committed, leased)
	var jobs []job
	for _, row := range inserted {
		if j, ok := handed[row.id]; ok {
			// The body as stored, which retries send: jsonb's text, not
			// encoding/json's (a receiver may compare the two).
			j.payload = []byte(row.payload)
			jobs = append(jobs, j)
		}
	}
	round.send(jobs) // an insert that failed sends nothing and gives the round back
	if err != nil {
		return err
	}
	if len(ids) > len(handed) && h.Delivered != nil { // some were left to the claim
		h.Delivered()
	}
	return nil
}

// stored is a delivery the insert made: its id and its body as stored.
type stored struct{ id, payload string }

// insert stores the deliveries (leased: already claimed by this process's
// sender) and returns those it inserted. One statement for the
// batch; the unique (endpoint_id, event_id) of the fan-out's deliveries
// (replay_id null: a replay's are unique by replay) makes a second handling of the
// batch insert nothing. Rows go in (seq, endpoint id) order, so two
// fan-outs of overlapping batches at once (say two processes on one
// database) take the unique index's locks in the same order and cannot
// deadlock. Without a leased row, the commit does not wait for the WAL
// flush (eventstore.ExecDerived): the sender's claim, which does, flushes
// these rows before any of them is sent, and a crash that loses them
// before that loses the feed's checkpoint after them too, so the feed
// emits the batch again. With one, it waits, as the claim would: they are
// sent as soon as it returns.
func (h *Fanout) insert(ctx context.Context, flush bool, ids, endpointIDs, eventIDs, types, payloads []string,
	committed []time.Time, leased []bool) ([]stored, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	const insert = `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status,
            next_attempt_at, committed_at, created_at)
        SELECT d.id, d.endpoint_id, d.event_id, d.event_type, d.payload::jsonb, 'pending',
            CASE WHEN d.leased THEN now() + $8::interval ELSE now() END, d.committed_at, now()
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::bool[])
            AS d (id, endpoint_id, event_id, event_type, payload, committed_at, leased)
        ON CONFLICT (endpoint_id, event_id) WHERE replay_id IS NULL DO NOTHING
        RETURNING id, payload::text`
	args := []any{ids, endpointIDs, eventIDs, types, payloads, committed, leased, Lease.String()}
	var made []stored
	scan := func(rows pgx.Rows) error {
		var err error
		made, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored, error) {
			var d stored
			return d, r.Scan(&d.id, &d.payload)
		})
		return err
	}
	if flush {
		rows, err := h.Pool.Query(ctx, insert, args...)
		if err != nil {
			return nil, err
		}
		err = scan(rows)
		return made, err
	}
	b := &pgx.Batch{}
	b.Queue(`BEGIN`)
	b.Queue(`SET LOCAL synchronous_commit = off`)
	b.Queue(insert, args...).Query(scan)
	b.Queue(`COMMIT`)
	if err := h.Pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return made, nil
}

// body is a public event's webhook body (the event as GET /v1/events
// shows it), and the event as it was read for it: a delivery is made only
// if it is the event the feed matched.
type body struct {
	event   feedEvent
	payload string
}

// bodies builds the webhook bodies of the public events numbered seqs.
func (h *Fanout) bodies(ctx context.Context, seqs []int64) (map[int64]body, error) {
	rows, err := h.Pool.Query(ctx, `SELECT seq, id, type, platform_id, environment, created_at, data
        FROM public_events WHERE seq = ANY($1)`, seqs)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]body, len(seqs))
	_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		var e feedEvent
		var data []byte
		if err := r.Scan(&e.Seq, &e.ID, &e.Type, &e.PlatformID, &e.Environment, &e.CreatedAt, &data); err != nil {
			return struct{}{}, err
		}
		payload, err := json.Marshal(queries.NewPublicEvent(e.ID, e.Type, e.PlatformID, e.Environment, e.CreatedAt, data))
		out[e.Seq] = body{e, string(payload)}
		return struct{}{}, err
	})
	return out, err
}

// NewRouter wires the feeds (the parts of the feed, or the whole) and the
// fan-out into a watermill router: a handler per feed.
func NewRouter(feeds []*FeedSubscriber, fanout *Fanout, log *slog.Logger) (*message.Router, error) {
	if log == nil {
		log = slog.Default()
	}
	r, err := message.NewRouter(message.RouterConfig{}, watermill.NewSlogLogger(log))
	if err != nil {
		return nil, err
	}
	for _, feed := range feeds {
		r.AddNoPublisherHandler(feed.Name(), Topic, feed, fanout.Handle)
	}
	return r, nil
}
