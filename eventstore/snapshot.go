package eventstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
)

// Snapshots cache an aggregate's folded state at a stream version, so
// that a command reads the events after it instead of the whole stream.
// The log stays the source of truth: a snapshot of another schema
// version than the code's is ignored, and a rebuild or an audit never
// reads one.

// SnapshotLoad is a stream's snapshot and the events after it, as read
// by QueueLoadFromSnapshot once the batch has been sent.
type SnapshotLoad[S any] struct {
	// Version is the snapshot's stream version (0: none, start from the
	// caller's initial state).
	Version int64
	State   S
	// Events are the events read past the snapshot.
	Events []RecordedEvent
}

// QueueLoadFromSnapshot queues into b the events of streamID after its
// snapshot of schemaVersion that also match where (a condition on the
// events table whose placeholders start at $3, or "" for all), then the
// snapshot itself, into load whose State holds the initial state.
//
// The events come first: under READ COMMITTED each statement sees the
// commits made before it, so the snapshot read second is never older
// than the one the events query skipped to. Fold then drops the events
// the snapshot already holds, and the result is always a state the
// stream really had.
func QueueLoadFromSnapshot[S any](b *pgx.Batch, streamID string, schemaVersion int, where string, whereArgs []any, load *SnapshotLoad[S]) {
	if where != "" {
		where = " AND (" + where + ")"
	}
	args := append([]any{streamID, schemaVersion}, whereArgs...)
	b.Queue(`SELECT `+SelectColumns+` FROM events WHERE stream_id = $1
        AND stream_version > coalesce((SELECT version FROM stream_snapshots WHERE stream_id = $1 AND schema_version = $2), 0)`+
		where+` ORDER BY stream_version`, args...).Query(func(rows pgx.Rows) (err error) {
		load.Events, err = ScanEvents(rows)
		return err
	})
	b.Queue(`SELECT version, state FROM stream_snapshots WHERE stream_id = $1 AND schema_version = $2`,
		streamID, schemaVersion).QueryRow(func(row pgx.Row) error {
		var version int64
		var state []byte
		if err := row.Scan(&version, &state); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			return err
		}
		var s S
		if err := json.Unmarshal(state, &s); err != nil {
			return fmt.Errorf("snapshot of %s: %w", streamID, err)
		}
		load.Version, load.State = version, s
		return nil
	})
}

// Fold folds the events past the snapshot into its state.
func (l *SnapshotLoad[S]) Fold(evolve func(S, domain.Event) S) (S, error) {
	tail := l.Events
	for len(tail) > 0 && tail[0].StreamVersion <= l.Version {
		tail = tail[1:]
	}
	return Fold(tail, l.State, evolve)
}

// SaveSnapshot stores state as streamID's snapshot at version. A newer
// snapshot of the same schema stays; one of another schema is replaced
// (during a rolling deploy the two codes take turns: each still reads a
// bounded tail). Call it in the transaction that appended up to version,
// so that the snapshot commits with the events it folds.
func SaveSnapshot[S any](ctx context.Context, db DB, streamID string, schemaVersion int, version int64, state S) error {
	data, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("snapshot of %s: %w", streamID, err)
	}
	_, err = db.Exec(ctx, `INSERT INTO stream_snapshots (stream_id, version, schema_version, state, taken_at)
        VALUES ($1, $2, $3, $4, now())
        ON CONFLICT (stream_id) DO UPDATE SET version = EXCLUDED.version, schema_version = EXCLUDED.schema_version,
            state = EXCLUDED.state, taken_at = EXCLUDED.taken_at
        WHERE stream_snapshots.version < EXCLUDED.version OR stream_snapshots.schema_version <> EXCLUDED.schema_version`,
		streamID, version, schemaVersion, string(data))
	return err
}
