package projections_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := b.Send(ctx, tx); err == nil {
		t.Error("a COPY of a duplicate key was sent without an error")
	}
}
