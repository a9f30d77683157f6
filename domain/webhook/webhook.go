// Package webhook is the webhook endpoint aggregate: where a platform wants
// its events, which ones, and how to retry. Secrets are not here: they
// stay out of the log.
package webhook

import (
	"net/url"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/platform"
)

// StreamType names endpoint streams.
const StreamType = "webhook_endpoint"

// StreamID is the stream of one endpoint.
func StreamID(id string) string { return "webhook_endpoint-" + id }

// Statuses of an endpoint.
const (
	StatusEnabled  = "enabled"
	StatusDisabled = "disabled"
)

// EventTypes are the public event types an endpoint may ask for.
var EventTypes = map[string]bool{
	"virtual_account.created": true, "payment.created": true, "payment.submitted": true,
	"payment.completed": true, "payment.failed": true, "payment.canceled": true, "payment.notification_of_change": true,
	"payment.requires_approval": true, "payment.approved": true, "payment.denied": true, "payment.released": true,
	"kyb.pending_review": true, "kyb.approved": true, "kyb.rejected": true,
	"ledger.entry.created": true, "inbound_transfer.completed": true, "book_transfer.completed": true, "webhook.test": true,
	"counterparty.verified": true, "counterparty.verification_failed": true,
}

// Config is what a platform sets on an endpoint.
type Config struct {
	URL         string               `json:"url"`
	Events      []string             `json:"events"`
	Description string               `json:"description"`
	Status      string               `json:"status"`
	RetryPolicy platform.RetryPolicy `json:"retry_policy"`
}

// Created: an endpoint was registered.
type Created struct {
	EndpointID  string             `json:"endpoint_id"`
	PlatformID  string             `json:"platform_id"`
	Environment domain.Environment `json:"environment"`
	Config      Config             `json:"config"`
	At          time.Time          `json:"at"`
}

// Updated: the endpoint's configuration changed (Config is the whole new one).
type Updated struct {
	Config Config    `json:"config"`
	Reason string    `json:"reason,omitempty"` // e.g. "410 Gone" when the sender disabled it
	At     time.Time `json:"at"`
}

// Deleted: no more deliveries.
type Deleted struct {
	At time.Time `json:"at"`
}

// SecretRotated: a new secret signs from now on; the old one too until OldExpiresAt.
type SecretRotated struct {
	OldExpiresAt time.Time `json:"old_expires_at"`
	At           time.Time `json:"at"`
}

func (Created) EventType() string       { return "webhook_endpoint.created" }
func (Updated) EventType() string       { return "webhook_endpoint.updated" }
func (Deleted) EventType() string       { return "webhook_endpoint.deleted" }
func (SecretRotated) EventType() string { return "webhook_endpoint.secret_rotated" }

func init() {
	domain.RegisterEvent[Created]()
	domain.RegisterEvent[Updated]()
	domain.RegisterEvent[Deleted]()
	domain.RegisterEvent[SecretRotated]()
}

// State of an endpoint.
type State struct {
	ID          string
	PlatformID  string
	Environment domain.Environment
	Config      Config
	Deleted     bool
	CreatedAt   time.Time
}

// Evolve folds one event.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Created:
		s = State{ID: ev.EndpointID, PlatformID: ev.PlatformID, Environment: ev.Environment, Config: ev.Config, CreatedAt: ev.At}
	case Updated:
		s.Config = ev.Config
	case Deleted:
		s.Deleted = true
	}
	return s
}

// SecretPrefix starts every endpoint secret (the Standard Webhooks form).
const SecretPrefix = "whsec_"

// Limits.
const (
	MaxURLLen         = 2048
	MaxDescriptionLen = 500
	SecretGrace       = 24 * time.Hour
)

// Validate checks a configuration for an environment: live endpoints
// must use https (where the host may resolve is checked when connecting).
func (c Config) Validate(env domain.Environment) error {
	if len(c.URL) > MaxURLLen {
		return domain.Invalid("url", "url must be at most %d characters", MaxURLLen)
	}
	u, err := url.Parse(c.URL)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return domain.Invalid("url", "url must be an absolute http(s) URL without credentials")
	}
	if env == domain.Live && u.Scheme != "https" {
		return domain.Invalid("url", "live endpoints must use https")
	}
	if err := validatePort(u, env); err != nil {
		return err
	}
	if len(c.Events) == 0 {
		return domain.Invalid("events", "events must list event types, or [\"*\"] for all")
	}
	for i, t := range c.Events {
		if t == "*" && len(c.Events) == 1 {
			continue
		}
		if !EventTypes[t] {
			return domain.Invalid("events["+strconv.Itoa(i)+"]", "unknown event type %q", t)
		}
	}
	if utf8.RuneCountInString(c.Description) > MaxDescriptionLen {
		return domain.Invalid("description", "description must be at most %d characters", MaxDescriptionLen)
	}
	if c.Status != StatusEnabled && c.Status != StatusDisabled {
		return domain.Invalid("status", "status must be enabled or disabled")
	}
	return c.RetryPolicy.Validate("retry_policy")
}

// MinLivePort is the lowest port a live endpoint may use besides 443:
// below it sit the well-known services (SMTP, SSH, ...) a webhook must not
// be turned against.
const MinLivePort = 1024

// validatePort refuses a port outside 1..65535 and, for live endpoints,
// the well-known ports other than 443. Sandbox endpoints may use any valid
// port: they may target a developer's own machine (API.md §8).
func validatePort(u *url.URL, env domain.Environment) error {
	if u.Hostname() == "" {
		return domain.Invalid("url", "url must name a host")
	}
	if u.Port() == "" {
		return nil // the scheme's default: 443 or 80
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 1 || port > 65535 {
		return domain.Invalid("url", "url port must be between 1 and 65535")
	}
	if env == domain.Live && port != 443 && port < MinLivePort {
		return domain.Invalid("url", "live endpoints must use port 443 or a port from %d to 65535", MinLivePort)
	}
	return nil
}

// Wants reports whether the endpoint subscribes to an event type.
func (c Config) Wants(eventType string) bool {
	for _, t := range c.Events {
		if t == "*" || t == eventType {
			return true
		}
	}
	return false
}
