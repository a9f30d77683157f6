package projections

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
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
// the key of each row the replay writes (the touched rows). Under the
// gate the candidates are the suspects plus the touched rows. That is
// enough because:
//   - projectors never delete, and a row's key comes from its event, so
//     an event writes the same keys live and in the shadow;
//   - a command that commits after S appended events after P (P is below
//     the horizon the replay read at, so every transaction before P had
//     ended before S), and the swap replays them into the shadow;
//   - the asynchronous subscriber, if it had reached P at S, also applies
//     only events after P after S. If it had not, and it moved after S,
//     its tables are compared whole instead (swapPlan.fullAsync).
//
// Rows edited behind the log's back after S are left to the next rebuild.

// touchedTable lists the keys the replay wrote since the comparison, as
// whole rows (to_jsonb), for every shadow table.
const touchedTable = shadowSchema + ".touched"

// swapPlan is what the comparison before the gate found.
type swapPlan struct {
	keys map[string][]string // primary-key columns of each table
	// at is the subscriber's checkpoint at the comparison's snapshot;
	// fullAsync is set when it had not reached the shadow's position.
	at        eventstore.Position
	fullAsync bool
	Suspects  int64 // rows that differed at the comparison
}

// prepareSwap records the primary keys, installs the touch triggers and
// compares live with shadow at one snapshot. It first waits, briefly,
// for the asynchronous subscriber to reach the shadow's position, so that
// its tables need not be compared whole under the gate.
func (r *rebuild) prepareSwap(ctx context.Context) error {
	plan := &swapPlan{keys: map[string][]string{}}
	err := pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		for _, t := range allTables() {
			pk, err := primaryKey(ctx, tx, t)
			if err != nil {
				return err
			}
			plan.keys[t] = pk
		}
		return installTouchTriggers(ctx, tx)
	})
	if err != nil {
		return err
	}
	if err := r.waitForSubscriber(ctx); err != nil {
		return err
	}
	err = pgx.BeginTxFunc(ctx, r.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		at, err := subscriberAt(ctx, tx)
		if err != nil {
			return err
		}
		plan.at, plan.fullAsync = at, at.Less(r.pos)
		for _, t := range allTables() {
			cols := strings.Join(plan.keys[t], ", ")
			tag, err := tx.Exec(ctx, fmt.Sprintf(`CREATE UNLOGGED TABLE %[1]s AS SELECT %[2]s FROM (
                (SELECT * FROM public.%[3]s EXCEPT ALL SELECT * FROM %[4]s.%[3]s)
                UNION ALL
                (SELECT * FROM %[4]s.%[3]s EXCEPT ALL SELECT * FROM public.%[3]s)) d`,
				candidates(t), cols, t, shadowSchema))
			if err != nil {
				return fmt.Errorf("compare %s: %w", t, err)
			}
			plan.Suspects += tag.RowsAffected()
		}
		return nil
	})
	r.plan = plan
	return err
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
	for _, t := range allTables() {
		if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE TRIGGER touch AFTER INSERT OR UPDATE OR DELETE ON %[1]s.%[2]s
            FOR EACH ROW EXECUTE FUNCTION %[1]s.touch()`, shadowSchema, t)); err != nil {
			return err
		}
	}
	return nil
}

// waitForSubscriber waits until the asynchronous subscriber reaches the
// shadow's position, while it keeps moving: one that does not move in
// subscriberStall (none runs, or it is stuck) is not waited for.
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

const subscriberStall = 250 * time.Millisecond

// subscriberAt is the asynchronous subscriber's checkpoint as db sees it.
func subscriberAt(ctx context.Context, db eventstore.DB) (eventstore.Position, error) {
	return eventstore.ReadCheckpoint(ctx, db, SubscriptionName)
}

// copyCandidates makes the live tables equal to the shadow, under the
// gate, looking only at the candidates (or at whole tables where the plan
// says so), rewinds the webhook feed if public_events changes, and
// returns how many live rows it deleted or inserted.
func (r *rebuild) copyCandidates(ctx context.Context, tx pgx.Tx) (int64, error) {
	whole := map[string]bool{}
	if r.plan.fullAsync {
		now, err := subscriberAt(ctx, tx)
		if err != nil {
			return 0, err
		}
		if now != r.plan.at { // it moved after the comparison
			for _, p := range Async() {
				for _, t := range p.Tables() {
					whole[t] = true
				}
			}
		}
	}
	// enable_seqscan = off inflates plan costs enough to trigger JIT
	// compilation, which would cost far more than the lookups.
	if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
		return 0, err
	}
	r.stats.Compared = 0
	var changed int64
	for _, t := range allTables() {
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
// subscriber has passed the shadow's position, the candidates (suspects
// and rows touched since) that are now equal are dropped and the touched
// rows forgotten. The argument of the first comparison holds again from
// this snapshot. It does nothing if the subscriber has not caught up.
func (r *rebuild) refine(ctx context.Context) error {
	if err := r.waitForSubscriber(ctx); err != nil {
		return err
	}
	return pgx.BeginTxFunc(ctx, r.conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}, func(tx pgx.Tx) error {
		at, err := subscriberAt(ctx, tx)
		if err != nil || at.Less(r.pos) {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL jit = off`); err != nil {
			return err
		}
		for _, t := range allTables() {
			keys := r.plan.keys[t]
			cols := strings.Join(keys, ", ")
			if _, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %[1]s SELECT %[2]s FROM %[3]s,
                jsonb_populate_record(NULL::public.%[4]s, row) r WHERE tbl = '%[4]s'`,
				candidates(t), prefixed("r.", keys), touchedTable, t)); err != nil {
				return err
			}
			filter := fmt.Sprintf(" WHERE (%s) IN (SELECT %s FROM %s)", cols, cols, candidates(t))
			if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE UNLOGGED TABLE %[1]s_next AS SELECT %[2]s FROM (
                (SELECT * FROM public.%[3]s%[5]s EXCEPT ALL SELECT * FROM %[4]s.%[3]s%[5]s)
                UNION ALL
                (SELECT * FROM %[4]s.%[3]s%[5]s EXCEPT ALL SELECT * FROM public.%[3]s%[5]s)) d;
                DROP TABLE %[1]s;
                ALTER TABLE %[1]s_next RENAME TO %[3]s__candidates`,
				candidates(t), cols, t, shadowSchema, filter)); err != nil {
				return fmt.Errorf("refine %s: %w", t, err)
			}
		}
		if _, err := tx.Exec(ctx, `TRUNCATE `+touchedTable); err != nil {
			return err
		}
		r.plan.at, r.plan.fullAsync = at, false
		r.stats.Refined++
		return nil
	})
}
