package http

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// A keyCheckedReader runs its first statement only behind a passed key
// check, whatever the statement's kind, and releases its connection
// however the caller finishes with the result: on a pool of one
// connection, a pipeline left open would make the next statement wait
// for ever.
func TestKeyCheckedReader(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := pgtest.SizedPool(t, 1)
	if _, err := pool.Exec(ctx, `INSERT INTO api_keys (id, platform_id, environment, name, prefix, secret_hash, created_at)
        VALUES ('key_usable', 'plt_1', 'sandbox', 'usable', 'sk', 'h1', now()),
               ('key_revoked', 'plt_1', 'sandbox', 'revoked', 'sk', 'h2', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE api_keys SET revoked_at = now() WHERE id = 'key_revoked'`); err != nil {
		t.Fatal(err)
	}
	reader := func(keyID string) *keyCheckedReader { return &keyCheckedReader{pool: pool, keyID: keyID} }
	series := func(rows pgx.Rows, err error) ([]int, error) {
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, pgx.RowTo[int])
	}
	renamed := func() string {
		var name string
		if err := pool.QueryRow(ctx, `SELECT name FROM api_keys WHERE id = 'key_usable'`).Scan(&name); err != nil {
			t.Fatal(err)
		}
		return name
	}

	// Usable: each kind of first statement runs and answers.
	var n int
	r := reader("key_usable")
	if err := r.QueryRow(ctx, `SELECT 42`).Scan(&n); err != nil || n != 42 {
		t.Fatalf("QueryRow: %d, %v", n, err)
	}
	if err := r.QueryRow(ctx, `SELECT 43`).Scan(&n); err != nil || n != 43 { // checked: straight through
		t.Fatalf("second QueryRow: %d, %v", n, err)
	}
	if got, err := series(reader("key_usable").Query(ctx, `SELECT generate_series(1, 3)`)); err != nil || len(got) != 3 || got[2] != 3 {
		t.Fatalf("Query: %v, %v", got, err)
	}
	// Rows read to their end without Close release the connection too.
	rows, err := reader("key_usable").Query(ctx, `SELECT generate_series(1, 2)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := reader("key_usable").Exec(ctx, `UPDATE api_keys SET name = 'ran' WHERE id = 'key_usable'`); err != nil || renamed() != "ran" {
		t.Fatalf("Exec: %v, name %q", err, renamed())
	}

	// Revoked: refused, and the statement behind the check never ran.
	if err := reader("key_revoked").QueryRow(ctx, `SELECT 42`).Scan(&n); !errors.Is(err, app.ErrKeyNotUsable) {
		t.Errorf("QueryRow with a revoked key: %v, want ErrKeyNotUsable", err)
	}
	if _, err := series(reader("key_revoked").Query(ctx, `SELECT generate_series(1, 3)`)); !errors.Is(err, app.ErrKeyNotUsable) {
		t.Errorf("Query with a revoked key: %v, want ErrKeyNotUsable", err)
	}
	if _, err := reader("key_revoked").Exec(ctx, `UPDATE api_keys SET name = 'ran again' WHERE id = 'key_usable'`); !errors.Is(err, app.ErrKeyNotUsable) {
		t.Errorf("Exec with a revoked key: %v, want ErrKeyNotUsable", err)
	}
	if name := renamed(); name != "ran" {
		t.Errorf("the statement behind a refused check ran: name %q", name)
	}
}
