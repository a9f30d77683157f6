package eventstore

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"
)

// Leases decides which of the log's readers this replica runs, so that
// several `treasury serve` on one database share them instead of all
// running all of them (issue #20). Every replica writes a heartbeat into
// replicas each Every; each reader (a subscription, or a part of one) has
// a lease in reader_leases that its holder renews with the heartbeat. A
// replica holds its fair share of the leases (their number over the
// replicas seen within TTL, rounded up): it gives back what it holds
// beyond it and takes free or expired ones up to it. A replica that dies
// stops renewing; its leases expire after TTL and the others take them at
// their next heartbeat, so a reader stalls at most TTL + Every.
//
// A lease only says who reads. Correctness does not rest on it: a reader's
// step takes the reader's advisory lock and moves its checkpoint by
// compare-and-set, so two replicas that both think they hold a lease (a
// paused process, a slow clock) never apply an event twice. Locally a lease
// counts as held until the heartbeat that renewed it plus TTL - Every, so
// a replica cut off from the database stops reading before its lease
// expires there.
type Leases struct {
	Pool  *pgxpool.Pool
	ID    string        // this replica, unique (NewLeases makes one)
	Names []string      // every reader this replica can run
	TTL   time.Duration // default DefaultLeaseTTL
	Every time.Duration // the heartbeat, default DefaultLeaseEvery
	Log   *slog.Logger

	mu      sync.Mutex
	held    map[string]time.Time // lease → until when it counts as held here
	live    int                  // replicas seen alive at the last heartbeat
	changed chan struct{}        // closed when held changes
	made    bool                 // the lease rows exist
}

// Defaults of the leases: a dead replica's readers are taken over within
// DefaultLeaseTTL + DefaultLeaseEvery (4 s).
const (
	DefaultLeaseTTL   = 3 * time.Second
	DefaultLeaseEvery = time.Second
)

// NewLeases is the lease manager of a replica that can run the named readers.
func NewLeases(pool *pgxpool.Pool, names []string, log *slog.Logger) *Leases {
	host, _ := os.Hostname()
	return &Leases{Pool: pool, Names: names, Log: log,
		ID: fmt.Sprintf("%s-%d-%s", host, os.Getpid(), ulid.Make().String())}
}

func (l *Leases) ttl() time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return DefaultLeaseTTL
}

func (l *Leases) every() time.Duration {
	if l.Every > 0 {
		return l.Every
	}
	return DefaultLeaseEvery
}

// Holds reports whether this replica runs the named reader now. Without
// leases (nil: one process), it runs every reader.
func (l *Leases) Holds(name string) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Now().Before(l.held[name])
}

// Changed is closed when the leases held here change: a reader waiting for
// its lease looks again. Nil without leases (it never fires).
func (l *Leases) Changed() <-chan struct{} {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed
}

// Replicas is how many replicas were alive at the last heartbeat (1
// without leases): what a per-replica share of a global limit divides by.
func (l *Leases) Replicas() int {
	if l == nil {
		return 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(l.live, 1)
}

// Held are the leases held here now, sorted.
func (l *Leases) Held() []string {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var names []string
	now := time.Now()
	for name, until := range l.held {
		if now.Before(until) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Run beats until ctx ends, then gives back every lease held here and
// leaves the replicas, so that the others take the readers at once.
func (l *Leases) Run(ctx context.Context) {
	t := time.NewTicker(l.every())
	defer t.Stop()
	for {
		if err := l.Beat(ctx); err != nil && ctx.Err() == nil && l.Log != nil {
			l.Log.Warn("reader leases: heartbeat failed", "replica", l.ID, "error", err)
		}
		select {
		case <-ctx.Done():
			l.leave()
			return
		case <-t.C:
		}
	}
}

// Beat is one heartbeat: the replica's row, the leases held renewed, those
// beyond the fair share given back, free ones taken up to it. One round
// trip; a few more only when the share changes hands.
func (l *Leases) Beat(ctx context.Context) error {
	began := time.Now()
	ttl := l.ttl()
	b := &pgx.Batch{}
	if !l.made {
		b.Queue(`INSERT INTO reader_leases (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, l.Names)
	}
	b.Queue(`INSERT INTO replicas (id, started_at, seen_at) VALUES ($1, now(), now())
        ON CONFLICT (id) DO UPDATE SET seen_at = now()`, l.ID)
	// Replicas gone for an hour are forgotten (the table stays small).
	b.Queue(`DELETE FROM replicas WHERE seen_at < now() - interval '1 hour'`)
	var live int
	b.Queue(`SELECT count(*) FROM replicas WHERE seen_at > now() - $1::interval`, ttl.String()).QueryRow(func(r pgx.Row) error {
		return r.Scan(&live)
	})
	var renewed []string
	b.Queue(`UPDATE reader_leases SET expires_at = now() + $3::interval
        WHERE owner = $1 AND name = ANY($2) RETURNING name`, l.ID, l.Names, ttl.String()).Query(func(rows pgx.Rows) error {
		var err error
		renewed, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err := l.Pool.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	l.made = true
	share := (len(l.Names) + max(live, 1) - 1) / max(live, 1)
	slices.Sort(renewed)
	held := renewed
	var err error
	switch {
	case len(renewed) > share:
		var extra []string
		held, extra = giveBack(renewed, len(renewed)-share)
		l.set(held, began, live) // stop reading them before another replica may start
		_, err = l.Pool.Exec(ctx, `UPDATE reader_leases SET owner = NULL, expires_at = '-infinity'
            WHERE owner = $1 AND name = ANY($2)`, l.ID, extra)
	case len(renewed) < share:
		var taken []string
		taken, err = l.take(ctx, share-len(renewed), ttl)
		held = append(slices.Clone(renewed), taken...)
	}
	l.set(held, began, live)
	return err
}

// take takes up to n free (or expired) leases, one replica at a time
// (takeLock): two replicas taking side by side, each skipping the rows the
// other had locked, could end with both parts of a reader on one of them
// and no reason ever to move one, their shares being fair. One after the
// other, the second takes what the first left: the other parts.
func (l *Leases) take(ctx context.Context, n int, ttl time.Duration) ([]string, error) {
	var taken []string
	err := pgx.BeginFunc(ctx, l.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, takeLock); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, takeSQL, l.ID, l.Names, n, ttl.String())
		if err != nil {
			return err
		}
		taken, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return taken, err
}

// takeLock serialises the replicas' takes (a transaction-level advisory
// lock, held for one statement).
const takeLock = 0x7472_6c65_6173_6573 // "trleases"

// takeSQL takes up to $3 free (or expired) leases of $2 for replica $1.
// The parts of one reader go to different replicas where they can, so
// that they are read in parallel: first the parts of the readers this
// replica holds fewest parts of, and of each reader one part before a
// second; then in an order of this replica's own, so that replicas
// starting together do not all reach for the same ones. SKIP LOCKED, so
// that two replicas taking at once take different ones.
const takeSQL = `UPDATE reader_leases r
    SET owner = $1, expires_at = now() + $4::interval, taken_at = now(),
        takeovers = takeovers + (r.owner IS NOT NULL)::int
    FROM (SELECT c.name FROM reader_leases c
        JOIN (SELECT name, row_number() OVER (PARTITION BY split_part(name, '#', 1) ORDER BY md5(name || $1)) AS nth
            FROM reader_leases WHERE name = ANY($2) AND (owner IS NULL OR expires_at <= now())) f ON f.name = c.name
        WHERE c.name = ANY($2) AND (c.owner IS NULL OR c.expires_at <= now())
        ORDER BY f.nth + (SELECT count(*) FROM reader_leases m
                WHERE m.owner = $1 AND split_part(m.name, '#', 1) = split_part(c.name, '#', 1)),
            md5(c.name || $1)
        LIMIT $3 FOR UPDATE OF c SKIP LOCKED) free
    WHERE r.name = free.name RETURNING r.name`

// giveBack picks n of the leases held to give back: parts of the readers
// this replica holds most parts of first (another replica then reads them
// beside it), else the last by name. It returns what is kept and what goes.
func giveBack(held []string, n int) (keep, give []string) {
	parts := map[string]int{}
	for _, name := range held {
		parts[BaseName(name)]++
	}
	keep = slices.Clone(held)
	for range n {
		pick := len(keep) - 1
		for i := len(keep) - 1; i >= 0; i-- {
			if parts[BaseName(keep[i])] > parts[BaseName(keep[pick])] {
				pick = i
			}
		}
		parts[BaseName(keep[pick])]--
		give = append(give, keep[pick])
		keep = slices.Delete(keep, pick, pick+1)
	}
	return keep, give
}

// set records the leases held, each until began + TTL - Every: before it
// expires in the database whatever the heartbeat's own delay.
func (l *Leases) set(names []string, began time.Time, live int) {
	until := began.Add(l.ttl() - l.every())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.live = live
	old := l.held
	l.held = make(map[string]time.Time, len(names))
	for _, n := range names {
		l.held[n] = until
	}
	same := len(old) == len(l.held)
	for n := range l.held {
		if _, ok := old[n]; !ok {
			same = false
		}
	}
	if !same && l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// leave gives back the leases held here and removes the replica.
func (l *Leases) leave() {
	l.set(nil, time.Now(), l.Replicas())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(`UPDATE reader_leases SET owner = NULL, expires_at = '-infinity' WHERE owner = $1`, l.ID)
	b.Queue(`DELETE FROM replicas WHERE id = $1`, l.ID)
	if err := l.Pool.SendBatch(ctx, b).Close(); err != nil && l.Log != nil {
		l.Log.Warn("reader leases: could not give them back; they expire", "replica", l.ID, "error", err)
	}
}

// Await waits until this replica holds the named lease; false when ctx
// ended first.
func (l *Leases) Await(ctx context.Context, name string) bool {
	for {
		changed := l.Changed()
		if l.Holds(name) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		case <-time.After(l.every()):
			// A lease also lapses here without a change (the heartbeat
			// failing): look again at the next beat's time.
		}
	}
}
