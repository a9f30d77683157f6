// Package platform is the platform aggregate: registration, approval, live
// access, the operator's commercial terms, the platform's settings and its
// API keys. Everything that changes a platform is an event in its stream.
package platform

import (
	"fmt"
	"maps"
	"net/mail"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/opentreasury/treasury/domain"
)

// StreamType names the platform streams in the event store.
const StreamType = "platform"

// StreamID is the event stream of one platform.
func StreamID(platformID string) string { return "platform-" + platformID }

// KeyStreamType names the API key streams. Each key's events live in a
// stream of its own, so that a platform's commands never replay the
// history of its keys (logs written before keys had streams keep their
// key events in the platform stream; they still fold).
const KeyStreamType = "api_key"

// KeyStreamID is the event stream of one API key.
func KeyStreamID(keyID string) string { return "apikey-" + keyID }

// IsKeyEvent reports whether e belongs to a key's history rather than
// to the platform's.
func IsKeyEvent(e domain.Event) bool {
	switch e.(type) {
	case KeyCreated, KeyRevoked, KeyRolled:
		return true
	}
	return false
}

// KeyOf is the key an event of a key's history is about ("" for others).
func KeyOf(e domain.Event) string {
	switch ev := e.(type) {
	case KeyCreated:
		return ev.KeyID
	case KeyRevoked:
		return ev.KeyID
	case KeyRolled:
		return ev.KeyID
	}
	return ""
}

// Status of a platform.
type Status struct{ name string }

var (
	StatusNone            = Status{""}
	StatusPendingApproval = Status{"pending_approval"}
	StatusApproved        = Status{"approved"}
)

func (s Status) String() string { return s.name }

// MarshalText and UnmarshalText let a State travel as JSON (snapshots).
func (s Status) MarshalText() ([]byte, error) { return []byte(s.name), nil }

func (s *Status) UnmarshalText(b []byte) error {
	for _, known := range []Status{StatusNone, StatusPendingApproval, StatusApproved} {
		if known.name == string(b) {
			*s = known
			return nil
		}
	}
	return fmt.Errorf("unknown platform status %q", b)
}

// Key is what the aggregate knows of an API key.
type Key struct {
	ID          string
	Environment domain.Environment
	Name        string
	CreatedAt   time.Time
	RevokedAt   *time.Time
	ExpiresAt   *time.Time
}

// Usable reports whether the key still authenticates at t.
func (k Key) Usable(t time.Time) bool {
	return k.RevokedAt == nil && (k.ExpiresAt == nil || t.Before(*k.ExpiresAt))
}

// SnapshotSchema versions State's JSON and Evolve's meaning in the
// snapshots of platform streams: bump it when either changes, and the
// snapshots taken before are ignored (the log is replayed instead).
const SnapshotSchema = 1

// State is a platform folded from its events.
type State struct {
	ID           string
	Name         string
	ContactEmail string
	Metadata     map[string]string
	Status       Status
	LiveEnabled  bool
	Config       Config
	Settings     map[domain.Environment]Settings
	// Keys holds the keys the command at hand is about, not every key
	// the platform ever had (see KeyStreamType).
	Keys map[string]Key
	// KeysInUse counts, per environment, the keys that authenticate now.
	// The loader reads it from the api_keys projection while it holds
	// the platform's lock; Evolve leaves it alone.
	KeysInUse map[domain.Environment]int
	CreatedAt time.Time
}

// Exists reports whether the platform has been registered.
func (s State) Exists() bool { return s.Status != StatusNone }

// SettingsFor returns the settings of env, defaults included.
func (s State) SettingsFor(env domain.Environment) Settings {
	if st, ok := s.Settings[env]; ok {
		return st
	}
	return DefaultSettings(env)
}

// NewKey is a key minted by the caller (secrets are random, so minting
// stays out of this pure package); only its hash enters the log.
type NewKey struct {
	ID          string
	Environment domain.Environment
	Name        string
	Prefix      string
	SecretHash  string
}

// Commands.
type (
	Register struct {
		PlatformID   string
		Name         string
		ContactEmail string
		Metadata     map[string]string
		At           time.Time
	}
	Approve struct {
		SandboxKey NewKey
		At         time.Time
	}
	EnableLive struct {
		LiveKey NewKey
		At      time.Time
	}
	Configure struct {
		Patch ConfigPatch
		At    time.Time
	}
	UpdateSettings struct {
		Environment domain.Environment
		Patch       SettingsPatch
		At          time.Time
	}
	CreateKey struct {
		CallerEnvironment domain.Environment
		Key               NewKey
		At                time.Time
	}
	RevokeKey struct {
		CallerEnvironment domain.Environment
		KeyID             string
		At                time.Time
	}
	RollKey struct {
		CallerEnvironment domain.Environment
		KeyID             string
		Grace             time.Duration
		NewKey            NewKey
		At                time.Time
	}
)

// Limits of the platform's fields.
const (
	MaxNameLen    = 200
	MaxKeyNameLen = 100
	MaxRollGrace  = 7 * 24 * time.Hour
	// MaxKeysInUse caps the keys of one environment that authenticate at
	// once: each costs a lookup row and a share of the platform's budget.
	MaxKeysInUse = 100
)

// Decide returns the events a command produces on s, or why it cannot.
func Decide(s State, cmd any) ([]domain.Event, error) {
	switch c := cmd.(type) {
	case Register:
		return decideRegister(s, c)
	}
	if !s.Exists() {
		return nil, domain.NotFound("platform", s.ID)
	}
	switch c := cmd.(type) {
	case Approve:
		if s.Status != StatusPendingApproval {
			return nil, domain.Errorf(domain.CodeInvalidState, "platform is already approved")
		}
		if err := checkMinted(c.SandboxKey); err != nil {
			return nil, err
		}
		return []domain.Event{Approved{At: c.At}, keyCreated(c.SandboxKey, c.At)}, nil
	case EnableLive:
		if s.Status != StatusApproved {
			return nil, domain.Errorf(domain.CodeInvalidState, "platform must be approved before live is enabled")
		}
		if s.LiveEnabled {
			return nil, domain.Errorf(domain.CodeInvalidState, "live is already enabled")
		}
		if err := checkMinted(c.LiveKey); err != nil {
			return nil, err
		}
		return []domain.Event{LiveEnabled{At: c.At}, keyCreated(c.LiveKey, c.At)}, nil
	case Configure:
		next, err := s.Config.Apply(c.Patch)
		if err != nil || next.Equal(s.Config) {
			return nil, err // a PATCH that changes nothing records nothing
		}
		return []domain.Event{Configured{Config: next, At: c.At}}, nil
	case UpdateSettings:
		current := s.SettingsFor(c.Environment)
		next, err := current.Apply(c.Environment, c.Patch)
		if err != nil || reflect.DeepEqual(next, current) {
			return nil, err
		}
		return []domain.Event{SettingsUpdated{Environment: c.Environment, Settings: next, At: c.At}}, nil
	case CreateKey:
		if err := s.checkNewKey(c.CallerEnvironment, c.Key); err != nil {
			return nil, err
		}
		if err := checkMinted(c.Key); err != nil {
			return nil, err
		}
		if s.KeysInUse[c.Key.Environment] >= MaxKeysInUse {
			return nil, tooManyKeys(c.Key.Environment)
		}
		return []domain.Event{keyCreated(c.Key, c.At)}, nil
	case RevokeKey:
		k, err := s.manageableKey(c.CallerEnvironment, c.KeyID)
		if err != nil {
			return nil, err
		}
		if k.RevokedAt != nil {
			return nil, nil // revoking twice changes nothing
		}
		return []domain.Event{KeyRevoked{KeyID: k.ID, At: c.At}}, nil
	case RollKey:
		k, err := s.manageableKey(c.CallerEnvironment, c.KeyID)
		if err != nil {
			return nil, err
		}
		if !k.Usable(c.At) {
			return nil, domain.Errorf(domain.CodeInvalidState, "key %s is revoked or expired and cannot be rolled", k.ID)
		}
		if c.Grace < 0 || c.Grace > MaxRollGrace {
			return nil, domain.Invalid("grace_seconds", "grace_seconds must be 0 to %d", int(MaxRollGrace.Seconds()))
		}
		// The rolled key leaves when its grace ends, so a roll at the cap
		// goes through; during the grace one more key is in use.
		if s.KeysInUse[k.Environment]-1 >= MaxKeysInUse {
			return nil, tooManyKeys(k.Environment)
		}
		c.NewKey.Environment = k.Environment
		if c.NewKey.Name == "" {
			c.NewKey.Name = k.Name
		}
		if err := checkMinted(c.NewKey); err != nil {
			return nil, err
		}
		expires := c.At.Add(c.Grace)
		if k.ExpiresAt != nil && k.ExpiresAt.Before(expires) {
			expires = *k.ExpiresAt // a roll never extends a key's life
		}
		return []domain.Event{
			keyCreated(c.NewKey, c.At),
			KeyRolled{KeyID: k.ID, ReplacedBy: c.NewKey.ID, ExpiresAt: expires, At: c.At},
		}, nil
	}
	return nil, domain.Errorf(domain.CodeInternal, "unknown platform command %T", cmd)
}

func decideRegister(s State, c Register) ([]domain.Event, error) {
	if s.Exists() {
		return nil, domain.Errorf(domain.CodeInvalidState, "platform %s already exists", c.PlatformID)
	}
	name := strings.TrimSpace(c.Name)
	if name == "" || utf8.RuneCountInString(name) > MaxNameLen {
		return nil, domain.Invalid("name", "name must be 1 to %d characters", MaxNameLen)
	}
	if err := validateEmail(c.ContactEmail); err != nil {
		return nil, err
	}
	if err := domain.ValidateMetadata("metadata", c.Metadata); err != nil {
		return nil, err
	}
	md := c.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return []domain.Event{Registered{
		PlatformID: c.PlatformID, Name: name, ContactEmail: c.ContactEmail,
		Metadata: md, Config: DefaultConfig(), At: c.At,
	}}, nil
}

func validateEmail(s string) error {
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || len(s) > 254 || !strings.Contains(s[strings.LastIndex(s, "@"):], ".") {
		return domain.Invalid("contact_email", "contact_email must be an email address such as ops@example.com")
	}
	return nil
}

func (s State) checkNewKey(caller domain.Environment, k NewKey) error {
	name := strings.TrimSpace(k.Name)
	if name == "" || utf8.RuneCountInString(name) > MaxKeyNameLen {
		return domain.Invalid("name", "name must be 1 to %d characters", MaxKeyNameLen)
	}
	if k.Environment == domain.Live {
		if caller != domain.Live {
			return domain.Errorf(domain.CodeForbidden, "a sandbox key cannot create a live key")
		}
		if !s.LiveEnabled {
			return domain.Errorf(domain.CodeLiveNotEnabled, "live is not enabled for this platform")
		}
	}
	return nil
}

// manageableKey finds a key the caller may manage: keys of its own
// environment, and sandbox keys for a live caller. Others are not found.
func (s State) manageableKey(caller domain.Environment, id string) (Key, error) {
	k, ok := s.Keys[id]
	if !ok || !(k.Environment == caller || caller == domain.Live) {
		return Key{}, domain.NotFound("api_key", id)
	}
	return k, nil
}

func tooManyKeys(env domain.Environment) error {
	return domain.Errorf(domain.CodeLimitExceeded,
		"a platform may have at most %d %s API keys in use; revoke one (DELETE /platform/api-keys/:id) first",
		MaxKeysInUse, env)
}

// checkMinted refuses a minted key without an id, hash or environment (a
// caller's bug): its event would not replay.
func checkMinted(k NewKey) error {
	if k.ID == "" || k.SecretHash == "" || k.Environment.IsZero() {
		return domain.Errorf(domain.CodeInternal, "minted key is incomplete")
	}
	return nil
}

func keyCreated(k NewKey, at time.Time) KeyCreated {
	return KeyCreated{KeyID: k.ID, Environment: k.Environment, Name: strings.TrimSpace(k.Name),
		Prefix: k.Prefix, SecretHash: k.SecretHash, At: at}
}

// Evolve folds one event into the state. It copies the maps it changes,
// so the state it was given stays as it was.
func Evolve(s State, e domain.Event) State {
	switch ev := e.(type) {
	case Registered:
		s = State{ID: ev.PlatformID, Name: ev.Name, ContactEmail: ev.ContactEmail, Metadata: ev.Metadata,
			Status: StatusPendingApproval, Config: ev.Config, CreatedAt: ev.At,
			Settings: map[domain.Environment]Settings{}, Keys: map[string]Key{}}
	case Approved:
		s.Status = StatusApproved
	case LiveEnabled:
		s.LiveEnabled = true
	case Configured:
		s.Config = ev.Config
	case SettingsUpdated:
		s.Settings = maps.Clone(s.Settings)
		s.Settings[ev.Environment] = ev.Settings
	case KeyCreated:
		s.Keys = maps.Clone(s.Keys)
		s.Keys[ev.KeyID] = Key{ID: ev.KeyID, Environment: ev.Environment, Name: ev.Name, CreatedAt: ev.At}
	case KeyRevoked:
		s.Keys = maps.Clone(s.Keys)
		k := s.Keys[ev.KeyID]
		at := ev.At
		k.RevokedAt = &at
		s.Keys[ev.KeyID] = k
	case KeyRolled:
		s.Keys = maps.Clone(s.Keys)
		k := s.Keys[ev.KeyID]
		exp := ev.ExpiresAt
		k.ExpiresAt = &exp
		s.Keys[ev.KeyID] = k
	}
	return s
}
