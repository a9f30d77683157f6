package console

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

type paymentsData struct {
	List     queries.List[queries.PaymentView]
	Status   string
	Statuses []string
}

func (c *Console) payments(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	d := paymentsData{Status: r.URL.Query().Get("status"), Statuses: payment.Statuses}
	if d.Status != "" && !slices.Contains(payment.Statuses, d.Status) {
		c.fail(w, r, s, http.StatusBadRequest, "There is no payment status "+d.Status+".")
		return
	}
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if d.List, err = queries.ListPayments(ctx, c.pool, s.scope(), queries.PaymentFilter{Status: d.Status}, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "payments", view{Title: "Payments", Session: s, Nav: "payments", Data: d})
}

// step is one event of a payment's timeline.
type step struct {
	Type string
	At   string
	By   string
}

type paymentData struct {
	Payment    queries.PaymentView
	Timeline   []step
	Cancelable bool
	// Simulable: a sandbox payment in flight, which the simulations
	// settle or fail; FailCodes are its rail's codes to fail it with.
	Simulable bool
	FailCodes []string
}

func (c *Console) payment(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	var d paymentData
	var err error
	if d.Payment, err = queries.GetPayment(ctx, c.pool, s.scope(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	// The timeline is the payment's stream, as the log holds it.
	recs, _, err := eventstore.Load(ctx, c.pool, payment.StreamID(id))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	for _, rec := range recs {
		d.Timeline = append(d.Timeline, step{Type: rec.Type, At: rec.RecordedAt.UTC().Format("2006-01-02 15:04:05.000 UTC"), By: actorOf(rec)})
	}
	d.Cancelable = payment.Cancelable(d.Payment.Status)
	if s.env == domain.Sandbox && (d.Payment.Status == payment.StatusPending || d.Payment.Status == payment.StatusSubmitted) {
		d.Simulable = true
		d.FailCodes = failCodes(d.Payment.Rail)
	}
	c.render(w, r, http.StatusOK, "payment", view{Title: "Payment " + id, Session: s, Nav: "payments", Data: d})
}

// actorOf is who appended an event, from its metadata: a key id, the
// operator, or one of the service's own processes.
func actorOf(rec eventstore.RecordedEvent) string {
	var m eventstore.Metadata
	if err := json.Unmarshal(rec.Metadata, &m); err != nil || m.Actor == "" {
		return "the service"
	}
	return m.Actor
}

func (c *Console) cancelPayment(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	c.answer(w, r, s, c.cfg.App.CancelPayment(ctx, meta(r, s), s.caller(), id), "/console/payments/"+id, "Payment canceled.")
}

func (c *Console) approvePayment(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	// The approving key must not be the creating one (app's rule): the
	// session acts with its key's id.
	c.answer(w, r, s, c.cfg.App.ApprovePayment(ctx, meta(r, s), s.caller(), id), "/console/payments/"+id, "Payment approved.")
}

func (c *Console) denyPayment(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id := r.PathValue("id")
	c.answer(w, r, s, c.cfg.App.DenyPayment(ctx, meta(r, s), s.caller(), id, strings.TrimSpace(r.PostFormValue("reason"))), "/console/payments/"+id, "Payment denied.")
}

// simulatePayment completes or fails a sandbox payment, as the
// simulations API does.
func (c *Console) simulatePayment(w http.ResponseWriter, r *http.Request, s *session) {
	ctx := r.Context()
	id, caller := r.PathValue("id"), s.caller()
	var err error
	done := "Payment completed (simulated)."
	if code := r.PostFormValue("network_code"); code != "" {
		err = c.cfg.App.FailPayment(ctx, meta(r, s), &caller, id, code)
		done = "Payment failed with " + code + " (simulated)."
	} else {
		err = c.cfg.App.CompletePayment(ctx, meta(r, s), &caller, id)
	}
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, s, "/console/payments/"+id, done)
}

// failCodes are a few codes a simulated failure may use: the common
// returns of the rail.
func failCodes(rail string) []string {
	if strings.HasPrefix(rail, "ach") {
		return []string{"R01", "R02", "R03", "R04", "R16", "R29"}
	}
	return []string{"AC03", "AC04", "AC06", "AM04", "9912"}
}
