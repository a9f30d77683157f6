package console

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/projections/queries"
)

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
	if !cleanInput(r) {
		c.renderSignIn(w, r, http.StatusBadRequest, "The form holds text that is not UTF-8, or a NUL character.")
		return
	}
	if err != nil || !sameOrigin(r) || !equal(r.PostFormValue("csrf"), form.Value) {
		c.renderSignIn(w, r, http.StatusForbidden, "This form is out of date. Sign in again.")
		return
	}
	if !c.signIns.take(addr, now) {
		w.Header().Set("Retry-After", "60")
		c.renderSignIn(w, r, http.StatusTooManyRequests, "Too many failed sign-ins from this address. Wait a minute and try again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout) // not a signed-in page: bounded here
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
		c.renderSignIn(w, r, http.StatusUnauthorized, "That key is not valid: it is unknown, revoked or expired.")
		return
	}
	c.signIns.giveBack(addr)
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
