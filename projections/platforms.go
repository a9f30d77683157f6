package projections

import (
	"encoding/json"

	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/eventstore"
)

// Platforms projects platform streams into platforms, platform_settings and api_keys.
type Platforms struct{}

func (Platforms) Name() string { return "platforms" }
func (Platforms) Tables() []string {
	return []string{"platforms", "platform_settings", "api_keys"}
}

func (p Platforms) Project(b *Batch) error { return eachEvent(b, p.apply) }

func (Platforms) apply(b *Batch, r *eventstore.RecordedEvent) error {
	ev, err := r.Decode()
	if err != nil {
		return err
	}
	pid := r.PlatformID
	switch e := ev.(type) {
	case platform.Registered:
		fees, _ := json.Marshal(e.Config.FeeSchedule)
		md, _ := json.Marshal(e.Metadata)
		var rl []byte
		if e.Config.RateLimit != nil {
			rl, _ = json.Marshal(e.Config.RateLimit)
		}
		b.Queue(`INSERT INTO platforms (id, name, contact_email, status, revenue_share_rate, interest_rate,
            fee_schedule, rate_limit, metadata, created_at, updated_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)`,
			e.PlatformID, e.Name, e.ContactEmail, platform.StatusPendingApproval.String(),
			e.Config.RevenueShareRate.String(), e.Config.InterestRate.String(), fees, rl, md, e.At)
	case platform.Approved:
		b.Queue(`UPDATE platforms SET status = $2, updated_at = $3 WHERE id = $1`, pid, platform.StatusApproved.String(), e.At)
	case platform.LiveEnabled:
		b.Queue(`UPDATE platforms SET live_enabled = true, updated_at = $2 WHERE id = $1`, pid, e.At)
	case platform.Configured:
		fees, _ := json.Marshal(e.Config.FeeSchedule)
		var rl []byte
		if e.Config.RateLimit != nil {
			rl, _ = json.Marshal(e.Config.RateLimit)
		}
		b.Queue(`UPDATE platforms SET revenue_share_rate = $2, interest_rate = $3, fee_schedule = $4,
            rate_limit = $5, updated_at = $6 WHERE id = $1`,
			pid, e.Config.RevenueShareRate.String(), e.Config.InterestRate.String(), fees, rl, e.At)
	case platform.SettingsUpdated:
		s, _ := json.Marshal(e.Settings)
		b.Queue(`INSERT INTO platform_settings (platform_id, environment, settings, updated_at)
            VALUES ($1, $2, $3, $4) ON CONFLICT (platform_id, environment) DO UPDATE SET settings = $3, updated_at = $4`,
			pid, e.Environment.String(), s, e.At)
	case platform.KeyCreated:
		b.Queue(`INSERT INTO api_keys (id, platform_id, environment, name, prefix, secret_hash, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)`, e.KeyID, pid, e.Environment.String(), e.Name, e.Prefix, e.SecretHash, e.At)
	case platform.KeyRevoked:
		b.Queue(`UPDATE api_keys SET revoked_at = $2 WHERE id = $1`, e.KeyID, e.At)
	case platform.KeyRolled:
		b.Queue(`UPDATE api_keys SET expires_at = $2, replaced_by = $3 WHERE id = $1`, e.KeyID, e.ExpiresAt, e.ReplacedBy)
	}
	return err
}
