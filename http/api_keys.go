package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/projections/queries"
)

type createAPIKeyRequest struct {
	Name        string              `json:"name"`
	Environment *domain.Environment `json:"environment"`
}

// POST /v1/platform/api-keys
func (s *Server) createAPIKey(c echo.Context) error {
	p := principalOf(c)
	var req createAPIKeyRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	env := p.env
	if req.Environment != nil {
		env = *req.Environment
	}
	idem, err := platformIdempotency(c, "create_api_key", body)
	if err != nil {
		return err
	}
	res, err := s.app.CreateAPIKey(c.Request().Context(), meta(c), idem, p.platformID, p.env, env, req.Name)
	if err != nil {
		return err
	}
	k, err := queries.GetAPIKey(c.Request().Context(), s.pool, p.platformID, res.ID)
	if err != nil {
		return err
	}
	if !res.Replayed { // a secret is shown once
		k.Secret = res.Secret
	}
	return created(c, res, k)
}

func (s *Server) showNewKey(c echo.Context, id, secret string) error {
	k, err := queries.GetAPIKey(c.Request().Context(), s.pool, principalOf(c).platformID, id)
	if err != nil {
		return err
	}
	k.Secret = secret
	return c.JSON(http.StatusCreated, k)
}

// GET /v1/platform/api-keys
func (s *Server) listAPIKeys(c echo.Context) error {
	p := principalOf(c)
	pg, err := page(c)
	if err != nil {
		return err
	}
	env := p.env
	if q := c.QueryParam("environment"); q != "" {
		e, ok := domain.ParseEnvironment(q)
		if !ok {
			return domain.Invalid("environment", "environment must be sandbox or live")
		}
		if e != p.env && p.env != domain.Live {
			return domain.Errorf(domain.CodeForbidden, "a sandbox key cannot list live keys")
		}
		env = e
	}
	list, err := queries.ListAPIKeys(c.Request().Context(), s.pool, p.platformID, env, pg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// DELETE /v1/platform/api-keys/:id
func (s *Server) revokeAPIKey(c echo.Context) error {
	p := principalOf(c)
	id, err := pathID(c, "id", domain.PrefixAPIKey, "api_key")
	if err != nil {
		return err
	}
	if err := s.app.RevokeAPIKey(c.Request().Context(), meta(c), p.platformID, p.env, id); err != nil {
		return err
	}
	k, err := queries.GetAPIKey(c.Request().Context(), s.pool, p.platformID, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, k)
}

type rollAPIKeyRequest struct {
	GraceSeconds *int64 `json:"grace_seconds"`
}

// DefaultRollGrace is how long a rolled key keeps working by default.
const DefaultRollGrace = 24 * time.Hour

// POST /v1/platform/api-keys/:id/roll
func (s *Server) rollAPIKey(c echo.Context) error {
	p := principalOf(c)
	id, err := pathID(c, "id", domain.PrefixAPIKey, "api_key")
	if err != nil {
		return err
	}
	var req rollAPIKeyRequest
	if _, err := bind(c, &req); err != nil {
		return err
	}
	grace := DefaultRollGrace
	if req.GraceSeconds != nil {
		if *req.GraceSeconds < 0 || *req.GraceSeconds > int64(platform.MaxRollGrace/time.Second) {
			return domain.Invalid("grace_seconds", "grace_seconds must be 0 to %d", int64(platform.MaxRollGrace/time.Second))
		}
		grace = time.Duration(*req.GraceSeconds) * time.Second
	}
	res, err := s.app.RollAPIKey(c.Request().Context(), meta(c), p.platformID, p.env, id, grace)
	if err != nil {
		return err
	}
	return s.showNewKey(c, res.ID, res.Secret)
}
