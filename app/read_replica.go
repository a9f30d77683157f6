package app

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/readreplica"
)

// Lists and exports on a read replica (DATABASE_REPLICA_URL), without
// losing read-your-writes whichever service replica took the write. A
// read takes, on the primary, the WAL insert position, which is above the
// commit of every write committed before the read began (the asynchronous
// projections' commits are waited for first, and their position is the
// one read with their checkpoint); it then waits, at most the replica's
// MaxWait, until the replica has replayed that position, and reads there.
// A replica that lags, is down or fails the read leaves the read to the
// primary: the replica never costs an answer.

// ListRead says what a list's or an export's read needs.
type ListRead struct {
	// Projected: the list is one of the asynchronous projections', so the
	// read waits for them first (AwaitProjections).
	Projected bool
	// KeyID, when set, is an API key to check on the primary in the read's
	// first round trip (the cached key of a hot read): ErrKeyNotUsable when
	// it is no longer usable.
	KeyID string
}

// ReadList runs read, a list's or an export's queries, on the read
// replica once it shows every write committed before the call, else on
// the primary. Without a replica it is AwaitProjections (when projected)
// and read on the primary. An error of read's that is the replica's (not
// a domain error, not the request's end) is retried on the primary,
// unless read marks it AnswerStarted.
func (a *App) ReadList(ctx context.Context, lr ListRead, read func(eventstore.DB) error) error {
	if a.Replica == nil {
		if lr.KeyID != "" {
			if err := a.checkKey(ctx, lr.KeyID); err != nil {
				return err
			}
		}
		if lr.Projected {
			a.AwaitProjections(ctx)
		}
		return read(a.Pool)
	}
	outcome, err := a.awaitReplica(ctx, lr)
	if err != nil {
		return err
	}
	if outcome != readreplica.Served {
		a.Replica.Count(outcome)
		return read(a.Pool)
	}
	err = read(a.Replica.Pool)
	var started answerStarted
	if err == nil || ctx.Err() != nil || errors.As(err, &started) || !replicaFault(err) {
		if errors.As(err, &started) {
			err = started.err
		}
		a.Replica.Count(readreplica.Served)
		return err
	}
	a.Replica.Count(readreplica.ReadFailed)
	a.warnReplica("a list's read failed on the read replica; the primary answers", err)
	return read(a.Pool)
}

// AnswerStarted marks an error a read met after part of its answer was
// sent (a streamed export): it is not retried on the primary, which would
// send the start again.
func AnswerStarted(err error) error { return answerStarted{err} }

type answerStarted struct{ err error }

func (e answerStarted) Error() string { return e.err.Error() }
func (e answerStarted) Unwrap() error { return e.err }

// replicaFault is an error the replica may have caused: anything but the
// request's own (a domain error, a key refused).
func replicaFault(err error) bool {
	var de *domain.Error
	return !errors.As(err, &de) && !errors.Is(err, ErrKeyNotUsable)
}

// awaitReplica takes the primary's WAL position (checking the key in the
// same round trip), waits for the projections and then for the replica,
// and says whether the read may go to the replica. Its error is the key's
// refusal or the primary's failure.
func (a *App) awaitReplica(ctx context.Context, lr ListRead) (readreplica.Outcome, error) {
	b := &pgx.Batch{}
	if lr.KeyID != "" {
		b.Queue(keyUsableSQL, lr.KeyID).QueryRow(keyUsable)
	}
	waitProjections := lr.Projected && a.Projected != nil && a.ReadYourWritesWithin > 0
	var head eventstore.Position
	var wal int64
	switch {
	case waitProjections:
		eventstore.QueueHeadAndWAL(b, &head, &wal)
	case a.ReadYourWritesWithin > 0:
		b.Queue(`SELECT ` + eventstore.WALInsertPositionSQL).QueryRow(func(row pgx.Row) error { return row.Scan(&wal) })
	}
	if b.Len() > 0 {
		if err := a.Pool.SendBatch(ctx, b).Close(); err != nil {
			return 0, err
		}
	}
	if waitProjections {
		if a.awaitHead(ctx, head) {
			// Their commits up to head are below the position read with
			// their checkpoint (readSlowestCheckpointAndWAL).
			_, projected := a.Projected.Reached()
			wal = max(wal, projected)
		}
	}
	wal = max(wal, 1) // at least once, to learn that the replica is a standby
	within := a.Replica.MaxWait
	if deadline, ok := ctx.Deadline(); ok {
		within = min(within, time.Until(deadline)/2)
	}
	wctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	switch err := a.Replica.WaitReplayed(wctx, wal); {
	case err == nil:
		return readreplica.Served, nil
	case ctx.Err() != nil:
		return 0, ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		a.warnReplica("the read replica has not replayed the writes before a read; the primary answers", err, "waited", within)
		return readreplica.Lagging, nil
	default:
		a.warnReplica("the read replica does not answer; the primary answers", err)
		return readreplica.Unavailable, nil
	}
}

// checkKey checks an API key in a round trip of its own.
func (a *App) checkKey(ctx context.Context, keyID string) error {
	return keyUsable(a.Pool.QueryRow(ctx, keyUsableSQL, keyID))
}

func (a *App) warnReplica(msg string, err error, args ...any) {
	if a.Replica.ShouldWarn() {
		a.Log.Warn(msg, append([]any{"error", err}, args...)...)
	}
}
