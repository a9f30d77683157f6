package console

import (
	"net/http"
	"strings"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type eventsData struct {
	List queries.List[queries.PublicEventView]
	Type string
}

// events lists the public events, as GET /v1/events does (and, like it,
// after the projections have caught up with what was written before).
func (c *Console) events(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d := eventsData{Type: strings.TrimSpace(r.URL.Query().Get("type"))}
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	err = c.cfg.App.ReadList(ctx, app.ListRead{Projected: true}, func(db eventstore.DB) (err error) {
		d.List, err = queries.ListEvents(ctx, db, s.scope(), queries.EventFilter{Type: d.Type}, p)
		return err
	})
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "events", view{Title: "Events", Session: s, Nav: "events", Data: d})
}

type kybData struct {
	List    queries.List[queries.KYBView]
	Sandbox bool // the sandbox's simulated decisions may be taken here
}

func (c *Console) kybList(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	d := kybData{Sandbox: s.env == domain.Sandbox}
	if d.List, err = queries.ListKYB(ctx, c.pool, s.scope(), queries.KYBFilter{Status: r.URL.Query().Get("status")}, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "kyb", view{Title: "KYB verifications", Session: s, Nav: "kyb", Data: d})
}

// decision reads a manual decision's form: approve or reject, with a
// reason for a rejection (shown to the platform).
func decision(r *http.Request, id string) (kyb.Decide, error) {
	var reasons []kyb.Reason
	if msg := strings.TrimSpace(r.PostFormValue("reason")); msg != "" {
		reasons = []kyb.Reason{{Code: "manual_review", Message: msg}}
	}
	return kyb.ManualDecision(id, r.PostFormValue("outcome"), reasons)
}

// simulateKYBDecision decides a sandbox verification in review, as POST
// /v1/simulations/kyb/:id/decision does.
func (c *Console) simulateKYBDecision(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d, err := decision(r, r.PathValue("id"))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	caller := s.caller()
	c.answer(w, r, s, c.cfg.App.DecideKYB(ctx, meta(r, s), &caller, d), "/console/kyb", "Verification "+d.Outcome+".")
}
