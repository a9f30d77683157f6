package app

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opentreasury/treasury/eventstore"
)

// appendGroup is one eventstore.AppendAll call: streams appended with the
// same metadata.
type appendGroup struct {
	Meta Meta
	Reqs []eventstore.AppendRequest
}

// appendPipelined makes every group's eventstore.AppendAll call, in order,
// and sends all their statements to the server in one round trip instead
// of one per group: a batch of commands whose events carry different
// metadata (each its own causation) would otherwise wait for the server
// once per command, which under CPU contention is most of its time.
//
// eventstore.AppendAll stays the only code that writes the log: each call
// runs on its own goroutine against a stand-in for tx whose SendBatch
// waits until every call has queued its statements, sends them together,
// then lets each call read its own results in turn. A call that fails
// before it sends still takes its turn (with nothing to read), so the
// others never wait for it. The first error is returned; the caller's
// transaction must then roll back, as after AppendAll.
func appendPipelined(ctx context.Context, tx pgx.Tx, groups []appendGroup) ([][][]eventstore.RecordedEvent, error) {
	n := len(groups)
	out := make([][][]eventstore.RecordedEvent, n)
	if n == 0 {
		return out, nil
	}
	p := &pipeline{ctx: ctx, tx: tx, batches: make([]*pgx.Batch, n), sent: make(chan struct{}), turns: make([]chan struct{}, n+1)}
	for i := range p.turns {
		p.turns[i] = make(chan struct{})
	}
	close(p.turns[0])
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, g := range groups {
		m := &pipelineMember{Tx: tx, p: p, i: i}
		wg.Go(func() {
			out[i], errs[i] = eventstore.AppendAll(ctx, m, g.Meta, g.Reqs...)
			m.done()
		})
	}
	wg.Wait()
	err := errors.Join(errs...)
	if p.br != nil {
		if cerr := p.br.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

type pipeline struct {
	ctx     context.Context
	tx      pgx.Tx
	mu      sync.Mutex
	batches []*pgx.Batch // each member's statements, nil until it sends (or gives up)
	arrived int
	sent    chan struct{} // closed once the merged batch is sent
	br      pgx.BatchResults
	turns   []chan struct{} // turns[i] closed: member i may read its results
}

// arrive records member i's statements; the last to arrive sends them all.
func (p *pipeline) arrive(i int, b *pgx.Batch) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.batches[i] != nil {
		return
	}
	p.batches[i] = b
	p.arrived++
	if p.arrived < len(p.batches) {
		return
	}
	merged := &pgx.Batch{}
	for _, b := range p.batches {
		merged.QueuedQueries = append(merged.QueuedQueries, b.QueuedQueries...)
	}
	p.br = p.tx.SendBatch(p.ctx, merged)
	close(p.sent)
}

// pipelineMember is the transaction as one AppendAll call sees it: only
// SendBatch differs.
type pipelineMember struct {
	pgx.Tx
	p        *pipeline
	i        int
	queued   int // statements it sent
	read     int // results it read
	finished bool
	mu       sync.Mutex
}

func (m *pipelineMember) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	m.mu.Lock()
	m.queued = b.Len()
	m.mu.Unlock()
	m.p.arrive(m.i, b)
	return memberResults{m}
}

// memberResults are one member's results within the merged batch's.
type memberResults struct{ m *pipelineMember }

// wait blocks until the merged batch is sent and it is m's turn to read.
func (m *pipelineMember) wait() {
	<-m.p.sent
	<-m.p.turns[m.i]
}

// next reports whether m has a result left to read, and counts it read.
func (m *pipelineMember) next() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished || m.read >= m.queued {
		return false
	}
	m.read++
	return true
}

var errPipelineExhausted = errors.New("app: read past the statements sent")

func (r memberResults) Exec() (pgconn.CommandTag, error) {
	m := r.m
	m.wait()
	if !m.next() {
		return pgconn.CommandTag{}, errPipelineExhausted
	}
	return m.p.br.Exec()
}

func (r memberResults) Query() (pgx.Rows, error) {
	m := r.m
	m.wait()
	if !m.next() {
		return nil, errPipelineExhausted
	}
	return m.p.br.Query()
}

func (r memberResults) QueryRow() pgx.Row {
	m := r.m
	m.wait()
	if !m.next() {
		return errRow{errPipelineExhausted}
	}
	return m.p.br.QueryRow()
}

// Close reads what m left unread and hands the turn on.
func (r memberResults) Close() error {
	r.m.done()
	return nil
}

func (r memberResults) Tx() pgx.Tx { return nil }

// done ends m's part: it arrives with nothing if it never sent, waits for
// its turn, skips its unread results and lets the next member read.
// Idempotent.
func (m *pipelineMember) done() {
	m.p.arrive(m.i, &pgx.Batch{}) // no-op if it sent
	m.wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.finished {
		return
	}
	for ; m.read < m.queued; m.read++ {
		_, _ = m.p.br.Exec()
	}
	m.finished = true
	close(m.p.turns[m.i+1])
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
