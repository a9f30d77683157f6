// Package readreplica follows a PostgreSQL streaming replica (a hot
// standby) that serves lists and exports: it says when the replica has
// replayed the primary's WAL up to a position, so that a read sent there
// shows every write committed before that position was taken. One poller
// serves every waiter, and only while someone waits.
package readreplica

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxWait bounds how long a read waits for the replica to replay
// the writes before it: past it the read goes to the primary.
const DefaultMaxWait = 100 * time.Millisecond

const (
	// pollEvery is how often the replica's replay position is read while
	// reads wait for it: replay usually follows the primary within a
	// millisecond or two on one network.
	pollEvery = 2 * time.Millisecond
	// pollTimeout bounds one reading of it (an unreachable replica's
	// connection attempt included).
	pollTimeout = time.Second
	// restFor is how long reads go straight to the primary after the
	// replica failed to answer, before it is tried again: an unreachable
	// replica then costs a read nothing.
	restFor = time.Second
)

// ErrNotStandby is the replica's answer when it is not in recovery: it
// was promoted, or the setting names a primary. Its rows may differ from
// the primary's, so nothing is read there.
var ErrNotStandby = errors.New("the read replica is not a standby (pg_is_in_recovery() is false)")

// Replica is a read replica's pool and what is known of its replay.
type Replica struct {
	Pool *pgxpool.Pool
	// MaxWait bounds each read's wait for the replay (DefaultMaxWait).
	MaxWait time.Duration

	mu        sync.Mutex
	replayed  int64         // the highest replay position read, as a byte offset
	moved     chan struct{} // closed, and replaced, after every reading
	polling   bool
	waiting   int
	err       error     // the last reading's failure
	restUntil time.Time // reads go to the primary until then, after a failure

	counts [numOutcomes]atomic.Uint64
	warned atomic.Int64 // when ShouldWarn last said yes, in Unix nanoseconds
}

// New follows the replica reached through pool.
func New(pool *pgxpool.Pool) *Replica {
	return &Replica{Pool: pool, MaxWait: DefaultMaxWait, moved: make(chan struct{})}
}

// WaitReplayed returns once the replica has replayed the primary's WAL up
// to wal (a byte offset, eventstore.WALInsertPositionSQL), or with ctx's
// error, or at once with the replica's failure while it rests after one.
func (r *Replica) WaitReplayed(ctx context.Context, wal int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for r.replayed < wal {
		if time.Now().Before(r.restUntil) {
			return r.err
		}
		if !r.polling {
			r.polling = true
			go r.poll()
		}
		moved := r.moved
		r.waiting++
		r.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-moved:
		}
		r.mu.Lock()
		r.waiting--
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// poll reads the replay position every pollEvery while anyone waits; it
// stops at the first failure (the waiters learn it, and the replica rests).
func (r *Replica) poll() {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), pollTimeout)
		replayed, err := r.readReplayed(ctx)
		cancel()
		r.mu.Lock()
		if err != nil {
			r.err, r.restUntil = err, time.Now().Add(restFor)
		} else {
			r.err = nil
			r.replayed = max(r.replayed, replayed)
		}
		close(r.moved)
		r.moved = make(chan struct{})
		if err != nil || r.waiting == 0 {
			r.polling = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		<-tick.C
	}
}

func (r *Replica) readReplayed(ctx context.Context) (int64, error) {
	var replayed *int64
	var standby bool
	// pg_is_in_recovery(), not only a NULL replay position: a promoted
	// standby keeps answering the last position it replayed.
	if err := r.Pool.QueryRow(ctx, `SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint`).
		Scan(&standby, &replayed); err != nil {
		return 0, fmt.Errorf("read replica: %w", err)
	}
	if !standby || replayed == nil {
		return 0, ErrNotStandby
	}
	return *replayed, nil
}

// Check reads the replica's replay position now (for /readyz): nil when
// it answers as a standby.
func (r *Replica) Check(ctx context.Context) error {
	replayed, err := r.readReplayed(ctx)
	if err == nil {
		r.mu.Lock()
		r.replayed = max(r.replayed, replayed)
		r.mu.Unlock()
	}
	return err
}

// Outcome is where a list's read was served, and why.
type Outcome int

const (
	// Served: the replica had replayed every earlier write and answered.
	Served Outcome = iota
	// Lagging: the replica had not replayed the earlier writes within
	// MaxWait; the primary answered.
	Lagging
	// Unavailable: the replica did not answer (or is not a standby); the
	// primary answered.
	Unavailable
	// ReadFailed: the replica failed the read itself; the primary answered.
	ReadFailed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"served", "lagging", "unavailable", "read_failed"}

func (o Outcome) String() string { return outcomeNames[o] }

// Outcomes lists every outcome, for metrics.
func Outcomes() []Outcome { return []Outcome{Served, Lagging, Unavailable, ReadFailed} }

// Count records a read's outcome.
func (r *Replica) Count(o Outcome) { r.counts[o].Add(1) }

// Counted is how many reads had the outcome.
func (r *Replica) Counted(o Outcome) uint64 { return r.counts[o].Load() }

// ShouldWarn says whether to log a warning about the replica now: at most
// one a second, as every read would log one while it lags or is down.
func (r *Replica) ShouldWarn() bool {
	now, last := time.Now().UnixNano(), r.warned.Load()
	return now-last >= int64(time.Second) && r.warned.CompareAndSwap(last, now)
}
