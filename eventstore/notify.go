package eventstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Channel is the PostgreSQL NOTIFY channel that announces new events.
const Channel = "treasury_events"

// Notifier wakes subscribers when events are committed: at once in this
// process, and through NOTIFY (sent after commit, outside the write
// transaction, coalesced) in every other replica.
type Notifier struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	pending chan struct{}

	mu      sync.Mutex
	waiters []chan struct{}
}

// NewNotifier makes a notifier; call Run to send and receive NOTIFYs.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{pool: pool, log: log, pending: make(chan struct{}, 1)}
}

// Subscribe returns a channel that receives a value (coalesced) whenever
// events may have been committed.
func (n *Notifier) Subscribe() <-chan struct{} {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	n.waiters = append(n.waiters, ch)
	n.mu.Unlock()
	return ch
}

// Notify is called after a commit that appended events. It never blocks.
func (n *Notifier) Notify() {
	if n == nil {
		return
	}
	n.wakeLocal()
	select {
	case n.pending <- struct{}{}:
	default: // a NOTIFY is already due: this commit rides along
	}
}

func (n *Notifier) wakeLocal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.waiters {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Run sends the coalesced NOTIFYs and listens for other replicas' until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	go n.listen(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.pending:
			if _, err := n.pool.Exec(ctx, `SELECT pg_notify($1, '')`, Channel); err != nil && ctx.Err() == nil {
				n.log.Warn("notify failed; other replicas fall back to polling", "error", err)
			}
		}
	}
}

// listen holds one connection in LISTEN and reconnects when it breaks.
func (n *Notifier) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := n.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("listen connection lost; retrying (polling meanwhile)", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (n *Notifier) listenOnce(ctx context.Context) error {
	conn, err := n.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection leaves the pool: LISTEN state must not leak to others.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{Channel}.Sanitize()); err != nil {
		return err
	}
	n.wakeLocal() // anything committed while we were not listening
	for {
		if _, err := pc.WaitForNotification(ctx); err != nil {
			return err
		}
		n.wakeLocal()
	}
}
