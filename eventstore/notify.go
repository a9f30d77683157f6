package eventstore

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/oklog/ulid/v2"
)

// Channel is the PostgreSQL NOTIFY channel that announces new events.
const Channel = "treasury_events"

// Notifier wakes subscribers when something they read was committed: at
// once in this process, only those of its topic, and through NOTIFY (sent
// after commit, outside the write transaction, coalesced) every reader of
// every other replica.
type Notifier struct {
	pool    *pgxpool.Pool
	log     *slog.Logger
	pending chan struct{}
	// id is this notifier's NOTIFY payload: its own NOTIFYs come back to
	// its LISTEN, and must not wake every reader of this process.
	id string

	mu      sync.Mutex
	waiters [topicCount][]chan struct{}
}

// Topic is what a wake-up is about. Each reader wakes only for what it
// reads: under load, commands commit hundreds of times a second, and a
// reader woken for what is not there yet spends a step (a transaction and
// its queries) finding nothing, on a machine the others need.
type Topic int

const (
	// TopicLog: events were appended (commands commit).
	TopicLog Topic = iota
	// TopicPublicEvents: public events were projected (the webhook feed).
	TopicPublicEvents
	// TopicDeliveries: webhook deliveries came due (the sender).
	TopicDeliveries
	topicCount
)

// NewNotifier makes a notifier; call Run to send and receive NOTIFYs.
func NewNotifier(pool *pgxpool.Pool, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.Default()
	}
	return &Notifier{pool: pool, log: log, pending: make(chan struct{}, 1), id: ulid.Make().String()}
}

// Subscribe returns a channel that receives a value (coalesced) whenever
// events may have been committed (SubscribeTo TopicLog).
func (n *Notifier) Subscribe() <-chan struct{} { return n.SubscribeTo(TopicLog) }

// SubscribeTo returns a channel that receives a value (coalesced) whenever
// something of topic t may have been committed here, or anything in
// another replica.
func (n *Notifier) SubscribeTo(t Topic) <-chan struct{} {
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	n.waiters[t] = append(n.waiters[t], ch)
	n.mu.Unlock()
	return ch
}

// Notify is called after a commit that appended events (NotifyOf
// TopicLog). It never blocks.
func (n *Notifier) Notify() { n.NotifyOf(TopicLog) }

// NotifyOf is called after a commit of something of topic t: it wakes t's
// subscribers here, and every reader of the other replicas. It never
// blocks.
func (n *Notifier) NotifyOf(t Topic) {
	if n == nil {
		return
	}
	n.wakeLocal(t)
	select {
	case n.pending <- struct{}{}:
	default: // a NOTIFY is already due: this commit rides along
	}
}

func (n *Notifier) wakeLocal(topics ...Topic) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, t := range topics {
		for _, ch := range n.waiters[t] {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// wakeAll wakes every subscriber of every topic: a NOTIFY does not say
// what another replica committed.
func (n *Notifier) wakeAll() { n.wakeLocal(TopicLog, TopicPublicEvents, TopicDeliveries) }

// NotifyEvery is the least time between two NOTIFYs of a process. Each is
// a transaction of its own (a round trip and a commit): sent as soon as the
// last one was done, one went out for every two or three payments at 64
// clients. The commits of the interval ride along on the next, and another
// replica's readers hear of them at most this much later.
const NotifyEvery = 20 * time.Millisecond

// Run sends the coalesced NOTIFYs and listens for other replicas' until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	go n.listen(ctx)
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.pending:
		}
		if wait := NotifyEvery - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		if _, err := n.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, n.id); err != nil && ctx.Err() == nil {
			n.log.Warn("notify failed; other replicas fall back to polling", "error", err)
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
	n.wakeAll() // anything committed while we were not listening
	for {
		msg, err := pc.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if msg.Payload != n.id { // this process's own was woken by topic already
			n.wakeAll()
		}
	}
}
