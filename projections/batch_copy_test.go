package projections_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
)

// Given statements and COPY writes queued in turn, when the batch is
// sent, then each runs after what was queued before it (an UPDATE sees
// the rows copied before it, not those copied after), and a COPY that
// fails fails the send.
func TestBatchSendKeepsTheOrderOfStatementsAndCopies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE scratch (n int PRIMARY KEY, v text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	cols := []string{"n", "v"}
	var b projections.Batch
	b.Queue(`INSERT INTO scratch VALUES (1, 'queued')`)
	b.Copy("scratch", cols, pgx.CopyFromRows([][]any{{2, "copied"}, {3, "copied"}}))
	b.Queue(`UPDATE scratch SET v = v || ', updated'`)
	b.Copy("scratch", cols, pgx.CopyFromRows([][]any{{4, "copied last"}}))
	sendAndCommit(t, ctx, pool, &b)
	rows, _ := pool.Query(ctx, `SELECT n::text || ' ' || v FROM scratch ORDER BY n`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1 queued, updated", "2 copied, updated", "3 copied, updated", "4 copied last"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}

	b.Copy("scratch", cols, pgx.CopyFromRows([][]any{{4, "again"}}))
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := b.Send(ctx, tx); err == nil {
		t.Error("a COPY of a duplicate key was sent without an error")
	}
}

// Given the same rows inserted once a few at a time (INSERT … unnest) and
// once all together (COPY, from 64 rows on), the two tables hold the same
// values, NULLs, jsonb and timestamps included.
func TestBatchInsertWritesTheSameRowsEitherWay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	for _, table := range []string{"few", "many"} {
		if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (n bigint PRIMARY KEY, s text, meta jsonb NOT NULL,
            at timestamptz)`); err != nil {
			t.Fatal(err)
		}
	}
	const total = 100
	var n []int64
	var s []*string
	var meta []string
	var at []*time.Time
	for i := range total {
		n = append(n, int64(i))
		var sv *string
		var tv *time.Time
		if i%3 != 0 {
			v, tt := fmt.Sprintf("row %d é \"q\"", i), time.Date(2026, 11, 27, 7, 0, i, 123456000, time.UTC)
			sv, tv = &v, &tt
		}
		s, at = append(s, sv), append(at, tv)
		meta = append(meta, fmt.Sprintf(`{"k": "v%d", "n": %d}`, i, i))
	}
	cols, types := []string{"n", "s", "meta", "at"}, []string{"bigint", "text", "jsonb", "timestamptz"}
	insert := func(b *projections.Batch, table string, from, to int) {
		b.Insert(table, cols, types, to-from, []any{n[from:to], s[from:to], meta[from:to], at[from:to]},
			func(i int) []any { return []any{n[from+i], s[from+i], meta[from+i], at[from+i]} })
	}
	var b projections.Batch
	for from := 0; from < total; from += 7 {
		insert(&b, "few", from, min(from+7, total))
	}
	insert(&b, "many", 0, total)
	sendAndCommit(t, ctx, pool, &b)
	dump := func(table string) []string {
		rows, _ := pool.Query(ctx, `SELECT t::text FROM `+table+` t ORDER BY n`)
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	few, many := dump("few"), dump("many")
	if len(many) != total || !slices.Equal(few, many) {
		t.Errorf("%d rows by COPY, %d by INSERT; first differing:\n%v\n%v", len(many), len(few), firstDiff(few, many), firstDiff(many, few))
	}
}

func firstDiff(a, b []string) string {
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return a[i]
		}
	}
	return ""
}

// sendAndCommit sends b's writes in a transaction of their own.
func sendAndCommit(t *testing.T, ctx context.Context, pool *pgxpool.Pool, b *projections.Batch) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Send(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// A batch's statements join a caller's pipeline; a batch with a COPY
// refuses to (a COPY has a round trip of its own) and moves nothing.
func TestMoveWritesToRefusesCopies(t *testing.T) {
	var b projections.Batch
	b.Queue(`SELECT 1`)
	b.Queue(`SELECT 2`)
	var dst pgx.Batch
	if n, err := b.MoveWritesTo(&dst); n != 2 || err != nil || dst.Len() != 2 {
		t.Fatalf("moved %d (%v), pipeline has %d; want 2, nil, 2", n, err, dst.Len())
	}
	b.Queue(`SELECT 3`)
	b.Copy("t", []string{"a"}, pgx.CopyFromRows([][]any{{1}}))
	if n, err := b.MoveWritesTo(&dst); !errors.Is(err, projections.ErrCopyInPipeline) || n != 0 || dst.Len() != 2 {
		t.Fatalf("a batch with a COPY moved %d (%v), pipeline has %d; want 0, ErrCopyInPipeline, 2", n, err, dst.Len())
	}
}
