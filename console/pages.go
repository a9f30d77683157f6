package console

import (
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// pageSize is how many rows a list page shows.
const pageSize = 25

var funcs = template.FuncMap{
	"money": money,
	"when":  func(t queries.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"title": func(s string) string { return strings.ReplaceAll(s, "_", " ") },
	"last4": func(s string) string { return s[max(0, len(s)-4):] },
}

// money is cents as dollars: 123456 → $1,234.56.
func money(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	dollars := fmt.Sprint(cents / 100)
	var b strings.Builder
	for i, d := range dollars {
		if i > 0 && (len(dollars)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return fmt.Sprintf("%s$%s.%02d", sign, b.String(), cents%100)
}

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if s, err := c.loadSession(r.Context(), r); err == nil && s != nil {
		http.Redirect(w, r, "/console/", http.StatusSeeOther)
		return
	}
	c.renderSignIn(w, r, http.StatusOK, "")
}

// renderSignIn shows the sign-in form with a fresh double-submit token.
func (c *Console) renderSignIn(w http.ResponseWriter, r *http.Request, status int, problem string) {
	tok := token()
	setCookie(w, r, signInCookie, tok, 3600)
	c.render(w, r, status, "sign_in", view{Title: "Sign in", Error: problem, Data: tok})
}

// signIn exchanges a key for a session: a platform key (the platform's
// view, in the key's environment) or the operator key. The key itself is
// kept nowhere: the session holds its hash.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	addr, now := clientAddress(r), time.Now()
	form, err := r.Cookie(signInCookie)
	if err != nil || !sameOrigin(r) || !equal(r.PostFormValue("csrf"), form.Value) {
		c.renderSignIn(w, r, http.StatusForbidden, "This form is out of date. Sign in again.")
		return
	}
	if c.signIns.blocked(addr, now) {
		w.Header().Set("Retry-After", "60")
		c.renderSignIn(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from this address. Wait a minute and try again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	key := strings.TrimSpace(r.PostFormValue("key"))
	var s session
	switch {
	case c.cfg.OperatorKey != "" && equal(hashOf(key), hashOf(c.cfg.OperatorKey)):
		s = session{operator: true, keyHash: hashOf(key)}
	case len(key) <= 200 && (strings.HasPrefix(key, "sk_sandbox_") || strings.HasPrefix(key, "sk_live_")):
		hash := app.HashSecret(key)
		cred, found, err := queries.CredentialByHash(ctx, c.pool, hash)
		if err != nil {
			c.failWith(w, r, nil, err)
			return
		}
		if found {
			s = session{keyHash: hash, keyID: cred.KeyID, platformID: cred.PlatformID, env: cred.Environment}
		}
	}
	if s.keyHash == "" {
		c.signIns.failed(addr, now)
		c.renderSignIn(w, r, http.StatusUnauthorized, "That key is not valid: it is unknown, revoked or expired.")
		return
	}
	if err := c.createSession(ctx, w, r, s); err != nil {
		c.failWith(w, r, nil, err)
		return
	}
	setCookie(w, r, signInCookie, "", -1)
	http.Redirect(w, r, "/console/", http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request, s *session) {
	if err := c.endSession(r.Context(), s.idHash); err != errNoSession {
		c.failWith(w, r, s, err)
		return
	}
	setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
}

func (c *Console) home(w http.ResponseWriter, r *http.Request, s *session) {
	if s.operator {
		http.Redirect(w, r, "/console/platforms", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, "/console/accounts", http.StatusSeeOther)
}

// page reads a list page's cursor.
func page(r *http.Request) (queries.Page, error) {
	p := queries.Page{Limit: pageSize}
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		after, err := queries.DecodeCursor(cur)
		if err != nil {
			return p, err
		}
		p.After = after
	}
	return p, nil
}

type accountsData struct {
	List      queries.List[queries.VirtualAccountView]
	EntityRef string
	Status    string
	Statuses  []string
}

func (c *Console) accounts(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	q := r.URL.Query()
	d := accountsData{EntityRef: strings.TrimSpace(q.Get("entity_ref")), Status: q.Get("status"),
		Statuses: []string{account.StatusActive.String(), account.StatusFrozen.String(), account.StatusClosed.String()}}
	if _, ok := account.ParseStatus(d.Status); d.Status != "" && !ok {
		c.fail(w, r, s, http.StatusBadRequest, "There is no account status "+d.Status+".")
		return
	}
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if d.List, err = queries.ListVirtualAccounts(ctx, c.pool, s.scope(), queries.AccountFilter{EntityRef: d.EntityRef, Status: d.Status}, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "accounts", view{Title: "Accounts", Session: s, Nav: "accounts", Data: d})
}

type accountData struct {
	Account      queries.VirtualAccountView
	Transactions queries.List[queries.TransactionView]
	Payments     queries.List[queries.PaymentView]
}

func (c *Console) account(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	id := r.PathValue("id")
	var d accountData
	var err error
	if d.Account, err = queries.GetVirtualAccount(ctx, c.pool, s.scope(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if d.Transactions, err = queries.ListTransactions(ctx, c.pool, s.scope(), id, queries.TransactionFilter{}, queries.Page{Limit: pageSize}); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	if d.Payments, err = queries.ListPayments(ctx, c.pool, s.scope(), queries.PaymentFilter{VirtualAccountID: id}, queries.Page{Limit: 10}); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "account", view{Title: "Account " + d.Account.EntityRef, Session: s, Nav: "accounts", Data: d})
}

func (c *Console) freeze(w http.ResponseWriter, r *http.Request, s *session) {
	c.accountAction(w, r, s, "frozen", c.cfg.App.FreezeVirtualAccount)
}

func (c *Console) unfreeze(w http.ResponseWriter, r *http.Request, s *session) {
	c.accountAction(w, r, s, "unfrozen", c.cfg.App.UnfreezeVirtualAccount)
}

func (c *Console) accountAction(w http.ResponseWriter, r *http.Request, s *session, done string,
	act func(context.Context, app.Meta, app.Caller, string) error) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	id := r.PathValue("id")
	if err := act(ctx, meta(r, s), s.caller(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, "/console/accounts/"+id, "Account "+done+".")
}

type paymentsData struct {
	List     queries.List[queries.PaymentView]
	Status   string
	Statuses []string
}

func (c *Console) payments(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
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
}

func (c *Console) payment(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
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
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	id := r.PathValue("id")
	if err := c.cfg.App.CancelPayment(ctx, meta(r, s), s.caller(), id); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, "/console/payments/"+id, "Payment canceled.")
}

type platformsData struct {
	List queries.List[queries.PlatformView]
	// Secret is the sandbox key an approval just minted, shown once.
	Secret string
}

func (c *Console) platforms(w http.ResponseWriter, r *http.Request, s *session) {
	c.renderPlatforms(w, r, s, "", "")
}

func (c *Console) renderPlatforms(w http.ResponseWriter, r *http.Request, s *session, flash, secret string) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	p, err := page(r)
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	d := platformsData{Secret: secret}
	if d.List, err = queries.ListPlatforms(ctx, c.pool, p); err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.render(w, r, http.StatusOK, "platforms", view{Title: "Platforms", Session: s, Nav: "platforms", Flash: flash, Data: d})
}

// approvePlatform approves a platform and shows its first sandbox key
// once, on the page the form posted to (never in a URL).
func (c *Console) approvePlatform(w http.ResponseWriter, r *http.Request, s *session) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	res, err := c.cfg.App.ApprovePlatform(ctx, meta(r, s), r.PathValue("id"))
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	c.renderPlatforms(w, r, s, "Platform approved. Its sandbox key is shown once, below.", res.Secret)
}
