package eventstore

import (
	"context"
	"sync"
	"time"
)

// Progress follows subscriptions' checkpoints (the slowest of them) for callers that wait for
// it to pass a position: a write that answers only once the read models
// show it (read-your-writes). One reader of the checkpoint row serves
// every waiter. It reads only while someone waits: when one starts
// waiting short of what it last read, when the subscription commits in
// this process (Kick), and every PollEvery, for a subscription another
// replica runs. Reading at every commit while nobody waited cost a round
// trip per payment at one client.
type Progress struct {
	db        DB
	names     []string
	pollEvery time.Duration
	kick      chan struct{}

	mu sync.Mutex
	at Position
	// atWAL is the primary's WAL insert position read with at: every
	// projection row up to at was committed below it (a read replica that
	// has replayed it shows them).
	atWAL   int64
	moved   chan struct{} // closed, and replaced, whenever at moves
	waiting int
}

// NewProgress follows the slowest checkpoint of the subscriptions names;
// call Run.
func NewProgress(db DB, names ...string) *Progress {
	return &Progress{db: db, names: names, pollEvery: 10 * time.Millisecond,
		kick: make(chan struct{}, 1), moved: make(chan struct{})}
}

// Kick says the subscription may have moved (call it after its commits).
// It never blocks; on a nil Progress (nobody follows) it does nothing.
func (p *Progress) Kick() {
	if p == nil {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run reads the checkpoint, while anyone waits, when kicked and every
// PollEvery, until ctx ends.
func (p *Progress) Run(ctx context.Context) {
	tick := time.NewTicker(p.pollEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-tick.C:
		}
		p.mu.Lock()
		idle := p.waiting == 0
		p.mu.Unlock()
		if idle {
			continue // a waiter short of what was read kicks
		}
		pos, wal, err := readSlowestCheckpointAndWAL(ctx, p.db, p.names)
		if err != nil {
			continue // read again at the next tick or kick
		}
		p.mu.Lock()
		if p.at.Less(pos) {
			p.at, p.atWAL = pos, wal
			close(p.moved)
			p.moved = make(chan struct{})
		}
		p.mu.Unlock()
	}
}

// Wait returns once the subscription has handled every event up to and
// including pos, or with ctx's error.
func (p *Progress) Wait(ctx context.Context, pos Position) error {
	p.mu.Lock()
	p.waiting++
	defer func() {
		p.mu.Lock()
		p.waiting--
		p.mu.Unlock()
	}()
	if p.at.Less(pos) {
		p.Kick() // what was last read may be old: nobody waited since
	}
	for p.at.Less(pos) {
		moved := p.moved
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-moved:
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
	return nil
}

// Reached is where the subscriptions are known to be, and the primary's
// WAL insert position read with it: a read replica that has replayed that
// position shows every projection row up to it.
func (p *Progress) Reached() (Position, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.at, p.atWAL
}
