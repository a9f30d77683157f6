package eventstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ChainName is the hash chain's subscription name.
const ChainName = "hash_chain"

// CanonicalBytes are the bytes an event is hashed over: a JSON object
// with the event's fields in a fixed order, its data and metadata in
// PostgreSQL's jsonb text form (keys in a fixed order), the time in UTC
// with microseconds. Anyone holding an export can recompute them.
func CanonicalBytes(e RecordedEvent) []byte {
	var b bytes.Buffer
	field := func(name string, v any) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		b.Write(k)
		b.WriteByte(':')
		switch x := v.(type) {
		case json.RawMessage:
			b.Write(x)
		default:
			j, _ := json.Marshal(x)
			b.Write(j)
		}
	}
	b.WriteByte('{')
	field("event_id", e.EventID)
	field("stream_id", e.StreamID)
	field("stream_version", e.StreamVersion)
	field("event_type", e.Type)
	field("schema_version", e.SchemaVersion)
	field("platform_id", e.PlatformID)
	field("environment", e.Environment)
	field("data", e.Data)
	field("metadata", e.Metadata)
	field("recorded_at", e.RecordedAt.UTC().Format("2006-01-02T15:04:05.000000Z"))
	b.WriteByte('}')
	return b.Bytes()
}

// Link computes an event's hash and its chain hash after prev.
func Link(prev []byte, e RecordedEvent) (eventHash, chainHash []byte) {
	h := sha256.Sum256(CanonicalBytes(e))
	c := sha256.New()
	c.Write(prev)
	c.Write(h[:])
	return h[:], c.Sum(nil)
}

// ChainSubscription links every event into the hash chain, in commit
// order, in the subscription's own transaction (so the chain is gapless
// and never links an event twice).
// chainBatch is the most events one link batch takes: a batch costs one
// read and one insert whatever its size.
const chainBatch = 2000

func ChainSubscription(pool *pgxpool.Pool, wake <-chan struct{}) *Subscription {
	return &Subscription{Name: ChainName, Pool: pool, Wake: wake, PollInterval: time.Second, Derived: true, ReadAhead: true, BatchSize: chainBatch,
		Handle: func(ctx context.Context, tx pgx.Tx, events []RecordedEvent) error {
			var seq int64
			var prev []byte
			err := tx.QueryRow(ctx, `SELECT seq, chain_hash FROM event_chain ORDER BY seq DESC LIMIT 1`).Scan(&seq, &prev)
			if err != nil && err != pgx.ErrNoRows {
				return err
			}
			// The whole batch in one statement: seqs follow the one read of
			// the last link, so a batch rolled back leaves no gap.
			n := len(events)
			seqs, ids := make([]int64, n), make([]string, n)
			ehs, chs := make([][]byte, n), make([][]byte, n)
			for i, e := range events {
				seq++
				eh, ch := Link(prev, e)
				seqs[i], ids[i], ehs[i], chs[i] = seq, e.EventID, eh, ch
				prev = ch
			}
			_, err = tx.Exec(ctx, `INSERT INTO event_chain (seq, event_id, event_hash, chain_hash)
                SELECT * FROM unnest($1::bigint[], $2::text[], $3::bytea[], $4::bytea[])`, seqs, ids, ehs, chs)
			return err
		}}
}

// ChainBreak is the first link that does not hold.
type ChainBreak struct {
	Seq     int64
	EventID string
	Problem string
}

func (b ChainBreak) String() string {
	return fmt.Sprintf("seq %d (event %s): %s", b.Seq, b.EventID, b.Problem)
}

// VerifyChain recomputes the chain over every linked event, in the order
// it was linked, and returns the first break (nil if it holds) and how many
// links it checked. An edited event changes its hash; a deleted one leaves
// a link without its event; an inserted one is an event without a link
// among the linked ones (reported once the chain has caught up with it).
func VerifyChain(ctx context.Context, db DB) (*ChainBreak, int64, error) {
	rows, err := db.Query(ctx, `SELECT c.seq, c.event_id, c.event_hash, c.chain_hash, e.global_position IS NOT NULL,
            coalesce(e.global_position, 0), coalesce(e.transaction_id::text::bigint, 0), coalesce(e.stream_id, ''),
            coalesce(e.stream_version, 0), coalesce(e.event_type, ''), coalesce(e.schema_version, 0),
            coalesce(e.platform_id, ''), coalesce(e.environment, ''), coalesce(e.data, 'null'), coalesce(e.metadata, 'null'),
            coalesce(e.recorded_at, 'epoch')
        FROM event_chain c LEFT JOIN events e ON e.event_id = c.event_id ORDER BY c.seq`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var prev []byte
	var n, want int64
	for rows.Next() {
		var seq, gp, txid int64
		var id string
		var eh, ch []byte
		var exists bool
		var e RecordedEvent
		if err := rows.Scan(&seq, &id, &eh, &ch, &exists, &gp, &txid, &e.StreamID, &e.StreamVersion, &e.Type,
			&e.SchemaVersion, &e.PlatformID, &e.Environment, &e.Data, &e.Metadata, &e.RecordedAt); err != nil {
			return nil, n, err
		}
		want++
		n++
		switch {
		case seq != want:
			return &ChainBreak{seq, id, fmt.Sprintf("sequence gap: expected %d", want)}, n, nil
		case !exists:
			return &ChainBreak{seq, id, "the event is missing from the log (deleted)"}, n, nil
		}
		e.EventID = id
		gotEH, gotCH := Link(prev, e)
		if !bytes.Equal(gotEH, eh) {
			return &ChainBreak{seq, id, "the event's content differs from what was linked (edited)"}, n, nil
		}
		if !bytes.Equal(gotCH, ch) {
			return &ChainBreak{seq, id, "the chain hash does not follow from the previous link"}, n, nil
		}
		prev = ch
	}
	if err := rows.Err(); err != nil {
		return nil, n, err
	}
	// Events the chain should already cover but does not: inserted behind its back.
	var orphan string
	err = db.QueryRow(ctx, `SELECT e.event_id FROM events e
        WHERE NOT EXISTS (SELECT 1 FROM event_chain c WHERE c.event_id = e.event_id)
          AND (e.transaction_id, e.global_position) < (
              SELECT x.transaction_id, x.global_position FROM event_chain c JOIN events x ON x.event_id = c.event_id
              ORDER BY c.seq DESC LIMIT 1)
        LIMIT 1`).Scan(&orphan)
	if err == nil {
		return &ChainBreak{0, orphan, "the event is in the log but not in the chain (inserted)"}, n, nil
	}
	if err != pgx.ErrNoRows {
		return nil, n, err
	}
	return nil, n, nil
}
