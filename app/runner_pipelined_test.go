package app

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
)

// pipelinedRaceHandler is raceHandler in the pipelined shape: its first
// batch (after BEGIN and the gate) claims the key and reads the stream's
// version; while the first `losing` attempts hold that read, another
// transaction appends to the stream. Its last batch appends to a new
// stream, to the raced stream at the version read, and to another new
// stream, then COMMIT: a conflict in the middle must undo the first append
// and skip the third.
// whStream is a webhook endpoint's stream: its events have an inline
// projection (webhook_endpoints) to roll back.
func whStream(id string) eventstore.Stream {
	return eventstore.Stream{ID: webhook.StreamID(id), Type: webhook.StreamType, PlatformID: "plt_runner", Environment: "sandbox"}
}

// appendDeleted appends a Deleted event to the endpoint id's stream, at its version.
func appendDeleted(ctx context.Context, db eventstore.DB, id string) error {
	_, version, err := eventstore.Load(ctx, db, whStream(id).ID)
	if err != nil {
		return err
	}
	_, err = eventstore.Append(ctx, db, whStream(id), version, Meta{}, webhook.Deleted{At: now()})
	return err
}

func created(id string) []domain.Event {
	return []domain.Event{webhook.Created{EndpointID: id, PlatformID: "plt_runner", Environment: domain.Sandbox,
		Config: webhook.Config{URL: "https://example.com/hook", Events: []string{"*"}, Status: "enabled"}, At: now()}}
}

func pipelinedRaceHandler(a *App, id string, losing int, attempts *int) handler {
	return func(ctx context.Context, tx *commandTx) (Result, error) {
		*attempts++
		b := &pgx.Batch{}
		tx.queueKeyLookup(b)
		b.Queue(`SELECT coalesce((SELECT version FROM streams WHERE stream_id = $1), 0)`, whStream(id).ID)
		br, err := tx.sendFirst(ctx, b)
		if err != nil {
			return Result{}, err
		}
		free, err := tx.keyFree(br)
		if err != nil || !free {
			br.Close()
			return Result{}, err
		}
		var version int64
		if err := br.QueryRow().Scan(&version); err != nil {
			br.Close()
			return Result{}, err
		}
		if err := br.Close(); err != nil {
			return Result{}, err
		}
		if *attempts <= losing {
			if err := pgx.BeginFunc(ctx, a.Pool, func(other pgx.Tx) error { return appendDeleted(ctx, other, id) }); err != nil {
				return Result{}, err
			}
		}
		tx.claimAtCommit()
		err = tx.appendProjectReadAndCommit(ctx, Meta{}, nil,
			eventstore.AppendRequest{Stream: whStream(id + "-before"), Events: created(id + "-before")},
			eventstore.AppendRequest{Stream: whStream(id), Expected: version, Events: []domain.Event{webhook.Deleted{At: now()}}},
			eventstore.AppendRequest{Stream: whStream(id + "-after"), Events: created(id + "-after")})
		return Result{ID: tx.claim.resourceID}, err
	}
}

func pipelinedCommand(key string) command {
	return command{idem: &Idempotency{Scope: "plt_runner", Environment: "sandbox", Key: key, Operation: "test", RequestHash: "h"},
		resourceID: "res_" + key, claimAtCommit: true, pipelined: true}
}

// A version conflict in a pipelined command's last batch fails the append
// statement itself (it used to return no rows, which in a pipeline ending
// with COMMIT would have committed what came before and after it): the
// transaction rolls back whole, claim included, and the runner retries.
func TestPipelinedConflictRollsBackEverythingAndIsRetried(t *testing.T) {
	a := runnerApp(t, 4)
	ctx := runnerCtx(t)
	events := func(stream string) int {
		return countRows(t, ctx, a, `SELECT count(*) FROM events WHERE stream_id = $1`, whStream(stream).ID)
	}
	endpoints := func(prefix string) int {
		return countRows(t, ctx, a, `SELECT count(*) FROM webhook_endpoints WHERE id LIKE $1`, prefix+"-%")
	}
	claims := func(key string) int {
		return countRows(t, ctx, a, `SELECT count(*) FROM idempotency_keys WHERE key = $1`, key)
	}

	a.MaxAttempts = 1
	attempts := 0
	_, err := a.execute(ctx, pipelinedCommand("lost"), pipelinedRaceHandler(a, "lost", 1, &attempts))
	if !eventstore.IsVersionConflict(err) || !eventstore.Retryable(err) {
		t.Fatalf("err = %v, want a retryable version conflict", err)
	}
	if n := events("lost-before") + events("lost-after"); n != 0 {
		t.Fatalf("%d events of the failed attempt were committed", n)
	}
	if n := events("lost"); n != 1 { // the other transaction's
		t.Fatalf("raced stream has %d events, want 1", n)
	}
	if n := endpoints("lost"); n != 0 {
		t.Fatalf("the failed attempt left %d projected rows", n)
	}
	if n := claims("lost"); n != 0 {
		t.Fatalf("the failed attempt left its claim")
	}

	a.MaxAttempts = 5
	attempts = 0
	res, err := a.execute(ctx, pipelinedCommand("won"), pipelinedRaceHandler(a, "won", 2, &attempts))
	if err != nil || res.ID != "res_won" || attempts != 3 {
		t.Fatalf("execute = %+v, %v after %d attempts; want success on the third", res, err, attempts)
	}
	if b, r, af, c := events("won-before"), events("won"), events("won-after"), claims("won"); b != 1 || r != 3 || af != 1 || c != 1 {
		t.Fatalf("events %d/%d/%d and %d claims; want 1/3/1 (two by the other transactions) and 1", b, r, af, c)
	}
	if n := endpoints("won"); n != 2 {
		t.Fatalf("%d projected rows, want 2", n)
	}
	// The replay answers from the claim, on a connection left clean.
	res, err = a.execute(ctx, pipelinedCommand("won"), pipelinedRaceHandler(a, "won", 0, &attempts))
	if err != nil || !res.Replayed || res.ID != "res_won" {
		t.Fatalf("replay = %+v, %v", res, err)
	}
}
