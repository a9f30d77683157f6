package console

import (
	"net/http"
	"strings"
	"time"

	"github.com/opentreasury/treasury/projections/queries"
)

// RollGrace is how long a rolled key keeps working in the console's roll:
// the API's default (DefaultRollGrace), so that the platform has a day to
// deploy the new one.
const RollGrace = 24 * time.Hour

type keysData struct {
	List queries.List[queries.APIKeyView]
	// New is a key just made (created or rolled): its secret is shown
	// once, on this answer.
	New *queries.APIKeyView
	// Own is the session's own key, which revoking signs the session out.
	Own string
}

func (c *Console) keys(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderKeys(w, r, s, http.StatusOK, "", nil)
}

func (c *Console) renderKeys(w http.ResponseWriter, r *http.Request, s *session, status int, flash string, made *queries.APIKeyView) {
	ctx := r.Context()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	d := keysData{New: made, Own: s.keyID}
	if d.List, err = queries.ListAPIKeys(ctx, c.pool, s.platformID, s.env, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, status, "keys", view{Title: "API keys", Session: s, Nav: "keys", Flash: flash, Data: d})
}

func (c *Console) createKey(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	res, err := c.cfg.App.CreateAPIKey(ctx, meta(r, s), idempotency(r, s, "create_api_key"), s.platformID, s.env, s.env,
		strings.TrimSpace(r.PostFormValue("name")))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if res.Replayed {
		c.renderKeys(w, r, s, http.StatusOK, "This form was sent before: the key was made then, and its secret shown once.", nil)
		return
	}
	c.showNewKey(w, r, s, res.ID, res.Secret, "Key created. Copy its secret now: it is not shown again.")
}

func (c *Console) rollKey(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	res, err := c.cfg.App.RollAPIKey(ctx, meta(r, s), s.platformID, s.env, r.PathValue("id"), RollGrace)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.showNewKey(w, r, s, res.ID, res.Secret, "Key rolled: the old one works for 24 more hours. Copy the new secret now: it is not shown again.")
}

func (c *Console) showNewKey(w http.ResponseWriter, r *http.Request, s *session, id, secret, flash string) {
	k, err := queries.GetAPIKey(r.Context(), c.pool, s.platformID, id)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	k.Secret = secret
	c.renderKeys(w, r, s, http.StatusOK, flash, &k)
}

func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	if err := c.cfg.App.RevokeAPIKey(ctx, meta(r, s), s.platformID, s.env, id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	// Revoking the session's own key ends the session: the next page
	// finds the key gone and asks to sign in.
	redirectDone(w, r, s, "/console/keys", "Key revoked.")
}
