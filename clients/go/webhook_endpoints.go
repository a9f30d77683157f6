package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// WebhooksService is webhook endpoints (/webhooks). To verify a delivery's
// signature, see package webhooks.
type WebhooksService struct {
	c *Client
	// Deliveries: an endpoint's deliveries.
	Deliveries *WebhookDeliveriesService
}

// Create creates an endpoint (POST /webhooks); its Secret ("whsec_…") is in
// this answer only (an idempotent replay, same key and body, returns the
// endpoint without it).
func (s *WebhooksService) Create(ctx context.Context, body CreateWebhookRequest, opts ...RequestOption) (*WebhookEndpoint, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CreateWebhookWithResponse(ctx, &api.CreateWebhookParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// List walks every endpoint with its delivery status (GET /webhooks).
func (s *WebhooksService) List(ctx context.Context, params *ListWebhooksParams, opts ...RequestOption) iter.Seq2[WebhookEndpoint, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]WebhookEndpoint, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListWebhooksWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Retrieve returns an endpoint (GET /webhooks/{id}).
func (s *WebhooksService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*WebhookEndpoint, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetWebhookWithResponse(ctx, id, &api.GetWebhookParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Update changes an endpoint's url, events, description, status or retry
// policy (PATCH /webhooks/{id}).
func (s *WebhooksService) Update(ctx context.Context, id string, body UpdateWebhookRequest, opts ...RequestOption) (*WebhookEndpoint, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.UpdateWebhookWithResponse(ctx, id, &api.UpdateWebhookParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Delete deletes an endpoint (DELETE /webhooks/{id}).
func (s *WebhooksService) Delete(ctx context.Context, id string, opts ...RequestOption) (*DeletedWebhookEndpoint, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.DeleteWebhookWithResponse(ctx, id, &api.DeleteWebhookParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// RotateSecret gives an endpoint a new secret, in the answer; the old one
// keeps signing beside it for 24 hours (POST /webhooks/{id}/rotate-secret).
func (s *WebhooksService) RotateSecret(ctx context.Context, id string, opts ...RequestOption) (*WebhookEndpoint, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.RotateWebhookSecretWithResponse(ctx, id, &api.RotateWebhookSecretParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Test sends a webhook.test event to an endpoint (POST /webhooks/{id}/test).
func (s *WebhooksService) Test(ctx context.Context, id string, opts ...RequestOption) (*QueuedWebhookDelivery, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.TestWebhookWithResponse(ctx, id, &api.TestWebhookParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON202)
}

// Replay sends the platform's past events of a window to an endpoint again
// (POST /webhooks/{id}/replay): every event created at or after
// body.CreatedAfter and before body.CreatedBefore, of the types in body.Types
// (whether or not the endpoint subscribes to them) or, with Types nil, of the
// types the endpoint subscribes to now. Each becomes a new delivery (its own
// webhook-id, ReplayId naming this replay on the deliveries list) carrying
// the event as first sent, with its original id, signed and retried like any
// delivery. The answer's Replayed counts the deliveries queued.
//
// An Idempotency-Key is sent like on every POST (the caller's, see
// WithIdempotencyKey, or a generated one kept across retries): the same key
// and body answer the same replay and queue nothing again; another body, or
// the same body to another endpoint, is a ConflictError with code
// idempotency_conflict.
//
// CreatedBefore not after CreatedAfter is a BadRequestError (code
// invalid_request, Param created_before); an unknown type, "*" or
// webhook.test one with Param types[i]; a window holding more than 10,000
// selected events one with code replay_too_large, and nothing is queued:
// split the window. Another platform's or environment's endpoint, a deleted
// or unknown one, is a NotFoundError; a disabled endpoint a ConflictError
// with code invalid_state (enable it first).
func (s *WebhooksService) Replay(ctx context.Context, id string, body WebhookReplayRequest, opts ...RequestOption) (*WebhookReplay, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.ReplayWebhookWithResponse(ctx, id, &api.ReplayWebhookParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// WebhookDeliveriesService is an endpoint's deliveries.
type WebhookDeliveriesService struct{ c *Client }

// List walks every delivery of an endpoint (GET /webhooks/{id}/deliveries).
// A delivery made by a replay (WebhooksService.Replay) carries its ReplayId;
// the others' is nil.
func (s *WebhookDeliveriesService) List(ctx context.Context, webhookID string, params *ListWebhookDeliveriesParams, opts ...RequestOption) iter.Seq2[WebhookDelivery, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]WebhookDelivery, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListWebhookDeliveriesWithResponse(ctx, webhookID, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Retry sends a delivery again now
// (POST /webhooks/{id}/deliveries/{delivery_id}/retry).
func (s *WebhookDeliveriesService) Retry(ctx context.Context, webhookID, deliveryID string, opts ...RequestOption) (*QueuedWebhookDelivery, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.RetryWebhookDeliveryWithResponse(ctx, webhookID, deliveryID, &api.RetryWebhookDeliveryParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON202)
}
