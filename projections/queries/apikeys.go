package queries

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// APIKeyView is an API key as the API shows it (never its secret, except
// the once at creation, which the caller adds).
type APIKeyView struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	PlatformID  string `json:"platform_id"`
	Name        string `json:"name"`
	Environment string `json:"environment"`
	Prefix      string `json:"prefix"`
	Secret      string `json:"secret,omitempty"`
	CreatedAt   Time   `json:"created_at"`
	LastUsedAt  *Time  `json:"last_used_at"`
	ExpiresAt   *Time  `json:"expires_at"`
	RevokedAt   *Time  `json:"revoked_at"`
}

const keyColumns = `k.id, k.platform_id, k.name, k.environment, k.prefix, k.created_at, u.last_used_at, k.expires_at, k.revoked_at`

func scanKey(row pgx.Row) (APIKeyView, error) {
	var k APIKeyView
	var created time.Time
	var used, expires, revoked *time.Time
	err := row.Scan(&k.ID, &k.PlatformID, &k.Name, &k.Environment, &k.Prefix, &created, &used, &expires, &revoked)
	k.Object = "api_key"
	k.CreatedAt = NewTime(created)
	k.LastUsedAt, k.ExpiresAt, k.RevokedAt = NewTimePtr(used), NewTimePtr(expires), NewTimePtr(revoked)
	return k, err
}

// GetAPIKey returns a key of the platform in one of the environments.
func GetAPIKey(ctx context.Context, db eventstore.DB, platformID, id string) (APIKeyView, error) {
	k, err := scanKey(db.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id
        WHERE k.id = $1 AND k.platform_id = $2`, id, platformID))
	if errors.Is(err, pgx.ErrNoRows) {
		return k, domain.NotFound("api_key", id)
	}
	return k, err
}

// ListAPIKeys lists a platform's keys of one environment, newest first.
func ListAPIKeys(ctx context.Context, db eventstore.DB, platformID string, env domain.Environment, page Page) (List[APIKeyView], error) {
	rows, err := db.Query(ctx, `SELECT `+keyColumns+` FROM api_keys k LEFT JOIN api_key_usage u ON u.key_id = k.id
        WHERE k.platform_id = $1 AND k.environment = $2 AND ($3 = '' OR k.id < $3)
        ORDER BY k.id DESC LIMIT $4`, platformID, env.String(), page.After, page.Limit+1)
	if err != nil {
		return List[APIKeyView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIKeyView, error) { return scanKey(r) })
	if err != nil {
		return List[APIKeyView]{}, err
	}
	return NewList(items, page, func(k APIKeyView) string { return k.ID }), nil
}

// Credential is what authentication learns from a key's hash.
type Credential struct {
	KeyID       string
	PlatformID  string
	Environment domain.Environment
	RateLimit   *RateLimitView
	LastUsedAt  *time.Time
}

// CredentialByHash finds a usable key (not revoked, not expired) by the
// SHA-256 of its secret. Unknown, revoked and expired keys look the same.
func CredentialByHash(ctx context.Context, db eventstore.DB, hash string) (Credential, bool, error) {
	var c Credential
	var env string
	err := db.QueryRow(ctx, `SELECT k.id, k.platform_id, k.environment, p.rate_limit, u.last_used_at
        FROM api_keys k JOIN platforms p ON p.id = k.platform_id LEFT JOIN api_key_usage u ON u.key_id = k.id
        WHERE k.secret_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())`, hash).
		Scan(&c.KeyID, &c.PlatformID, &env, &c.RateLimit, &c.LastUsedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, false, nil
	}
	if err != nil {
		return c, false, err
	}
	c.Environment, _ = domain.ParseEnvironment(env)
	return c, true, nil
}

// TouchAPIKey records that a key was used (operational data, not an event).
func TouchAPIKey(ctx context.Context, db eventstore.DB, keyID string, at time.Time) error {
	_, err := db.Exec(ctx, `INSERT INTO api_key_usage (key_id, last_used_at) VALUES ($1, $2)
        ON CONFLICT (key_id) DO UPDATE SET last_used_at = GREATEST(api_key_usage.last_used_at, $2)`, keyID, at)
	return err
}
