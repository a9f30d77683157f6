// Package console is the web console (issue #19): server-rendered pages,
// made a little livelier with htmx (vendored, embedded), for a platform's
// team (its accounts, payments, …, in one environment) and for the
// operator (platforms). A key is exchanged at sign-in for a session
// (session.go); pages read through projections/queries and act through
// app, with the session's platform and environment, exactly as the API
// does with the key's. It imports neither http nor echo: cmd mounts it on
// the API's server at /console.
package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	apihttp "github.com/opentreasury/treasury/http"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// Config is what the console needs.
type Config struct {
	App *app.App
	// OperatorKey is TREASURY_OPERATOR_KEY: signing in with it opens the
	// operator's view; empty, nobody can.
	OperatorKey string
}

// Console serves /console.
type Console struct {
	cfg     Config
	pool    *pgxpool.Pool
	log     *slog.Logger
	pages   map[string]*template.Template
	mux     *http.ServeMux
	signIns *failureLimiter
}

// New builds the console; its templates are parsed once, here.
func New(cfg Config) (*Console, error) {
	c := &Console{cfg: cfg, pool: cfg.App.Pool, log: cfg.App.Log, pages: map[string]*template.Template{},
		mux: http.NewServeMux(), signIns: newFailureLimiter()}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		page := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if page == "layout" {
			continue
		}
		t, err := template.New(page).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		c.pages[page] = t
	}
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	static, _ := fs.Sub(staticFiles, "static")
	files := http.StripPrefix("/console/static/", http.FileServerFS(static))
	c.mux.Handle("GET /console/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	}))
	c.mux.HandleFunc("GET /console/sign-in", c.signInPage)
	c.mux.HandleFunc("POST /console/sign-in", c.signIn)
	c.mux.HandleFunc("POST /console/sign-out", c.signedIn(c.signOut))
	c.mux.HandleFunc("GET /console/{$}", c.signedIn(c.home))

	// A platform's view.
	c.mux.HandleFunc("GET /console/accounts", c.platformOnly(c.accounts))
	c.mux.HandleFunc("GET /console/accounts/{id}", c.platformOnly(c.account))
	c.mux.HandleFunc("POST /console/accounts/{id}/freeze", c.platformOnly(c.freeze))
	c.mux.HandleFunc("POST /console/accounts/{id}/unfreeze", c.platformOnly(c.unfreeze))
	c.mux.HandleFunc("GET /console/payments", c.platformOnly(c.payments))
	c.mux.HandleFunc("GET /console/payments/{id}", c.platformOnly(c.payment))
	c.mux.HandleFunc("POST /console/payments/{id}/cancel", c.platformOnly(c.cancelPayment))

	c.mux.HandleFunc("GET /console/accounts/{id}/statements/{month}", c.platformOnly(c.statement))
	c.mux.HandleFunc("POST /console/accounts/{id}/simulate-inbound", c.sandboxOnly(c.simulateInbound))
	c.mux.HandleFunc("POST /console/payments/{id}/approve", c.platformOnly(c.approvePayment))
	c.mux.HandleFunc("POST /console/payments/{id}/deny", c.platformOnly(c.denyPayment))
	c.mux.HandleFunc("POST /console/payments/{id}/simulate", c.sandboxOnly(c.simulatePayment))
	c.mux.HandleFunc("GET /console/ledger", c.platformOnly(c.ledgerPage))
	c.mux.HandleFunc("POST /console/ledger/journal-entries", c.platformOnly(c.postJournalEntry))
	c.mux.HandleFunc("GET /console/keys", c.platformOnly(c.keys))
	c.mux.HandleFunc("POST /console/keys", c.platformOnly(c.createKey))
	c.mux.HandleFunc("POST /console/keys/{id}/roll", c.platformOnly(c.rollKey))
	c.mux.HandleFunc("POST /console/keys/{id}/revoke", c.platformOnly(c.revokeKey))
	c.mux.HandleFunc("GET /console/webhooks", c.platformOnly(c.webhooks))
	c.mux.HandleFunc("POST /console/webhooks", c.platformOnly(c.createWebhook))
	c.mux.HandleFunc("GET /console/webhooks/{id}", c.platformOnly(c.webhook))
	c.mux.HandleFunc("POST /console/webhooks/{id}/test", c.platformOnly(c.testWebhook))
	c.mux.HandleFunc("POST /console/webhooks/{id}/rotate-secret", c.platformOnly(c.rotateWebhookSecret))
	c.mux.HandleFunc("POST /console/webhooks/{id}/deliveries/{delivery}/retry", c.platformOnly(c.retryDelivery))
	c.mux.HandleFunc("GET /console/events", c.platformOnly(c.events))
	c.mux.HandleFunc("GET /console/kyb", c.platformOnly(c.kybList))
	c.mux.HandleFunc("POST /console/kyb/{id}/simulate-decision", c.sandboxOnly(c.simulateKYBDecision))

	// The operator's view.
	c.mux.HandleFunc("GET /console/platforms", c.operatorOnly(c.platforms))
	c.mux.HandleFunc("POST /console/platforms/{id}/approve", c.operatorOnly(c.approvePlatform))
	c.mux.HandleFunc("GET /console/platforms/{id}", c.operatorOnly(c.platform))
	c.mux.HandleFunc("POST /console/platforms/{id}/enable-live", c.operatorOnly(c.enableLive))
	c.mux.HandleFunc("POST /console/platforms/{id}/fees", c.operatorOnly(c.configurePlatform))
	c.mux.HandleFunc("GET /console/reviews", c.operatorOnly(c.reviews))
	c.mux.HandleFunc("POST /console/reviews/{id}/decision", c.operatorOnly(c.decideReview))
	c.mux.HandleFunc("GET /console/ach-files", c.operatorOnly(c.achFiles))
	c.mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, nil, http.StatusNotFound, "There is no such page.")
	})
}

// ServeHTTP serves /console and everything under it.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Every asset is this origin's: no inline script or style, no frames.
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if r.URL.Path == "/console" {
		http.Redirect(w, r, "/console/", http.StatusFound)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// sessionHandler is a page of a signed-in session.
type sessionHandler func(w http.ResponseWriter, r *http.Request, s *session)

// signedIn loads the session, or sends the browser to sign in; a request
// that changes anything must carry the session's CSRF token (403
// otherwise, nothing done).
func (c *Console) signedIn(next sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := c.loadSession(r.Context(), r)
		if errors.Is(err, errNoSession) {
			setCookie(w, r, sessionCookie, "", -1)
			c.toSignIn(w, r)
			return
		}
		if err != nil {
			c.fail(w, r, nil, http.StatusInternalServerError, "")
			c.log.Error("console session", "err", err)
			return
		}
		// Every page's work is bounded.
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		r = r.WithContext(ctx)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		}
		if !cleanInput(r) {
			c.fail(w, r, s, http.StatusBadRequest, "The address or the form holds text that is not UTF-8, or a NUL character.")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if !checkCSRF(r, s.csrf) {
				c.fail(w, r, s, http.StatusForbidden, "This form is out of date or did not come from this console. Reload the page and try again.")
				return
			}
		}
		next(w, r, s)
	}
}

// cleanInput says whether the request's path, query and form are UTF-8
// text without NUL characters, which PostgreSQL refuses (a 400 here, as
// the API answers, rather than the database's error). A form too large or
// unreadable is not clean either.
func cleanInput(r *http.Request) bool {
	if err := r.ParseForm(); err != nil {
		return false
	}
	clean := func(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }
	if !clean(r.URL.Path) {
		return false
	}
	for k, vs := range r.Form {
		if !clean(k) {
			return false
		}
		for _, v := range vs {
			if !clean(v) {
				return false
			}
		}
	}
	return true
}

// toSignIn sends the browser to the sign-in page (htmx: by HX-Redirect, so
// that the whole page goes, not a fragment).
func (c *Console) toSignIn(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("HX-Request") == "true" {
		w.Header().Set("HX-Redirect", "/console/sign-in")
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, "/console/sign-in", http.StatusSeeOther)
}

func (c *Console) platformOnly(next sessionHandler) http.HandlerFunc {
	return c.signedIn(func(w http.ResponseWriter, r *http.Request, s *session) {
		if s.operator {
			c.fail(w, r, s, http.StatusForbidden, "This page is a platform's: sign in with a platform API key.")
			return
		}
		next(w, r, s)
	})
}

// sandboxOnly guards the simulations: a sandbox session's only.
func (c *Console) sandboxOnly(next sessionHandler) http.HandlerFunc {
	return c.platformOnly(func(w http.ResponseWriter, r *http.Request, s *session) {
		if s.env != domain.Sandbox {
			c.fail(w, r, s, http.StatusForbidden, "Simulations exist in the sandbox only.")
			return
		}
		next(w, r, s)
	})
}

func (c *Console) operatorOnly(next sessionHandler) http.HandlerFunc {
	return c.signedIn(func(w http.ResponseWriter, r *http.Request, s *session) {
		if !s.operator {
			c.fail(w, r, s, http.StatusForbidden, "This page is the operator's.")
			return
		}
		next(w, r, s)
	})
}

// view is what every page template gets.
type view struct {
	Title   string
	Session *session
	Nav     string // the section the page belongs to
	Flash   string // what the last action did
	Error   string
	Data    any
}

// Sandbox and Live name the session's environment for the badge.
func (v view) Environment() string {
	if v.Session == nil || v.Session.operator {
		return ""
	}
	return v.Session.env.String()
}

func (v view) CSRF() string {
	if v.Session == nil {
		return ""
	}
	return v.Session.csrf
}

// render writes a page; a template that fails writes nothing of it (the
// page is rendered in full before the status goes out).
func (c *Console) render(w http.ResponseWriter, r *http.Request, status int, page string, v view) {
	t, ok := c.pages[page]
	if !ok {
		panic("console: no template " + page)
	}
	if q := r.URL.Query(); v.Flash == "" && v.Session != nil && equal(q.Get("sig"), doneSignature(v.Session, q.Get("done"))) {
		v.Flash = q.Get("done")
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		c.log.Error("console template", "page", page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page: the message for the person, never internals.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, status int, message string) {
	if message == "" {
		message = "Something went wrong on our side. Try again in a moment."
	}
	c.render(w, r, status, "error", view{Title: http.StatusText(status), Session: s, Error: message})
}

// failWith renders the error an app command or query returned: a domain
// error's message with its status (404 for another platform's objects, as
// the API answers), anything else a 500 logged here.
func (c *Console) failWith(w http.ResponseWriter, r *http.Request, s *session, err error) {
	var de *domain.Error
	if errors.As(err, &de) {
		c.fail(w, r, s, apihttp.StatusOf(de.Code), de.Message)
		return
	}
	if eventstore.OutOfRange(err) {
		c.fail(w, r, s, http.StatusBadRequest, "An amount or balance would exceed what the ledger can hold.")
		return
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || eventstore.Unavailable(err) || eventstore.Retryable(err) {
		w.Header().Set("Retry-After", "1")
		c.fail(w, r, s, http.StatusServiceUnavailable, "The service is busy. Try again in a moment.")
		return
	}
	c.log.Error("console", "path", r.URL.Path, "err", err)
	c.fail(w, r, s, http.StatusInternalServerError, "")
}

// answer answers an action: its error's page, or back to path saying
// what was done.
func (c *Console) answer(w http.ResponseWriter, r *http.Request, s *session, err error, path, done string) {
	if err != nil {
		c.failWith(w, r, s, err)
		return
	}
	redirectDone(w, r, s, path, done)
}

// redirectDone sends the browser back to path with what was done, for the
// page to say. The text is signed with the session's CSRF token, so that a
// link made elsewhere cannot put words of its own in the page's banner.
func redirectDone(w http.ResponseWriter, r *http.Request, s *session, path, done string) {
	http.Redirect(w, r, path+"?done="+url.QueryEscape(done)+"&sig="+doneSignature(s, done), http.StatusSeeOther)
}

func doneSignature(s *session, done string) string {
	if s == nil {
		return ""
	}
	m := hmac.New(sha256.New, []byte(s.csrf))
	m.Write([]byte(done))
	return hex.EncodeToString(m.Sum(nil))
}

// meta is the event metadata of a console action.
func meta(r *http.Request, s *session) app.Meta {
	return app.Meta{Actor: s.actor(), RequestID: r.Header.Get("X-Request-Id")}
}

// timeout bounds a page's work.
const timeout = 10 * time.Second
