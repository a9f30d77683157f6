// Package domain holds the pure business decisions of Treasury: aggregates,
// their events and the typed errors they return. It imports no database and
// no HTTP code, so every rule here can be tested as given-events /
// when-command / then-events tables.
package domain

import (
	"errors"
	"fmt"
)

// Code is a stable, documented error code of the public API (API.md §2).
type Code string

const (
	CodeInvalidRequest          Code = "invalid_request"
	CodeUnbalancedEntry         Code = "unbalanced_entry"
	CodeAmountExceedsRailLimit  Code = "amount_exceeds_rail_limit"
	CodeUnauthorized            Code = "unauthorized"
	CodeForbidden               Code = "forbidden"
	CodeNotFound                Code = "not_found"
	CodeIdempotencyConflict     Code = "idempotency_conflict"
	CodeIdempotencyInProgress   Code = "idempotency_in_progress"
	CodePaymentNotCancelable    Code = "payment_not_cancelable"
	CodeKYBInProgress           Code = "kyb_in_progress"
	CodeKYBAlreadyApproved      Code = "kyb_already_approved"
	CodeInvalidState            Code = "invalid_state"
	CodeRequestTooLarge         Code = "request_too_large"
	CodeRequestTimeout          Code = "request_timeout"
	CodeKYBNotApproved          Code = "kyb_not_approved"
	CodeComplianceRejected      Code = "compliance_rejected"
	CodeInsufficientFunds       Code = "insufficient_funds"
	CodeAccountNotActive        Code = "account_not_active"
	CodeLimitExceeded           Code = "limit_exceeded"
	CodeLiveNotEnabled          Code = "live_not_enabled"
	CodeCounterpartyNotVerified Code = "counterparty_not_verified"
	CodeNotImplemented          Code = "not_implemented"
	CodeRateLimited             Code = "rate_limited"
	CodeInternal                Code = "internal_error"
	CodeUnavailable             Code = "unavailable"
	CodeReplayTooLarge          Code = "replay_too_large"
)

// Error is a business error with a public code. Param names the offending
// request field; ResourceID names an existing resource the error refers to.
type Error struct {
	Code       Code
	Message    string
	Param      string
	ResourceID string
}

func (e *Error) Error() string {
	if e.Param != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Param)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Is makes errors.Is(err, &Error{Code: X}) match any error with code X.
func (e *Error) Is(target error) bool {
	var t *Error
	if !errors.As(target, &t) {
		return false
	}
	return t.Code == e.Code
}

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid is a 400 invalid_request naming the offending field.
func Invalid(param, format string, args ...any) *Error {
	return &Error{Code: CodeInvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound is the one answer for missing objects and for objects of another
// platform or environment: never reveal which.
func NotFound(kind, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("no such %s: %q", kind, id)}
}

// CodeOf returns the code of err if it is an *Error, else "".
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
