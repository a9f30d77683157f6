package app

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// Every command runs through execute, in the shape of Formance's forgeLog:
// the command's handler loads, decides (pure, in domain) and appends; the
// runner owns everything around it, the same for every command: the writer
// gate and BEGIN, the idempotency claim and the replay of an earlier
// result, the retry of a lost race, COMMIT and the wake-up of the log's
// readers.

// command is what the runner needs to know of a command besides its handler.
type command struct {
	// idem, if set, runs the command at most once per key: the key is
	// claimed in the command's transaction, and a request whose key was
	// claimed before gets the earlier result back (Replayed) or
	// idempotency_conflict if it differs.
	idem *Idempotency
	// resourceID is the id of what the command creates, when known before
	// it runs: the claim then records it in the same statement. Left
	// empty, the claim records the handler's Result.ID afterwards.
	resourceID string
	// claimAtCommit says that the handler looks the key up in its first
	// batch (commandTx.queueKeyLookup) and, if it is free, claims it in the
	// batch that commits (commandTx.claimAtCommit): the first round trip
	// then writes nothing, so the transaction takes no id and no lock until
	// its last. A concurrent request that claimed the key in between wins;
	// this one answers with its result. It needs pipelined and resourceID.
	claimAtCommit bool
	// pipelined runs the command in two round trips (the payment's hot
	// path): BEGIN, the writer gate and the key check travel in front of
	// the handler's first batch (commandTx.sendFirst), and COMMIT after
	// its last (commandTx.appendProjectReadAndCommit). It needs
	// claimAtCommit when the command has a key.
	pipelined bool
	// verifyKeyID, if set, is the API key the request authenticated with,
	// found in the API's credential cache: the command checks in its
	// transaction that the key is still usable (ErrKeyNotUsable if not),
	// so that a revocation takes effect on the next request, on every
	// replica, without a round trip of its own.
	verifyKeyID string
}

// ErrKeyNotUsable is the answer to a command whose API key (verifyKeyID)
// was revoked or expired since the API cached it: the request is
// unauthorized, as if the key had been looked up.
var ErrKeyNotUsable = &domain.Error{Code: domain.CodeUnauthorized, Message: "the API key is revoked or expired"}

// handler is a command's body, run in the command's transaction.
type handler func(ctx context.Context, tx *commandTx) (Result, error)

// commandTx is the command's transaction and its idempotency claim.
type commandTx struct {
	pgx.Tx        // pipelined: nil until sendFirst has begun it
	claim  *claim // nil: the command has no idempotency key
	cmd    command
	// Pipelined only: the connection the transaction runs on, and whether
	// the handler's last batch committed it.
	conn      *pgx.Conn
	committed bool
	// head is what runs first in the handler's last batch, before its
	// appends: a claim at commit and the checks queued by beforeAppend.
	head *pgx.Batch
}

// claim is one attempt's claim of an idempotency key.
type claim struct {
	idem       *Idempotency
	resourceID string
	outcome    claimOutcome
}

type claimOutcome int

const (
	claimNotMade claimOutcome = iota
	claimWon                  // the key is this request's
	claimTaken                // an earlier request holds the key: replay it
)

const claimSQL = `INSERT INTO idempotency_keys (scope, environment, key, operation, request_hash, resource_id, status_code)
    VALUES ($1, $2, $3, $4, $5, $6, 201) ON CONFLICT DO NOTHING`

// errClaimNotMade is a bug: a command that claims its key at commit
// returned without doing so.
var errClaimNotMade = errors.New("app: the command did not claim its idempotency key")

// execute runs a command: each attempt in a transaction of its own that
// holds the writer gate shared (so that a projection rebuild can pause
// commands for the moment it swaps its tables in), retried with jittered
// backoff while it loses races (stream version conflict, serialization
// failure, deadlock), at most MaxAttempts times; after the commit it wakes
// the log's readers. A failed command rolls back with its claim: nothing
// is stored for it.
func (a *App) execute(ctx context.Context, cmd command, fn handler) (Result, error) {
	if cmd.pipelined && cmd.idem != nil && !cmd.claimAtCommit {
		return Result{}, errors.New("app: a pipelined command claims its key at commit")
	}
	if cmd.claimAtCommit && (cmd.idem == nil || cmd.resourceID == "" || !cmd.pipelined) {
		return Result{}, errors.New("app: a claim at commit needs a pipelined command, an idempotency key and a resource id")
	}
	if err := a.Pacer.Wait(ctx); err != nil {
		return Result{}, err
	}
	begin := pgx.TxOptions{BeginQuery: eventstore.CommandBegin}
	var res Result
	err := a.retry(ctx, func() (err error) {
		if cmd.pipelined {
			res, err = a.attemptPipelined(ctx, cmd, fn)
			return err
		}
		return pgx.BeginTxFunc(ctx, a.Pool, begin, func(tx pgx.Tx) (err error) {
			res, err = attempt(ctx, newCommandTx(tx, cmd), cmd, fn)
			return err
		})
	})
	switch {
	case err == nil:
		a.Pacer.Back()
		a.Notifier.Notify()
	case eventstore.Unavailable(err) && ctx.Err() == nil: // not the request's own deadline
		a.Pacer.Away()
	}
	return res, err
}

// retry calls try until it succeeds, fails for good, or has been called
// MaxAttempts times.
func (a *App) retry(ctx context.Context, try func() error) error {
	backoff := 2 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := try()
		if err == nil || !eventstore.Retryable(err) || attempt >= a.MaxAttempts {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff + time.Duration(rand.Int64N(int64(backoff)))):
		}
		backoff = min(backoff*2, 200*time.Millisecond)
	}
}

// attemptPipelined is one try of a pipelined command on a connection of
// its own: the handler's batches begin and commit the transaction; a
// command that returns without committing (a replay) commits here, and
// one that fails rolls back here, the only extra round trip.
func (a *App) attemptPipelined(ctx context.Context, cmd command, fn handler) (Result, error) {
	res, err := a.tryPipelined(ctx, cmd, fn)
	if err != nil && cmd.claimAtCommit && eventstore.ViolatesConstraint(err, idempotencyKeyConstraint) {
		// The key was free when the first batch looked, and an identical
		// request claimed it and committed before this one's last batch:
		// this one rolled back and answers as a replay of that one.
		if earlier, found, lerr := lookupIdempotency(ctx, a.Pool, cmd.idem); found || lerr != nil {
			return earlier, lerr
		}
	}
	return res, err
}

// idempotencyKeyConstraint is the primary key of idempotency_keys, which
// a claim at commit breaks when another request holds the key.
const idempotencyKeyConstraint = "idempotency_keys_pkey"

// tryPipelined is attemptPipelined without the replay of a lost claim at
// commit.
func (a *App) tryPipelined(ctx context.Context, cmd command, fn handler) (res Result, err error) {
	pc, err := a.Pool.Acquire(ctx)
	if err != nil {
		return Result{}, err
	}
	tx := newCommandTx(nil, cmd)
	tx.conn = pc.Conn()
	defer func() { tx.end(ctx, pc, err) }()
	res, err = attempt(ctx, tx, cmd, fn)
	if err == nil && !tx.committed && tx.Tx != nil {
		err = tx.commit(ctx)
	}
	return res, err
}

// commit commits a pipelined transaction whose handler did not.
func (tx *commandTx) commit(ctx context.Context) error {
	tag, err := tx.conn.Exec(ctx, "COMMIT")
	if err == nil && tag.String() == "ROLLBACK" {
		err = pgx.ErrTxCommitRollback
	}
	tx.committed = err == nil
	return err
}

// end rolls back a pipelined transaction that did not commit and releases
// its connection. The pool destroys a connection left in a transaction (a
// ROLLBACK that failed, a context that ran out), so a broken one is never
// handed to the next command.
func (tx *commandTx) end(ctx context.Context, pc *pgxpool.Conn, err error) {
	defer pc.Release()
	if tx.committed || tx.conn.IsClosed() || tx.conn.PgConn().TxStatus() == 'I' {
		return
	}
	// The command failed: its context may be done, the rollback must
	// still be sent (briefly) for the connection to be reusable.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, rerr := tx.conn.Exec(rctx, "ROLLBACK"); rerr != nil {
		_ = tx.conn.Close(rctx)
	}
}

func newCommandTx(tx pgx.Tx, cmd command) *commandTx {
	t := &commandTx{Tx: tx, cmd: cmd}
	if cmd.idem != nil {
		t.claim = &claim{idem: cmd.idem, resourceID: cmd.resourceID}
	}
	return t
}

// attempt is one try of a command in tx: claim, run, replay or record.
func attempt(ctx context.Context, tx *commandTx, cmd command, fn handler) (Result, error) {
	if cmd.verifyKeyID != "" && !cmd.pipelined {
		if err := keyUsable(tx.QueryRow(ctx, keyUsableSQL, cmd.verifyKeyID)); err != nil {
			return Result{}, err
		}
	}
	c := tx.claim
	if c != nil && !cmd.claimAtCommit {
		tag, err := tx.Exec(ctx, claimSQL, c.args()...)
		if err := c.settle(tag, err); err != nil {
			return Result{}, err
		}
		if c.outcome == claimTaken {
			return c.replay(ctx, tx)
		}
	}
	res, err := fn(ctx, tx)
	if err != nil || c == nil {
		return res, err
	}
	switch c.outcome {
	case claimTaken:
		return c.replay(ctx, tx)
	case claimNotMade:
		return Result{}, errClaimNotMade
	}
	if c.resourceID == "" {
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET resource_id = $4 WHERE scope = $1 AND environment = $2 AND key = $3`,
			c.idem.Scope, c.idem.Environment, c.idem.Key, res.ID)
	}
	return res, err
}

// queueKeyLookup queues, in the handler's first batch, the check that the
// command's key is free (a claim at commit); the handler reads it with
// keyFree.
func (tx *commandTx) queueKeyLookup(b *pgx.Batch) {
	k := tx.claim.idem
	b.Queue(`SELECT EXISTS (SELECT 1 FROM idempotency_keys WHERE scope = $1 AND environment = $2 AND key = $3)`,
		k.Scope, k.Environment, k.Key)
}

// keyFree reads the result of queueKeyLookup. False: an earlier request
// holds the key, and the handler returns at once (with no error); the
// runner answers with the earlier result.
func (tx *commandTx) keyFree(br pgx.BatchResults) (bool, error) {
	var taken bool
	if err := br.QueryRow().Scan(&taken); err != nil {
		return false, err
	}
	if taken {
		tx.claim.outcome = claimTaken
	}
	return !taken, nil
}

// claimAtCommit queues the claim of the command's key at the head of its
// last batch. It fails (idempotencyKeyConstraint) rather than doing
// nothing when the key is taken: the batch then stops there, before the
// appends and COMMIT, and the runner answers with the earlier result. If
// the last batch commits, the key is this request's.
func (tx *commandTx) claimAtCommit() {
	tx.beforeAppend(claimAtCommitSQL, tx.claim.args()...)
	tx.claim.outcome = claimWon
}

const claimAtCommitSQL = `INSERT INTO idempotency_keys (scope, environment, key, operation, request_hash, resource_id, status_code)
    VALUES ($1, $2, $3, $4, $5, $6, 201)`

// beforeAppend queues a statement at the head of the command's last batch,
// before its appends, to be run as a write (its rows are not read). A
// check there that raises stops the batch before anything is written.
func (tx *commandTx) beforeAppend(sql string, args ...any) {
	if tx.head == nil {
		tx.head = &pgx.Batch{}
	}
	tx.head.Queue(sql, args...)
}

func (c *claim) args() []any {
	return []any{c.idem.Scope, c.idem.Environment, c.idem.Key, c.idem.Operation, c.idem.RequestHash, c.resourceID}
}

// settle records the claim statement's outcome. A concurrent duplicate
// blocked on the key's primary key until the holder committed (taken) or
// rolled back (won).
func (c *claim) settle(tag pgconn.CommandTag, err error) error {
	if err != nil {
		return err
	}
	c.outcome = claimTaken
	if tag.RowsAffected() > 0 {
		c.outcome = claimWon
	}
	return nil
}

// replay answers with the result of the request that holds the key.
func (c *claim) replay(ctx context.Context, db queryRower) (Result, error) {
	res, _, err := lookupIdempotency(ctx, db, c.idem)
	return res, err
}

// keyUsableSQL raises (api_key_not_usable) unless the API key may still
// be used: the same conditions as the API's lookup by secret
// (queries.CredentialByHash).
const keyUsableSQL = `SELECT CASE WHEN EXISTS (SELECT 1 FROM api_keys
        WHERE id = $1 AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now()))
    THEN 1 ELSE api_key_not_usable($1) END`

// QueueKeyCheck queues, in front of a pipelined read, the check that the
// API key keyID may still be used; KeyChecked reads its result, first:
// ErrKeyNotUsable when it refused, and then the statements queued after it
// did not run (a pipeline stops at its first error).
func QueueKeyCheck(b *pgx.Batch, keyID string) { b.Queue(keyUsableSQL, keyID) }

// KeyChecked reads the result of QueueKeyCheck from br.
func KeyChecked(br pgx.BatchResults) error { return keyUsable(br.QueryRow()) }

// keyNotUsableCode is the SQLSTATE api_key_not_usable raises (migration
// 00014): raising, not returning no row, stops a pipelined batch at the
// check, before the claim and the lock queued after it.
const keyNotUsableCode = "TR401"

// keyUsable reads keyUsableSQL's row: ErrKeyNotUsable when it raised.
func keyUsable(row pgx.Row) error {
	var one int
	err := row.Scan(&one)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == keyNotUsableCode {
		return ErrKeyNotUsable
	}
	return err
}

// sendFirst sends the handler's first batch. Pipelined, BEGIN, the writer
// gate and the key check travel in front of it, and their results are
// read here: the handler reads its own, then closes the batch. On an
// error the batch is closed already.
func (tx *commandTx) sendFirst(ctx context.Context, b *pgx.Batch) (pgx.BatchResults, error) {
	if !tx.cmd.pipelined {
		return tx.SendBatch(ctx, b), nil
	}
	first := &pgx.Batch{}
	first.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	first.Queue(eventstore.TakeWriterGateShared)
	if tx.cmd.verifyKeyID != "" {
		first.Queue(keyUsableSQL, tx.cmd.verifyKeyID)
	}
	first.QueuedQueries = append(first.QueuedQueries, b.QueuedQueries...)
	br := tx.conn.SendBatch(ctx, first)
	fail := func(err error) (pgx.BatchResults, error) {
		br.Close()
		return nil, err
	}
	if _, err := br.Exec(); err != nil {
		return fail(err)
	}
	tx.Tx = br.Tx()
	if _, err := br.Exec(); err != nil {
		return fail(err)
	}
	if tx.cmd.verifyKeyID != "" {
		if err := keyUsable(br.QueryRow()); err != nil {
			return fail(err)
		}
	}
	return br, nil
}
