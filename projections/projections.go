// Package projections builds the read models from the event log: one
// projector per read model, each folding a batch of events as a set. The
// queries the API reads are in projections/queries; rebuild and audit in
// projections/rebuild.
package projections

import (
	"fmt"

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
	return []Projector{Platforms{}, Accounts{}, PlatformBalances{}, KYB{}, Payments{}, Webhooks{}, ACHFiles{}, Counterparties{}}
}

// AsyncSubscriber is one subscription of asynchronous projectors: they run
// after the commands commit, in commit order (ProjectAsync), with their own
// checkpoint, reader and PostgreSQL backend. The ledger views and the
// public events share no table and no input but the log, so two
// subscribers write them side by side, each with a core of its own.
type AsyncSubscriber struct {
	Name       string // its checkpoint in subscription_checkpoints
	Projectors []Projector
}

// The asynchronous subscribers' checkpoint names.
const (
	LedgerSubscription       = "ledger"
	PublicEventsSubscription = "public_events"
)

// AsyncSubscribers are the subscriptions of the asynchronous projectors.
func AsyncSubscribers() []AsyncSubscriber {
	return []AsyncSubscriber{
		{Name: LedgerSubscription, Projectors: []Projector{Ledger{}}},
		{Name: PublicEventsSubscription, Projectors: []Projector{PublicEvents{}}},
	}
}

// AsyncSubscriberNamed is the AsyncSubscriber called name (none: the
// zero value, with no projectors).
func AsyncSubscriberNamed(name string) AsyncSubscriber {
	for _, s := range AsyncSubscribers() {
		if s.Name == name {
			return s
		}
	}
	return AsyncSubscriber{}
}

// AsyncNames are the checkpoint names of AsyncSubscribers.
func AsyncNames() []string {
	var names []string
	for _, s := range AsyncSubscribers() {
		names = append(names, s.Name)
	}
	return names
}

// Async are all the asynchronous projectors, of every AsyncSubscriber.
func Async() []Projector {
	var ps []Projector
	for _, s := range AsyncSubscribers() {
		ps = append(ps, s.Projectors...)
	}
	return ps
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
