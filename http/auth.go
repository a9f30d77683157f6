package http

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections/queries"
)

// principal is who a request acts for: the operator, or one platform in
// one environment through one key.
type principal struct {
	operator   bool
	platformID string
	env        domain.Environment
	keyID      string
	rateLimit  *queries.RateLimitView
	// keyHash is the secret's hash; verifyInCommand says the key was
	// found in the credential cache, so the command must check it
	// (app.Caller.VerifyKeyID).
	keyHash         string
	verifyInCommand bool
}

const principalKey = "principal"

func principalOf(c echo.Context) *principal {
	p, _ := c.Get(principalKey).(*principal)
	return p
}

var errUnauthorized = &domain.Error{Code: domain.CodeUnauthorized,
	Message: "missing or invalid API key: send Authorization: Bearer <key>"}

// touchEvery bounds how often last_used_at is written for a key.
const touchEvery = time.Minute

// authenticate resolves the bearer key. Unknown, malformed, revoked and
// expired keys all get the same 401, with no hint which.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return s.authenticateKeys(next, false)
}

// authenticateInCommand is authenticate for a route whose command checks
// the key itself, in its first round trip (POST /v1/payments), or whose
// handler reads through s.reads, which checks it in the read's (the hot
// GETs): a key found in the credential cache costs no round trip here.
// The key refused there gets the one 401 of every unusable key.
func (s *Server) authenticateInCommand(next echo.HandlerFunc) echo.HandlerFunc {
	return s.authenticateKeys(s.refuseUnusableKey(next), true)
}

// refuseUnusableKey turns app.ErrKeyNotUsable, from a command or a read
// that checked a cached key, into the 401 of an unknown key.
func (s *Server) refuseUnusableKey(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		err := next(c)
		if errors.Is(err, app.ErrKeyNotUsable) {
			return s.keyRefusedByCommand(c)
		}
		return err
	}
}

func (s *Server) authenticateKeys(next echo.HandlerFunc, inCommand bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		addr := clientAddress(c)
		scheme, token, ok := strings.Cut(strings.TrimSpace(c.Request().Header.Get("Authorization")), " ")
		token = strings.TrimSpace(token)
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > 200 {
			return s.failedAuth(c, addr)
		}
		if s.isOperatorKey(token) {
			c.Set(principalKey, &principal{operator: true, keyID: "operator", env: domain.Live})
			return next(c)
		}
		if !wellFormedKey(token) {
			return s.failedAuth(c, addr)
		}
		hash := app.HashSecret(token)
		now := time.Now()
		if inCommand {
			if e, ok := s.creds.get(hash, now); ok {
				s.touchInBackground(c, e, now)
				c.Set(principalKey, principalOfKey(e.cred, hash, true))
				return next(c)
			}
		}
		lookup, err := s.lookUp(c, addr, hash)
		if err != nil {
			return err
		}
		ctx := c.Request().Context()
		lookUpCredential := s.lookUpCredential
		if inCommand {
			lookUpCredential = s.lookUpCredentialShared
		}
		cred, found, gen, err := lookUpCredential(ctx, hash)
		if err != nil {
			lookup.failedLookup()
			return err
		}
		if !found {
			return lookup.notFound(c)
		}
		lookup.found()
		var touched time.Time
		if cred.LastUsedAt != nil {
			touched = *cred.LastUsedAt
		}
		if inCommand {
			if e := s.creds.put(hash, cred, touched, now, gen); e != nil {
				s.touchInBackground(c, e, now)
			}
			c.Set(principalKey, principalOfKey(cred, hash, true))
			return next(c)
		}
		if now.Sub(touched) > touchEvery {
			if err := queries.TouchAPIKey(ctx, s.pool, cred.KeyID, now); err != nil {
				s.log.Warn("could not record key use", "key_id", cred.KeyID, "error", err)
			} else {
				touched = now
			}
		}
		s.creds.put(hash, cred, touched, now, gen)
		c.Set(principalKey, principalOfKey(cred, hash, false))
		return next(c)
	}
}

// lookUpCredentialShared is credentialByHash for a route whose command
// verifies the key itself: concurrent misses of one key (every client of
// a busy key when its cache entry expires) share one lookup instead of
// each sending its own. Other routes never share: a lookup begun before a
// revocation must not answer a request that came after it.
func (s *Server) lookUpCredentialShared(ctx context.Context, hash string) (queries.Credential, bool, uint64, error) {
	type found struct {
		cred  queries.Credential
		found bool
		gen   uint64
	}
	v, err, _ := s.lookups.Do(hash, func() (any, error) {
		// Not the first caller's cancellation: the others wait on it too.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		cred, ok, gen, err := s.lookUpCredential(ctx, hash)
		return found{cred, ok, gen}, err
	})
	f, _ := v.(found)
	return f.cred, f.found, f.gen, err
}

// lookUpCredential looks a key up, with the cache generation read before
// the lookup (for put: a purge since then makes what it read stale).
func (s *Server) lookUpCredential(ctx context.Context, hash string) (queries.Credential, bool, uint64, error) {
	gen := s.creds.generation()
	cred, found, err := s.credentialByHash(ctx, hash)
	return cred, found, gen, err
}

func principalOfKey(cred queries.Credential, hash string, verifyInCommand bool) *principal {
	return &principal{platformID: cred.PlatformID, env: cred.Environment, keyID: cred.KeyID, rateLimit: cred.RateLimit,
		keyHash: hash, verifyInCommand: verifyInCommand}
}

// touchInBackground records a cached key's use, once per touchEvery, off
// the request's path: last_used_at is operational data, and the request
// must not wait for a write of its own.
func (s *Server) touchInBackground(c echo.Context, e *cachedCredential, now time.Time) {
	if !e.claimTouch(now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), 5*time.Second)
	go func() {
		defer cancel()
		if err := queries.TouchAPIKey(ctx, s.pool, e.cred.KeyID, now); err != nil {
			s.log.Warn("could not record key use", "key_id", e.cred.KeyID, "error", err)
		}
	}()
}

// keyRefusedByCommand is the answer to a request whose command found its
// cached key revoked or expired: the key leaves the cache, and the request
// gets what a lookup that did not find it gets (401, or 429 once the
// address has failed too often).
func (s *Server) keyRefusedByCommand(c echo.Context) error {
	p := principalOf(c)
	s.creds.drop(p.keyHash)
	if s.limiter.off {
		return errUnauthorized
	}
	return keyLookup{f: s.limiter.failures, addr: clientAddress(c), hash: p.keyHash}.notFound(c)
}

// lookUp asks the failure limit whether a key may be looked up.
func (s *Server) lookUp(c echo.Context, addr, hash string) (keyLookup, error) {
	if s.limiter.off {
		return keyLookup{}, nil
	}
	return s.limiter.failures.lookUp(c, addr, hash)
}

// failedAuth is the 401 of a request without a valid key, or 429 once
// its address has failed too often (unless rate limiting is off).
func (s *Server) failedAuth(c echo.Context, addr string) error {
	if s.limiter.off {
		return errUnauthorized
	}
	return s.limiter.failures.failed(c, addr)
}

func (s *Server) isOperatorKey(token string) bool {
	if s.cfg.OperatorKey == "" {
		return false
	}
	a := sha256.Sum256([]byte(token))
	b := sha256.Sum256([]byte(s.cfg.OperatorKey))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

func wellFormedKey(token string) bool {
	rest, ok := strings.CutPrefix(token, "sk_live_")
	if !ok {
		rest, ok = strings.CutPrefix(token, "sk_sandbox_")
	}
	if !ok || len(rest) != app.KeySecretLen {
		return false
	}
	for _, r := range rest {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

var errOperatorOnly = &domain.Error{Code: domain.CodeForbidden, Message: "this route needs the operator key"}
var errPlatformOnly = &domain.Error{Code: domain.CodeForbidden, Message: "this route needs a platform API key"}

// rateLimit takes a token from the caller's bucket. It runs after the
// route's guard, so a key on a route it may not call gets 403, not 429.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := s.limiter.allow(c, principalOf(c)); err != nil {
			return err
		}
		return next(c)
	}
}

// operatorOnly guards /operator/* and POST /platforms.
func operatorOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := principalOf(c); p == nil || !p.operator {
			return errOperatorOnly
		}
		return next(c)
	}
}

// platformOnly guards the routes a platform key calls.
func platformOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if p := principalOf(c); p == nil || p.operator {
			return errPlatformOnly
		}
		return next(c)
	}
}
