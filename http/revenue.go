package http

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// MaxReportDays bounds a revenue share report's period.
const MaxReportDays = 366

// GET /v1/platform/revenue-share
func (s *Server) revenueShare(c echo.Context) error {
	day := func(param string) (time.Time, error) {
		t, err := time.Parse("2006-01-02", c.QueryParam(param))
		if err != nil {
			return t, domain.Invalid(param, "%s is required, as a date YYYY-MM-DD", param)
		}
		return t, nil
	}
	from, err := day("from")
	if err != nil {
		return err
	}
	to, err := day("to")
	if err != nil {
		return err
	}
	if to.Before(from) {
		return domain.Invalid("to", "to must not be before from")
	}
	if to.Sub(from) >= MaxReportDays*24*time.Hour {
		return domain.Invalid("to", "a report covers at most %d days", MaxReportDays)
	}
	var v queries.RevenueShareView
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		v, err = queries.RevenueShare(c.Request().Context(), db, scopeOf(c), from, to)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
