package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// EventsService is the event log (/events).
type EventsService struct{ c *Client }

// List walks every event, newest first (GET /events).
func (s *EventsService) List(ctx context.Context, params *ListEventsParams, opts ...RequestOption) iter.Seq2[Event, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]Event, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListEventsWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Retrieve returns an event (GET /events/{id}).
func (s *EventsService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*Event, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetEventWithResponse(ctx, id, &api.GetEventParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
