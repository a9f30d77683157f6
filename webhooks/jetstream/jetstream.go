// Package jetstream forwards the public events to NATS JetStream (issue
// #20), for platforms that want the events as a stream rather than as
// webhooks: every public event, in the log's order (so in order per
// platform), to the subject treasury.<environment>.<platform_id>.<event
// type>, its body the webhook body (the public event envelope), its
// Nats-Msg-Id the event's id.
//
// The forwarder follows public_events by seq from a checkpoint of its own
// (CheckpointName), as the webhook fan-out does, and moves it only after
// JetStream has acknowledged every event of a batch. A crash between the
// acknowledgement and the checkpoint sends the batch again after the
// restart; JetStream drops the copies by their message id within the
// stream's duplicate window (DuplicateWindow), so the stream holds each
// event once. A rebuild that rewinds the checkpoint further back than the
// window sends older events again after the newer ones: consumers that
// must see each event once deduplicate by Nats-Msg-Id.
package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	neturl "net/url"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	wmnats "github.com/ThreeDotsLabs/watermill-nats/v2/pkg/nats"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/queries"
)

// CheckpointName is the forwarder's checkpoint: the last public_events seq
// JetStream acknowledged.
const CheckpointName = projections.NATSForwarderFeed

// StreamName is the JetStream stream the events go to; its subjects are
// treasury.>.
const StreamName = "TREASURY_EVENTS"

// DuplicateWindow is how long JetStream remembers a message id: an event
// sent again within it (after a crash, a rebuild's rewind) is stored once.
const DuplicateWindow = 30 * time.Minute

// Batch is how many events one step reads and publishes.
const Batch = 500

// Subject is where an event goes.
func Subject(environment, platformID, eventType string) string {
	return "treasury." + environment + "." + platformID + "." + eventType
}

// Connect connects to NATS at url, makes sure the stream exists (file
// storage, subjects treasury.>, the duplicate window), and returns a
// watermill publisher that waits for JetStream's acknowledgement of each
// message and sets its Nats-Msg-Id from the message's UUID.
func Connect(url string, log *slog.Logger) (message.Publisher, func(), error) {
	conn, err := nats.Connect(url, nats.Name("treasury"), nats.MaxReconnects(-1))
	if err != nil {
		return nil, nil, fmt.Errorf("NATS at %s: %w", redacted(url), err)
	}
	js, err := conn.JetStream()
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if err := ensureStream(js); err != nil {
		conn.Close()
		return nil, nil, err
	}
	pub, err := wmnats.NewPublisherWithNatsConn(conn, wmnats.PublisherPublishConfig{
		Marshaler:         &wmnats.NATSMarshaler{}, // the body as it is, metadata as headers
		SubjectCalculator: wmnats.DefaultSubjectCalculator,
		JetStream:         wmnats.JetStreamConfig{TrackMsgId: true},
	}, watermill.NewSlogLogger(log))
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	return pub, func() { _ = pub.Close() }, nil
}

// ensureStream creates the stream when it is missing; one that exists is
// left as its operator set it (replicas, limits, age).
func ensureStream(js nats.JetStreamContext) error {
	_, err := js.StreamInfo(StreamName)
	if errors.Is(err, nats.ErrStreamNotFound) {
		_, err = js.AddStream(&nats.StreamConfig{Name: StreamName, Subjects: []string{"treasury.>"}, Storage: nats.FileStorage,
			Duplicates: DuplicateWindow})
	}
	return err
}

// redacted is a NATS URL without its credentials, for messages.
func redacted(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "(a NATS URL that does not parse)"
	}
	u.User = nil
	return u.String()
}

// Forwarder publishes the public events from its checkpoint on.
type Forwarder struct {
	Pool      *pgxpool.Pool
	Publisher message.Publisher
	// Wake is signalled when public events were added; Poll is the
	// fallback (default 250 ms).
	Wake <-chan struct{}
	Poll time.Duration
	Log  *slog.Logger
	// Partition, if not the whole feed, is the part this forwarder
	// publishes: the public events of the platforms in it, each platform's
	// in the log's order, from a checkpoint of its own (Name).
	Partition eventstore.Partition
	// Lease, if set, says when this process runs the forwarder (see
	// eventstore.Leases).
	Lease *eventstore.Leases
}

// Name is the forwarder's checkpoint (and lease) name.
func (f *Forwarder) Name() string { return f.Partition.Name(CheckpointName) }

// Run forwards until ctx ends; a failure (NATS away, say) is logged and
// the same batch tried again.
func (f *Forwarder) Run(ctx context.Context) {
	poll := f.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	// The checkpoint's row first: without it a step would find nothing to do.
	for ctx.Err() == nil {
		err := eventstore.StartCheckpoint(ctx, f.Pool, f.Name(), f.Partition)
		if err == nil {
			break
		}
		f.Log.Warn("NATS forwarder: no checkpoint yet: will try again", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	for ctx.Err() == nil {
		if !f.Lease.Holds(f.Name()) {
			f.Lease.Await(ctx, f.Name()) // another replica forwards it (or will)
			continue
		}
		n, err := f.Step(ctx)
		if err != nil && ctx.Err() == nil {
			f.Log.Warn("NATS forwarder: will try again", "err", err)
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

// Step publishes the next batch after the checkpoint and moves the
// checkpoint past it; it says how many events it published. With several
// replicas one forwards at a time: the step holds the subscription's
// advisory lock (eventstore.SubscriptionLock) for its whole length, and a
// replica that finds it taken does nothing (the owner's death releases it
// with its connection). The checkpoint's updated_at is its version: a
// rebuild that rewound it while the batch was out makes the move fail,
// and the corrected rows are read again (their copies deduplicated by
// JetStream).
func (f *Forwarder) Step(ctx context.Context) (int, error) {
	tx, err := f.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var owner bool
	name := f.Name()
	if err := tx.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock($1)`, eventstore.SubscriptionLock(name)).Scan(&owner); err != nil || !owner {
		return 0, err
	}
	type event struct {
		seq                              int64
		id, typ, platformID, environment string
		created                          time.Time
		data                             json.RawMessage
	}
	var from, last int64
	var version time.Time
	var events []event
	part := ""
	if c := f.Partition.SQL("platform_id"); c != "" {
		part = " AND " + c
	}
	rows, err := tx.Query(ctx, `SELECT c.global_position, c.updated_at, p.seq, p.id, p.type, p.platform_id,
            p.environment, p.created_at, p.data
        FROM subscription_checkpoints c
        LEFT JOIN LATERAL (SELECT seq, id, type, platform_id, environment, created_at, data FROM public_events
            WHERE seq > c.global_position`+part+` ORDER BY seq LIMIT $2) p ON true
        WHERE c.name = $1`, name, Batch)
	if err != nil {
		return 0, err
	}
	_, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (struct{}, error) {
		var seq *int64
		var id, typ, platformID, environment *string
		var created *time.Time
		var data []byte
		if err := r.Scan(&from, &version, &seq, &id, &typ, &platformID, &environment, &created, &data); err != nil {
			return struct{}{}, err
		}
		if seq != nil {
			events = append(events, event{*seq, *id, *typ, *platformID, *environment, *created, data})
		}
		return struct{}{}, nil
	})
	if err != nil || len(events) == 0 {
		return 0, err
	}
	for _, e := range events {
		body, err := json.Marshal(queries.NewPublicEvent(e.id, e.typ, e.platformID, e.environment, e.created, e.data))
		if err != nil {
			return 0, err
		}
		msg := message.NewMessage(e.id, body) // the UUID is the Nats-Msg-Id
		msg.Metadata.Set("Treasury-Event-Type", e.typ)
		msg.Metadata.Set("Treasury-Platform-Id", e.platformID)
		msg.Metadata.Set("Treasury-Environment", e.environment)
		if err := f.Publisher.Publish(Subject(e.environment, e.platformID, e.typ), msg); err != nil {
			return 0, fmt.Errorf("publish %s: %w", e.id, err)
		}
		last = e.seq
	}
	tag, err := tx.Exec(ctx, `UPDATE subscription_checkpoints SET global_position = $2, updated_at = clock_timestamp()
        WHERE name = $1 AND global_position = $3 AND updated_at = $4`, name, last, from, version)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, err
	}
	if tag.RowsAffected() == 0 {
		return 0, nil // rewound meanwhile: read again from where it now stands
	}
	return len(events), nil
}
