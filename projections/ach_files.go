package projections

import (
	"encoding/json"

	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/eventstore"
)

// ACHFiles projects the ACH days' streams into ach_files, the operator's
// list of live mode's outbound files, and the bank's inbound files into
// ach_returns, the credits we owe back (paid by the file that carries
// them). Files are rare (a few a day): a statement per event.
type ACHFiles struct{}

func (ACHFiles) Name() string     { return "ach_files" }
func (ACHFiles) Tables() []string { return []string{"ach_files", "ach_returns"} }

func (p ACHFiles) Project(b *Batch) error { return eachEvent(b, p.apply) }

func (ACHFiles) apply(b *Batch, r *eventstore.RecordedEvent) error {
	switch r.Type {
	case ach.FileCreated{}.EventType(), ach.FileTransmitted{}.EventType(), ach.InboundApplied{}.EventType():
	default:
		return nil // undecoded: most events are not the ACH day's
	}
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	switch e := ev.(type) {
	case ach.FileCreated:
		b.Queue(`INSERT INTO ach_files (id, day, name, id_modifier, entry_count, total_credit, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			e.ACHFileID, e.Day, e.Name, e.IDModifier, e.EntryCount(), e.TotalCredit(), e.At)
		for _, r := range e.Returns {
			b.Queue(`UPDATE ach_returns SET ach_file_id = $2, trace_number = $3 WHERE id = $1`, r.ID, e.ACHFileID, r.TraceNumber)
		}
	case ach.InboundApplied:
		for _, r := range e.ReturnsOwed {
			data, err := json.Marshal(r)
			if err != nil {
				return err
			}
			b.Queue(`INSERT INTO ach_returns (id, inbound_sha256, original_trace, code, amount, data, created_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.ID, e.SHA256, r.Credit.TraceNumber, r.Code, r.Credit.Amount, data, e.At)
		}
	case ach.FileTransmitted:
		b.Queue(`UPDATE ach_files SET transmitted_at = $2 WHERE id = $1`, e.ACHFileID, e.At)
	}
	return nil
}
