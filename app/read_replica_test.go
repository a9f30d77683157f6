package app_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/readreplica"
)

// A read replica that is not one never costs a list its answer: one that
// cannot be reached, or that is a primary (not in recovery), leaves the
// read to the primary at once, counted as unavailable; and a key that is
// no longer usable is refused before anything is read. (Reads served by a
// real standby: cmd/treasury's TestReadReplica.)
func TestReadListFallsBackToThePrimary(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 8)
	a := newApp(t, pool)
	replicaPool := func(url string) *pgxpool.Pool {
		cfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.ConnConfig.ConnectTimeout = 200 * time.Millisecond
		p, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		return p
	}
	notStandby := pool.Config().ConnString()
	for name, url := range map[string]string{"unreachable": "postgres://postgres@127.0.0.1:1/treasury?sslmode=disable",
		"not a standby": notStandby} {
		t.Run(name, func(t *testing.T) {
			a.Replica = readreplica.New(replicaPool(url))
			for i := range 3 {
				start := time.Now()
				var on eventstore.DB
				err := a.ReadList(ctx, app.ListRead{Projected: true}, func(db eventstore.DB) error {
					on = db
					var one int
					return db.QueryRow(ctx, `SELECT 1`).Scan(&one)
				})
				if err != nil || on != eventstore.DB(pool) {
					t.Fatalf("read %d: error %v, read on the primary %v", i, err, on == eventstore.DB(pool))
				}
				// The first read learns it within the replica's bound; the
				// next ones, while it rests, at once.
				if took := time.Since(start); took > time.Second || (i > 0 && took > 50*time.Millisecond) {
					t.Errorf("read %d took %s", i, took)
				}
			}
			if got := a.Replica.Counted(readreplica.Unavailable) + a.Replica.Counted(readreplica.Lagging); got != 3 {
				t.Errorf("reads counted as unavailable or lagging: %d, want 3", got)
			}
			if got := a.Replica.Counted(readreplica.Served); got != 0 {
				t.Errorf("reads counted as served by the replica: %d", got)
			}
		})
	}

	read := false
	err := a.ReadList(ctx, app.ListRead{KeyID: "key_01nosuchkey0000000000000000"}, func(eventstore.DB) error {
		read = true
		return nil
	})
	if !errors.Is(err, app.ErrKeyNotUsable) || read {
		t.Errorf("an unknown key: error %v, read %v; want ErrKeyNotUsable and no read", err, read)
	}
}
