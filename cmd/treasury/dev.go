package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore/pglocal"
	"github.com/opentreasury/treasury/migrations"
	"github.com/opentreasury/treasury/projections/queries"
)

// devDatabase is the database `treasury dev` uses on a found server.
const devDatabase = "treasury_dev"

// devCredentials are kept in .data/ so that `make run` prints the same keys
// every time (secrets cannot be read back from their hashes).
type devCredentials struct {
	DatabaseURL string `json:"database_url"`
	OperatorKey string `json:"operator_key"`
	PlatformID  string `json:"platform_id"`
	SandboxKey  string `json:"sandbox_key"`
}

func devCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "dev",
		Short: "Run a local sandbox: find or start PostgreSQL, migrate, create a demo platform, serve",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log := newLogger(cfg.LogLevel)
			dataDir := filepath.Join(pglocal.RepoRoot(), ".data")

			url, source, err := devDatabaseURL(ctx, cfg.DatabaseURL, dataDir)
			if err != nil {
				return err
			}
			pool, err := openPool(ctx, url)
			if err != nil {
				return err
			}
			defer pool.Close()
			if _, err := migrations.Up(ctx, pool); err != nil {
				return err
			}
			creds, err := ensureDemo(ctx, pool, url, cfg.OperatorKey, filepath.Join(dataDir, "dev-credentials.json"))
			if err != nil {
				return err
			}
			cfg.OperatorKey = creds.OperatorKey
			cfg.MigrateOnStart, cfg.schemaCurrent = false, true
			if os.Getenv("TREASURY_WEBHOOK_ALLOW_PRIVATE") == "" {
				cfg.WebhookAllowPriv = true // a local sandbox delivers to local receivers
			}
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (set TREASURY_ADDR to another address, e.g. TREASURY_ADDR=:8081 make run)", cfg.Addr, err)
			}
			printWelcome(ln.Addr().(*net.TCPAddr).Port, source, creds)
			return serve(ctx, cfg, pool, ln, log)
		},
	}
}

// devDatabaseURL finds a server (DATABASE_URL, 127.0.0.1:5432 or a private
// cluster) and, unless DATABASE_URL names one, the treasury_dev database on it.
func devDatabaseURL(ctx context.Context, explicit, dataDir string) (string, string, error) {
	found, err := pglocal.Ensure(ctx, explicit, dataDir)
	if err != nil {
		return "", "", err
	}
	if explicit != "" {
		return explicit, found.Source, nil
	}
	conn, err := pgx.Connect(ctx, found.AdminURL)
	if err != nil {
		return "", "", err
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, devDatabase).Scan(&exists); err != nil {
		return "", "", err
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+devDatabase); err != nil {
			return "", "", err
		}
	}
	url, err := pglocal.WithDatabase(found.AdminURL, devDatabase)
	return url, found.Source, err
}

// ensureDemo reuses the saved demo platform and keys when they still work
// against this database, and creates what is missing otherwise.
func ensureDemo(ctx context.Context, pool *pgxpool.Pool, dbURL, operatorKey, path string) (devCredentials, error) {
	var creds devCredentials
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &creds)
	}
	if creds.DatabaseURL != dbURL {
		creds = devCredentials{DatabaseURL: dbURL, OperatorKey: creds.OperatorKey}
	}
	if operatorKey != "" {
		creds.OperatorKey = operatorKey
	}
	if creds.OperatorKey == "" {
		creds.OperatorKey = "op_dev_" + randomToken(32)
	}
	a := app.New(pool, nil, nil)
	m := app.Meta{Actor: "treasury dev"}
	if creds.SandboxKey != "" {
		if _, ok, err := queries.CredentialByHash(ctx, pool, app.HashSecret(creds.SandboxKey)); err != nil {
			return creds, err
		} else if !ok {
			creds.SandboxKey = ""
		}
	}
	if creds.SandboxKey == "" {
		if _, err := queries.GetPlatform(ctx, pool, creds.PlatformID); creds.PlatformID != "" && err == nil {
			res, err := a.CreateAPIKey(ctx, m, nil, creds.PlatformID, domain.Sandbox, domain.Sandbox, "treasury dev")
			if err != nil {
				return creds, err
			}
			creds.SandboxKey = res.Secret
		} else {
			res, err := a.RegisterPlatform(ctx, m, nil, app.RegisterPlatform{
				Name: "Demo Platform", ContactEmail: "dev@example.com", Metadata: map[string]string{"created_by": "treasury dev"}})
			if err != nil {
				return creds, err
			}
			key, err := a.ApprovePlatform(ctx, m, res.ID)
			if err != nil {
				return creds, err
			}
			creds.PlatformID, creds.SandboxKey = res.ID, key.Secret
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return creds, err
	}
	b, _ := json.MarshalIndent(creds, "", "  ")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return creds, errors.Join(errors.New("save dev credentials"), err)
	}
	return creds, nil
}

func randomToken(n int) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func printWelcome(port int, source string, c devCredentials) {
	base := fmt.Sprintf("http://localhost:%d", port)
	fmt.Printf(`
Treasury sandbox is running at %[1]s/v1   (PostgreSQL: %[2]s)

  Operator key:  %[3]s
  Platform:      %[4]s
  Sandbox key:   %[5]s

Try it:
  curl -s %[1]s/v1/platform -H "Authorization: Bearer %[5]s"

  curl -s %[1]s/v1/platform/api-keys -H "Authorization: Bearer %[5]s"

Console: %[1]s/console   (sign in with the sandbox key, or the operator key)

API description: %[1]s/v1/openapi.json    Health: %[1]s/readyz    Stop: Ctrl-C
Keys are saved in .data/dev-credentials.json and reused on the next run.

`, base, source, c.OperatorKey, c.PlatformID, c.SandboxKey)
}
