package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/migrations"
)

// Migration 00017 splits the "projections" checkpoint into "ledger" and
// "public_events", both where it stood (neither replays what it applied,
// neither skips anything); down makes one again from the slower of the two.
func TestAsyncSubscribersMigration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := pgtest.Pool(t)
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS())
	if err != nil {
		t.Fatal(err)
	}
	checkpoints := func() map[string]string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT name, transaction_id::text || '/' || global_position FROM subscription_checkpoints
            WHERE name IN ('projections', 'ledger', 'public_events')`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		var name, at string
		if _, err := pgx.ForEachRow(rows, []any{&name, &at}, func() error { got[name] = at; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if _, err := pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name, transaction_id, global_position)
        VALUES ('ledger', '900', 9000), ('public_events', '800', 8500)`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 16); err != nil {
		t.Fatal(err)
	}
	if got := checkpoints(); len(got) != 1 || got["projections"] != "800/8500" {
		t.Fatalf("after down: %v, want projections at the slower one's 800/8500", got)
	}
	if _, err := pool.Exec(ctx, `UPDATE subscription_checkpoints SET transaction_id = '1000', global_position = 12345
        WHERE name = 'projections'`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 17); err != nil {
		t.Fatal(err)
	}
	if got := checkpoints(); len(got) != 2 || got["ledger"] != "1000/12345" || got["public_events"] != "1000/12345" {
		t.Fatalf("after up: %v, want ledger and public_events both at 1000/12345", got)
	}
}
