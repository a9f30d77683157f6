package app

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// ReplayWebhook sends the caller's past public events of a window to one
// of its endpoints again, as new deliveries carrying the replay's id
// (POST /webhooks/:id/replay). The rules are webhook.DecideReplay's.
//
// The deliveries are made in the command's own transaction, with the
// webhook_endpoint.replay_requested event that records the replay: when
// the 201 is sent, every delivery exists (nothing acknowledged is lost,
// and nothing is made twice by a retried or duplicated request). They go
// to the sender's replay lane, which it drains after the new events' (see
// webhooks.Sender.claim).
//
// The events are those GET /v1/events shows at that moment: one whose
// projection is a few milliseconds behind its commit is not in it yet.
func (a *App) ReplayWebhook(ctx context.Context, meta Meta, idem *Idempotency, c Caller, endpointID string, r webhook.ReplayRequest) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixReplay)
	res, err := a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		l, err := loadStream(ctx, tx, webhooks, &c, endpointID)
		if err != nil {
			return Result{}, err
		}
		events, err := replayedEvents(ctx, tx, c, l.State.Config, r)
		if err != nil {
			return Result{}, err
		}
		at := now()
		decided, err := webhook.DecideReplay(l.State, r, id, len(events), at)
		if err != nil {
			return Result{}, err
		}
		if _, err := appendAndProject(ctx, tx, webhookStream(c, endpointID), l.Version, meta, decided); err != nil {
			return Result{}, err
		}
		return Result{ID: id}, insertReplayDeliveries(ctx, tx, endpointID, id, events, at)
	})
	if err == nil && !res.Replayed {
		a.Notifier.NotifyOf(eventstore.TopicDeliveries)
	}
	return res, err
}

// replayed is a public event a replay sends again.
type replayed struct {
	id, typ string
	payload []byte
}

// replayedEvents reads the public events a replay of r to an endpoint
// configured as cfg selects, in the order they happened, up to one past
// the limit (which DecideReplay refuses).
func replayedEvents(ctx context.Context, tx pgx.Tx, c Caller, cfg webhook.Config, r webhook.ReplayRequest) ([]replayed, error) {
	// The endpoint's subscriptions, or the named types; "*": every type.
	types := r.Types
	if types == nil {
		types = cfg.Events
	}
	all := false
	for _, t := range types {
		all = all || t == "*"
	}
	rows, err := tx.Query(ctx, `SELECT id, type, created_at, data FROM public_events
        WHERE platform_id = $1 AND environment = $2 AND created_at >= $3 AND created_at < $4 AND ($5 OR type = ANY($6))
        ORDER BY seq LIMIT $7`, c.PlatformID, c.Environment.String(), r.CreatedAfter, r.CreatedBefore, all, types,
		webhook.MaxReplayEvents+1)
	if err != nil {
		return nil, err
	}
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (replayed, error) {
		var e replayed
		var created time.Time
		var data []byte
		if err := row.Scan(&e.id, &e.typ, &created, &data); err != nil {
			return e, err
		}
		if !r.Selects(cfg, e.typ) { // the same rule as the query, said once in the domain
			return e, nil
		}
		// The body the fan-out sends for it (webhooks.Fanout.bodies).
		var err error
		e.payload, err = json.Marshal(queries.NewPublicEvent(e.id, e.typ, c.PlatformID, c.Environment.String(), created, data))
		return e, err
	})
	selected := events[:0]
	for _, e := range events {
		if e.payload != nil {
			selected = append(selected, e)
		}
	}
	return selected, err
}

// insertReplayDeliveries makes one pending delivery of each event to the
// endpoint, carrying the replay's id, due now (in the replay lane).
func insertReplayDeliveries(ctx context.Context, tx pgx.Tx, endpointID, replayID string, events []replayed, at time.Time) error {
	ids, eventIDs, types, payloads := make([]string, 0, len(events)), make([]string, 0, len(events)),
		make([]string, 0, len(events)), make([]string, 0, len(events))
	for _, e := range events {
		ids = append(ids, domain.NewID(domain.PrefixDelivery))
		eventIDs, types, payloads = append(eventIDs, e.id), append(types, e.typ), append(payloads, string(e.payload))
	}
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status,
            next_attempt_at, committed_at, created_at, replay_id)
        SELECT d.id, $5, d.event_id, d.event_type, d.payload::jsonb, 'pending', $6, $6, $6, $7
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS d (id, event_id, event_type, payload)`,
		ids, eventIDs, types, payloads, endpointID, at, replayID)
	return err
}
