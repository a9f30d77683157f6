package domain

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Event is a fact that happened. Events are stored as JSON under their type
// name and never change once written; a new shape gets a new schema version.
type Event interface {
	EventType() string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]func([]byte) (Event, error){}
)

// RegisterEvent makes an event type decodable by DecodeEvent. Each
// aggregate package registers its events in an init function.
func RegisterEvent[T Event]() {
	var zero T
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[zero.EventType()] = func(data []byte) (Event, error) {
		var v T
		err := json.Unmarshal(data, &v)
		return v, err
	}
}

// DecodeEvent turns a stored event back into its Go value.
func DecodeEvent(eventType string, data []byte) (Event, error) {
	registryMu.RLock()
	decode, ok := registry[eventType]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("unknown event type %q", eventType)
	}
	e, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", eventType, err)
	}
	return e, nil
}
