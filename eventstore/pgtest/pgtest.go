// Package pgtest gives each test its own fresh, migrated PostgreSQL
// database, cloned from a template that is built once per set of migrations.
package pgtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore/pglocal"
	"github.com/opentreasury/treasury/migrations"
)

var (
	once     sync.Once
	adminURL string
	template string
	setupErr error
)

func setup() {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	found, err := pglocal.Ensure(ctx, os.Getenv("TEST_DATABASE_URL"), filepath.Join(pglocal.RepoRoot(), ".data"))
	if err != nil {
		setupErr = err
		return
	}
	adminURL = found.AdminURL
	template = "treasury_tpl_" + migrationsHash()
	setupErr = buildTemplate(ctx)
}

// migrationsHash names the template after the migrations' content, so a
// changed migration gets a new template and an unchanged one is reused.
func migrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := fs.ReadFile(migrations.FS(), p)
			h.Write([]byte(p))
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:12]
}

func buildTemplate(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	// Test binaries run in parallel: one builds the template, the others wait.
	if _, err := admin.Exec(ctx, `SELECT pg_advisory_lock(727274)`); err != nil {
		return err
	}
	defer admin.Exec(context.Background(), `SELECT pg_advisory_unlock(727274)`)
	var exists bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, template).Scan(&exists); err != nil {
		return err
	}
	if exists {
		return nil
	}
	building := template + "_build"
	_, _ = admin.Exec(ctx, `DROP DATABASE IF EXISTS `+building+` WITH (FORCE)`)
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+building); err != nil {
		return err
	}
	url, _ := pglocal.WithDatabase(adminURL, building)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	_, err = migrations.Up(ctx, pool)
	pool.Close()
	if err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+building+` RENAME TO `+template); err != nil {
		return err
	}
	_, err = admin.Exec(ctx, `ALTER DATABASE `+template+` WITH is_template true`)
	return err
}

// URL creates a fresh migrated database for t, dropped when t ends, and
// returns its URL.
func URL(t testing.TB) string {
	t.Helper()
	once.Do(setup)
	if setupErr != nil {
		t.Fatalf("pgtest: no PostgreSQL: %v", setupErr)
	}
	ctx := context.Background()
	name := "treasury_test_" + strings.ToLower(strings.TrimPrefix(domain.NewID(""), ""))
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer admin.Close(ctx)
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, name, template))
		if err == nil || attempt == 20 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), adminURL)
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	url, _ := pglocal.WithDatabase(adminURL, name)
	return url
}

// Pool returns a pool on a fresh migrated database for t.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// SizedPool is Pool with at most maxConns connections: concurrency tests
// size it so that many goroutines really hold transactions at once (the
// default pool of a 2-CPU machine has only 4 connections).
func SizedPool(t testing.TB, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TracedPool is Pool with tracer on every connection (tests that count or
// inspect the statements sent) and, if maxConns > 0, at most maxConns
// connections.
func TracedPool(t testing.TB, tracer pgx.QueryTracer, maxConns int32) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(URL(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.ConnConfig.Tracer = tracer
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// AdminURL is the maintenance database URL of the server tests run on.
func AdminURL(t testing.TB) string {
	once.Do(setup)
	if setupErr != nil {
		t.Fatalf("pgtest: no PostgreSQL: %v", setupErr)
	}
	return adminURL
}
