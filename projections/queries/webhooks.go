package queries

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
)

// DeliveryStatusView is an endpoint's health, derived from its attempts.
type DeliveryStatusView struct {
	State               string `json:"state"`
	LastAttemptAt       *Time  `json:"last_attempt_at"`
	LastSuccessAt       *Time  `json:"last_success_at"`
	LastStatusCode      *int   `json:"last_status_code"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	Pending             int    `json:"pending"`
	Failed              int    `json:"failed"`
}

// WebhookView is an endpoint as the API shows it.
type WebhookView struct {
	ID             string               `json:"id"`
	Object         string               `json:"object"`
	URL            string               `json:"url"`
	Events         []string             `json:"events"`
	Description    string               `json:"description"`
	Status         string               `json:"status"`
	Secret         string               `json:"secret,omitempty"`
	RetryPolicy    platform.RetryPolicy `json:"retry_policy"`
	DeliveryStatus DeliveryStatusView   `json:"delivery_status"`
	Environment    string               `json:"environment"`
	CreatedAt      Time                 `json:"created_at"`
	UpdatedAt      Time                 `json:"updated_at"`
}

const webhookColumns = `e.id, e.url, e.events, e.description, e.status, e.retry_policy, e.environment, e.created_at, e.updated_at,
    (SELECT max(a.attempted_at) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = e.id),
    (SELECT max(a.attempted_at) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.endpoint_id = e.id AND a.status_code BETWEEN 200 AND 299),
    (SELECT a.status_code FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
        WHERE d.endpoint_id = e.id ORDER BY a.attempted_at DESC LIMIT 1),
    (SELECT count(*) FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = e.id
        AND a.attempted_at > coalesce((SELECT max(a2.attempted_at) FROM webhook_attempts a2 JOIN webhook_deliveries d2 ON d2.id = a2.delivery_id
            WHERE d2.endpoint_id = e.id AND a2.status_code BETWEEN 200 AND 299), '-infinity')),
    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending'),
    (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint_id = e.id AND d.status = 'failed')`

func scanWebhook(row pgx.Row) (WebhookView, error) {
	var v WebhookView
	var created, updated time.Time
	var last, success *time.Time
	err := row.Scan(&v.ID, &v.URL, &v.Events, &v.Description, &v.Status, &v.RetryPolicy, &v.Environment, &created, &updated,
		&last, &success, &v.DeliveryStatus.LastStatusCode, &v.DeliveryStatus.ConsecutiveFailures,
		&v.DeliveryStatus.Pending, &v.DeliveryStatus.Failed)
	v.Object, v.CreatedAt, v.UpdatedAt = "webhook_endpoint", NewTime(created), NewTime(updated)
	v.DeliveryStatus.LastAttemptAt, v.DeliveryStatus.LastSuccessAt = NewTimePtr(last), NewTimePtr(success)
	switch {
	case v.Status == webhook.StatusDisabled:
		v.DeliveryStatus.State = "disabled"
	case v.DeliveryStatus.ConsecutiveFailures > 0:
		v.DeliveryStatus.State = "failing"
	default:
		v.DeliveryStatus.State = "healthy"
	}
	return v, err
}

// GetWebhook returns one of the scope's endpoints (not deleted ones).
func GetWebhook(ctx context.Context, db eventstore.DB, s Scope, id string) (WebhookView, error) {
	v, err := scanWebhook(db.QueryRow(ctx, `SELECT `+webhookColumns+` FROM webhook_endpoints e
        WHERE e.id = $1 AND e.platform_id = $2 AND e.environment = $3 AND NOT e.deleted`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("webhook_endpoint", id)
	}
	return v, err
}

// ListWebhooks lists the scope's endpoints, newest first.
func ListWebhooks(ctx context.Context, db eventstore.DB, s Scope, page Page) (List[WebhookView], error) {
	rows, err := db.Query(ctx, `SELECT `+webhookColumns+` FROM webhook_endpoints e
        WHERE e.platform_id = $1 AND e.environment = $2 AND NOT e.deleted AND ($3 = '' OR e.id < $3)
        ORDER BY e.id DESC LIMIT $4`, s.PlatformID, s.Environment.String(), page.After, page.Limit+1)
	if err != nil {
		return List[WebhookView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookView, error) { return scanWebhook(r) })
	if err != nil {
		return List[WebhookView]{}, err
	}
	return NewList(items, page, func(v WebhookView) string { return v.ID }), nil
}

// AttemptView is one try of a delivery.
type AttemptView struct {
	AttemptedAt  Time    `json:"attempted_at"`
	StatusCode   *int    `json:"status_code"`
	DurationMS   int     `json:"duration_ms"`
	Error        *string `json:"error"`
	ResponseBody *string `json:"response_body"`
}

// DeliveryView is a delivery of one event to one endpoint.
type DeliveryView struct {
	ID            string        `json:"id"`
	Object        string        `json:"object"`
	EndpointID    string        `json:"webhook_endpoint_id"`
	EventID       string        `json:"event_id"`
	EventType     string        `json:"event_type"`
	ReplayID      *string       `json:"replay_id"` // the replay that made it; null for the fan-out's
	Status        string        `json:"status"`
	Attempts      []AttemptView `json:"attempts"`
	NextAttemptAt *Time         `json:"next_attempt_at"`
	CreatedAt     Time          `json:"created_at"`
}

// ListDeliveries lists an endpoint's deliveries, newest first.
func ListDeliveries(ctx context.Context, db eventstore.DB, s Scope, endpointID, status string, page Page) (List[DeliveryView], error) {
	if _, err := GetWebhook(ctx, db, s, endpointID); err != nil {
		return List[DeliveryView]{}, err
	}
	rows, err := db.Query(ctx, `SELECT d.id, d.endpoint_id, d.event_id, d.event_type, d.replay_id, d.status, d.next_attempt_at, d.created_at,
            coalesce((SELECT json_agg(json_build_object('attempted_at', a.attempted_at, 'status_code', a.status_code,
                'duration_ms', a.duration_ms, 'error', a.error, 'response_body', a.response_body) ORDER BY a.attempted_at)
                FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]')
        FROM webhook_deliveries d WHERE d.endpoint_id = $1 AND ($2 = '' OR d.status = $2) AND ($3 = '' OR d.id < $3)
        ORDER BY d.id DESC LIMIT $4`, endpointID, status, page.After, page.Limit+1)
	if err != nil {
		return List[DeliveryView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (DeliveryView, error) {
		var d DeliveryView
		var next *time.Time
		var created time.Time
		var attempts []struct {
			AttemptedAt  time.Time `json:"attempted_at"`
			StatusCode   *int      `json:"status_code"`
			DurationMS   int       `json:"duration_ms"`
			Error        *string   `json:"error"`
			ResponseBody *string   `json:"response_body"`
		}
		err := r.Scan(&d.ID, &d.EndpointID, &d.EventID, &d.EventType, &d.ReplayID, &d.Status, &next, &created, &attempts)
		d.Object, d.NextAttemptAt, d.CreatedAt = "webhook_delivery", NewTimePtr(next), NewTime(created)
		d.Attempts = []AttemptView{}
		for _, a := range attempts {
			d.Attempts = append(d.Attempts, AttemptView{AttemptedAt: NewTime(a.AttemptedAt), StatusCode: a.StatusCode,
				DurationMS: a.DurationMS, Error: a.Error, ResponseBody: a.ResponseBody})
		}
		return d, err
	})
	if err != nil {
		return List[DeliveryView]{}, err
	}
	return NewList(items, page, func(d DeliveryView) string { return d.ID }), nil
}

// WebhookReplayView is a replay of past events to an endpoint (POST
// /webhooks/:id/replay).
type WebhookReplayView struct {
	ID            string   `json:"id"`
	Object        string   `json:"object"`
	WebhookID     string   `json:"webhook_id"`
	CreatedAfter  Time     `json:"created_after"`
	CreatedBefore Time     `json:"created_before"`
	Types         []string `json:"types"` // null: the endpoint's subscriptions
	Replayed      int      `json:"replayed"`
	CreatedAt     Time     `json:"created_at"`
}

// GetWebhookReplay returns one of the scope's replays.
func GetWebhookReplay(ctx context.Context, db eventstore.DB, s Scope, id string) (WebhookReplayView, error) {
	v := WebhookReplayView{Object: "webhook_replay"}
	var after, before, created time.Time
	err := db.QueryRow(ctx, `SELECT id, endpoint_id, created_after, created_before, types, replayed, created_at
        FROM webhook_replays WHERE id = $1 AND platform_id = $2 AND environment = $3`, id, s.PlatformID, s.Environment.String()).
		Scan(&v.ID, &v.WebhookID, &after, &before, &v.Types, &v.Replayed, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("webhook_replay", id)
	}
	v.CreatedAfter, v.CreatedBefore, v.CreatedAt = NewTime(after), NewTime(before), NewTime(created)
	return v, err
}
