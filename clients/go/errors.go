package treasury

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrorKind names the class of an *APIError, as the API's client contract
// names the error classes of every client.
type ErrorKind string

// The error classes, by HTTP status.
const (
	KindBadRequest          ErrorKind = "BadRequestError"          // 400
	KindAuthentication      ErrorKind = "AuthenticationError"      // 401
	KindPermissionDenied    ErrorKind = "PermissionDeniedError"    // 403
	KindNotFound            ErrorKind = "NotFoundError"            // 404
	KindConflict            ErrorKind = "ConflictError"            // 409
	KindUnprocessableEntity ErrorKind = "UnprocessableEntityError" // 422
	KindRateLimit           ErrorKind = "RateLimitError"           // 429
	KindInternalServer      ErrorKind = "InternalServerError"      // 5xx (501 not_implemented too)
	KindAPI                 ErrorKind = "APIError"                 // any other status (413, …)
)

// Sentinels for errors.Is: errors.Is(err, treasury.ErrNotFound) is true for
// an *APIError of Kind KindNotFound.
var (
	ErrBadRequest          = errors.New("treasury: bad request")
	ErrAuthentication      = errors.New("treasury: authentication failed")
	ErrPermissionDenied    = errors.New("treasury: permission denied")
	ErrNotFound            = errors.New("treasury: not found")
	ErrConflict            = errors.New("treasury: conflict")
	ErrUnprocessableEntity = errors.New("treasury: unprocessable entity")
	ErrRateLimit           = errors.New("treasury: rate limited")
	ErrInternalServer      = errors.New("treasury: internal server error")
)

var kindSentinels = map[ErrorKind]error{
	KindBadRequest:          ErrBadRequest,
	KindAuthentication:      ErrAuthentication,
	KindPermissionDenied:    ErrPermissionDenied,
	KindNotFound:            ErrNotFound,
	KindConflict:            ErrConflict,
	KindUnprocessableEntity: ErrUnprocessableEntity,
	KindRateLimit:           ErrRateLimit,
	KindInternalServer:      ErrInternalServer,
}

// APIError is every answer of the API with a status of 300 or more: its body
// {code, message, request_id, param?, resource_id?} and its class.
type APIError struct {
	// Kind is the class, from Status.
	Kind ErrorKind
	// Status is the HTTP status.
	Status int
	// Code is the machine-readable code: invalid_request, not_found,
	// idempotency_conflict, insufficient_funds, replay_too_large (a 400),
	// counterparty_not_verified (a 422), not_implemented (a 501: the route is
	// not served by this build)…
	Code string
	// Message is the human-readable explanation.
	Message string
	// Param names the offending field or parameter, when there is one.
	Param string
	// RequestID is the request's id (the body's request_id, else the
	// X-Request-Id header): quote it when asking for help.
	RequestID string
	// ResourceID is the resource the error is about (the payment an
	// idempotency_conflict is about, a rejected KYB verification…).
	ResourceID string
	// Header is the answer's headers (Retry-After, RateLimit-*…).
	Header http.Header
	// Body is the answer's raw body.
	Body []byte
}

// Error implements error.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "treasury: %s %d", e.Kind, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// Unwrap returns the sentinel of the error's class (nil for KindAPI), which
// makes errors.Is(err, ErrNotFound) work.
func (e *APIError) Unwrap() error { return kindSentinels[e.Kind] }

// KindOf returns the class of an answer's status.
func KindOf(status int) ErrorKind {
	switch {
	case status == http.StatusBadRequest:
		return KindBadRequest
	case status == http.StatusUnauthorized:
		return KindAuthentication
	case status == http.StatusForbidden:
		return KindPermissionDenied
	case status == http.StatusNotFound:
		return KindNotFound
	case status == http.StatusConflict:
		return KindConflict
	case status == http.StatusUnprocessableEntity:
		return KindUnprocessableEntity
	case status == http.StatusTooManyRequests:
		return KindRateLimit
	case status >= 500:
		return KindInternalServer
	}
	return KindAPI
}

func newAPIError(hr *http.Response, body []byte) *APIError {
	e := &APIError{Kind: KindOf(hr.StatusCode), Status: hr.StatusCode, Header: hr.Header, Body: body}
	var b struct {
		Code       string `json:"code"`
		Message    string `json:"message"`
		RequestID  string `json:"request_id"`
		Param      string `json:"param"`
		ResourceID string `json:"resource_id"`
	}
	if err := json.Unmarshal(body, &b); err == nil {
		e.Code, e.Message, e.Param, e.RequestID, e.ResourceID = b.Code, b.Message, b.Param, b.RequestID, b.ResourceID
	} else {
		e.Message = strings.TrimSpace(string(body))
		if len(e.Message) > 200 {
			e.Message = e.Message[:200]
		}
		if e.Message == "" {
			e.Message = http.StatusText(hr.StatusCode)
		}
	}
	if e.RequestID == "" {
		e.RequestID = hr.Header.Get("X-Request-Id")
	}
	return e
}
