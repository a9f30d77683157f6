package webhook

import (
	"strconv"
	"time"

	"github.com/opentreasury/treasury/domain"
)

// MaxReplayEvents is the most events one replay may send again (API.md §12).
const MaxReplayEvents = 10_000

// ReplayRequest is POST /webhooks/:id/replay: the public events created in
// [CreatedAfter, CreatedBefore), of Types if given (nil: the types the
// endpoint subscribes to), sent to the endpoint again.
type ReplayRequest struct {
	CreatedAfter  time.Time
	CreatedBefore time.Time
	Types         []string // nil: absent
}

// Validate checks the request alone (the window and the types).
func (r ReplayRequest) Validate() error {
	if r.CreatedAfter.IsZero() {
		return domain.Invalid("created_after", "created_after is required (an RFC 3339 time)")
	}
	if r.CreatedBefore.IsZero() {
		return domain.Invalid("created_before", "created_before is required (an RFC 3339 time)")
	}
	if !r.CreatedAfter.Before(r.CreatedBefore) {
		return domain.Invalid("created_before", "created_before must be after created_after")
	}
	if r.Types != nil && len(r.Types) == 0 {
		return domain.Invalid("types", "types must list at least one event type, or be left out")
	}
	for i, t := range r.Types {
		if !EventTypes[t] || t == "webhook.test" {
			return domain.Invalid("types["+strconv.Itoa(i)+"]", "unknown event type %q", t)
		}
	}
	return nil
}

// Selects reports whether a replay of r to an endpoint configured as c
// sends an event of type t: one of r.Types when given (whether or not the
// endpoint subscribes to it: the caller asked for it by name), else one
// the endpoint subscribes to today.
func (r ReplayRequest) Selects(c Config, t string) bool {
	if r.Types == nil {
		return c.Wants(t)
	}
	for _, want := range r.Types {
		if want == t {
			return true
		}
	}
	return false
}

// ReplayRequested: the endpoint's platform asked for the public events of
// a window to be sent to it again; Count deliveries were made of them,
// each carrying ReplayID.
type ReplayRequested struct {
	ReplayID      string    `json:"replay_id"`
	CreatedAfter  time.Time `json:"created_after"`
	CreatedBefore time.Time `json:"created_before"`
	Types         []string  `json:"types"` // null: the endpoint's subscriptions
	Count         int       `json:"count"`
	At            time.Time `json:"at"`
}

func (ReplayRequested) EventType() string { return "webhook_endpoint.replay_requested" }

func init() { domain.RegisterEvent[ReplayRequested]() }

// DecideReplay decides a replay of the endpoint s: found is how many
// public events the window selects, counted up to MaxReplayEvents+1.
// A deleted endpoint is not found (the caller's load says so); a disabled
// one gets nothing until it is enabled again: 409 invalid_state.
func DecideReplay(s State, r ReplayRequest, replayID string, found int, now time.Time) ([]domain.Event, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if s.ID == "" || s.Deleted {
		return nil, domain.NotFound("webhook_endpoint", s.ID)
	}
	if s.Config.Status != StatusEnabled {
		return nil, domain.Errorf(domain.CodeInvalidState, "webhook endpoint %s is disabled: enable it before replaying events to it", s.ID)
	}
	if found > MaxReplayEvents {
		return nil, &domain.Error{Code: domain.CodeReplayTooLarge, Param: "created_before", Message: "the window holds more than " +
			strconv.Itoa(MaxReplayEvents) + " events; a replay sends at most " + strconv.Itoa(MaxReplayEvents) + ": split it into smaller windows"}
	}
	return []domain.Event{ReplayRequested{ReplayID: replayID, CreatedAfter: r.CreatedAfter.UTC(), CreatedBefore: r.CreatedBefore.UTC(),
		Types: r.Types, Count: found, At: now}}, nil
}
