package http

import (
	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore"
)

// readList runs a list's or an export's read. With a read replica, it is
// app.ReadList's: the key of a hot read checked on the primary in the
// round trip that takes the primary's WAL position, the rows read on the
// replica once it shows every earlier write. Without one, as before: the
// projections waited for (when projected), and the read on the primary
// through s.reads, which checks the key in the read's own round trip.
func (s *Server) readList(c echo.Context, projected bool, read func(eventstore.DB) error) error {
	ctx := c.Request().Context()
	if s.app.Replica == nil {
		if projected {
			s.app.AwaitProjections(ctx) // read your writes
		}
		return read(s.reads(c))
	}
	lr := app.ListRead{Projected: projected}
	if p := principalOf(c); p != nil && p.verifyInCommand {
		lr.KeyID = p.keyID
	}
	return s.app.ReadList(ctx, lr, read)
}

// Whether a list is one of the asynchronous projections' (its read waits
// for them first) or written with its command (inline).
const (
	projectedList = true
	inlineList    = false
)
