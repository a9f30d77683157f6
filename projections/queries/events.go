package queries

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// PublicEventView is an event as the API and webhooks show it.
type PublicEventView struct {
	ID          string          `json:"id"`
	Object      string          `json:"object"`
	Type        string          `json:"type"`
	PlatformID  string          `json:"platform_id"`
	Environment string          `json:"environment"`
	CreatedAt   Time            `json:"created_at"`
	Data        json.RawMessage `json:"data"`
	seq         int64
}

// NewPublicEvent is the public event envelope, built in this one place for
// the events API, webhook bodies and test webhooks alike.
func NewPublicEvent(id, typ, platformID, environment string, createdAt time.Time, data json.RawMessage) PublicEventView {
	return PublicEventView{ID: id, Object: "event", Type: typ, PlatformID: platformID, Environment: environment,
		CreatedAt: NewTime(createdAt), Data: data}
}

// EventFilter narrows ListEvents.
type EventFilter struct {
	Type    string
	Created TimeRange
}

// ListEvents lists the scope's public events, newest first.
func ListEvents(ctx context.Context, db eventstore.DB, s Scope, f EventFilter, page Page) (List[PublicEventView], error) {
	after, err := seqCursor(page.After)
	if err != nil {
		return List[PublicEventView]{}, err
	}
	from, to := f.Created.args()
	rows, err := db.Query(ctx, `SELECT seq, id, type, platform_id, environment, created_at, data FROM public_events
        WHERE platform_id = $1 AND environment = $2 AND ($3 = '' OR type = $3)
          AND ($4::timestamptz IS NULL OR created_at >= $4) AND ($5::timestamptz IS NULL OR created_at < $5)
          AND ($6 = 0 OR seq < $6)
        ORDER BY seq DESC LIMIT $7`, s.PlatformID, s.Environment.String(), f.Type, from, to, after, page.Limit+1)
	if err != nil {
		return List[PublicEventView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PublicEventView, error) { return scanPublicEvent(r) })
	if err != nil {
		return List[PublicEventView]{}, err
	}
	return NewList(items, page, func(e PublicEventView) string { return strconv.FormatInt(e.seq, 10) }), nil
}

// GetEvent returns one of the scope's public events.
func GetEvent(ctx context.Context, db eventstore.DB, s Scope, id string) (PublicEventView, error) {
	v, err := scanPublicEvent(db.QueryRow(ctx, `SELECT seq, id, type, platform_id, environment, created_at, data
        FROM public_events WHERE id = $1 AND platform_id = $2 AND environment = $3`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("event", id)
	}
	return v, err
}

func scanPublicEvent(row pgx.Row) (PublicEventView, error) {
	var seq int64
	var id, typ, platformID, environment string
	var created time.Time
	var data []byte
	err := row.Scan(&seq, &id, &typ, &platformID, &environment, &created, &data)
	v := NewPublicEvent(id, typ, platformID, environment, created, data)
	v.seq = seq
	return v, err
}
