package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
)

// aggregate says how to load one kind of event-sourced aggregate from its
// stream. (The platform is loaded its own way: from a snapshot, with its
// keys' streams; see loadPlatform.)
type aggregate[S any] struct {
	kind       string // its name in "no such …" errors
	streamType string
	streamID   func(id string) string
	initial    func(id string) S
	evolve     func(S, domain.Event) S
	// exists says whether the folded state is a live aggregate; one that
	// is not is not found.
	exists func(S) bool
	// notFound, if set, replaces domain.NotFound(kind, id).
	notFound func(id string) error
}

var (
	accounts = aggregate[account.State]{kind: "virtual_account", streamType: account.StreamType, streamID: account.StreamID,
		initial: func(id string) account.State { return account.State{ID: id} }, evolve: account.Evolve,
		exists: account.State.Exists}
	payments = aggregate[payment.State]{kind: "payment", streamType: payment.StreamType, streamID: payment.StreamID,
		initial: func(string) payment.State { return payment.State{} }, evolve: payment.Evolve,
		exists: func(s payment.State) bool { return s.Status != "" }}
	journalEntries = aggregate[ledger.State]{kind: "journal_entry", streamType: ledger.StreamType, streamID: ledger.StreamID,
		initial: func(string) ledger.State { return ledger.State{} }, evolve: ledger.Evolve,
		exists: func(s ledger.State) bool { return s.ID != "" },
		notFound: func(id string) error {
			return &domain.Error{Code: domain.CodeNotFound, Param: "reverses", Message: "no such journal entry: " + id}
		}}
	inboundTransfers = aggregate[inbound.State]{kind: "inbound_transfer", streamType: inbound.StreamType, streamID: inbound.StreamID,
		initial: func(string) inbound.State { return inbound.State{} }, evolve: inbound.Evolve,
		exists: func(inbound.State) bool { return true }} // any event at all
	bookTransfers = aggregate[booktransfer.State]{kind: "book_transfer", streamType: booktransfer.StreamType, streamID: booktransfer.StreamID,
		initial: func(string) booktransfer.State { return booktransfer.State{} }, evolve: booktransfer.Evolve,
		exists: func(s booktransfer.State) bool { return s.BookTransferID != "" }}
	counterparties = aggregate[counterparty.State]{kind: "counterparty", streamType: counterparty.StreamType, streamID: counterparty.StreamID,
		initial: func(string) counterparty.State { return counterparty.State{} }, evolve: counterparty.Evolve,
		exists: counterparty.State.Exists}
	webhooks = aggregate[webhook.State]{kind: "webhook_endpoint", streamType: webhook.StreamType, streamID: webhook.StreamID,
		initial: func(string) webhook.State { return webhook.State{} }, evolve: webhook.Evolve,
		exists: func(s webhook.State) bool { return s.ID != "" && !s.Deleted }}
	// A business's verifications are loaded by stream id (kybStream): the
	// id names the platform and environment, so there is no one else's to
	// find, and a business with no stream yet is simply new.
	kybs = aggregate[kyb.State]{kind: "kyb", streamType: kyb.StreamType, streamID: func(streamID string) string { return streamID },
		initial: func(string) kyb.State { return kyb.State{} }, evolve: kyb.Evolve}
)

// stream is where the aggregate id of c appends.
func (g aggregate[S]) stream(c Caller, id string) eventstore.Stream {
	return eventstore.Stream{ID: g.streamID(id), Type: g.streamType, PlatformID: c.PlatformID, Environment: c.Environment.String()}
}

// loaded is an aggregate as its stream holds it.
type loaded[S any] struct {
	State   S
	Version int64
	Owner   Caller // the platform and environment of its stream
}

// loadStream reads and folds the stream of the aggregate id. caller, if
// not nil, must own it: another platform's or environment's aggregate is
// not found, as is one that does not exist (kybs: new, not missing).
func loadStream[S any](ctx context.Context, db eventstore.DB, g aggregate[S], caller *Caller, id string) (loaded[S], error) {
	recs, version, err := eventstore.Load(ctx, db, g.streamID(id))
	if err != nil {
		return loaded[S]{State: g.initial(id)}, err
	}
	return foldStream(recs, version, g, caller, id)
}

// foldStream is loadStream's fold and scope checks over events already
// read (in version order); the batch loads share it.
func foldStream[S any](recs []eventstore.RecordedEvent, version int64, g aggregate[S], caller *Caller, id string) (loaded[S], error) {
	l := loaded[S]{State: g.initial(id)}
	if g.exists == nil { // scoped by its stream id; no events: new
		s, err := eventstore.Fold(recs, l.State, g.evolve)
		if err == nil && caller != nil {
			l.Owner = caller.scope()
		}
		l.State, l.Version = s, version
		return l, err
	}
	if len(recs) == 0 {
		return l, g.missing(id)
	}
	s, err := eventstore.Fold(recs, l.State, g.evolve)
	if err != nil {
		return l, err
	}
	env, _ := domain.ParseEnvironment(recs[0].Environment)
	owner := Caller{PlatformID: recs[0].PlatformID, Environment: env}
	if !g.exists(s) || (caller != nil && caller.scope() != owner) {
		return l, g.missing(id)
	}
	return loaded[S]{State: s, Version: version, Owner: owner}, nil
}

func (g aggregate[S]) missing(id string) error {
	if g.notFound != nil {
		return g.notFound(id)
	}
	return domain.NotFound(g.kind, id)
}

// change is the shape of most commands on one aggregate: load the caller's
// aggregate id, decide, and append what decide returns (nothing: nothing
// to do) with its inline projections.
func change[S any](ctx context.Context, tx *commandTx, meta Meta, g aggregate[S], c Caller, id string, decide func(S) ([]domain.Event, error)) error {
	l, err := loadStream(ctx, tx, g, &c, id)
	if err != nil {
		return err
	}
	events, err := decide(l.State)
	if err != nil || len(events) == 0 {
		return err
	}
	_, err = appendAndProject(ctx, tx, g.stream(c, id), l.Version, meta, events)
	return err
}
