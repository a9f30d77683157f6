package http

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore"
)

// reads is the database a read route's handler reads through. When the
// request's key came from the credential cache, it is a keyCheckedReader:
// the key is checked in the read's own round trip, so that a revocation
// takes effect on the next request without a lookup of its own. The
// route must be registered with authenticateInCommand, and its handler
// must read through reads before it answers.
func (s *Server) reads(c echo.Context) eventstore.DB {
	if p := principalOf(c); p != nil && p.verifyInCommand {
		return &keyCheckedReader{pool: s.pool, keyID: p.keyID}
	}
	return s.pool
}

// keyCheckedReader sends its first statement behind the key's check, in
// one pipeline: a key no longer usable stops the pipeline before the
// statement runs, and the statement's caller gets app.ErrKeyNotUsable.
// The statements after the first go as they are. One request's; not for
// concurrent use.
type keyCheckedReader struct {
	pool    *pgxpool.Pool
	keyID   string
	checked bool
}

func (r *keyCheckedReader) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	app.QueueKeyCheck(b, r.keyID)
	b.Queue(sql, args...)
	br := r.pool.SendBatch(ctx, b)
	if err := app.KeyChecked(br); err != nil {
		br.Close()
		return nil, err
	}
	r.checked = true
	return br, nil
}

func (r *keyCheckedReader) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if r.checked {
		return r.pool.QueryRow(ctx, sql, args...)
	}
	br, err := r.send(ctx, sql, args)
	if err != nil {
		return errRow{err}
	}
	return batchRow{br.QueryRow(), br}
}

func (r *keyCheckedReader) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if r.checked {
		return r.pool.Query(ctx, sql, args...)
	}
	br, err := r.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (r *keyCheckedReader) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if r.checked {
		return r.pool.Exec(ctx, sql, args...)
	}
	br, err := r.send(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// batchRow is a pipeline's last row: scanning it releases the pipeline's
// connection.
type batchRow struct {
	row pgx.Row
	br  pgx.BatchResults
}

func (r batchRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if cerr := r.br.Close(); err == nil {
		err = cerr
	}
	return err
}

// batchRows are a pipeline's last rows: closing them, or reading them to
// the end, releases the pipeline's connection.
type batchRows struct {
	pgx.Rows
	br       pgx.BatchResults
	closed   bool
	closeErr error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.closeErr = r.br.Close()
	}
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.closeErr
}
