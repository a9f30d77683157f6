package projections

import (
	"strings"

	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
)

// Webhooks projects endpoint streams into webhook_endpoints and their
// replays into webhook_replays.
type Webhooks struct{}

func (Webhooks) Name() string     { return "webhooks" }
func (Webhooks) Tables() []string { return []string{"webhook_endpoints", "webhook_replays"} }

func (p Webhooks) Project(b *Batch) error { return eachEvent(b, p.apply) }

func (Webhooks) apply(b *Batch, r *eventstore.RecordedEvent) error {
	id, ok := strings.CutPrefix(r.StreamID, webhook.StreamID(""))
	if !ok {
		return nil // only an endpoint's stream holds its events
	}
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	switch e := ev.(type) {
	case webhook.Created:
		c := e.Config
		b.Queue(`INSERT INTO webhook_endpoints (id, platform_id, environment, url, events, description, status,
            retry_policy, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
			e.EndpointID, e.PlatformID, e.Environment.String(), c.URL, c.Events, c.Description, c.Status, c.RetryPolicy, e.At)
	case webhook.Updated:
		c := e.Config
		b.Queue(`UPDATE webhook_endpoints SET url = $2, events = $3, description = $4, status = $5,
            retry_policy = $6, updated_at = $7 WHERE id = $1`, id, c.URL, c.Events, c.Description, c.Status, c.RetryPolicy, e.At)
	case webhook.ReplayRequested:
		b.Queue(`INSERT INTO webhook_replays (id, endpoint_id, platform_id, environment, created_after, created_before, types,
            replayed, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			e.ReplayID, id, r.PlatformID, r.Environment, e.CreatedAfter, e.CreatedBefore, e.Types, e.Count, e.At)
	case webhook.Deleted:
		b.Queue(`UPDATE webhook_endpoints SET deleted = true, status = 'disabled', updated_at = $2 WHERE id = $1`, id, e.At)
	}
	return err
}
