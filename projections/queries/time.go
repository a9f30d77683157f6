// Package queries reads the read models for the API: the views it shows
// (one struct per resource), the gets and lists, pagination and exports.
// It writes no read model (the projectors in package projections do),
// only when an API key was last used (TouchAPIKey).
package queries

import (
	"time"
)

// Time renders as RFC 3339 in UTC with millisecond precision (API.md §1).
type Time struct{ time.Time }

// TimeFormat is the API's timestamp layout.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

func (t Time) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, len(TimeFormat)+2)
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, TimeFormat)
	return append(b, '"'), nil
}

// NewTime wraps a time; NewTimePtr wraps a nullable one.
func NewTime(t time.Time) Time { return Time{t} }

func NewTimePtr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}
