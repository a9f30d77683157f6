package console

import (
	"net/http"
	"strings"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/projections/queries"
)

type webhooksData struct {
	List queries.List[queries.WebhookView]
}

func (c *Console) webhooks(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	var d webhooksData
	if d.List, err = queries.ListWebhooks(ctx, c.pool, s.scope(), p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "webhooks", view{Title: "Webhooks", Session: s, Nav: "webhooks", Data: d})
}

func (c *Console) createWebhook(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	in := app.WebhookInput{}
	u := strings.TrimSpace(r.PostFormValue("url"))
	in.URL = &u
	if d := strings.TrimSpace(r.PostFormValue("description")); d != "" {
		in.Description = &d
	}
	res, err := c.cfg.App.CreateWebhook(ctx, meta(r, s), idempotency(r, s, "create_webhook"), s.caller(), in)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if res.Replayed {
		redirectDone(w, r, s, "/console/webhooks/"+res.ID, "This form was sent before: the endpoint was made then.")
		return
	}
	c.renderWebhook(w, r, s, res.ID, "Endpoint created. Copy its signing secret now: it is not shown again.", res.Secret)
}

type webhookData struct {
	Endpoint   queries.WebhookView
	Deliveries queries.List[queries.DeliveryView]
	Status     string // the deliveries' filter
	// Secret is a signing secret just made, shown once.
	Secret string
}

func (c *Console) webhook(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderWebhook(w, r, s, r.PathValue("id"), "", "")
}

func (c *Console) renderWebhook(w http.ResponseWriter, r *http.Request, s *session, id, flash, secret string) {
	ctx := r.Context()
	d := webhookData{Status: r.URL.Query().Get("status"), Secret: secret}
	var err error
	if d.Endpoint, err = queries.GetWebhook(ctx, c.pool, s.scope(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	switch d.Status {
	case "", "pending", "succeeded", "failed":
	default:
		c.fail(w, r, s, http.StatusBadRequest, "There is no delivery status "+d.Status+".")
		return
	}
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if d.Deliveries, err = queries.ListDeliveries(ctx, c.pool, s.scope(), id, d.Status, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "webhook", view{Title: "Endpoint " + d.Endpoint.URL, Session: s, Nav: "webhooks", Flash: flash, Data: d})
}

func (c *Console) testWebhook(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	if _, err := c.cfg.App.TestWebhook(ctx, meta(r, s), s.caller(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, s, "/console/webhooks/"+id, "A test event is on its way: its delivery is listed below.")
}

func (c *Console) rotateWebhookSecret(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	res, err := c.cfg.App.RotateWebhookSecret(ctx, meta(r, s), s.caller(), id)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.renderWebhook(w, r, s, id, "Secret rotated: deliveries are signed with both secrets for 24 hours. Copy the new one now: it is not shown again.", res.Secret)
}

func (c *Console) retryDelivery(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	c.answer(w, r, s, c.cfg.App.RetryDelivery(ctx, meta(r, s), s.caller(), id, r.PathValue("delivery")), "/console/webhooks/"+id, "Delivery queued again.")
}
