package eventstore

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Handler processes a batch of events inside the subscription's
// transaction; its writes commit together with the new checkpoint, so each
// event is handled exactly once as far as the database is concerned.
type Handler func(ctx context.Context, tx pgx.Tx, events []RecordedEvent) error

// Subscription reads the log in commit order from its checkpoint.
type Subscription struct {
	Name         string
	Pool         *pgxpool.Pool
	Handle       Handler
	BatchSize    int           // default 500
	PollInterval time.Duration // fallback when no wake-up arrives; default 500ms
	// HeldBackPoll is how often it looks again while its events are held
	// back by an older transaction, unless a wake-up comes first; default
	// 32 ms.
	HeldBackPoll time.Duration
	// LatencyBound marks a reader that others wait on (the public events,
	// which the webhooks follow): after reading all that was readable it
	// looks again at the next wake-up, StepGap after its last step at the
	// soonest, where another reader backs off (see Run). While an older
	// transaction holds its events back, that is a step per StepGap at
	// most.
	LatencyBound bool
	// StepGap is a latency-bound reader's least time from a step that read
	// everything readable to the next step's start, default
	// DefaultStepGap: the commits of the gap are read together.
	StepGap time.Duration
	Wake    <-chan struct{}
	Log     *slog.Logger
	// OnCommit, if set, is called after a batch committed (e.g. to wake
	// the readers of what the handler wrote).
	OnCommit func()
	// Derived says the handler only writes what can be derived again from
	// the log (read models, the hash chain, a schedule), never events, so
	// its batches may commit without waiting for the WAL flush
	// (synchronous_commit = off): a crash loses at most the last batches,
	// checkpoint and writes together, and they are processed again.
	Derived bool
	// Types, if not empty, are the only event types the handler is given:
	// the others are skipped in the query and never leave the database.
	// The checkpoint still moves past the skipped events, up to the last
	// event readable now, never further (see readFiltered).
	Types []string
	// Partition, if not the whole log, is the part of the log this
	// subscription reads (its Name should be Partition.Name(base)): a new
	// part's checkpoint starts where its reader's other checkpoints are,
	// the oldest of them (see alignSQL).
	Partition Partition
	// Lease, if set, says when this process runs the subscription: Run
	// steps only while this replica holds the lease of its Name, and waits
	// for the lease otherwise (see Leases).
	Lease *Leases
	// Pacer, if set, hears how far behind the subscription is, and holds
	// the API's commands back while it is too far (see Pacer).
	Pacer *Pacer
	// ReadAhead reads the next batch while the handler works on a full
	// one (see ReadAhead).
	ReadAhead bool
	// Decode hands the handler its events decoded (Event set), decoded
	// while the previous batch is handled when read ahead: for a handler
	// that decodes every event.
	Decode bool
	// Prelude, if set, is a query of one row (no arguments) sent with the
	// step's first round trip, after the subscription's lock, and scanned by
	// Prelude.Scan before the handler runs: what the handler would
	// otherwise read in a round trip of its own (the projections' last
	// seq numbers).
	Prelude *Prelude

	ahead *ReadAhead
}

// Prelude is a subscription's own read in its step's first round trip.
type Prelude struct {
	SQL  string
	Scan func(pgx.Row) error
}

// ErrNotOwner means another process holds this subscription's checkpoint.
var ErrNotOwner = errors.New("eventstore: subscription is owned by another process")

// Step processes at most one batch and returns how many events it handled.
//
// A step takes two round trips besides its handler's: BEGIN, the
// subscription's lock (an advisory lock: no transaction id until the
// handler writes), the checkpoint, the prelude and the read of the batch
// (when none was read ahead) travel together, then, after the handler,
// the new checkpoint (if the old one has not moved) and COMMIT. (Five
// before: each went on its own.) A COMMIT that fails (a deferred
// constraint, the connection lost) moves nothing: the batch is handled
// again by the next step.
func (s *Subscription) Step(ctx context.Context) (int, error) {
	start := time.Now()
	ahead, aheadOK := s.ahead.Await(ctx)
	s.ahead = nil
	batch := s.BatchSize
	if batch <= 0 {
		batch = 500
	}
	// Only a full batch read ahead is used: the read ran beside this
	// step's open transaction, which held its horizon back, so a short one
	// may lack events readable now.
	useAhead := aheadOK && len(ahead.Events) == batch

	pc, err := s.Pool.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	committed := false
	defer func() { endStep(ctx, pc, committed) }()
	conn := pc.Conn()

	first := &pgx.Batch{}
	// READ COMMITTED whatever the server's default: the checkpoint's read
	// must take its snapshot after the lock, not at the first statement.
	first.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	if s.Derived {
		first.Queue(`SET LOCAL synchronous_commit = off`)
	}
	// With several replicas, one owns the subscription at a time and the
	// others wait their turn instead of double-processing. The owner holds
	// an advisory lock, not the checkpoint row's: a row lock takes a
	// transaction id, and a step holding one for its whole length (its
	// reads, its handler's folding in Go) held back every other reader of
	// the log, which reads only below the oldest transaction still running
	// (45 % of the time, sampled under load, the oldest was a reader's
	// step). The step now takes one at its first write; a step that finds
	// nothing to do takes none. The checkpoint is read after the lock, in
	// a statement of its own (a fresh snapshot), and moved at the end only
	// if it is still where it was read (stepEndSQL).
	first.Queue(`SELECT pg_try_advisory_xact_lock($1)`, SubscriptionLock(s.Name))
	first.Queue(`SELECT transaction_id::text::bigint, global_position FROM subscription_checkpoints
        WHERE name = $1`, s.Name)
	if s.Prelude != nil {
		first.Queue(s.Prelude.SQL)
	}
	filter := s.filter()
	readHere := filter.none() && !useAhead
	if readHere {
		// ReadAll from the checkpoint, read in SQL (the row just locked,
		// or another owner's: then the events are thrown away).
		first.Queue(`SELECT `+SelectColumns+` FROM events
            WHERE (transaction_id, global_position) >
                (SELECT transaction_id, global_position FROM subscription_checkpoints WHERE name = $1)
              AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
            ORDER BY events.transaction_id, events.global_position
            LIMIT $2`, s.Name, batch)
	}
	br := conn.SendBatch(ctx, first)
	var tx pgx.Tx
	var pos Position
	var events []RecordedEvent
	locked := false
	owned, err := func() (bool, error) {
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return false, err
		}
		tx = br.Tx()
		if s.Derived {
			if _, err := br.Exec(); err != nil {
				return false, err
			}
		}
		if err := br.QueryRow().Scan(&locked); err != nil {
			return false, err
		}
		var txid int64
		err := br.QueryRow().Scan(&txid, &pos.GlobalPosition)
		pos.TransactionID = uint64(txid)
		owned := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return false, err
		}
		if s.Prelude != nil {
			if err := s.Prelude.Scan(br.QueryRow()); err != nil {
				return false, err
			}
		}
		if readHere {
			rows, err := br.Query()
			if err != nil {
				return false, err
			}
			if events, err = ScanEvents(rows); err != nil {
				return false, err
			}
		}
		return owned, br.Close()
	}()
	if err != nil {
		return 0, err
	}
	if !locked {
		return 0, ErrNotOwner
	}
	if !owned {
		var txid int64
		err := tx.QueryRow(ctx, alignSQL, s.Name, BaseName(s.Name), strconv.Itoa(max(s.Partition.Count, 1))).
			Scan(&txid, &pos.GlobalPosition)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, ErrNotOwner // made meanwhile by another process
		}
		if err != nil {
			return 0, err
		}
		pos.TransactionID = uint64(txid)
		readHere = false // the read above found no checkpoint: read from where it starts
	}

	var last Position
	if filter.none() {
		decoded := false
		switch {
		case useAhead && ahead.From == pos:
			events, decoded = ahead.Events, s.Decode // decoded as it was read, if asked
			start = ahead.Began                      // the log it saw is the log as of then (see Pacer)
		case readHere:
		default:
			events, err = ReadAll(ctx, tx, pos, batch)
		}
		if err == nil && s.Decode && !decoded {
			err = DecodeAll(events)
		}
		if err == nil && len(events) == 0 {
			s.Pacer.Read(s.Name, start, true)
		}
		if err != nil || len(events) == 0 {
			return 0, err
		}
		last = PositionOf(events[len(events)-1])
		if s.ReadAhead && len(events) == batch {
			s.ahead = StartReadAhead(ctx, s.Pool, last, batch, s.Decode, Filter{})
		}
	} else {
		// As above: a full page read ahead is what this step would read.
		if useAhead && ahead.From == pos {
			events, last = ahead.Events, ahead.Last
			start = ahead.Began
		} else {
			events, last, err = readFiltered(ctx, tx, pos, batch, filter)
			if err == nil && s.Decode {
				err = DecodeAll(events)
			}
		}
		if err == nil && len(events) == 0 && !pos.Less(last) {
			s.Pacer.Read(s.Name, start, true)
		}
		if err != nil || (len(events) == 0 && !pos.Less(last)) {
			return 0, err
		}
		if s.ReadAhead && len(events) == batch {
			s.ahead = StartReadAhead(ctx, s.Pool, last, batch, s.Decode, filter)
		}
	}
	if len(events) > 0 {
		if err := s.Handle(ctx, tx, events); err != nil {
			return 0, err
		}
	}
	end := &pgx.Batch{}
	end.Queue(stepEndSQL, s.Name, strconv.FormatUint(last.TransactionID, 10), last.GlobalPosition,
		strconv.FormatUint(pos.TransactionID, 10), pos.GlobalPosition)
	end.Queue(`COMMIT`)
	br = conn.SendBatch(ctx, end)
	_, err = br.Exec()
	var tag pgconn.CommandTag
	if err == nil {
		tag, err = br.Exec()
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && tag.String() != "COMMIT" {
		err = pgx.ErrTxCommitRollback
	}
	if pgErr, ok := sqlState(err); ok && pgErr.Code == CheckpointMovedState {
		err = ErrNotOwner
	}
	if err != nil {
		return 0, err
	}
	committed = true
	// A short batch was everything readable when the step began.
	s.Pacer.Read(s.Name, start, len(events) < batch)
	if s.OnCommit != nil && len(events) > 0 {
		s.OnCommit()
	}
	return len(events), nil
}

// stepEndSQL moves a step's checkpoint ($1) to $2, $3 if it is still at
// $4, $5, where the step read it, and fails otherwise (SQLSTATE
// CheckpointMovedState), so that the COMMIT queued after it is skipped:
// the advisory lock keeps another owner out, this keeps out whatever does
// not take it (a process of an earlier release, which locked the row).
const stepEndSQL = `WITH moved AS (UPDATE subscription_checkpoints
        SET transaction_id = $2::text::xid8, global_position = $3, updated_at = now()
        WHERE name = $1 AND transaction_id = $4::text::xid8 AND global_position = $5 RETURNING 1)
    SELECT CASE WHEN EXISTS (SELECT FROM moved) THEN 0 ELSE checkpoint_moved($1) END`

// SubscriptionLock is the advisory lock the owner of the named
// subscription holds for each step (a rebuild takes it to pause the
// subscription).
func SubscriptionLock(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("treasury subscription " + name))
	return int64(h.Sum64())
}

// endStep rolls back a step that did not commit and gives its connection
// back. A connection whose ROLLBACK fails is closed: the pool never hands
// out one left in a transaction.
func endStep(ctx context.Context, pc *pgxpool.Conn, committed bool) {
	defer pc.Release()
	conn := pc.Conn()
	if committed || conn.IsClosed() || conn.PgConn().TxStatus() == 'I' {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
		_ = conn.Close(rctx)
	}
}

// filter is what the subscription reads of the log.
func (s *Subscription) filter() Filter { return Filter{Types: s.Types, Partition: s.Partition} }

// readFiltered is ReadAll of the events the filter lets through only, and
// the position the checkpoint may move to. Readable are the events of
// transactions older than every one still running (see ReadAll): they are
// final, so the last of them (the horizon, read first) bounds the read,
// and a later statement, with a later snapshot, sees exactly the same
// events up to it. A full page moves the checkpoint to its last event (the
// events of other types before it are skipped); a short one to the
// horizon, past the skipped events after it but never past an event not
// yet readable. pos itself comes back when nothing is readable past it.
func readFiltered(ctx context.Context, db DB, pos Position, limit int, filter Filter) ([]RecordedEvent, Position, error) {
	var horizon Position
	var txid int64
	err := db.QueryRow(ctx, `SELECT transaction_id::text::bigint, global_position FROM events
        WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`).Scan(&txid, &horizon.GlobalPosition)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, pos, nil
	}
	if err != nil {
		return nil, pos, err
	}
	horizon.TransactionID = uint64(txid)
	if !pos.Less(horizon) {
		return nil, pos, nil
	}
	args := []any{strconv.FormatUint(pos.TransactionID, 10), pos.GlobalPosition,
		strconv.FormatUint(horizon.TransactionID, 10), horizon.GlobalPosition, limit}
	if len(filter.Types) > 0 {
		args = append(args, filter.Types)
	}
	rows, err := db.Query(ctx, `SELECT `+SelectColumns+` FROM events
        WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
          AND (transaction_id, global_position) <= ($3::text::xid8, $4)
          `+filter.where(6)+`
        ORDER BY events.transaction_id, events.global_position
        LIMIT $5`, args...)
	if err != nil {
		return nil, pos, err
	}
	events, err := ScanEvents(rows)
	if err != nil {
		return nil, pos, err
	}
	if len(events) == limit {
		return events, PositionOf(events[len(events)-1]), nil
	}
	return events, horizon, nil
}

// heldBack reports whether events committed after the checkpoint are
// visible but not yet readable (an older transaction still runs).
func (s *Subscription) heldBack(ctx context.Context) bool {
	cp, err := s.Checkpoint(ctx)
	if err != nil {
		return false
	}
	var held bool
	// Not EXISTS (…): its generic plan, the one a prepared statement ends
	// up with, scans the whole log when nothing follows the checkpoint
	// (the usual case); ORDER BY … LIMIT 1 keeps it on the index.
	err = s.Pool.QueryRow(ctx, `SELECT count(*) > 0 FROM (SELECT 1 FROM events
        WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
        ORDER BY transaction_id, global_position LIMIT 1) next`,
		strconv.FormatUint(cp.TransactionID, 10), cp.GlobalPosition).Scan(&held)
	return err == nil && held
}

// CatchUp processes batches until the log has nothing more to give now.
func (s *Subscription) CatchUp(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := s.Step(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// Run processes events until ctx ends, waking on notifications and polling
// as a fallback. Errors are logged and retried with backoff.
func (s *Subscription) Run(ctx context.Context) {
	poll := s.PollInterval
	if poll <= 0 {
		poll = 500 * time.Millisecond
	}
	heldPoll := s.HeldBackPoll
	if heldPoll <= 0 {
		heldPoll = 32 * time.Millisecond
	}
	backoff := 50 * time.Millisecond
	batch := s.BatchSize
	if batch <= 0 {
		batch = 500
	}
	gap := s.StepGap
	if gap <= 0 {
		gap = DefaultStepGap
	}
	var caughtUp time.Time // when the last step that read everything readable began
	// After a wake-up the new events may still be held back for a moment
	// by an older transaction elsewhere on the server (reads stop below
	// the oldest running one): a reader looks again quickly a few times
	// (2, 4, … 32 ms, the commits meanwhile read together) before falling
	// back to the slow poll. A latency-bound one instead looks again at
	// each wake-up, at most every StepGap.
	eager := 0
	s.Pacer.Woke(s.Name)
	for ctx.Err() == nil {
		if !s.Lease.Holds(s.Name) {
			// Another replica reads it (or will): wait for the lease.
			s.Pacer.Idle(s.Name)
			s.Lease.Await(ctx, s.Name)
			s.Pacer.Woke(s.Name)
			// A backoff grown while others owned it is no measure of now:
			// the replica that gave the lease back may still end a step.
			backoff = 50 * time.Millisecond
			continue
		}
		if wait := gap - time.Since(caughtUp); s.LatencyBound && wait > 0 {
			sleep(ctx, wait)
		}
		began := time.Now()
		n, err := s.Step(ctx)
		switch {
		case errors.Is(err, ErrNotOwner):
			s.Pacer.Idle(s.Name) // another process reads: not this one's to pace
			sleep(ctx, backoff+time.Duration(rand.Int64N(int64(backoff))))
			backoff = min(backoff*2, 5*time.Second)
			continue
		case err != nil && ctx.Err() == nil:
			// A failing reader (its database gone, say) is not short of
			// time: pacing the commands would not help it, and they must
			// fail fast themselves.
			s.Pacer.Idle(s.Name)
			if s.Log != nil {
				s.Log.Warn("subscription step failed", "subscription", s.Name, "error", err)
			}
			sleep(ctx, backoff+time.Duration(rand.Int64N(int64(backoff))))
			backoff = min(backoff*2, 5*time.Second)
			continue
		case err != nil: // stopping
			continue
		case n >= batch, n > 0 && !s.LatencyBound:
			backoff = 50 * time.Millisecond
			continue // more may be readable
		case s.LatencyBound:
			// A short batch read all that was readable when it began.
			caughtUp = began
			select {
			case <-s.Wake: // a commit since: look again (after the gap)
				continue
			default:
			}
			if s.heldBack(ctx) {
				// Events after it wait for an older transaction (in any
				// database of the server), or came since: look again at
				// the next wake-up (a commit, maybe that transaction's),
				// or in 32 ms.
				s.pause(ctx, heldPoll)
				continue
			}
		case eager > 0:
			sleep(ctx, time.Duration(1<<(6-eager))*time.Millisecond) // 2, 4, … 32 ms
			eager--
			continue
		case s.heldBack(ctx):
			// Committed events wait for an older transaction: keep
			// looking every 32 ms rather than leave them to the slow poll.
			sleep(ctx, heldPoll)
			continue
		}
		s.Pacer.Idle(s.Name)
		select {
		case <-ctx.Done():
		case <-s.Wake:
			eager = 5
		case <-time.After(poll):
		}
		s.Pacer.Woke(s.Name)
	}
	s.Pacer.Idle(s.Name)
}

// DefaultStepGap is a latency-bound subscription's least time between the
// start of a step that read everything readable and the next one: woken at
// every commit, it stepped once per commit (at one client, three times a
// payment). Within the gap the commits ride together, at the cost of at
// most the gap in latency. The other readers keep backing off after a
// wake-up: every reader looking again at each wake-up tripled the readers'
// round trips per payment at one client, and cost a third of its payments
// per second.
const DefaultStepGap = 5 * time.Millisecond

// pause waits d, or less if a wake-up comes first.
func (s *Subscription) pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-s.Wake:
	case <-t.C:
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Checkpoint returns the subscription's position (zero if it never ran).
func (s *Subscription) Checkpoint(ctx context.Context) (Position, error) {
	return ReadCheckpoint(ctx, s.Pool, s.Name)
}

// ReadCheckpoint returns the named subscription's position as db sees it
// (zero if it never ran).
func ReadCheckpoint(ctx context.Context, db DB, name string) (Position, error) {
	var pos Position
	var txid int64
	err := db.QueryRow(ctx, `SELECT transaction_id::text::bigint, global_position FROM subscription_checkpoints WHERE name = $1`,
		name).Scan(&txid, &pos.GlobalPosition)
	if errors.Is(err, pgx.ErrNoRows) {
		return Position{}, nil
	}
	pos.TransactionID = uint64(txid)
	return pos, err
}

// ReadSlowestCheckpoint is the lowest checkpoint of the subscriptions
// names, as db sees it: where all of them have passed (the start of the
// log while one has no checkpoint yet).
func ReadSlowestCheckpoint(ctx context.Context, db DB, names []string) (Position, error) {
	pos, _, err := readSlowestCheckpointAndWAL(ctx, db, names)
	return pos, err
}

// readSlowestCheckpointAndWAL is ReadSlowestCheckpoint that also reads the
// server's WAL insert position, after the checkpoints' commits (it sees
// them): the projections' commits are asynchronous, so their commit
// records may be inserted and not yet written, and pg_current_wal_lsn()
// could be below them.
func readSlowestCheckpointAndWAL(ctx context.Context, db DB, names []string) (Position, int64, error) {
	var pos Position
	var wal int64
	var txid, gpos, found *int64
	err := db.QueryRow(ctx, `SELECT `+WALInsertPositionSQL+`, c.txid, c.gpos, c.found
        FROM (SELECT 1) AS one LEFT JOIN (SELECT transaction_id::text::bigint AS txid, global_position AS gpos, count(*) OVER () AS found
            FROM subscription_checkpoints WHERE name = ANY($1) ORDER BY transaction_id, global_position LIMIT 1) AS c ON true`,
		names).Scan(&wal, &txid, &gpos, &found)
	if err != nil || txid == nil || *found < int64(len(names)) {
		return Position{}, wal, err
	}
	pos.TransactionID, pos.GlobalPosition = uint64(*txid), *gpos
	return pos, wal, nil
}

// WALInsertPositionSQL reads the primary's WAL insert position as a byte
// offset. Insert, not write (pg_current_wal_lsn()): a commit made with
// synchronous_commit = off is visible once its record is inserted.
const WALInsertPositionSQL = `(pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint`

// CatchUpTo processes events until the checkpoint reaches pos (from Head).
// It polls while pos is not yet readable (an older transaction still runs)
// or another process owns the subscription, until ctx ends.
func (s *Subscription) CatchUpTo(ctx context.Context, pos Position) error {
	wait := time.Millisecond
	for {
		cp, err := s.Checkpoint(ctx)
		if err != nil {
			return err
		}
		if !cp.Less(pos) {
			return nil
		}
		n, err := s.Step(ctx)
		if err != nil && !errors.Is(err, ErrNotOwner) {
			return err
		}
		if n == 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(wait*2, 20*time.Millisecond)
		}
	}
}
