package projections

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// PublicEvents turns domain events into the public events of API.md §8.
// Each carries its resource as it was at that event, built from the event
// (and its stream) alone, so a rebuild produces the same bytes.
type PublicEvents struct{}

func (PublicEvents) Name() string     { return "public_events" }
func (PublicEvents) Tables() []string { return []string{"public_events"} }
func (PublicEvents) foldsStreams()    {}

type eventData struct {
	Object any `json:"object"`
}

// publicEvent is one public event a domain event makes.
type publicEvent struct {
	id, typ string
	object  any
}

// Project turns the batch's domain events into public events, numbered in
// commit order, and inserts them with one statement.
func (PublicEvents) Project(b *Batch) error {
	var rows []publicEventRow
	// Every body goes into one buffer, cut into strings at the end: one
	// allocation for the batch's bodies instead of one (and its growing)
	// per event.
	var bodies strings.Builder
	bodies.Grow(len(b.Events) * 600)
	var ends []int
	for i := range b.Events {
		r := &b.Events[i]
		out, err := publicEventsOf(b.streams, r)
		if err != nil {
			return fmt.Errorf("event %s: %w", r.EventID, err)
		}
		for _, p := range out {
			if err := appendJSONB(&bodies, eventData{Object: p.object}); err != nil {
				return fmt.Errorf("event %s: %w", r.EventID, err)
			}
			ends = append(ends, bodies.Len())
			rows = append(rows, publicEventRow{seq: b.nextSeq("public_events"), id: p.id, typ: p.typ,
				platform: r.PlatformID, env: r.Environment, created: r.RecordedAt})
		}
	}
	if len(rows) > 0 {
		all, start := bodies.String(), 0
		for i, end := range ends {
			rows[i].data, start = all[start:end], end
		}
		b.Copy("public_events", []string{"seq", "id", "type", "platform_id", "environment", "created_at", "data"},
			&publicEventRows{rows: rows})
	}
	return nil
}

type publicEventRow struct {
	seq                          int64
	id, typ, platform, env, data string
	created                      time.Time
}

// publicEventRows hands the rows to COPY.
type publicEventRows struct {
	rows []publicEventRow
	next int
}

func (r *publicEventRows) Next() bool { r.next++; return r.next <= len(r.rows) }
func (r *publicEventRows) Err() error { return nil }
func (r *publicEventRows) Values() ([]any, error) {
	e := &r.rows[r.next-1]
	return []any{e.seq, e.id, e.typ, e.platform, e.env, e.created, e.data}, nil
}

// publicEventsOf is what one domain event shows the platform: its resource
// as it was right after the event, folded from streams.
func publicEventsOf(streams streamSource, r *eventstore.RecordedEvent) ([]publicEvent, error) {
	ev, err := r.Decode()
	if err != nil {
		return nil, err
	}
	var out []publicEvent
	switch e := ev.(type) {
	case account.Opened:
		// The business may have been verified through another account already.
		prior := before(streams.stream(kyb.StreamID(e.PlatformID, e.Environment, e.EntityRef)), eventstore.PositionOf(*r))
		business, err := eventstore.Fold(prior, kyb.State{}, kyb.Evolve)
		if err != nil {
			return nil, err
		}
		out = append(out, publicEvent{r.EventID, "virtual_account.created", queries.VirtualAccountView{
			ID: e.VirtualAccountID, Object: "virtual_account", PlatformID: e.PlatformID, EntityRef: e.EntityRef,
			Type: e.Type.String(), Status: account.StatusActive.String(), AccountNumber: e.AccountNumber,
			RoutingNumber: e.RoutingNumber, Currency: "USD", KYBStatus: business.Status(), Metadata: e.Metadata,
			Environment: e.Environment.String(), CreatedAt: queries.NewTime(e.At)}})
	case ledger.Recorded:
		if e.Status == ledger.StatusPosted {
			for _, l := range e.Lines {
				out = append(out, publicEvent{entryEventID(l.EntryID), "ledger.entry.created", entryView(e, l, e.Status)})
			}
		}
	case ledger.Posted:
		rec, err := journalRecord(streams, e.JournalEntryID)
		if err != nil {
			return nil, err
		}
		for _, l := range rec.Lines {
			out = append(out, publicEvent{entryEventID(l.EntryID), "ledger.entry.created", entryView(rec, l, ledger.StatusPosted)})
		}
	case kyb.ReviewRequested, kyb.Approved, kyb.Rejected:
		v, err := verificationAt(streams, r)
		if err != nil {
			return nil, err
		}
		typ := map[string]string{kyb.StatusPendingReview: "kyb.pending_review", kyb.StatusApproved: "kyb.approved",
			kyb.StatusRejected: "kyb.rejected"}[v.Status]
		out = append(out, publicEvent{r.EventID, typ, v})
	case payment.Created, payment.Submitted, payment.Completed, payment.Failed, payment.Canceled, payment.NotificationOfChange,
		payment.ApprovalRequired, payment.Approved, payment.Denied, payment.Released:
		at := *r
		c, created := e.(payment.Created)
		rel, released := e.(payment.Released)
		if created && c.RequiresApproval || released && rel.RequiresApproval {
			// Written with its ApprovalRequired, in one append: the payment
			// never stood without it, so payment.created (or .released)
			// shows it held for approval too.
			at.StreamVersion++
		}
		v, err := paymentAt(streams, &at)
		if err != nil {
			return nil, err
		}
		out = append(out, publicEvent{r.EventID, r.Type, v})
	case counterparty.Verified, counterparty.VerificationFailed:
		// Public: the prenote's answer. Created, VerificationRequested and
		// Deleted stay internal (API.md §12 names these two).
		cp, err := eventstore.Fold(upTo(streams.stream(r.StreamID), r), counterparty.State{}, counterparty.Evolve)
		if err != nil {
			return nil, err
		}
		out = append(out, publicEvent{r.EventID, r.Type, queries.NewCounterpartyView(cp)})
	case booktransfer.Completed:
		out = append(out, publicEvent{r.EventID, "book_transfer.completed", queries.NewBookTransferView(e)})
	case inbound.Completed:
		v, err := inboundAt(streams, r)
		if err != nil {
			return nil, err
		}
		out = append(out, publicEvent{r.EventID, "inbound_transfer.completed", v})
	}
	return out, nil
}

// upTo keeps a stream's events up to and including r: the stream as it
// was right after r.
func upTo(recs []eventstore.RecordedEvent, r *eventstore.RecordedEvent) []eventstore.RecordedEvent {
	for i := range recs {
		if recs[i].StreamVersion > r.StreamVersion {
			return recs[:i]
		}
	}
	return recs
}

// entryEventID is the id of the ledger.entry.created event of an entry:
// one per entry, stable across rebuilds.
func entryEventID(entryID string) string {
	return domain.PrefixEvent + entryID[len(domain.PrefixLedgerEntry):]
}

func entryView(e ledger.Recorded, l ledger.Line, status string) queries.LedgerEntryView {
	v := queries.LedgerEntryView{ID: l.EntryID, Object: "ledger_entry", JournalEntryID: e.JournalEntryID,
		LedgerAccountID: l.LedgerAccountID, Direction: l.Direction.String(), Amount: l.Amount, Currency: "USD",
		Type: l.Type, Status: status, Description: e.Description, Environment: e.Environment.String(),
		EffectiveAt: queries.NewTime(e.EffectiveAt), CreatedAt: queries.NewTime(e.At),
		Source: queries.SourceView{Type: e.Source.Type, ID: e.Source.ID}}
	if l.VirtualAccountID != "" {
		va := l.VirtualAccountID
		v.VirtualAccountID = &va
	}
	return v
}

// journalRecord reads the Recorded event of a journal entry from the log.
func journalRecord(streams streamSource, id string) (ledger.Recorded, error) {
	recs := streams.stream(ledger.StreamID(id))
	for i := range recs {
		e, err := recs[i].Decode()
		if err != nil {
			return ledger.Recorded{}, err
		}
		if rec, ok := e.(ledger.Recorded); ok {
			return rec, nil
		}
	}
	return ledger.Recorded{}, errors.New("journal entry " + id + " has no recorded event")
}

// verificationAt folds a business's stream up to and including r and
// shows the verification r decided.
func verificationAt(streams streamSource, r *eventstore.RecordedEvent) (queries.KYBView, error) {
	recs := streams.stream(r.StreamID)
	var s kyb.State
	var id string
	for i := range recs {
		if recs[i].StreamVersion > r.StreamVersion {
			break
		}
		e, err := recs[i].Decode()
		if err != nil {
			return queries.KYBView{}, err
		}
		s = kyb.Evolve(s, e)
		switch ev := e.(type) {
		case kyb.ReviewRequested:
			id = ev.VerificationID
		case kyb.Approved:
			id = ev.VerificationID
		case kyb.Rejected:
			id = ev.VerificationID
		}
	}
	v := s.Verifications[id]
	if v == nil {
		return queries.KYBView{}, errors.New("kyb decision without its verification in " + r.StreamID)
	}
	return queries.NewKYBView(v), nil
}

// inboundAt folds an inbound transfer's stream up to and including r.
func inboundAt(streams streamSource, r *eventstore.RecordedEvent) (queries.InboundTransferView, error) {
	recs := streams.stream(r.StreamID)
	s, err := eventstore.Fold(upTo(recs, r), inbound.State{}, inbound.Evolve)
	if err != nil {
		return queries.InboundTransferView{}, err
	}
	return queries.InboundTransferView{ID: s.InboundTransferID, Object: "inbound_transfer", VirtualAccountID: s.VirtualAccountID,
		Amount: s.Amount, Currency: "USD", Rail: s.Rail, Originator: queries.OriginatorView(s.Originator), Description: s.Description,
		Status: s.Status, JournalEntryID: s.JournalEntryID, ExpectedSettlementAt: queries.NewTime(s.ExpectedAt),
		CompletedAt: queries.NewTimePtr(s.CompletedAt), Environment: r.Environment, CreatedAt: queries.NewTime(s.At)}, nil
}
