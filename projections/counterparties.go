package projections

import (
	"strings"

	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// Counterparties projects counterparty streams into counterparties,
// inline: a payment to a counterparty reads it in its command.
type Counterparties struct{}

func (Counterparties) Name() string     { return "counterparties" }
func (Counterparties) Tables() []string { return []string{"counterparties"} }

// Project writes counterparties event by event: they change rarely.
func (p Counterparties) Project(b *Batch) error { return eachEvent(b, p.apply) }

func (Counterparties) apply(b *Batch, r *eventstore.RecordedEvent) error {
	id, ok := strings.CutPrefix(r.StreamID, counterparty.StreamID(""))
	if !ok {
		return nil // only a counterparty's stream holds its events
	}
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	switch e := ev.(type) {
	case counterparty.Created:
		b.Queue(`INSERT INTO counterparties (id, platform_id, environment, name, account_number, routing_number, account_type,
            verification_status, metadata, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
			e.CounterpartyID, e.PlatformID, e.Environment.String(), e.Name, e.AccountNumber, e.RoutingNumber, e.AccountType,
			counterparty.StatusUnverified, queries.Metadata(e.Metadata), e.At)
	case counterparty.VerificationRequested:
		b.Queue(`UPDATE counterparties SET verification_status = $2, verification_method = $3, failure_code = NULL, updated_at = $4,
            prenote_ach_file_id = NULL, prenote_trace_number = NULL, prenote_settles_at = NULL
            WHERE id = $1`, id, counterparty.StatusPending, e.Method, e.At)
	case counterparty.PrenoteSubmitted:
		b.Queue(`UPDATE counterparties SET prenote_ach_file_id = $2, prenote_trace_number = $3, prenote_settles_at = $4, updated_at = $5
            WHERE id = $1`, id, e.ACHFileID, e.TraceNumber, e.SettlesAt, e.At)
	case counterparty.Verified:
		b.Queue(`UPDATE counterparties SET verification_status = $2, updated_at = $3 WHERE id = $1`, id, counterparty.StatusVerified, e.At)
	case counterparty.VerificationFailed:
		b.Queue(`UPDATE counterparties SET verification_status = $2, failure_code = $3, updated_at = $4 WHERE id = $1`,
			id, counterparty.StatusFailed, e.FailureCode, e.At)
	case counterparty.Deleted:
		b.Queue(`UPDATE counterparties SET deleted = true, updated_at = $2 WHERE id = $1`, id, e.At)
	}
	return nil
}
