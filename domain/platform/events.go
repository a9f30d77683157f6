package platform

import (
	"time"

	"github.com/opentreasury/treasury/domain"
)

// Registered: the operator registered a platform; it waits for approval.
type Registered struct {
	PlatformID   string            `json:"platform_id"`
	Name         string            `json:"name"`
	ContactEmail string            `json:"contact_email"`
	Metadata     map[string]string `json:"metadata"`
	Config       Config            `json:"config"`
	At           time.Time         `json:"at"`
}

// Approved: the pilot approval; the sandbox opens for the platform.
type Approved struct {
	At time.Time `json:"at"`
}

// LiveEnabled: the platform may now use the live environment.
type LiveEnabled struct {
	At time.Time `json:"at"`
}

// Configured: the operator changed commercial terms. Config is the whole
// configuration after the change, so that replay needs no merge logic.
type Configured struct {
	Config Config    `json:"config"`
	At     time.Time `json:"at"`
}

// SettingsUpdated: the platform changed its settings of one environment.
// Settings is the whole settings object after the change.
type SettingsUpdated struct {
	Environment domain.Environment `json:"environment"`
	Settings    Settings           `json:"settings"`
	At          time.Time          `json:"at"`
}

// KeyCreated: an API key was issued. Only the SHA-256 of its secret is kept.
type KeyCreated struct {
	KeyID       string             `json:"key_id"`
	Environment domain.Environment `json:"environment"`
	Name        string             `json:"name"`
	Prefix      string             `json:"prefix"`
	SecretHash  string             `json:"secret_hash"`
	At          time.Time          `json:"at"`
}

// KeyRevoked: the key stops working at once.
type KeyRevoked struct {
	KeyID string    `json:"key_id"`
	At    time.Time `json:"at"`
}

// KeyRolled: a replacement was issued; the old key works until ExpiresAt.
type KeyRolled struct {
	KeyID      string    `json:"key_id"`
	ReplacedBy string    `json:"replaced_by"`
	ExpiresAt  time.Time `json:"expires_at"`
	At         time.Time `json:"at"`
}

func (Registered) EventType() string      { return "platform.registered" }
func (Approved) EventType() string        { return "platform.approved" }
func (LiveEnabled) EventType() string     { return "platform.live_enabled" }
func (Configured) EventType() string      { return "platform.configured" }
func (SettingsUpdated) EventType() string { return "platform.settings_updated" }
func (KeyCreated) EventType() string      { return "api_key.created" }
func (KeyRevoked) EventType() string      { return "api_key.revoked" }
func (KeyRolled) EventType() string       { return "api_key.rolled" }

func init() {
	domain.RegisterEvent[Registered]()
	domain.RegisterEvent[Approved]()
	domain.RegisterEvent[LiveEnabled]()
	domain.RegisterEvent[Configured]()
	domain.RegisterEvent[SettingsUpdated]()
	domain.RegisterEvent[KeyCreated]()
	domain.RegisterEvent[KeyRevoked]()
	domain.RegisterEvent[KeyRolled]()
}
