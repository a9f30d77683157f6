package eventstore

import (
	"context"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// Origin says who made a database round trip: the API or one of the log's
// readers. The set is fixed, so that a metric labelled by it stays small.
type Origin uint8

// The origins, set on a context by WithOrigin where each caller starts
// (the HTTP server, each reader's goroutine); anything unlabelled is
// OriginOther (migrations, start-up, cleanups on a fresh context).
const (
	OriginOther Origin = iota
	OriginAPI
	OriginProjections
	OriginChain
	OriginKYB
	OriginSandbox
	OriginWebhooks
	OriginNotify   // the coalesced pg_notify after commits
	OriginProgress // read-your-writes: watching the projections' checkpoint
	OriginBank     // the live rails' connector
	originCount
)

var originNames = [originCount]string{"other", "api", "projections", "chain", "kyb", "sandbox", "webhooks", "notify", "progress", "bank"}

func (o Origin) String() string {
	if o >= originCount {
		return originNames[OriginOther]
	}
	return originNames[o]
}

// Origins lists every origin, in order.
func Origins() []Origin {
	all := make([]Origin, originCount)
	for i := range all {
		all[i] = Origin(i)
	}
	return all
}

type originKey struct{}

// WithOrigin labels ctx: round trips made with it (or a context derived
// from it) count for o.
func WithOrigin(ctx context.Context, o Origin) context.Context {
	return context.WithValue(ctx, originKey{}, o)
}

// OriginOf is the origin ctx was labelled with, OriginOther if none.
func OriginOf(ctx context.Context) Origin {
	o, _ := ctx.Value(originKey{}).(Origin)
	return o
}

// RoundTrips is a pgx tracer (install it as ConnConfig.Tracer) that counts
// database round trips by the origin on their context. pgx sends a Query,
// an Exec (a transaction's BEGIN and COMMIT among them), a Batch, a
// CopyFrom and an explicit Prepare (also a statement-cache miss) each in
// one go, so each start counts one; a batch's queued queries do not count
// again. What it misses: a batch's own statement-cache misses (one more
// trip, rare after warm-up), pings and connection set-up.
type RoundTrips struct {
	counts [originCount]paddedCounter
}

// paddedCounter keeps each origin's counter on its own cache line: the
// API and the readers count on different cores at once.
type paddedCounter struct {
	n atomic.Int64
	_ [56]byte
}

// Count is how many round trips o has made so far.
func (r *RoundTrips) Count(o Origin) int64 {
	if o >= originCount {
		o = OriginOther
	}
	return r.counts[o].n.Load()
}

func (r *RoundTrips) add(ctx context.Context) {
	r.counts[OriginOf(ctx)%originCount].n.Add(1)
}

// TraceQueryStart counts a Query, QueryRow or Exec.
func (r *RoundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	r.add(ctx)
	return ctx
}

func (r *RoundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TraceBatchStart counts a whole batch once.
func (r *RoundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	r.add(ctx)
	return ctx
}

func (r *RoundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (r *RoundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// TraceCopyFromStart counts a COPY FROM.
func (r *RoundTrips) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	r.add(ctx)
	return ctx
}

func (r *RoundTrips) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

func (r *RoundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return ctx
}

// TracePrepareEnd counts a Prepare that went to the server: one already
// prepared on the connection sends nothing. Counted at the end, not taken
// back, so that a scrape in between never sees the counter go down.
func (r *RoundTrips) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, d pgx.TracePrepareEndData) {
	if !d.AlreadyPrepared {
		r.add(ctx)
	}
}
