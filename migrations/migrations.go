// Package migrations holds the numbered SQL migrations, embedded in the
// binary, and applies them with goose under a PostgreSQL advisory lock so
// that replicas starting at once both succeed.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed *.sql
var files embed.FS

// FS is the set of migration files.
func FS() fs.FS { return files }

func provider(db *sql.DB) (*goose.Provider, error) {
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return nil, err
	}
	return goose.NewProvider(goose.DialectPostgres, db, files, goose.WithSessionLocker(locker))
}

// Up applies every pending migration and returns how many it applied.
func Up(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := provider(db)
	if err != nil {
		return 0, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return len(results), fmt.Errorf("migrate: %w", err)
	}
	return len(results), nil
}

// Pending reports whether migrations are waiting to be applied. It only
// reads (goose's own check would create its version table), so readiness
// probes never change the schema.
func Pending(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	latest, err := latestVersion()
	if err != nil {
		return false, err
	}
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass('goose_db_version') IS NOT NULL`).Scan(&exists); err != nil {
		return false, err
	}
	if !exists {
		return true, nil
	}
	var applied int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&applied); err != nil {
		return false, err
	}
	return applied < latest, nil
}

// latestVersion is the number of the newest embedded migration.
func latestVersion() (int64, error) {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("migration %s: %w", e.Name(), err)
		}
		latest = max(latest, v)
	}
	return latest, nil
}
