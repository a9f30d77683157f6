package http

import (
	"context"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/projections/queries"
)

type createPlatformRequest struct {
	Name         string            `json:"name"`
	ContactEmail string            `json:"contact_email"`
	Metadata     map[string]string `json:"metadata"`
}

// idempotency reads the optional Idempotency-Key header for an operation.
func idempotency(c echo.Context, scope, env, operation string, body []byte, bodyKey string) (*app.Idempotency, error) {
	key := c.Request().Header.Get("Idempotency-Key")
	if key != "" && bodyKey != "" && key != bodyKey {
		return nil, domain.Invalid("idempotency_key", "the Idempotency-Key header and the idempotency_key field differ")
	}
	if key == "" {
		key = bodyKey
	}
	if key == "" {
		return nil, nil
	}
	// A header may carry any byte above 0x7f: PostgreSQL stores only UTF-8.
	if len(key) > app.MaxIdempotencyKeyLen || strings.TrimSpace(key) != key || !utf8.ValidString(key) || strings.ContainsRune(key, 0) {
		return nil, domain.Invalid("idempotency_key", "idempotency keys are 1 to %d characters of UTF-8 text without surrounding spaces", app.MaxIdempotencyKeyLen)
	}
	return &app.Idempotency{Scope: scope, Environment: env, Key: key, Operation: operation, RequestHash: requestHash(body)}, nil
}

// platformIdempotency reads the Idempotency-Key header of a platform
// key's creating POST (API.md §12), scoped to its platform and
// environment.
func platformIdempotency(c echo.Context, operation string, body []byte) (*app.Idempotency, error) {
	p := principalOf(c)
	return idempotency(c, p.platformID, p.env.String(), operation, body, "")
}

// created answers 201 with a new resource, or 200 and Idempotent-Replayed
// when the request was a replay.
func created(c echo.Context, res app.Result, v any) error {
	if res.Replayed {
		c.Response().Header().Set("Idempotent-Replayed", "true")
		return c.JSON(http.StatusOK, v)
	}
	return c.JSON(http.StatusCreated, v)
}

// POST /v1/platforms
func (s *Server) createPlatform(c echo.Context) error {
	var req createPlatformRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	idem, err := idempotency(c, "operator", "operator", "create_platform", body, "")
	if err != nil {
		return err
	}
	res, err := s.app.RegisterPlatform(c.Request().Context(), meta(c), idem, app.RegisterPlatform{
		Name: req.Name, ContactEmail: req.ContactEmail, Metadata: req.Metadata})
	if err != nil {
		return err
	}
	p, err := queries.GetPlatform(c.Request().Context(), s.pool, res.ID)
	if err != nil {
		return err
	}
	return created(c, res, p)
}

// GET /v1/operator/platforms
func (s *Server) listPlatforms(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	list, err := queries.ListPlatforms(c.Request().Context(), s.pool, pg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// GET /v1/operator/platforms/:id
func (s *Server) getPlatform(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixPlatform, "platform")
	if err != nil {
		return err
	}
	p, err := queries.GetPlatform(c.Request().Context(), s.pool, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// PATCH /v1/operator/platforms/:id
func (s *Server) configurePlatform(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixPlatform, "platform")
	if err != nil {
		return err
	}
	var patch platform.ConfigPatch
	if _, err := bind(c, &patch); err != nil {
		return err
	}
	if err := s.app.ConfigurePlatform(c.Request().Context(), meta(c), id, patch); err != nil {
		return err
	}
	s.creds.purge() // cached keys carry their platform's rate limit
	return s.getPlatform(c)
}

type approvedPlatform struct {
	queries.PlatformView
	SandboxAPIKey *queries.APIKeyView `json:"sandbox_api_key,omitempty"`
	LiveAPIKey    *queries.APIKeyView `json:"live_api_key,omitempty"`
}

// POST /v1/operator/platforms/:id/approve
func (s *Server) approvePlatform(c echo.Context) error {
	return s.provision(c, s.app.ApprovePlatform, func(out *approvedPlatform, k *queries.APIKeyView) { out.SandboxAPIKey = k })
}

// POST /v1/operator/platforms/:id/enable-live
func (s *Server) enableLive(c echo.Context) error {
	return s.provision(c, s.app.EnableLive, func(out *approvedPlatform, k *queries.APIKeyView) { out.LiveAPIKey = k })
}

// provision runs a command that mints a key and answers with the
// platform and that key, whose secret is shown this once.
func (s *Server) provision(c echo.Context, cmd func(ctx context.Context, m app.Meta, id string) (app.Result, error), set func(*approvedPlatform, *queries.APIKeyView)) error {
	id, err := pathID(c, "id", domain.PrefixPlatform, "platform")
	if err != nil {
		return err
	}
	if _, err := bind(c, &struct{}{}); err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := cmd(ctx, meta(c), id)
	if err != nil {
		return err
	}
	p, err := queries.GetPlatform(ctx, s.pool, id)
	if err != nil {
		return err
	}
	k, err := queries.GetAPIKey(ctx, s.pool, id, res.ID)
	if err != nil {
		return err
	}
	k.Secret = res.Secret
	out := approvedPlatform{PlatformView: p}
	set(&out, &k)
	return c.JSON(http.StatusOK, out)
}

type fundPlatformRequest struct {
	Amount      *int64  `json:"amount"`
	Environment *string `json:"environment"`
	Description string  `json:"description"`
}

// POST /v1/operator/platforms/:id/fund
func (s *Server) fundPlatform(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixPlatform, "platform")
	if err != nil {
		return err
	}
	var req fundPlatformRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	env := domain.Live // funding exists for live; the sandbox may use it too
	if req.Environment != nil {
		var ok bool
		if env, ok = domain.ParseEnvironment(*req.Environment); !ok {
			return domain.Invalid("environment", "environment must be live or sandbox")
		}
	}
	// Keys are scoped to the platform funded: the same key and body for
	// another platform is another request.
	idem, err := idempotency(c, "operator:"+id, env.String(), "fund_platform", body, "")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := s.app.FundPlatform(ctx, meta(c), idem, app.FundPlatform{PlatformID: id, Environment: env,
		Amount: req.Amount, Description: req.Description})
	if err != nil {
		return err
	}
	v, err := queries.JournalEntryFromLog(ctx, s.pool, queries.Scope{PlatformID: id, Environment: env}, res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}
