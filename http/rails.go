package http

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/projections/queries"
)

// GET /v1/operator/rails/ach/files
func (s *Server) listACHFiles(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	list, err := queries.ListACHFiles(c.Request().Context(), s.pool, pg)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// errACHNotConfigured answers a cut asked of a service with no outbox.
var errACHNotConfigured = &domain.Error{Code: domain.CodeInvalidState,
	Message: "live ACH is not configured: set TREASURY_ACH_OUTBOX (and the originator's TREASURY_ACH_* settings)"}

// POST /v1/operator/rails/ach/files: cut now, standard payments included.
// The answer lists the files cut: none when no live ACH payment was
// pending, more than one when more than a file's worth was.
func (s *Server) cutACHFiles(c echo.Context) error {
	if _, err := bind(c, &struct{}{}); err != nil { // no body, or {}
		return err
	}
	if s.cfg.ACH == nil {
		return errACHNotConfigured
	}
	files, err := s.cfg.ACH.Cut(c.Request().Context(), true)
	var de *domain.Error
	if err != nil && !errors.As(err, &de) {
		// The outbox (or the database) failed. What was cut stays cut and
		// is written by the connector's recovery: asking again is safe.
		s.log.Error("ACH cut", "err", err, "files_cut", len(files), "request_id", requestID(c))
		return &domain.Error{Code: domain.CodeUnavailable,
			Message: "the ACH files could not all be written now; what was cut is written when the outbox answers: try again"}
	}
	if err != nil {
		return err
	}
	ids := make([]string, len(files))
	for i, f := range files {
		ids[i] = f.ACHFileID
	}
	views, err := queries.GetACHFiles(c.Request().Context(), s.pool, ids) // as written and recorded
	if err != nil {
		return err
	}
	if views == nil {
		views = []queries.ACHFileView{}
	}
	return c.JSON(http.StatusOK, queries.List[queries.ACHFileView]{Object: "list", Data: views})
}
