package eventstore_test

import (
	"context"
	"testing"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// Given a statement run by ExecDerived, then it ran in a transaction with
// synchronous_commit off and committed; a statement that fails commits
// nothing and leaves no connection in a transaction for the next caller.
func TestExecDerived(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.Pool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE derived (setting text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	tag, err := eventstore.ExecDerived(ctx, pool, `INSERT INTO derived SELECT current_setting('synchronous_commit')`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("ExecDerived = %v, %v; want one row", tag, err)
	}
	if _, err := eventstore.ExecDerived(ctx, pool, `INSERT INTO derived SELECT (1 / 0)::text`); err == nil {
		t.Fatal("a failing statement reported no error")
	}
	var settings []string
	rows, err := pool.Query(ctx, `SELECT setting FROM derived`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		settings = append(settings, s)
	}
	if rows.Err() != nil || len(settings) != 1 || settings[0] != "off" {
		t.Fatalf("rows = %v (%v); want one row written with synchronous_commit off", settings, rows.Err())
	}
	for range 3 { // every connection of the pool is usable, none in a transaction
		var status string
		if err := pool.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&status); err != nil || status != "on" {
			t.Fatalf("a later query: synchronous_commit %q, %v; want on", status, err)
		}
	}
}
