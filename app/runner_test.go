package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// The runner's own tests: real PostgreSQL, handlers that append to a
// stream of their own (not projected: the runner is what is under test).

func runnerApp(t *testing.T, maxConns int32) *App {
	pool := pgtest.SizedPool(t, maxConns)
	return New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

func runnerCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func testStream(id string) eventstore.Stream {
	return eventstore.Stream{ID: "runnertest-" + id, Type: "runnertest", PlatformID: "plt_runner", Environment: "sandbox"}
}

// appendTest appends one event to the test stream id at its current version.
func appendTest(ctx context.Context, db eventstore.DB, id string) error {
	_, version, err := eventstore.Load(ctx, db, testStream(id).ID)
	if err != nil {
		return err
	}
	_, err = eventstore.Append(ctx, db, testStream(id), version, Meta{}, webhook.Deleted{At: now()})
	return err
}

func countRows(t *testing.T, ctx context.Context, a *App, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := a.Pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// raceHandler loads the test stream, lets another transaction append to
// it (and commit) while the first `losing` attempts hold their load, then
// appends: those attempts conflict on the stream's version for real.
func raceHandler(a *App, id string, losing int, attempts *int) handler {
	return func(ctx context.Context, tx *commandTx) (Result, error) {
		*attempts++
		_, version, err := eventstore.Load(ctx, tx, testStream(id).ID)
		if err != nil {
			return Result{}, err
		}
		if *attempts <= losing {
			if err := pgx.BeginFunc(ctx, a.Pool, func(other pgx.Tx) error { return appendTest(ctx, other, id) }); err != nil {
				return Result{}, err
			}
		}
		_, err = eventstore.Append(ctx, tx, testStream(id), version, Meta{}, webhook.Deleted{At: now()})
		return Result{ID: id}, err
	}
}

func TestRunnerRetriesAConflictAndSucceeds(t *testing.T) {
	a := runnerApp(t, 4)
	ctx := runnerCtx(t)
	a.MaxAttempts = 3
	attempts := 0
	res, err := a.execute(ctx, command{}, raceHandler(a, "retried", 2, &attempts))
	if err != nil || res.ID != "retried" {
		t.Fatalf("execute = %+v, %v; want success on the third attempt", res, err)
	}
	if attempts != 3 {
		t.Fatalf("attempts = %d, want 3", attempts)
	}
	// Two events by the other transactions, one by the third attempt.
	if n := countRows(t, ctx, a, `SELECT count(*) FROM events WHERE stream_id = $1`, testStream("retried").ID); n != 3 {
		t.Fatalf("events = %d, want 3", n)
	}
}

func TestRunnerGivesUpAfterMaxAttempts(t *testing.T) {
	a := runnerApp(t, 4)
	ctx := runnerCtx(t)
	a.MaxAttempts = 3
	attempts := 0
	_, err := a.execute(ctx, command{}, raceHandler(a, "lost", 100, &attempts))
	if !errors.Is(err, eventstore.ErrVersionConflict) {
		t.Fatalf("err = %v, want ErrVersionConflict after MaxAttempts", err)
	}
	if attempts != 3 {
		t.Fatalf("attempts = %d, want MaxAttempts = 3", attempts)
	}
	// Only the other transactions' events: no attempt of the command wrote.
	if n := countRows(t, ctx, a, `SELECT count(*) FROM events WHERE stream_id = $1`, testStream("lost").ID); n != 3 {
		t.Fatalf("events = %d, want 3", n)
	}
}

func TestRunnerDoesNotRetryAFailure(t *testing.T) {
	a := runnerApp(t, 2)
	ctx := runnerCtx(t)
	attempts := 0
	_, err := a.execute(ctx, command{}, func(context.Context, *commandTx) (Result, error) {
		attempts++
		return Result{}, domain.Invalid("x", "bad")
	})
	if domain.CodeOf(err) != domain.CodeInvalidRequest || attempts != 1 {
		t.Fatalf("err = %v after %d attempts, want invalid_request after 1", err, attempts)
	}
}

// claimModes are the three ways a command claims its key.
var claimModes = []struct {
	name                   string
	knownID, claimAtCommit bool
}{{"claim then record the id", false, false}, {"claim with the id", true, false}, {"pipelined, claim at commit", true, true}}

// idemCommand is a command of mode that creates the test stream newID
// (one event); calls counts the handler's runs past the claim. Unless
// fail is nil, the command fails with it after its claim and append (at
// commit, its last batch fails after them).
func idemCommand(mode int, idem *Idempotency, newID string, calls *atomic.Int32, fail error) (command, handler) {
	m := claimModes[mode]
	cmd := command{idem: idem, claimAtCommit: m.claimAtCommit, pipelined: m.claimAtCommit}
	if m.knownID {
		cmd.resourceID = newID
	}
	return cmd, func(ctx context.Context, tx *commandTx) (Result, error) {
		if m.claimAtCommit {
			b := &pgx.Batch{}
			tx.queueKeyLookup(b)
			br, err := tx.sendFirst(ctx, b)
			if err != nil {
				return Result{}, err
			}
			free, err := tx.keyFree(br)
			if cerr := br.Close(); err == nil {
				err = cerr
			}
			if err != nil || !free {
				return Result{}, err
			}
			calls.Add(1)
			if _, err := eventstore.Append(ctx, tx, testStream(newID), 0, Meta{}, webhook.Deleted{At: now()}); err != nil {
				return Result{}, err
			}
			tx.claimAtCommit()
			if fail != nil {
				tx.beforeAppend(`SELECT 1 / 0`) // fails after the claim
			}
			err = tx.appendProjectReadAndCommit(ctx, Meta{}, nil)
			var pgErr *pgconn.PgError
			if fail != nil && errors.As(err, &pgErr) && pgErr.Code == "22012" { // division_by_zero: the failure queued above
				err = fail
			}
			return Result{ID: newID}, err
		}
		calls.Add(1)
		if _, err := eventstore.Append(ctx, tx, testStream(newID), 0, Meta{}, webhook.Deleted{At: now()}); err != nil || fail != nil {
			return Result{}, cmp.Or(err, fail)
		}
		return Result{ID: newID}, nil
	}
}

func TestRunnerIdempotency(t *testing.T) {
	for mode, m := range claimModes {
		t.Run(m.name, func(t *testing.T) {
			a := runnerApp(t, 4)
			ctx := runnerCtx(t)
			key := &Idempotency{Scope: "plt_runner", Environment: "sandbox", Key: "k1", Operation: "test", RequestHash: "h1"}
			var calls atomic.Int32

			// A failed command leaves no claim: the key is free again. It
			// fails after its claim and append, in every mode.
			var failedCalls atomic.Int32
			cmd, fn := idemCommand(mode, key, "failed", &failedCalls, domain.Invalid("x", "refused"))
			_, err := a.execute(ctx, cmd, fn)
			if failedCalls.Load() != 1 {
				t.Fatalf("the failing command claimed and appended %d times, want 1", failedCalls.Load())
			}
			if domain.CodeOf(err) != domain.CodeInvalidRequest {
				t.Fatalf("failing command: err = %v", err)
			}
			if n := countRows(t, ctx, a, `SELECT count(*) FROM idempotency_keys`); n != 0 {
				t.Fatalf("a failed command left %d idempotency keys", n)
			}

			cmd, fn = idemCommand(mode, key, "first", &calls, nil)
			first, err := a.execute(ctx, cmd, fn)
			if err != nil || first.ID != "first" || first.Replayed {
				t.Fatalf("first = %+v, %v", first, err)
			}
			var recorded string
			if err := a.Pool.QueryRow(ctx, `SELECT resource_id FROM idempotency_keys WHERE key = 'k1'`).Scan(&recorded); err != nil || recorded != "first" {
				t.Fatalf("recorded resource id = %q, %v; want first", recorded, err)
			}

			// The same request again: the first result, replayed, and the
			// handler does nothing.
			cmd, fn = idemCommand(mode, key, "second", &calls, nil)
			again, err := a.execute(ctx, cmd, fn)
			if err != nil || again.ID != "first" || !again.Replayed {
				t.Fatalf("replay = %+v, %v; want first, Replayed", again, err)
			}
			if calls.Load() != 1 {
				t.Fatalf("handler ran %d times past the claim, want 1", calls.Load())
			}

			// Another request with the same key: idempotency_conflict naming the first.
			other := *key
			other.RequestHash = "h2"
			cmd, fn = idemCommand(mode, &other, "third", &calls, nil)
			_, err = a.execute(ctx, cmd, fn)
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.CodeIdempotencyConflict || de.ResourceID != "first" {
				t.Fatalf("other request: err = %v, want idempotency_conflict naming first", err)
			}
			if n := countRows(t, ctx, a, `SELECT count(*) FROM streams WHERE stream_type = 'runnertest'`); n != 1 {
				t.Fatalf("streams = %d, want 1", n)
			}
		})
	}
}

// TestRunnerConcurrentDuplicatesMakeOneResource: many goroutines send the
// same request with the same key at once; exactly one creates, the others
// replay its result.
func TestRunnerConcurrentDuplicatesMakeOneResource(t *testing.T) {
	const workers = 12
	for mode, m := range claimModes {
		t.Run(m.name, func(t *testing.T) {
			a := runnerApp(t, workers+1)
			ctx := runnerCtx(t)
			key := &Idempotency{Scope: "plt_runner", Environment: "sandbox", Key: "dup", Operation: "test", RequestHash: "h"}
			var calls atomic.Int32
			results := make([]Result, workers)
			errs := make([]error, workers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					cmd, fn := idemCommand(mode, key, fmt.Sprintf("res-%d", i), &calls, nil)
					results[i], errs[i] = a.execute(ctx, cmd, fn)
				}()
			}
			close(start)
			wg.Wait()
			created := 0
			for i := range workers {
				if errs[i] != nil {
					t.Fatalf("worker %d: %v", i, errs[i])
				}
				if results[i].ID != results[0].ID {
					t.Fatalf("worker %d got %s, worker 0 %s", i, results[i].ID, results[0].ID)
				}
				if !results[i].Replayed {
					created++
				}
			}
			if created != 1 {
				t.Fatalf("%d workers created, want 1", created)
			}
			if n := countRows(t, ctx, a, `SELECT count(*) FROM streams WHERE stream_type = 'runnertest'`); n != 1 {
				t.Fatalf("streams = %d, want exactly one resource", n)
			}
			if n := countRows(t, ctx, a, `SELECT count(*) FROM idempotency_keys WHERE resource_id = $1`, results[0].ID); n != 1 {
				t.Fatalf("idempotency keys naming the resource = %d, want 1", n)
			}
		})
	}
}

// A command that claims at commit but returns without claiming is a bug
// the runner reports (and rolls back) instead of committing unclaimed.
func TestRunnerRefusesAnUnmadeClaim(t *testing.T) {
	a := runnerApp(t, 2)
	ctx := runnerCtx(t)
	key := &Idempotency{Scope: "plt_runner", Environment: "sandbox", Key: "k", Operation: "test", RequestHash: "h"}
	cmd := command{idem: key, resourceID: "x", claimAtCommit: true, pipelined: true}
	_, err := a.execute(ctx, cmd, func(ctx context.Context, tx *commandTx) (Result, error) {
		br, err := tx.sendFirst(ctx, &pgx.Batch{})
		if err != nil {
			return Result{}, err
		}
		if err := br.Close(); err != nil {
			return Result{}, err
		}
		return Result{ID: "x"}, appendTest(ctx, tx, "x")
	})
	if !errors.Is(err, errClaimNotMade) {
		t.Fatalf("err = %v, want errClaimNotMade", err)
	}
	if n := countRows(t, ctx, a, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("events = %d, want 0 (rolled back)", n)
	}

	// Nor does its last batch commit without the claim: the resource would
	// be stored without its key.
	_, err = a.execute(ctx, cmd, func(ctx context.Context, tx *commandTx) (Result, error) {
		br, err := tx.sendFirst(ctx, &pgx.Batch{})
		if err != nil {
			return Result{}, err
		}
		if err := br.Close(); err != nil {
			return Result{}, err
		}
		return Result{ID: "x"}, tx.appendProjectReadAndCommit(ctx, Meta{}, nil,
			eventstore.AppendRequest{Stream: whStream("unclaimed"), Events: created("unclaimed")})
	})
	if !errors.Is(err, errClaimNotMade) {
		t.Fatalf("a last batch without the claim: err = %v, want errClaimNotMade", err)
	}
	if n := countRows(t, ctx, a, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("events = %d, want 0 (not committed)", n)
	}
}

// A command of an App with a Pacer waits, before it touches the database,
// while a reader of the log is behind; the readers' own App (no Pacer)
// goes ahead.
func TestRunnerWaitsForTheReaders(t *testing.T) {
	a := runnerApp(t, 4)
	ctx := runnerCtx(t)
	readers := *a
	a.Pacer = eventstore.NewPacer(20*time.Millisecond, time.Hour)
	a.Pacer.Read("projections", time.Now().Add(-time.Minute), true)

	appendOne := func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{ID: "paced"}, appendTest(ctx, tx, "paced")
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.execute(ctx, command{}, appendOne)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the command ran (%v) while the projections were a minute behind", err)
	case <-time.After(200 * time.Millisecond):
	}
	if n := countRows(t, ctx, a, `SELECT count(*) FROM events WHERE stream_id = $1`, testStream("paced").ID); n != 0 {
		t.Fatalf("events = %d while waiting, want 0", n)
	}
	if _, err := readers.execute(ctx, command{}, appendOne); err != nil {
		t.Fatalf("a reader's own command: %v", err)
	}
	a.Pacer.Read("projections", time.Now(), true) // caught up
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the command still waits after the projections caught up")
	}
	if n := countRows(t, ctx, a, `SELECT count(*) FROM events WHERE stream_id = $1`, testStream("paced").ID); n != 2 {
		t.Fatalf("events = %d, want 2", n)
	}
}
