package rebuild

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// The swap must leave every live table equal to its shadow, but comparing
// whole tables while commands wait would make the pause grow with the
// tables. So the rebuild compares them once before it takes the writer
// gate, and under the gate compares only the rows that can have changed
// since: the candidates.
//
// Before the gate, at snapshot S (one REPEATABLE READ transaction), with
// the shadow at position P, the rows that differ are recorded by primary
// key (the suspects). From then on a trigger on every shadow table records
// the key of each row the projections.Replay writes (the touched rows). Under the
// gate the candidates are the suspects plus the touched rows. That is
// enough because:
//   - projectors never delete, and a row's key comes from its event, so
//     an event writes the same keys live and in the shadow;
//   - a command that commits after S appended events after P (P is below
//     the horizon the projections.Replay read at, so every transaction before P had
//     ended before S), and the swap replays them into the shadow;
//   - an asynchronous subscriber, if it had reached P at S, also applies
//     only events after P after S. If it had not, and it moved after S,
//     its tables are compared whole instead (swapPlan.fullAsync), each
//     subscriber judged by its own checkpoint.
//
// Rows edited behind the log's back after S are left to the next rebuild.

// touchedTable lists the keys the projections.Replay wrote since the comparison, as
// whole rows (to_jsonb), for every shadow table.
const touchedTable = shadowSchema + ".touched"

// swapPlan is what the comparison before the gate found.
type swapPlan struct {
	keys map[string][]string // primary-key columns of each table
	// at holds each asynchronous subscriber's checkpoint at the
	// comparison's snapshot; fullAsync those that had not reached the
	// shadow's position.
	at        map[string]eventstore.Position
	fullAsync map[string]bool
	Suspects  int64 // rows that differed at the comparison
}

// prepareSwap records the primary keys, creates the (empty) candidate
// tables, installs the touch triggers and compares live with shadow at
// one snapshot. It first waits, briefly, for the asynchronous subscribers
// to reach the shadow's position, so that their tables need not be
// compared whole under the gate.
func (r *rebuild) prepareSwap(ctx context.Context) error {
	plan := &swapPlan{keys: map[string][]string{}}
	r.plan = plan
	err := pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		for _, t := range projections.AllTables() {
			pk, err := primaryKey(ctx, tx, t)
			if err != nil {
				return err
			}
			plan.keys[t] = pk
			if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE UNLOGGED TABLE %s AS SELECT %s FROM public.%s WITH NO DATA`,
				candidates(t), strings.Join(pk, ", "), t)); err != nil {
				return err
			}
		}
		return installTouchTriggers(ctx, tx)
	})
	if err != nil {
		return err
	}
	if err := r.waitForSubscriber(ctx); err != nil {
		return err
	}
	found, at, err := r.compare(ctx, false, func(string) string { return "" })
	if err != nil {
		return err
	}
	plan.at, plan.fullAsync = at, behindOf(at, r.pos)
	plan.Suspects, err = r.storeCandidates(ctx, found)
	return err
}

// behindOf names the subscribers whose checkpoint in at is before pos.
func behindOf(at map[string]eventstore.Position, pos eventstore.Position) map[string]bool {
	behind := map[string]bool{}
	for name, p := range at {
		behind[name] = p.Less(pos)
	}
	return behind
}

// wholeTables lists the tables of the subscribers named in which.
func wholeTables(which map[string]bool) map[string]bool {
	whole := map[string]bool{}
	for _, s := range projections.AsyncSubscribers() {
		if which[s.Name] {
			for _, p := range s.Projectors {
				for _, t := range p.Tables() {
					whole[t] = true
				}
			}
		}
	}
	return whole
}

// compare finds, at one snapshot, the keys of the rows where live and
// shadow differ, among the rows filter(table) selects ("" for all), and
// the asynchronous subscribers' checkpoints at that snapshot. The transaction is read
// only: it takes no transaction id, so it does not hold back the log's
// readers (which read below the oldest running one) however long it runs.
// With the side connection, the tables are compared on both at once, the
// side's transaction in the same snapshot (exported by the first).
// With caughtUp set it compares nothing unless every subscriber has
// reached the shadow's position at the snapshot.
func (r *rebuild) compare(ctx context.Context, caughtUp bool, filter func(table string) string) (map[string][]byte, map[string]eventstore.Position, error) {
	var (
		mu      sync.Mutex
		found   = map[string][]byte{}
		at      map[string]eventstore.Position
		skipped bool // caughtUp, and a subscriber was behind
	)
	readOnly := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	// The first error ends both connections' work.
	g, gctx := errgroup.WithContext(ctx)
	compareOn := func(tx pgx.Tx, next <-chan string) error {
		// A merge join along both primary keys reads each table once, in
		// key order; hashing or sorting whole rows (EXCEPT ALL both ways
		// did) spilled to disk and took longer than the replay.
		if _, err := tx.Exec(gctx, `SET LOCAL jit = off; SET LOCAL enable_hashjoin = off`); err != nil {
			return err
		}
		for t := range next {
			var keys []byte
			if err := tx.QueryRow(gctx, diffKeys(t, r.plan.keys[t], filter(t))).Scan(&keys); err != nil {
				return fmt.Errorf("compare %s: %w", t, err)
			}
			mu.Lock()
			found[t] = keys
			mu.Unlock()
		}
		return nil
	}
	g.Go(func() error {
		return pgx.BeginTxFunc(gctx, r.conn, readOnly, func(tx pgx.Tx) error {
			var err error
			if at, err = subscribersAt(gctx, tx); err != nil {
				return err
			}
			if skipped = caughtUp && slowest(at).Less(r.pos); skipped {
				return nil
			}
			tables, err := biggestFirst(gctx, tx)
			if err != nil {
				return err
			}
			next := make(chan string, len(tables))
			for _, t := range tables {
				next <- t
			}
			close(next)
			if r.side == nil {
				return compareOn(tx, next)
			}
			var snapshot string
			if err := tx.QueryRow(gctx, `SELECT pg_export_snapshot()`).Scan(&snapshot); err != nil {
				return err
			}
			// This transaction must outlive the side's import of its
			// snapshot, and no more: waiting idle for the side's last
			// table, the pool's idle_in_transaction_session_timeout could
			// end the session.
			imported := make(chan struct{})
			g.Go(func() error {
				defer func() {
					select {
					case <-imported:
					default:
						close(imported) // the side failed before its import
					}
				}()
				return pgx.BeginTxFunc(gctx, r.side, readOnly, func(stx pgx.Tx) error {
					_, err := stx.Exec(gctx, `SET TRANSACTION SNAPSHOT '`+snapshot+`'`)
					close(imported)
					if err != nil {
						return err
					}
					return compareOn(stx, next)
				})
			})
			err = compareOn(tx, next)
			<-imported
			return err
		})
	})
	err := g.Wait()
	if err == nil && !skipped && len(found) != len(projections.AllTables()) {
		err = fmt.Errorf("compared %d tables of %d", len(found), len(projections.AllTables()))
	}
	return found, at, err
}

// biggestFirst orders the live projection tables by size, the biggest
// first, so that two connections comparing them finish together.
func biggestFirst(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace
        AND relkind = 'r' AND relname = ANY($1) ORDER BY pg_relation_size(oid) DESC, relname`, projections.AllTables())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// diffKeys is the query of the primary keys (a jsonb array of objects)
// of the rows of table where live and shadow differ, among those filter
// selects: a row on one side only, or on both with a column that differs.
func diffKeys(table string, pk []string, filter string) string {
	var on, key []string
	for _, c := range pk {
		on = append(on, fmt.Sprintf("l.%[1]s = s.%[1]s", c))
		key = append(key, fmt.Sprintf("coalesce(l.%[1]s, s.%[1]s) AS %[1]s", c))
	}
	return fmt.Sprintf(`SELECT coalesce(jsonb_agg(to_jsonb(k)), '[]') FROM (SELECT %[4]s
        FROM (SELECT * FROM public.%[1]s%[5]s) l FULL JOIN (SELECT * FROM %[2]s.%[1]s%[5]s) s ON %[3]s
        WHERE ROW(l.*) IS DISTINCT FROM ROW(s.*)) k`,
		table, shadowSchema, strings.Join(on, " AND "), strings.Join(key, ", "), filter)
}

// storeCandidates makes found (from compare) the candidates, forgets the
// touched rows, and returns how many candidates there are.
func (r *rebuild) storeCandidates(ctx context.Context, found map[string][]byte) (int64, error) {
	var total int64
	err := pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		total = 0
		for _, t := range projections.AllTables() {
			if _, err := tx.Exec(ctx, `TRUNCATE `+candidates(t)); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %[1]s SELECT * FROM jsonb_populate_recordset(NULL::%[1]s, $1)`,
				candidates(t)), found[t])
			if err != nil {
				return err
			}
			total += tag.RowsAffected()
		}
		_, err := tx.Exec(ctx, `TRUNCATE `+touchedTable)
		return err
	})
	return total, err
}

// candidates names the table of t's candidate keys.
func candidates(table string) string { return shadowSchema + "." + table + "__candidates" }

// installTouchTriggers makes every shadow table record the rows written
// to it from now on.
func installTouchTriggers(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `CREATE UNLOGGED TABLE `+touchedTable+` (tbl text NOT NULL, row jsonb NOT NULL);
        CREATE FUNCTION `+shadowSchema+`.touch() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP <> 'INSERT' THEN
                INSERT INTO `+touchedTable+` VALUES (TG_TABLE_NAME, to_jsonb(OLD));
            END IF;
            IF TG_OP <> 'DELETE' THEN
                INSERT INTO `+touchedTable+` VALUES (TG_TABLE_NAME, to_jsonb(NEW));
            END IF;
            RETURN NULL;
        END $$`); err != nil {
		return err
	}
	for _, t := range projections.AllTables() {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TRIGGER touch AFTER INSERT OR UPDATE OR DELETE ON %[1]s.%[2]s
            FOR EACH ROW EXECUTE FUNCTION %[1]s.touch()`, shadowSchema, t)); err != nil {
			return err
		}
	}
	return nil
}

// waitForSubscriber waits until the slowest asynchronous subscriber
// reaches the shadow's position, while it keeps moving: one that does not
// move in subscriberStall (none runs, or it is stuck) is not waited for.
func (r *rebuild) waitForSubscriber(ctx context.Context) error {
	last, moved := eventstore.Position{}, time.Now()
	for {
		at, err := subscriberAt(ctx, r.conn)
		if err != nil || !at.Less(r.pos) {
			return err
		}
		if at != last {
			last, moved = at, time.Now()
		} else if time.Since(moved) > subscriberStall {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// subscriberStall is longer than an idle subscriber's poll (500 ms), so a
// running subscriber is not taken for a stuck one.
const subscriberStall = 600 * time.Millisecond

// subscriberAt is the slowest asynchronous subscriber's checkpoint as db
// sees it: every asynchronous table has applied the log up to there.
func subscriberAt(ctx context.Context, db eventstore.DB) (eventstore.Position, error) {
	return eventstore.ReadSlowestCheckpoint(ctx, db, projections.AsyncNames())
}

// subscribersAt is each asynchronous subscriber's checkpoint as db sees it.
func subscribersAt(ctx context.Context, db eventstore.DB) (map[string]eventstore.Position, error) {
	at := map[string]eventstore.Position{}
	for _, name := range projections.AsyncNames() {
		pos, err := eventstore.ReadCheckpoint(ctx, db, name)
		if err != nil {
			return nil, err
		}
		at[name] = pos
	}
	return at, nil
}

// slowest is the lowest of the positions in at.
func slowest(at map[string]eventstore.Position) eventstore.Position {
	var low eventstore.Position
	first := true
	for _, p := range at {
		if first || p.Less(low) {
			low, first = p, false
		}
	}
	return low
}

// copyCandidates makes the live tables equal to the shadow, under the
// gate, looking only at the candidates (or at whole tables where the plan
// says so), rewinds the webhook feed if public_events changes, and
// returns how many live rows it deleted or inserted.
func (r *rebuild) copyCandidates(ctx context.Context, tx pgx.Tx) (int64, error) {
	now, err := subscribersAt(ctx, tx)
	if err != nil {
		return 0, err
	}
	moved := map[string]bool{} // behind at the comparison, and moved since
	for name, behind := range r.plan.fullAsync {
		moved[name] = behind && now[name] != r.plan.at[name]
	}
	whole := wholeTables(moved)
	// enable_seqscan = off inflates plan costs enough to trigger JIT
	// compilation, which would cost far more than the lookups.
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
		return 0, err
	}
	r.stats.Compared = 0
	var changed int64
	for _, t := range projections.AllTables() {
		// The candidates are few: look them up by primary key, never by
		// scanning a live table, unless the whole table is compared.
		keys := r.plan.keys[t]
		cols := strings.Join(keys, ", ")
		filter := ""
		if _, err := tx.Exec(ctx, fmt.Sprintf(`SET LOCAL enable_seqscan = %t`, whole[t])); err != nil {
			return 0, err
		}
		if !whole[t] {
			var n int64
			if err := tx.QueryRow(ctx, fmt.Sprintf(`WITH touched AS (INSERT INTO %[1]s SELECT %[2]s FROM %[3]s,
                    jsonb_populate_record(NULL::public.%[4]s, row) r WHERE tbl = '%[4]s' RETURNING 1)
                SELECT (SELECT count(*) FROM touched) + (SELECT count(*) FROM %[1]s)`,
				candidates(t), prefixed("r.", keys), touchedTable, t)).Scan(&n); err != nil {
				return 0, err
			}
			r.stats.Compared += n
			filter = fmt.Sprintf(" WHERE (%s) IN (SELECT %s FROM %s)", cols, cols, candidates(t))
		}
		if t == "public_events" {
			if err := rewindFeed(ctx, tx, filter); err != nil {
				return 0, err
			}
		}
		n, err := copyDifferences(ctx, tx, t, keys, filter)
		if err != nil {
			return 0, fmt.Errorf("swap %s: %w", t, err)
		}
		changed += n
	}
	return changed, nil
}

func prefixed(prefix string, cols []string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = prefix + c
	}
	return strings.Join(out, ", ")
}

// refine narrows the candidates before the gate, so that the pause deals
// only with what the final catch-up writes: at a new snapshot, once the
// subscribers have passed the shadow's position, the candidates (suspects
// and rows touched since) that are now equal are dropped and the touched
// rows forgotten. The argument of the first comparison holds again from
// this snapshot; where the first comparison could not rely on it (a
// subscriber was behind), that subscriber's tables are compared whole
// here instead. It does nothing, and says so, if one has not caught up.
func (r *rebuild) refine(ctx context.Context) (bool, error) {
	if err := r.waitForSubscriber(ctx); err != nil {
		return false, err
	}
	whole := wholeTables(r.plan.fullAsync)
	found, at, err := r.compare(ctx, true, func(t string) string {
		if whole[t] {
			return ""
		}
		keys := r.plan.keys[t]
		cols := strings.Join(keys, ", ")
		return fmt.Sprintf(` WHERE (%[1]s) IN (SELECT %[1]s FROM %[2]s UNION ALL SELECT %[3]s FROM %[4]s,
            jsonb_populate_record(NULL::public.%[5]s, row) r WHERE tbl = '%[5]s')`,
			cols, candidates(t), prefixed("r.", keys), touchedTable, t)
	})
	if err != nil || slowest(at).Less(r.pos) {
		return false, err
	}
	if _, err := r.storeCandidates(ctx, found); err != nil {
		return false, err
	}
	r.plan.at, r.plan.fullAsync = at, behindOf(at, r.pos) // none behind
	r.stats.Refined++
	return true, nil
}
