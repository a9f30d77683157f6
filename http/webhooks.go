package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/projections/queries"
)

type webhookRequest struct {
	URL         *string                    `json:"url"`
	Events      []string                   `json:"events"`
	Description *string                    `json:"description"`
	Status      *string                    `json:"status"`
	RetryPolicy *platform.RetryPolicyPatch `json:"retry_policy"`
}

func (r webhookRequest) input() app.WebhookInput {
	return app.WebhookInput{URL: r.URL, Events: r.Events, Description: r.Description, Status: r.Status, RetryPolicy: r.RetryPolicy}
}

func webhookID(c echo.Context) (string, error) {
	return pathID(c, "id", domain.PrefixWebhook, "webhook_endpoint")
}

// showWebhook answers with an endpoint, and its secret when it is new.
func (s *Server) showWebhook(c echo.Context, status int, id, secret string) error {
	v, err := queries.GetWebhook(c.Request().Context(), s.pool, scopeOf(c), id)
	if err != nil {
		return err
	}
	v.Secret = secret
	return c.JSON(status, v)
}

// POST /v1/webhooks
func (s *Server) createWebhook(c echo.Context) error {
	var req webhookRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	idem, err := platformIdempotency(c, "create_webhook", body)
	if err != nil {
		return err
	}
	res, err := s.app.CreateWebhook(c.Request().Context(), meta(c), idem, callerOf(c), req.input())
	if err != nil {
		return err
	}
	v, err := queries.GetWebhook(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	v.Secret = res.Secret // none on a replay: shown once
	return created(c, res, v)
}

// GET /v1/webhooks
func (s *Server) listWebhooks(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	list, err := queries.ListWebhooks(c.Request().Context(), s.pool, scopeOf(c), pg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// GET /v1/webhooks/:id
func (s *Server) getWebhook(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	return s.showWebhook(c, http.StatusOK, id, "")
}

// PATCH /v1/webhooks/:id
func (s *Server) updateWebhook(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	var req webhookRequest
	if _, err := bind(c, &req); err != nil {
		return err
	}
	if err := s.app.UpdateWebhook(c.Request().Context(), meta(c), callerOf(c), id, req.input()); err != nil {
		return err
	}
	return s.showWebhook(c, http.StatusOK, id, "")
}

// DELETE /v1/webhooks/:id
func (s *Server) deleteWebhook(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	v, err := queries.GetWebhook(c.Request().Context(), s.pool, scopeOf(c), id)
	if err != nil {
		return err
	}
	if err := s.app.DeleteWebhook(c.Request().Context(), meta(c), callerOf(c), id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": v.ID, "object": "webhook_endpoint", "deleted": true})
}

// POST /v1/webhooks/:id/rotate-secret
func (s *Server) rotateWebhookSecret(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	res, err := s.app.RotateWebhookSecret(c.Request().Context(), meta(c), callerOf(c), id)
	if err != nil {
		return err
	}
	return s.showWebhook(c, http.StatusOK, id, res.Secret)
}

// POST /v1/webhooks/:id/test
func (s *Server) testWebhook(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	res, err := s.app.TestWebhook(c.Request().Context(), meta(c), callerOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": res.ID, "object": "webhook_delivery", "event_type": "webhook.test", "status": "pending"})
}

// GET /v1/webhooks/:id/deliveries
func (s *Server) listDeliveries(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	pg, err := page(c)
	if err != nil {
		return err
	}
	status := c.QueryParam("status")
	if status != "" && status != "pending" && status != "succeeded" && status != "failed" {
		return domain.Invalid("status", "status must be pending, succeeded or failed")
	}
	list, err := queries.ListDeliveries(c.Request().Context(), s.pool, scopeOf(c), id, status, pg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// POST /v1/webhooks/:id/deliveries/:delivery_id/retry
func (s *Server) retryDelivery(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	deliveryID, err := pathID(c, "delivery_id", domain.PrefixDelivery, "webhook_delivery")
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	if err := s.app.RetryDelivery(c.Request().Context(), meta(c), callerOf(c), id, deliveryID); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]any{"id": deliveryID, "object": "webhook_delivery", "status": "pending"})
}

type webhookReplayRequest struct {
	CreatedAfter  *string  `json:"created_after"`
	CreatedBefore *string  `json:"created_before"`
	Types         []string `json:"types"`
}

// request reads the window (RFC 3339 times) and checks the request.
func (req webhookReplayRequest) request() (webhook.ReplayRequest, error) {
	var r webhook.ReplayRequest
	var err error
	if req.CreatedAfter == nil {
		return r, domain.Invalid("created_after", "created_after is required (an RFC 3339 time)")
	}
	if r.CreatedAfter, err = parseTime("created_after", *req.CreatedAfter); err != nil {
		return r, err
	}
	if req.CreatedBefore == nil {
		return r, domain.Invalid("created_before", "created_before is required (an RFC 3339 time)")
	}
	if r.CreatedBefore, err = parseTime("created_before", *req.CreatedBefore); err != nil {
		return r, err
	}
	r.Types = req.Types
	return r, r.Validate()
}

// POST /v1/webhooks/:id/replay
func (s *Server) replayWebhook(c echo.Context) error {
	id, err := webhookID(c)
	if err != nil {
		return err
	}
	var req webhookReplayRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	r, err := req.request()
	if err != nil {
		return err
	}
	// The key covers the endpoint too: the same body replayed to another
	// endpoint is another request.
	idem, err := platformIdempotency(c, "replay_webhook:"+id, body)
	if err != nil {
		return err
	}
	res, err := s.app.ReplayWebhook(c.Request().Context(), meta(c), idem, callerOf(c), id, r)
	if err != nil {
		return err
	}
	v, err := queries.GetWebhookReplay(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}
