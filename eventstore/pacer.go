package eventstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Pacer holds the API's commands back while a reader of the log (a
// subscription, the sandbox settler) is behind. On a busy machine the
// commands and the readers share the cores; left alone, dozens of clients'
// commands take nearly all of them, and the readers, a handful of
// goroutines and connections, fall seconds, then minutes behind: webhooks,
// lists and settlement stop keeping their promises. With the pacer, a
// command that arrives while a reader is more than MaxLag behind waits
// (before it takes a connection) until the readers are back within MaxLag,
// at most MaxWait: the commands go at the pace the derived side keeps.
// The readers' own commands (the settler's, the KYB decider's) are not
// paced.
//
// A reader is behind by the age of the last batch it read that took
// everything readable (a short batch): until it reads the log to its end
// again, what was committed since may wait unread. A reader that waits
// for news is not behind; once woken, it is behind from its wake-up. A
// reader whose read failed reports itself idle: it is not short of time,
// and commands must fail fast on their own when the database is away.
type Pacer struct {
	// MaxLag is how far behind a reader may be before commands wait.
	MaxLag time.Duration
	// MaxWait bounds one command's wait, so that a reader that is stuck
	// (failing, or its database gone) slows the API but never stops it.
	MaxWait time.Duration

	// away is set while the database is unreachable (Away, Back): then
	// nothing waits, so that commands fail fast instead.
	away atomic.Bool

	waits  atomic.Int64 // commands that waited
	waited atomic.Int64 // nanoseconds they waited, in all

	mu      sync.Mutex
	readers map[string]*paced
	moved   chan struct{} // closed, and replaced, whenever a reader reports
}

type paced struct {
	idle     bool
	readUpTo time.Time // when the reader's last short batch was read
}

// NewPacer returns a Pacer with the given bounds.
func NewPacer(maxLag, maxWait time.Duration) *Pacer {
	return &Pacer{MaxLag: maxLag, MaxWait: maxWait, readers: map[string]*paced{}, moved: make(chan struct{})}
}

// Read reports that the reader name began, at start, a read that took
// everything readable then (short) or a full batch. A nil Pacer ignores
// it, as it does Idle and Woke.
func (p *Pacer) Read(name string, start time.Time, short bool) {
	p.update(name, func(r *paced) {
		r.idle = false
		if short {
			r.readUpTo = start
		}
	})
}

// Idle reports that the reader name has read the log to its end and waits
// for news (or stopped: it then holds nothing back).
func (p *Pacer) Idle(name string) {
	p.update(name, func(r *paced) { r.idle = true })
}

// Woke reports that the reader name stopped waiting (news, or its poll)
// and reads again: what it must read was committed since about now.
func (p *Pacer) Woke(name string) {
	p.update(name, func(r *paced) {
		if r.idle {
			r.idle = false
			r.readUpTo = time.Now()
		}
	})
}

// update changes the reader name's state and wakes the waiting commands
// to look at it again.
func (p *Pacer) update(name string, change func(*paced)) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	change(p.reader(name))
	p.signal()
}

func (p *Pacer) reader(name string) *paced {
	r, ok := p.readers[name]
	if !ok {
		r = &paced{readUpTo: time.Now()}
		p.readers[name] = r
	}
	return r
}

func (p *Pacer) signal() {
	close(p.moved)
	p.moved = make(chan struct{})
}

// Away reports that a command found the database unreachable: until Back,
// no command waits for the readers (a reader stuck in a step that began
// before the outage must not hold commands back until the database
// returns: a request sent while it is away answers 503 at once).
func (p *Pacer) Away() {
	if p == nil {
		return
	}
	p.away.Store(true)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signal() // the commands waiting now stop waiting too
}

// Back reports that a command committed: the database is reachable.
func (p *Pacer) Back() {
	if p != nil {
		p.away.CompareAndSwap(true, false)
	}
}

// Behind returns how far behind the slowest reader is (0 when none is),
// and a channel closed when a reader next reports.
func (p *Pacer) Behind(now time.Time) (time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var lag time.Duration
	for _, r := range p.readers {
		if !r.idle {
			lag = max(lag, now.Sub(r.readUpTo))
		}
	}
	return lag, p.moved
}

// Wait returns once every reader is within MaxLag, MaxWait has passed, or
// ctx ended (with its error). A nil Pacer returns at once.
func (p *Pacer) Wait(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var timeout <-chan time.Time
	var began time.Time
	defer func() {
		if !began.IsZero() {
			p.waits.Add(1)
			p.waited.Add(int64(time.Since(began)))
		}
	}()
	for !p.away.Load() {
		now := time.Now()
		lag, moved := p.Behind(now)
		if lag <= p.MaxLag || p.away.Load() { // Away may have signalled just before Behind
			return nil
		}
		if timeout == nil {
			began = now
			t := time.NewTimer(p.MaxWait)
			defer t.Stop()
			timeout = t.C
		}
		// A reader's lag grows with time alone, but only a report can
		// shrink it: wait for one.
		select {
		case <-moved:
		case <-timeout:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Waited returns how many commands have waited for the readers, and for
// how long in all (for /metrics).
func (p *Pacer) Waited() (int64, time.Duration) {
	return p.waits.Load(), time.Duration(p.waited.Load())
}
