// Package eventstore is the append-only event log on PostgreSQL: append
// with an expected version, load a stream, read the whole log in commit
// order, and subscriptions that checkpoint in their own transaction.
package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opentreasury/treasury/domain"
)

// ErrVersionConflict means the stream moved past the expected version: the
// command loaded stale state and must be retried.
var ErrVersionConflict = errors.New("eventstore: stream version conflict")

// DB is what the store needs of a connection, pool or transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Stream names a stream and the owner its events belong to.
type Stream struct {
	ID          string
	Type        string
	PlatformID  string
	Environment string
}

// Metadata travels with every event: who caused it and why.
type Metadata struct {
	RequestID      string `json:"request_id,omitempty"`
	Actor          string `json:"actor,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	CausationID    string `json:"causation_id,omitempty"`
}

// RecordedEvent is an event as stored.
type RecordedEvent struct {
	GlobalPosition int64
	TransactionID  uint64
	EventID        string
	StreamID       string
	StreamVersion  int64
	Type           string
	SchemaVersion  int
	PlatformID     string
	Environment    string
	Data           json.RawMessage
	Metadata       json.RawMessage
	RecordedAt     time.Time
	// Event is the decoded value, set by Append and by Decode.
	Event domain.Event
}

// Decode decodes Data into Event (once).
func (r *RecordedEvent) Decode() (domain.Event, error) {
	if r.Event != nil {
		return r.Event, nil
	}
	e, err := domain.DecodeEvent(r.Type, r.Data)
	if err != nil {
		return nil, err
	}
	r.Event = e
	return e, nil
}

// Position is a place in the commit-ordered log.
type Position struct {
	TransactionID  uint64
	GlobalPosition int64
}

// The append is one statement (one round trip): it creates the stream when
// expected is 0, or moves its version from expected, and inserts the events
// only if one of the two happened.
const appendSQL = `
WITH ` + appendCTEs + `
INSERT INTO events (event_id, stream_id, stream_version, event_type, schema_version, platform_id, environment, data, metadata)
` + appendSelect + `
RETURNING global_position, transaction_id::text::bigint, event_id, stream_version, recorded_at`

// queuedAppendSQL is the append as a statement that fails on a conflict
// (SQLSTATE VersionConflictState, from migration 00013) instead of
// returning no rows: in a pipeline the failure makes PostgreSQL skip every
// later statement up to the sync, COMMIT included.
const queuedAppendSQL = `
WITH ` + appendCTEs + `, inserted AS (
    INSERT INTO events (event_id, stream_id, stream_version, event_type, schema_version, platform_id, environment, data, metadata)
    ` + appendSelect + `
    RETURNING 1
)
SELECT CASE WHEN count(*) = 0 THEN stream_version_conflict($1, $5) ELSE count(*) END FROM inserted`

const appendCTEs = `created AS (
    INSERT INTO streams (stream_id, stream_type, platform_id, environment, version)
    SELECT $1, $2, NULLIF($3, ''), NULLIF($4, ''), $6::bigint WHERE $5::bigint = 0
    ON CONFLICT (stream_id) DO NOTHING
    RETURNING 1
), moved AS (
    UPDATE streams SET version = $6 WHERE stream_id = $1 AND version = $5 AND $5 > 0
    RETURNING 1
)`

const appendSelect = `SELECT e.event_id, $1, $5 + e.ord, e.event_type, 1, NULLIF($3, ''), NULLIF($4, ''), e.data, $7
FROM unnest($8::text[], $9::text[], $10::jsonb[]) WITH ORDINALITY AS e(event_id, event_type, data, ord)
WHERE EXISTS (SELECT 1 FROM created UNION ALL SELECT 1 FROM moved)
ORDER BY e.ord`

// Append writes events to a stream whose current version must be expected
// (0 for a new stream). It returns ErrVersionConflict otherwise.
func Append(ctx context.Context, db DB, s Stream, expected int64, meta Metadata, events ...domain.Event) ([]RecordedEvent, error) {
	if len(events) == 0 {
		return nil, nil
	}
	a, err := prepareAppend(AppendRequest{Stream: s, Expected: expected, Events: events}, meta)
	if err != nil {
		return nil, err
	}
	rows, err := db.Query(ctx, appendSQL, a.args...)
	if err != nil {
		return nil, err
	}
	return a.scan(rows)
}

// AppendRequest is one stream's part of AppendAll.
type AppendRequest struct {
	Stream   Stream
	Expected int64
	Events   []domain.Event
	// Meta, when set, is this request's metadata instead of AppendAll's:
	// a batch of commands appends in one round trip, each event still
	// carrying its own command's causation.
	Meta *Metadata
}

// AppendAll appends to several streams in one round trip (a pipelined
// batch in tx), each with its expected version, and returns each stream's
// recorded events in the order asked. Any conflict is ErrVersionConflict,
// and the caller's transaction must then roll back.
func AppendAll(ctx context.Context, tx pgx.Tx, meta Metadata, reqs ...AppendRequest) ([][]RecordedEvent, error) {
	prepared := make([]preparedAppend, len(reqs))
	b := &pgx.Batch{}
	for i, r := range reqs {
		m := meta
		if r.Meta != nil {
			m = *r.Meta
		}
		a, err := prepareAppend(r, m)
		if err != nil {
			return nil, err
		}
		prepared[i] = a
		b.Queue(appendSQL, a.args...)
	}
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	out := make([][]RecordedEvent, len(reqs))
	for i := range prepared {
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		if out[i], err = prepared[i].scan(rows); err != nil {
			return nil, err
		}
	}
	return out, br.Close()
}

// QueueAppend queues on b the append of req's events, for a caller that
// sends it in one pipeline with what follows (the inline projections'
// writes, COMMIT). A conflict fails the statement (IsVersionConflict,
// Retryable), so that nothing after it in the pipeline runs. It returns
// the events as they will be recorded, known before the batch is sent:
// all but GlobalPosition, TransactionID and RecordedAt, which only the
// database assigns (the inline projectors do not read them). The caller
// reads the statement's result with Exec, in queue order.
func QueueAppend(b *pgx.Batch, req AppendRequest, meta Metadata) ([]RecordedEvent, error) {
	if len(req.Events) == 0 {
		return nil, nil
	}
	if req.Meta != nil {
		meta = *req.Meta
	}
	a, err := prepareAppend(req, meta)
	if err != nil {
		return nil, err
	}
	for i := range a.recs {
		a.recs[i].StreamVersion = req.Expected + int64(i) + 1
		a.recs[i].Metadata = a.metaJSON
	}
	b.Queue(queuedAppendSQL, a.args...)
	return a.recs, nil
}

type preparedAppend struct {
	args     []any
	recs     []RecordedEvent
	metaJSON []byte
}

func prepareAppend(r AppendRequest, meta Metadata) (preparedAppend, error) {
	s, events := r.Stream, r.Events
	ids := make([]string, len(events))
	types := make([]string, len(events))
	datas := make([]string, len(events))
	recs := make([]RecordedEvent, len(events))
	for i, e := range events {
		b, err := json.Marshal(e)
		if err != nil {
			return preparedAppend{}, fmt.Errorf("encode %s: %w", e.EventType(), err)
		}
		ids[i], types[i], datas[i] = domain.NewID(domain.PrefixEvent), e.EventType(), string(b)
		recs[i] = RecordedEvent{EventID: ids[i], StreamID: s.ID, Type: types[i], SchemaVersion: 1,
			PlatformID: s.PlatformID, Environment: s.Environment, Data: b, Event: e}
	}
	metaJSON, err := json.Marshal(meta)
	if err != nil {
		return preparedAppend{}, err
	}
	return preparedAppend{recs: recs, metaJSON: metaJSON, args: []any{s.ID, s.Type, s.PlatformID, s.Environment,
		r.Expected, r.Expected + int64(len(events)), metaJSON, ids, types, datas}}, nil
}

// scan reads the rows appendSQL returned into the recorded events.
func (a preparedAppend) scan(rows pgx.Rows) ([]RecordedEvent, error) {
	defer rows.Close()
	recs := a.recs
	byID := make(map[string]int, len(recs))
	for i := range recs {
		byID[recs[i].EventID] = i
	}
	n := 0
	for rows.Next() {
		var id string
		var r RecordedEvent
		var txid int64
		if err := rows.Scan(&r.GlobalPosition, &txid, &id, &r.StreamVersion, &r.RecordedAt); err != nil {
			return nil, err
		}
		i := byID[id]
		recs[i].GlobalPosition, recs[i].StreamVersion, recs[i].RecordedAt = r.GlobalPosition, r.StreamVersion, r.RecordedAt
		recs[i].TransactionID = uint64(txid)
		recs[i].Metadata = a.metaJSON
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, ErrVersionConflict
	}
	return recs, nil
}

// SelectColumns are the columns ScanEvents reads. data and metadata are scanned as bytes: a
// json.RawMessage destination would make pgx parse them once more.
// Queries order by events.transaction_id, never by the bare name, which
// would mean this list's bigint column: a sort of everything after the
// position instead of a walk of the (transaction_id, global_position) index.
const SelectColumns = `global_position, transaction_id::text::bigint, event_id, stream_id, stream_version,
    event_type, schema_version, coalesce(platform_id, ''), coalesce(environment, ''), data, metadata, recorded_at`

// ScanEvents reads rows of SelectColumns into recorded events.
func ScanEvents(rows pgx.Rows) ([]RecordedEvent, error) {
	defer rows.Close()
	var out []RecordedEvent
	for rows.Next() {
		var r RecordedEvent
		var txid int64
		if err := rows.Scan(&r.GlobalPosition, &txid, &r.EventID, &r.StreamID, &r.StreamVersion, &r.Type,
			&r.SchemaVersion, &r.PlatformID, &r.Environment, (*[]byte)(&r.Data), (*[]byte)(&r.Metadata), &r.RecordedAt); err != nil {
			return nil, err
		}
		r.TransactionID = uint64(txid)
		out = append(out, r)
	}
	return out, rows.Err()
}

// Load returns a stream's events in version order and its version.
func Load(ctx context.Context, db DB, streamID string) ([]RecordedEvent, int64, error) {
	rows, err := db.Query(ctx, `SELECT `+SelectColumns+` FROM events WHERE stream_id = $1 ORDER BY stream_version`, streamID)
	if err != nil {
		return nil, 0, err
	}
	evs, err := ScanEvents(rows)
	if err != nil {
		return nil, 0, err
	}
	var version int64
	if n := len(evs); n > 0 {
		version = evs[n-1].StreamVersion
	}
	return evs, version, nil
}

// LoadBefore returns a stream's events that come before pos in commit
// order: the stream as it was when the event at pos was written.
func LoadBefore(ctx context.Context, db DB, streamID string, pos Position) ([]RecordedEvent, error) {
	rows, err := db.Query(ctx, `SELECT `+SelectColumns+` FROM events
        WHERE stream_id = $1 AND (transaction_id, global_position) < ($2::text::xid8, $3)
        ORDER BY stream_version`, streamID, fmt.Sprint(pos.TransactionID), pos.GlobalPosition)
	if err != nil {
		return nil, err
	}
	return ScanEvents(rows)
}

// ReadAll returns up to limit events after pos in commit order. It only
// returns events of transactions older than every transaction still
// running, so an event whose transaction commits late is never skipped: it
// is returned after the events that committed before it, never lost.
func ReadAll(ctx context.Context, db DB, after Position, limit int) ([]RecordedEvent, error) {
	rows, err := db.Query(ctx, `SELECT `+SelectColumns+` FROM events
        WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
          AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY events.transaction_id, events.global_position
        LIMIT $3`, fmt.Sprint(after.TransactionID), after.GlobalPosition, limit)
	if err != nil {
		return nil, err
	}
	return ScanEvents(rows)
}

// ReadCommitted is ReadAll without the bound at the oldest running
// transaction: every event visible to db's snapshot, in commit order. Only
// a reader that holds back the writers it cares about (a rebuild holding
// the projection locks) may use it without skipping late commits.
func ReadCommitted(ctx context.Context, db DB, after Position, limit int) ([]RecordedEvent, error) {
	rows, err := db.Query(ctx, `SELECT `+SelectColumns+` FROM events
        WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
        ORDER BY events.transaction_id, events.global_position
        LIMIT $3`, fmt.Sprint(after.TransactionID), after.GlobalPosition, limit)
	if err != nil {
		return nil, err
	}
	return ScanEvents(rows)
}

// PositionOf is the log position just after e.
func PositionOf(e RecordedEvent) Position {
	return Position{TransactionID: e.TransactionID, GlobalPosition: e.GlobalPosition}
}

// Less orders positions as the log is read: by transaction, then position.
func (p Position) Less(q Position) bool {
	if p.TransactionID != q.TransactionID {
		return p.TransactionID < q.TransactionID
	}
	return p.GlobalPosition < q.GlobalPosition
}

// Head is the position of the last event committed and visible now.
func Head(ctx context.Context, db DB) (Position, error) {
	var pos Position
	var txid int64
	err := db.QueryRow(ctx, `SELECT transaction_id::text::bigint, global_position FROM events
        ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`).Scan(&txid, &pos.GlobalPosition)
	if errors.Is(err, pgx.ErrNoRows) {
		return Position{}, nil
	}
	pos.TransactionID = uint64(txid)
	return pos, err
}

// QueueHeadAndWAL queues, in b, Head's query that also reads the primary's
// WAL insert position (WALInsertPositionSQL): every transaction committed
// before it ran has its commit record below that position. Both are set
// when b's results are closed.
func QueueHeadAndWAL(b *pgx.Batch, head *Position, wal *int64) {
	b.Queue(`SELECT ` + WALInsertPositionSQL + `, h.txid, h.gpos
        FROM (SELECT 1) AS one LEFT JOIN (SELECT transaction_id::text::bigint AS txid, global_position AS gpos FROM events
            ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1) AS h ON true`).QueryRow(func(row pgx.Row) error {
		var txid, gpos *int64
		if err := row.Scan(wal, &txid, &gpos); err != nil {
			return err
		}
		*head = Position{}
		if txid != nil {
			*head = Position{TransactionID: uint64(*txid), GlobalPosition: *gpos}
		}
		return nil
	})
}

// Fold decodes events and folds them into s with evolve: an aggregate's
// state from its stream.
func Fold[S any](events []RecordedEvent, s S, evolve func(S, domain.Event) S) (S, error) {
	for i := range events {
		e, err := events[i].Decode()
		if err != nil {
			return s, err
		}
		s = evolve(s, e)
	}
	return s, nil
}
