package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
)

// PublicEvents turns domain events into the public events of API.md §8.
// Each carries its resource as it was at that event, built from the event
// (and its stream) alone, so a rebuild produces the same bytes.
type PublicEvents struct{}

func (PublicEvents) Name() string     { return "public_events" }
func (PublicEvents) Tables() []string { return []string{"public_events"} }

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
	var seq []int64
	var ids, types, platforms, envs, datas []string
	var created []time.Time
	for i := range b.Events {
		r := &b.Events[i]
		out, err := publicEventsOf(b.streams, r)
		if err != nil {
			return fmt.Errorf("event %s: %w", r.EventID, err)
		}
		for _, p := range out {
			data, err := json.Marshal(eventData{Object: p.object})
			if err != nil {
				return err
			}
			seq = append(seq, b.nextSeq("public_events"))
			ids = append(ids, p.id)
			types = append(types, p.typ)
			platforms = append(platforms, r.PlatformID)
			envs = append(envs, r.Environment)
			created = append(created, r.RecordedAt)
			datas = append(datas, string(data))
		}
	}
	if len(ids) > 0 {
		b.Queue(`INSERT INTO public_events (seq, id, type, platform_id, environment, created_at, data)
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::jsonb[])`,
			seq, ids, types, platforms, envs, created, datas)
	}
	return nil
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
		out = append(out, publicEvent{r.EventID, "virtual_account.created", VirtualAccountView{
			ID: e.VirtualAccountID, Object: "virtual_account", PlatformID: e.PlatformID, EntityRef: e.EntityRef,
			Type: e.Type.String(), Status: account.StatusActive.String(), AccountNumber: e.AccountNumber,
			RoutingNumber: e.RoutingNumber, Currency: "USD", KYBStatus: business.Status(), Metadata: e.Metadata,
			Environment: e.Environment.String(), CreatedAt: NewTime(e.At)}})
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
	case payment.Created, payment.Submitted, payment.Completed, payment.Failed, payment.Canceled:
		v, err := paymentAt(streams, r)
		if err != nil {
			return nil, err
		}
		out = append(out, publicEvent{r.EventID, r.Type, v})
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

func entryView(e ledger.Recorded, l ledger.Line, status string) LedgerEntryView {
	v := LedgerEntryView{ID: l.EntryID, Object: "ledger_entry", JournalEntryID: e.JournalEntryID,
		LedgerAccountID: l.LedgerAccountID, Direction: l.Direction.String(), Amount: l.Amount, Currency: "USD",
		Type: l.Type, Status: status, Description: e.Description, Environment: e.Environment.String(),
		EffectiveAt: NewTime(e.EffectiveAt), CreatedAt: NewTime(e.At)}
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
func verificationAt(streams streamSource, r *eventstore.RecordedEvent) (KYBView, error) {
	recs := streams.stream(r.StreamID)
	var s kyb.State
	var id string
	for i := range recs {
		if recs[i].StreamVersion > r.StreamVersion {
			break
		}
		e, err := recs[i].Decode()
		if err != nil {
			return KYBView{}, err
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
		return KYBView{}, errors.New("kyb decision without its verification in " + r.StreamID)
	}
	return NewKYBView(v), nil
}

// inboundAt folds an inbound transfer's stream up to and including r.
func inboundAt(streams streamSource, r *eventstore.RecordedEvent) (InboundTransferView, error) {
	recs := streams.stream(r.StreamID)
	s, err := eventstore.Fold(upTo(recs, r), inbound.State{}, inbound.Evolve)
	if err != nil {
		return InboundTransferView{}, err
	}
	return InboundTransferView{ID: s.InboundTransferID, Object: "inbound_transfer", VirtualAccountID: s.VirtualAccountID,
		Amount: s.Amount, Currency: "USD", Rail: s.Rail, Originator: OriginatorView(s.Originator), Description: s.Description,
		Status: s.Status, JournalEntryID: s.JournalEntryID, ExpectedSettlementAt: NewTime(s.ExpectedAt),
		CompletedAt: NewTimePtr(s.CompletedAt), Environment: r.Environment, CreatedAt: NewTime(s.At)}, nil
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
