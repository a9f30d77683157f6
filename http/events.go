package http

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// GET /v1/events
func (s *Server) listEvents(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.EventFilter{Type: c.QueryParam("type")}
	if f.Type != "" && !webhook.EventTypes[f.Type] {
		return domain.Invalid("type", "unknown event type %q", f.Type)
	}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	var list queries.List[queries.PublicEventView]
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		list, err = queries.ListEvents(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// GET /v1/events/:id
func (s *Server) getEvent(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixEvent, "event")
	if err != nil {
		return err
	}
	s.app.AwaitProjections(c.Request().Context()) // read your writes
	v, err := queries.GetEvent(c.Request().Context(), s.pool, scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
