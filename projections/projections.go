// Package projections builds the read models from the event log: one
// projector per read model, the queries the API reads, and rebuild.
package projections

import (
	"fmt"
	"time"

	"github.com/opentreasury/treasury/eventstore"
)

// Projector keeps one read model up to date from the log, a batch of
// events at a time: it folds the whole batch in Go and queues its writes
// on the batch (statements per event only for events too rare to matter),
// so a batch costs the same few round trips whatever its size. The same
// code serves commands (their own events, inline), the subscription, the
// rebuild and the audit.
type Projector interface {
	// Name identifies the projector.
	Name() string
	// Tables lists the tables it owns, which a rebuild empties first.
	Tables() []string
	// Project folds the batch's events into writes queued on b.
	Project(b *Batch) error
}

// Inline are the projectors that commands update in their own transaction,
// because later commands and authentication decide on them.
func Inline() []Projector {
	return []Projector{Platforms{}, Accounts{}, KYB{}, Payments{}, Webhooks{}}
}

// Async are the projectors the "projections" subscription runs, in commit
// order, after the commands commit (ProjectAsync).
func Async() []Projector {
	return []Projector{Ledger{}, PublicEvents{}}
}

// ProjectInline folds a command's events with the inline projectors; the
// caller sends the writes (Send, or Reader to read after them).
func ProjectInline(events []eventstore.RecordedEvent) (*Batch, error) {
	b := &Batch{Events: events}
	for _, p := range Inline() {
		if err := p.Project(b); err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name(), err)
		}
	}
	return b, nil
}

// eachEvent folds the batch event by event with apply: for projectors
// whose events are too rare for a set to pay.
func eachEvent(b *Batch, apply func(*Batch, *eventstore.RecordedEvent) error) error {
	for i := range b.Events {
		if err := apply(b, &b.Events[i]); err != nil {
			return err
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
