package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections/queries"
)

// Cookie names: the session's, and the sign-in form's CSRF token (a
// double-submit token: there is no session to hold it yet).
const (
	sessionCookie = "treasury_console"
	signInCookie  = "treasury_console_signin"
)

// SessionLifetime is how long a session lasts from its sign-in, whatever
// happens meanwhile (server-side: the cookie carries no expiry of its own
// that the server trusts).
const SessionLifetime = 8 * time.Hour

// session is a signed-in browser: the operator, or one platform in one
// environment through one key.
type session struct {
	idHash     string
	csrf       string
	operator   bool
	keyHash    string
	keyID      string
	platformID string
	env        domain.Environment
	expiresAt  time.Time
}

// IsOperator and PlatformID are for the templates.
func (s *session) IsOperator() bool   { return s.operator }
func (s *session) PlatformID() string { return s.platformID }

// caller is who the session's commands and reads act for.
func (s *session) caller() app.Caller {
	return app.Caller{PlatformID: s.platformID, Environment: s.env}
}

func (s *session) scope() queries.Scope {
	return queries.Scope{PlatformID: s.platformID, Environment: s.env}
}

// actor is what the session's commands record as their actor: the key's
// id, as the API records it, marked as the console's.
func (s *session) actor() string {
	if s.operator {
		return "operator"
	}
	return s.keyID
}

// token is a new random token (32 bytes, URL-safe base64).
func token() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashOf(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func equal(a, b string) bool {
	return len(a) == len(b) && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// secureRequest says whether the request's cookies are marked Secure:
// always, but for a browser on this machine (localhost over plain HTTP,
// as `make run` serves it).
func secureRequest(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, Secure: secureRequest(r), SameSite: http.SameSiteStrictMode})
}

// createSession stores a session for a key that authenticated and sets
// its cookie. Sessions past their expiry are deleted on the way.
func (c *Console) createSession(ctx context.Context, w http.ResponseWriter, r *http.Request, s session) error {
	tok := token()
	s.idHash, s.csrf = hashOf(tok), token()
	now := time.Now()
	s.expiresAt = now.Add(SessionLifetime)
	var env *string
	if !s.operator {
		e := s.env.String()
		env = &e
	}
	b := &pgx.Batch{}
	b.Queue(`DELETE FROM console_sessions WHERE expires_at <= now()`)
	b.Queue(`INSERT INTO console_sessions (id_hash, csrf_token, operator, key_hash, key_id, platform_id, environment, created_at, expires_at)
        VALUES ($1, $2, $3, $4, nullif($5, ''), nullif($6, ''), $7, $8, $9)`,
		s.idHash, s.csrf, s.operator, s.keyHash, s.keyID, s.platformID, env, now, s.expiresAt)
	if err := c.pool.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	setCookie(w, r, sessionCookie, tok, int(SessionLifetime/time.Second))
	return nil
}

// errNoSession: the request has no usable session (none, expired, its key
// revoked or expired, the operator key changed).
var errNoSession = errors.New("no session")

// loadSession finds the request's session and checks that its key still
// works: a revoked or expired platform key, or a changed operator key,
// ends it (the row is deleted).
func (c *Console) loadSession(ctx context.Context, r *http.Request) (*session, error) {
	cookie, err := r.Cookie(sessionCookie)
	if err != nil || len(cookie.Value) > 100 {
		return nil, errNoSession
	}
	s := &session{idHash: hashOf(cookie.Value)}
	var keyID, platformID, env *string
	err = c.pool.QueryRow(ctx, `SELECT csrf_token, operator, key_hash, key_id, platform_id, environment, expires_at
        FROM console_sessions WHERE id_hash = $1 AND expires_at > now()`, s.idHash).
		Scan(&s.csrf, &s.operator, &s.keyHash, &keyID, &platformID, &env, &s.expiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, err
	}
	if s.operator {
		if c.cfg.OperatorKey == "" || !equal(s.keyHash, hashOf(c.cfg.OperatorKey)) {
			return nil, c.endSession(ctx, s.idHash)
		}
		return s, nil
	}
	cred, found, err := queries.CredentialByHash(ctx, c.pool, s.keyHash)
	if err != nil {
		return nil, err
	}
	if !found || keyID == nil || cred.KeyID != *keyID {
		return nil, c.endSession(ctx, s.idHash)
	}
	s.keyID, s.platformID, s.env = cred.KeyID, cred.PlatformID, cred.Environment
	return s, nil
}

// endSession deletes a session and answers errNoSession.
func (c *Console) endSession(ctx context.Context, idHash string) error {
	if _, err := c.pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, idHash); err != nil {
		return err
	}
	return errNoSession
}

// checkCSRF says whether a state-changing request carries the session's
// token (in the X-CSRF-Token header htmx sends, or the form's csrf field)
// and, when the browser names it, comes from this origin.
func checkCSRF(r *http.Request, want string) bool {
	if !sameOrigin(r) {
		return false
	}
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostFormValue("csrf")
	}
	return got != "" && equal(got, want)
}

// sameOrigin: an Origin header, when there is one, names this host.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not sent by every browser on same-origin POSTs; the token decides
	}
	_, host, ok := strings.Cut(origin, "://")
	return ok && strings.EqualFold(host, r.Host)
}
