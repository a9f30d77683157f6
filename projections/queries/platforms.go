package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
)

// PlatformView is a platform as the API shows it.
type PlatformView struct {
	ID               string            `json:"id"`
	Object           string            `json:"object"`
	Name             string            `json:"name"`
	ContactEmail     string            `json:"contact_email"`
	Status           string            `json:"status"`
	LiveEnabled      bool              `json:"live_enabled"`
	RevenueShareRate string            `json:"revenue_share_rate"`
	InterestRate     string            `json:"interest_rate"`
	FeeSchedule      map[string]int64  `json:"fee_schedule"`
	RateLimit        *RateLimitView    `json:"rate_limit"`
	Metadata         map[string]string `json:"metadata"`
	Environment      string            `json:"environment"`
	CreatedAt        Time              `json:"created_at"`
	UpdatedAt        Time              `json:"updated_at"`
}

// RateLimitView is a platform's rate limit override.
type RateLimitView struct {
	PerSecond int `json:"per_second"`
	Burst     int `json:"burst"`
}

const platformColumns = `id, name, contact_email, status, live_enabled, revenue_share_rate::text, interest_rate::text,
    fee_schedule, rate_limit, metadata, created_at, updated_at`

func scanPlatform(row pgx.Row) (PlatformView, error) {
	var p PlatformView
	var created, updated time.Time
	var share, interest string
	err := row.Scan(&p.ID, &p.Name, &p.ContactEmail, &p.Status, &p.LiveEnabled, &share, &interest,
		&p.FeeSchedule, &p.RateLimit, &p.Metadata, &created, &updated)
	if err != nil {
		return p, err
	}
	p.Object = "platform"
	p.RevenueShareRate = rateString(share)
	p.InterestRate = rateString(interest)
	p.CreatedAt, p.UpdatedAt = NewTime(created), NewTime(updated)
	// The platform spans both environments; it shows the highest it has.
	p.Environment = domain.Sandbox.String()
	if p.LiveEnabled {
		p.Environment = domain.Live.String()
	}
	return p, nil
}

// rateString shows a rate with at least two decimals ("0.30", "0.045").
func rateString(s string) string {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return s
	}
	if -d.Exponent() < 2 {
		return d.StringFixed(2)
	}
	return d.String()
}

// GetPlatform returns one platform or a not_found error.
func GetPlatform(ctx context.Context, db eventstore.DB, id string) (PlatformView, error) {
	p, err := scanPlatform(db.QueryRow(ctx, `SELECT `+platformColumns+` FROM platforms WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, domain.NotFound("platform", id)
	}
	return p, err
}

// ListPlatforms returns a page of platforms, newest first.
func ListPlatforms(ctx context.Context, db eventstore.DB, page Page) (List[PlatformView], error) {
	rows, err := db.Query(ctx, `SELECT `+platformColumns+` FROM platforms
        WHERE ($1 = '' OR id < $1) ORDER BY id DESC LIMIT $2`, page.After, page.Limit+1)
	if err != nil {
		return List[PlatformView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PlatformView, error) { return scanPlatform(r) })
	if err != nil {
		return List[PlatformView]{}, err
	}
	return NewList(items, page, func(p PlatformView) string { return p.ID }), nil
}

// SettingsView is a platform's settings of one environment.
type SettingsView struct {
	Object      string `json:"object"`
	PlatformID  string `json:"platform_id"`
	Environment string `json:"environment"`
	platform.Settings
	UpdatedAt *Time `json:"updated_at"`
}

// GetSettings returns the settings of (platform, env), defaults included.
func GetSettings(ctx context.Context, db eventstore.DB, platformID string, env domain.Environment) (SettingsView, error) {
	return ScanSettings(db.QueryRow(ctx, SettingsQuery, platformID, env.String()), platformID, env)
}

// SettingsQuery reads the row ScanSettings expects ($1 platform, $2 environment).
const SettingsQuery = `SELECT settings, updated_at FROM platform_settings WHERE platform_id = $1 AND environment = $2`

// ScanSettings reads the row of SettingsQuery over the defaults; no row
// means the defaults.
func ScanSettings(row pgx.Row, platformID string, env domain.Environment) (SettingsView, error) {
	v := SettingsView{Object: "platform_settings", PlatformID: platformID, Environment: env.String(),
		Settings: platform.DefaultSettings(env)}
	var raw []byte
	var updated time.Time
	err := row.Scan(&raw, &updated)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, nil
	}
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v.Settings); err != nil {
		return v, fmt.Errorf("platform_settings: %w", err)
	}
	v.UpdatedAt = &Time{updated}
	return v, nil
}
