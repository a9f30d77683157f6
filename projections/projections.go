// Package projections builds the read models from the event log: one
// projector per read model, the queries the API reads, and rebuild.
package projections

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// Projector keeps one read model up to date from events.
type Projector interface {
	// Name identifies the projector (and its subscription, if async).
	Name() string
	// Tables lists the tables it owns, which a rebuild empties first.
	Tables() []string
	// Apply folds one event into the read model inside tx.
	Apply(ctx context.Context, tx pgx.Tx, e *eventstore.RecordedEvent) error
}

// Inline are the projectors that commands update in their own transaction,
// because later commands and authentication decide on them.
func Inline() []Projector {
	return []Projector{Platforms{}, Accounts{}, KYB{}, Payments{}, Webhooks{}}
}

// Async are the projectors the "projections" subscription runs, in commit
// order, after the commands commit, a batch at a time (ProjectBatch).
func Async() []SetProjector {
	return []SetProjector{Ledger{}, PublicEvents{}}
}

// ApplyAll runs every projector over the events.
func ApplyAll(ctx context.Context, tx pgx.Tx, ps []Projector, events []eventstore.RecordedEvent) error {
	for i := range events {
		for _, p := range ps {
			if err := p.Apply(ctx, tx, &events[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// Time renders as RFC 3339 in UTC with millisecond precision (API.md §1).
type Time struct{ time.Time }

// TimeFormat is the API's timestamp layout.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}

// NewTime wraps a time; NewTimePtr wraps a nullable one.
func NewTime(t time.Time) Time { return Time{t} }

func NewTimePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}
