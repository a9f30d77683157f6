package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/projections/queries"
)

// GET /v1/platform
func (s *Server) getOwnPlatform(c echo.Context) error {
	p := principalOf(c)
	v, err := queries.GetPlatform(c.Request().Context(), s.pool, p.platformID)
	if err != nil {
		return err
	}
	v.Environment = p.env.String()
	return c.JSON(http.StatusOK, v)
}

// GET /v1/platform/settings
func (s *Server) getSettings(c echo.Context) error {
	p := principalOf(c)
	v, err := queries.GetSettings(c.Request().Context(), s.pool, p.platformID, p.env)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// PATCH /v1/platform/settings
func (s *Server) updateSettings(c echo.Context) error {
	p := principalOf(c)
	var patch platform.SettingsPatch
	if _, err := bind(c, &patch); err != nil {
		return err
	}
	if err := s.app.UpdateSettings(c.Request().Context(), meta(c), p.platformID, p.env, patch); err != nil {
		return err
	}
	return s.getSettings(c)
}
