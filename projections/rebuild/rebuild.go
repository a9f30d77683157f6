// Package rebuild replays the log into a shadow copy of every projection
// and swaps it in while the API serves (Run), and compares the live
// projections with the log for the audit (CompareWithLog).
package rebuild

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// Stats says what a rebuild did.
type Stats struct {
	Events   int           // events replayed
	Duration time.Duration // the whole rebuild
	// Paused is how long commands waited: the final catch-up and swap,
	// the only moment the rebuild holds the writer gate.
	Paused time.Duration
	// SwapEvents are the events replayed during that pause.
	SwapEvents int
	// Changed counts the live rows the swap deleted or inserted: zero when
	// the live projections already were what the log says.
	Changed int64
	// Suspects are the rows that differed when live and shadow were
	// compared before the pause; Compared the candidate rows compared
	// during it (suspects plus rows replayed since, counted once per
	// write), which is what the pause grows with.
	Suspects, Compared int64
	// Refined counts the rounds that narrowed the candidates before the
	// pause (none when the subscriber was not running).
	Refined int
	// SwapAttempts counts the tries of the swap's transaction (it gives
	// way and tries again when a lock is contended or a deadlock broken).
	SwapAttempts int
	// Where the time went: the replay into the shadow (before the first
	// comparison), its statistics, and the first comparison of live and
	// shadow.
	Replay, Analyze, Compare time.Duration
}

// Options tune a rebuild; the zero value is the default.
type Options struct {
	BatchSize int // events per projections.Replay transaction (default 5,000)
	// AfterBatch, when set, is called after each projections.Replay batch has
	// committed into the shadow schema (tests use it to act mid-rebuild).
	AfterBatch func(events int)
	// AfterCompare, when set, is called once live and shadow have been
	// compared, before the last projections.Replay and the swap.
	AfterCompare func()
}

// shadowSchema holds the copy a rebuild fills.
const shadowSchema = "projections_rebuild"

// Run replays the whole log into a shadow copy of every projection
// and then makes the live tables equal to it, while the API keeps
// serving:
//
//  1. The shadow tables are filled batch by batch, in commit order, from
//     the events below the oldest running transaction, the public events
//     side by side with the rest (applySideBySide). Nothing is locked:
//     commands and reads go on against the live tables.
//  2. In one short transaction the rebuild pauses the asynchronous
//     subscribers (their locks and checkpoint rows), takes the writer gate that every
//     command holds shared (so in-flight commands finish and new ones
//     wait), replays the few events committed since, and writes into the
//     live tables only the rows that differ from the shadow. Reads never
//     wait: they see the old rows until this transaction commits, then the
//     new ones. The subscribers resume after the last event.
//
// Only one rebuild runs at a time; a second one waits for the first.
func Run(ctx context.Context, pool *pgxpool.Pool) (Stats, error) {
	return RunWith(ctx, pool, Options{})
}

// RunWith is Run with options.
func RunWith(ctx context.Context, pool *pgxpool.Pool, opt Options) (Stats, error) {
	start := time.Now()
	if opt.BatchSize <= 0 {
		opt.BatchSize = 5000
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return Stats{}, err
	}
	defer conn.Release()
	// One rebuild at a time: they share the shadow schema.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, rebuildLock); err != nil {
		return Stats{}, err
	}
	defer func() {
		// A connection that kept the lock must not go back to the pool.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, rebuildLock); err != nil {
			conn.Conn().Close(context.Background())
		}
	}()
	defer conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS `+shadowSchema+` CASCADE`)

	if err := projections.CreateTables(ctx, conn, shadowSchema); err != nil {
		return Stats{}, err
	}
	r := &rebuild{conn: conn.Conn(), opt: opt, seen: projections.NewReplayCache()}
	if pool.Config().MaxConns > 1 { // the rebuild holds one connection throughout
		r.readAhead = pool
	}
	if pool.Config().MaxConns > 2 { // and one for the read ahead
		side, err := pool.Acquire(ctx)
		if err != nil {
			return Stats{}, err
		}
		defer side.Release()
		r.side = side.Conn()
	}
	phase := time.Now()
	if err := r.replayUntilCaughtUp(ctx); err != nil {
		return r.stats, err
	}
	r.stats.Replay, phase = time.Since(phase), time.Now()
	conns := []eventstore.DB{conn}
	if r.side != nil {
		conns = append(conns, r.side)
	}
	// For the comparison's plans: the shadow was last analyzed when its
	// events had doubled, up to half of them ago.
	if err := projections.AnalyzeSpread(ctx, shadowSchema, conns...); err != nil {
		return r.stats, err
	}
	r.stats.Analyze, phase = time.Since(phase), time.Now()
	if err := r.prepareSwap(ctx); err != nil {
		return r.stats, err
	}
	r.stats.Compare = time.Since(phase)
	r.stats.Suspects = r.plan.Suspects
	if opt.AfterCompare != nil {
		opt.AfterCompare()
	}
	// The comparison took a while: projections.Replay what committed meanwhile, and
	// narrow the candidates again, until a round replays little, so that
	// the pause replays and compares only the last few events' rows.
	for round := 0; round < maxRefineRounds; round++ {
		before := r.stats.Events
		if err := r.replayUntilCaughtUp(ctx); err != nil {
			return r.stats, err
		}
		refined, err := r.refine(ctx)
		if err != nil {
			return r.stats, err
		}
		// Without a subscriber that keeps up there is nothing to refine
		// with; more rounds would only grow the touched rows.
		if !refined || r.stats.Events-before < smallRound {
			break
		}
	}
	for attempt := 1; ; attempt++ {
		r.stats.SwapAttempts = attempt
		err = r.swap(ctx)
		if err == nil || !eventstore.LockContended(err) || attempt >= maxSwapAttempts {
			break
		}
	}
	r.stats.Duration = time.Since(start)
	return r.stats, err
}

// rebuildLock serialises rebuilds (a session-level advisory lock).
const rebuildLock = 0x7472_6562_7569_6c64 // "trebuild"

const maxSwapAttempts = 10

// Refinement rounds before the swap stop once a round replays fewer than
// smallRound events, or after maxRefineRounds (a log growing as fast as
// the projections.Replay would otherwise keep it from ever swapping).
const (
	smallRound      = 200
	maxRefineRounds = 5
)

type rebuild struct {
	conn *pgx.Conn
	// readAhead, if set, reads the next batch while one is replayed.
	readAhead *pgxpool.Pool
	// side, if set, replays the public events while conn replays the
	// rest of the batch, outside the swap (see applySideBySide).
	side *pgx.Conn
	opt  Options
	pos  eventstore.Position // the last event replayed into the shadow
	seen *projections.StreamCache
	plan *swapPlan
	// analyze keeps the shadow's statistics as it fills.
	analyze projections.AnalyzeAsTheyGrow
	stats   Stats
}

// replayUntilCaughtUp fills the shadow from the log, one transaction per
// batch, until at most a batch is left for the swap.
func (r *rebuild) replayUntilCaughtUp(ctx context.Context) error {
	deadline := time.Now().Add(maxHorizonWait)
	var ahead *eventstore.ReadAhead
	for {
		read, ok := ahead.Await(ctx)
		ahead = nil
		n := 0
		err := pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, replaySettings); err != nil {
				return err
			}
			events := read.Events
			if !ok || read.From != r.pos || len(read.Events) < r.opt.BatchSize { // a short one: see eventstore.ReadAhead
				var err error
				if events, err = eventstore.ReadAll(ctx, tx, r.pos, r.opt.BatchSize); err != nil {
					return err
				}
			}
			n = len(events)
			if n == r.opt.BatchSize && r.readAhead != nil {
				ahead = eventstore.StartReadAhead(ctx, r.readAhead, eventstore.PositionOf(events[n-1]), n, true, eventstore.Filter{})
			}
			if err := r.applySideBySide(ctx, tx, events); err != nil {
				return err
			}
			// Not in apply: the swap replays while commands wait.
			return r.analyze.After(ctx, tx, shadowSchema, r.stats.Events)
		})
		if err != nil {
			return err
		}
		if n > 0 && r.opt.AfterBatch != nil {
			r.opt.AfterBatch(r.stats.Events)
		}
		if n == r.opt.BatchSize {
			continue
		}
		// A short batch: caught up, unless an old transaction (anywhere on
		// the server) holds the horizon back. What lies beyond it would be
		// replayed while commands wait, so wait for the horizon instead,
		// up to a bound.
		behind, err := r.behind(ctx)
		if err != nil || behind <= r.opt.BatchSize || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// replaySettings start a transaction that replays into the shadow. A
// batch's arrays of rows (a few megabytes of public events) must not
// spill to disk between the parameters and the INSERT.
const replaySettings = `SET LOCAL search_path = ` + shadowSchema + `, public; SET LOCAL work_mem = '64MB'`

// maxHorizonWait bounds how long the projections.Replay waits for an old transaction
// that holds back more than a batch of committed events.
const maxHorizonWait = 30 * time.Second

// behind counts the committed events after the projections.Replay's position (up to
// one more than a batch).
func (r *rebuild) behind(ctx context.Context) (int, error) {
	var n int
	err := r.conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM events
        WHERE (transaction_id, global_position) > ($1::text::xid8, $2) LIMIT $3) x`,
		fmt.Sprint(r.pos.TransactionID), r.pos.GlobalPosition, r.opt.BatchSize+1).Scan(&n)
	return n, err
}

// apply folds events into the shadow with every projector and advances
// the position. On error the caller's transaction rolls back, so the
// position only moves with what committed.
func (r *rebuild) apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	if len(events) == 0 {
		return nil
	}
	if err := projections.Replay(ctx, tx, events, func(string, *eventstore.RecordedEvent) bool { return true }, r.seen); err != nil {
		return err
	}
	r.pos = eventstore.PositionOf(events[len(events)-1])
	r.stats.Events += len(events)
	return nil
}

// applySideBySide is apply with the public events replayed on the side
// connection, in a transaction of their own, while tx replays the inline
// projectors and the ledger: the two share no table, so the shadow fills
// on two PostgreSQL backends at once. The two transactions commit one
// after the other, so a failure may leave the shadow's tables at
// different positions; any failure here ends the rebuild (its shadow is
// dropped), so nothing reads them. The swap, which retries, replays on
// one transaction (apply).
func (r *rebuild) applySideBySide(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	if r.side == nil || len(events) == 0 {
		return r.apply(ctx, tx, events)
	}
	// Decoded here, once: both sides then only read the events.
	if err := eventstore.DecodeAll(events); err != nil {
		return err
	}
	publicEvents := projections.AsyncSubscriberNamed(projections.PublicEventsSubscription)
	side := make(chan error, 1)
	go func() {
		side <- pgx.BeginFunc(ctx, r.side, func(stx pgx.Tx) error {
			if _, err := stx.Exec(ctx, replaySettings); err != nil {
				return err
			}
			return projections.ProjectAsync(ctx, stx, events, r.seen, publicEvents.Projectors)
		})
	}()
	err := projections.Replay(ctx, tx, events, func(s string, _ *eventstore.RecordedEvent) bool {
		return s != projections.PublicEventsSubscription
	}, r.seen)
	if serr := <-side; err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	r.pos = eventstore.PositionOf(events[len(events)-1])
	r.stats.Events += len(events)
	return nil
}

// swap is the short transaction of step 2. It takes the subscribers'
// locks and checkpoint rows before the writer gate: the subscriber never waits for
// the gate, so waiting for it while holding the gate would only stall
// commands for longer.
func (r *rebuild) swap(ctx context.Context) error {
	pos, events, changed := r.pos, r.stats.Events, r.stats.Changed
	r.stats.SwapEvents = 0
	err := pgx.BeginTxFunc(ctx, r.conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		names := projections.AsyncNames()
		// A subscriber owns its subscription by an advisory lock for each
		// step (eventstore.SubscriptionLock): taking them waits for the
		// steps under way and keeps the next ones out. Then the rows (made
		// if missing), for a process of an earlier release, which locked
		// those; never in the other order, or a step waiting for its row
		// at its end would deadlock with the rebuild waiting for its lock.
		var locks []int64
		for _, name := range names {
			locks = append(locks, eventstore.SubscriptionLock(name))
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(k) FROM (SELECT unnest($1::bigint[]) AS k ORDER BY 1) l`, locks); err != nil {
			return err
		}
		// After the locks: a step of a subscription without a row yet
		// inserts it under its lock, and would wait for this insert while
		// this transaction waited for its lock.
		if _, err := tx.Exec(ctx, `INSERT INTO subscription_checkpoints (name) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, names); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM subscription_checkpoints WHERE name = ANY($1) ORDER BY name FOR UPDATE`, names); err != nil {
			return err
		}
		// A command that does not finish must not hold every other one
		// up behind the rebuild: give way and try again.
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.WriterGate); err != nil {
			return err
		}
		paused := time.Now()
		defer func() { r.stats.Paused += time.Since(paused) }()

		// No command runs now, so every event of the log has committed.
		if _, err := tx.Exec(ctx, `SET LOCAL search_path = `+shadowSchema+`, public`); err != nil {
			return err
		}
		for {
			batch, err := eventstore.ReadCommitted(ctx, tx, r.pos, r.opt.BatchSize)
			if err != nil {
				return err
			}
			if len(batch) == 0 {
				break
			}
			if err := r.apply(ctx, tx, batch); err != nil {
				return err
			}
			r.stats.SwapEvents += len(batch)
		}
		if _, err := tx.Exec(ctx, `SET LOCAL search_path = public`); err != nil {
			return err
		}
		n, err := r.copyCandidates(ctx, tx)
		if err != nil {
			return err
		}
		r.stats.Changed += n
		_, err = tx.Exec(ctx, `UPDATE subscription_checkpoints SET transaction_id = $2::text::xid8, global_position = $3,
            updated_at = now() WHERE name = ANY($1)`, names, fmt.Sprint(r.pos.TransactionID), r.pos.GlobalPosition)
		return err
	})
	if err != nil {
		// The events replayed inside the failed transaction were rolled
		// back with it; the next attempt replays them again.
		r.pos, r.stats.Events, r.stats.Changed = pos, events, changed
		r.seen.ForgetAfter(pos)
	}
	return err
}

// copyDifferences makes public.t equal to the shadow's t, among the rows
// filter selects (a WHERE clause, or "" for all): it deletes the live rows
// the shadow lacks (by primary key pk) and inserts the shadow rows the
// live table lacks.
func copyDifferences(ctx context.Context, tx pgx.Tx, table string, pk []string, filter string) (int64, error) {
	var match []string
	for _, c := range pk {
		match = append(match, fmt.Sprintf("l.%[1]s = d.%[1]s", c))
	}
	del, err := tx.Exec(ctx, fmt.Sprintf(`DELETE FROM public.%[1]s l
        USING (SELECT * FROM public.%[1]s%[4]s EXCEPT ALL SELECT * FROM %[2]s.%[1]s%[4]s) d WHERE %[3]s`,
		table, shadowSchema, strings.Join(match, " AND "), filter))
	if err != nil {
		return 0, err
	}
	ins, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO public.%[1]s
        SELECT * FROM %[2]s.%[1]s%[3]s EXCEPT ALL SELECT * FROM public.%[1]s%[3]s`, table, shadowSchema, filter))
	if err != nil {
		return 0, err
	}
	return del.RowsAffected() + ins.RowsAffected(), nil
}

func primaryKey(ctx context.Context, tx pgx.Tx, table string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT a.attname FROM pg_index i
        JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
        WHERE i.indrelid = $1::regclass AND i.indisprimary ORDER BY a.attnum`, "public."+table)
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err == nil && len(cols) == 0 {
		err = fmt.Errorf("table %s has no primary key", table)
	}
	return cols, err
}

// rewindFeed moves the webhook fan-out and the NATS forwarder (each of
// their parts, when split: see eventstore.Partition) back to just
// before the first public event the swap is about to change (a row the
// live table lacked, or one numbered differently), so none is skipped;
// the fan-out is idempotent per endpoint and event, and JetStream drops a
// message id it has seen, so what they see again is not sent twice. It bumps the checkpoint's updated_at even when the position need
// not move: a fan-out batch in flight, read before the change, then fails
// its compare-and-set and reads the corrected rows again. filter
// restricts the rows looked at, as in copyDifferences.
func rewindFeed(ctx context.Context, tx pgx.Tx, filter string) error {
	_, err := tx.Exec(ctx, `UPDATE subscription_checkpoints c
        SET global_position = LEAST(c.global_position, d.first - 1), updated_at = clock_timestamp()
        FROM (SELECT min(seq) AS first FROM (
                (SELECT * FROM public.public_events`+filter+` EXCEPT ALL SELECT * FROM `+shadowSchema+`.public_events`+filter+`)
                UNION ALL
                (SELECT * FROM `+shadowSchema+`.public_events`+filter+` EXCEPT ALL SELECT * FROM public.public_events`+filter+`)) x) d
        WHERE split_part(c.name, '#', 1) = ANY($1) AND d.first IS NOT NULL`, projections.PublicEventFeeds)
	return err
}
