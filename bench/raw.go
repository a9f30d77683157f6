package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const rawAccounts = 1000

type rawResult struct {
	Accounts    int         `json:"accounts"`
	Transaction string      `json:"transaction"`
	Levels      []loadStats `json:"levels"`
}

// runRaw measures the limit PostgreSQL sets on transfers, with none of the
// service's work: in a scratch database, each transaction debits one row
// of a 1,000-row accounts table, credits another (rows locked in id order,
// so there are no deadlocks) and inserts a transfers row; one connection
// per client.
func runRaw(ctx context.Context, adminURL, name string, o options) (*rawResult, error) {
	res := &rawResult{Accounts: rawAccounts, Transaction: "BEGIN; UPDATE accounts (debit); UPDATE accounts (credit); INSERT INTO transfers; COMMIT"}
	dbURL, drop, err := createDatabase(ctx, adminURL, name)
	if err != nil {
		return res, err
	}
	defer drop()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return res, err
	}
	_, err = conn.Exec(ctx, `
CREATE TABLE accounts (id integer PRIMARY KEY, balance bigint NOT NULL);
CREATE TABLE transfers (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    debit_id   integer NOT NULL,
    credit_id  integer NOT NULL,
    amount     bigint NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO accounts SELECT g, 1000000000000 FROM generate_series(1, `+fmt.Sprint(rawAccounts)+`) g;
ANALYZE accounts;`)
	conn.Close(context.Background())
	if err != nil {
		return res, err
	}
	for _, c := range o.clients {
		st, err := rawLevel(ctx, dbURL, name, c, o)
		if err != nil {
			return res, err
		}
		res.Levels = append(res.Levels, st)
		logf("raw: %s: %.0f transfers/s, p50 %.2f ms, p99 %.2f ms, max %.0f ms; errors: %s",
			nClients(c), st.PerSecond, st.P50ms, st.P99ms, st.MaxMs, classesString(st.FailedByClass))
	}
	return res, nil
}

func rawLevel(ctx context.Context, dbURL, dbName string, clients int, o options) (loadStats, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return loadStats{}, err
	}
	cfg.MaxConns, cfg.MinConns = int32(clients), int32(clients)
	cfg.ConnConfig.RuntimeParams["application_name"] = "treasury-bench-raw"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return loadStats{}, err
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return loadStats{}, err
	}
	logf("raw: %s (one connection each): %s warm-up, then measuring %s", nClients(clients), o.warmup, o.duration)
	profiled := o.prof.start(ctx, window{name: fmt.Sprintf("raw-%d", clients), database: dbName, warmup: o.warmup, duration: o.duration})
	defer profiled()
	return closedLoop(ctx, clients, o.warmup, o.duration, pgConflict, func(ctx context.Context, w *worker) outcome {
		debit := 1 + w.rng.IntN(rawAccounts)
		credit := 1 + w.rng.IntN(rawAccounts-1)
		if credit >= debit {
			credit++
		}
		amount := int64(100 + w.rng.IntN(900))
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			// Lock the two rows in id order.
			first, firstDelta, second, secondDelta := debit, -amount, credit, amount
			if credit < debit {
				first, firstDelta, second, secondDelta = credit, amount, debit, -amount
			}
			if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $2 WHERE id = $1", first, firstDelta); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, "UPDATE accounts SET balance = balance + $2 WHERE id = $1", second, secondDelta); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO transfers (debit_id, credit_id, amount) VALUES ($1, $2, $3)", debit, credit, amount)
			return err
		})
		if err == nil {
			return outcome{ok: true}
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return outcome{class: "SQLSTATE " + pgErr.Code, detail: pgErr.Message}
		}
		return outcome{class: "error", detail: err.Error()}
	})
}

// pgConflict: deadlock_detected or serialization_failure.
func pgConflict(class string) bool {
	return class == "SQLSTATE 40P01" || class == "SQLSTATE 40001"
}
