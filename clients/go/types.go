package treasury

import (
	"time"

	openapi_types "github.com/oapi-codegen/runtime/types"
)

// Date is a calendar date (YYYY-MM-DD) in the models: KYB formation dates and
// dates of birth, the revenue share report's period, a payment's
// ScheduledFor (an Eastern date).
type Date = openapi_types.Date

// Email is an e-mail address in the models (a platform's contact_email).
type Email = openapi_types.Email

// NewDate returns the Date of t's year, month and day.
func NewDate(year int, month time.Month, day int) Date {
	return Date{Time: time.Date(year, month, day, 0, 0, 0, 0, time.UTC)}
}

// Ptr returns a pointer to v, for the models' optional fields:
// treasury.Ptr("a description").
func Ptr[T any](v T) *T { return &v }
