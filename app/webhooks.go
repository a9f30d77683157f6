package app

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// WebhookInput is a create or a PATCH of an endpoint: nil fields keep
// their value (on create: the defaults).
type WebhookInput struct {
	URL         *string
	Events      []string
	Description *string
	Status      *string
	RetryPolicy *platform.RetryPolicyPatch
}

// NewSecret makes an endpoint secret: whsec_ and 32 random bytes in
// base64 (the Standard Webhooks form).
func NewSecret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// CreateWebhook registers an endpoint and returns its id and secret.
// With an idempotency key, a replay answers the endpoint without its
// secret: shown once, it is rotated, not shown again.
func (a *App) CreateWebhook(ctx context.Context, meta Meta, idem *Idempotency, c Caller, in WebhookInput) (Result, error) {
	meta = withIdempotencyKey(meta, idem)
	return a.execute(ctx, command{idem: idem}, func(ctx context.Context, tx *commandTx) (Result, error) {
		settings, err := queries.GetSettings(ctx, tx, c.PlatformID, c.Environment)
		if err != nil {
			return Result{}, err
		}
		cfg := webhook.Config{Events: []string{"*"}, Status: webhook.StatusEnabled, RetryPolicy: settings.WebhookRetryPolicy}
		if err := applyWebhookInput(&cfg, in); err != nil {
			return Result{}, err
		}
		if in.URL == nil {
			return Result{}, domain.Invalid("url", "url is required")
		}
		if err := cfg.Validate(c.Environment); err != nil {
			return Result{}, err
		}
		id := domain.NewID(domain.PrefixWebhook)
		secret := NewSecret()
		at := now()
		if _, err := appendAndProject(ctx, tx, webhookStream(c, id), 0, meta, []domain.Event{webhook.Created{
			EndpointID: id, PlatformID: c.PlatformID, Environment: c.Environment, Config: cfg, At: at}}); err != nil {
			return Result{}, err
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES ($1, $2, $3)`, id, secret, at)
		return Result{ID: id, Secret: secret}, err
	})
}

func applyWebhookInput(cfg *webhook.Config, in WebhookInput) error {
	if in.URL != nil {
		cfg.URL = *in.URL
	}
	if in.Events != nil {
		cfg.Events = in.Events
	}
	if in.Description != nil {
		cfg.Description = *in.Description
	}
	if in.Status != nil {
		cfg.Status = *in.Status
	}
	if p := in.RetryPolicy; p != nil {
		if p.MaxAttempts != nil {
			cfg.RetryPolicy.MaxAttempts = *p.MaxAttempts
		}
		if p.InitialDelaySeconds != nil {
			cfg.RetryPolicy.InitialDelaySeconds = *p.InitialDelaySeconds
		}
		if p.MaxDelaySeconds != nil {
			cfg.RetryPolicy.MaxDelaySeconds = *p.MaxDelaySeconds
		}
	}
	return nil
}

// changeWebhook loads an endpoint of the caller and appends what decide returns.
func (a *App) changeWebhook(ctx context.Context, meta Meta, c Caller, id string, decide func(pgx.Tx, webhook.State) ([]domain.Event, error)) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, change(ctx, tx, meta, webhooks, c, id, func(s webhook.State) ([]domain.Event, error) {
			return decide(tx, s)
		})
	})
	return err
}

// UpdateWebhook is PATCH /webhooks/:id.
func (a *App) UpdateWebhook(ctx context.Context, meta Meta, c Caller, id string, in WebhookInput) error {
	return a.changeWebhook(ctx, meta, c, id, func(_ pgx.Tx, s webhook.State) ([]domain.Event, error) {
		cfg := s.Config
		cfg.Events = append([]string(nil), cfg.Events...)
		if err := applyWebhookInput(&cfg, in); err != nil {
			return nil, err
		}
		if err := cfg.Validate(c.Environment); err != nil {
			return nil, err
		}
		return []domain.Event{webhook.Updated{Config: cfg, At: now()}}, nil
	})
}

// DisableWebhook turns an endpoint off (the sender does it on a 410).
func (a *App) DisableWebhook(ctx context.Context, meta Meta, c Caller, id, reason string) error {
	return a.changeWebhook(ctx, meta, c, id, func(_ pgx.Tx, s webhook.State) ([]domain.Event, error) {
		if s.Config.Status == webhook.StatusDisabled {
			return nil, nil
		}
		cfg := s.Config
		cfg.Status = webhook.StatusDisabled
		return []domain.Event{webhook.Updated{Config: cfg, Reason: reason, At: now()}}, nil
	})
}

// DeleteWebhook stops deliveries to an endpoint for good.
func (a *App) DeleteWebhook(ctx context.Context, meta Meta, c Caller, id string) error {
	return a.changeWebhook(ctx, meta, c, id, func(tx pgx.Tx, _ webhook.State) ([]domain.Event, error) {
		_, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL
            WHERE endpoint_id = $1 AND status = 'pending'`, id)
		return []domain.Event{webhook.Deleted{At: now()}}, err
	})
}

// RotateWebhookSecret issues a new secret; the old one keeps signing
// beside it for 24 hours.
func (a *App) RotateWebhookSecret(ctx context.Context, meta Meta, c Caller, id string) (Result, error) {
	secret := NewSecret()
	err := a.changeWebhook(ctx, meta, c, id, func(tx pgx.Tx, _ webhook.State) ([]domain.Event, error) {
		at := now()
		expires := at.Add(webhook.SecretGrace)
		b := &pgx.Batch{}
		b.Queue(`UPDATE webhook_secrets SET expires_at = LEAST(coalesce(expires_at, $2), $2) WHERE endpoint_id = $1 AND (expires_at IS NULL OR expires_at > $3)`, id, expires, at)
		b.Queue(`INSERT INTO webhook_secrets (endpoint_id, secret, created_at) VALUES ($1, $2, $3)`, id, secret, at)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return nil, err
		}
		return []domain.Event{webhook.SecretRotated{OldExpiresAt: expires, At: at}}, nil
	})
	return Result{ID: id, Secret: secret}, err
}

// TestWebhook queues a webhook.test event for one endpoint.
func (a *App) TestWebhook(ctx context.Context, meta Meta, c Caller, id string) (Result, error) {
	var res Result
	err := a.changeWebhook(ctx, meta, c, id, func(tx pgx.Tx, s webhook.State) ([]domain.Event, error) {
		at := now()
		eventID := domain.NewID(domain.PrefixEvent)
		data, _ := json.Marshal(map[string]any{"object": map[string]any{"id": id, "object": "webhook_endpoint", "url": s.Config.URL}})
		payload, _ := json.Marshal(queries.NewPublicEvent(eventID, "webhook.test", c.PlatformID, c.Environment.String(), at, data))
		res.ID = domain.NewID(domain.PrefixDelivery)
		_, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (id, endpoint_id, event_id, event_type, payload, status,
            next_attempt_at, committed_at, created_at) VALUES ($1, $2, $3, 'webhook.test', $4, 'pending', $5, $5, $5)`,
			res.ID, id, eventID, payload, at)
		return nil, err
	})
	if err == nil {
		a.Notifier.NotifyOf(eventstore.TopicDeliveries)
	}
	return res, err
}

// RetryDelivery sends a delivery again now, whatever its state.
func (a *App) RetryDelivery(ctx context.Context, meta Meta, c Caller, endpointID, deliveryID string) error {
	err := a.changeWebhook(ctx, meta, c, endpointID, func(tx pgx.Tx, _ webhook.State) ([]domain.Event, error) {
		tag, err := tx.Exec(ctx, `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $3
            WHERE id = $1 AND endpoint_id = $2`, deliveryID, endpointID, time.Now())
		if err == nil && tag.RowsAffected() == 0 {
			err = domain.NotFound("webhook_delivery", deliveryID)
		}
		return nil, err
	})
	if err == nil {
		a.Notifier.NotifyOf(eventstore.TopicDeliveries)
	}
	return err
}

func webhookStream(c Caller, id string) eventstore.Stream {
	return webhooks.stream(c, id)
}
