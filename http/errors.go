package http

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// statusOf is the one table from error codes to HTTP statuses (API.md §2).
var statusOf = map[domain.Code]int{
	domain.CodeInvalidRequest:          http.StatusBadRequest,
	domain.CodeUnbalancedEntry:         http.StatusBadRequest,
	domain.CodeAmountExceedsRailLimit:  http.StatusBadRequest,
	domain.CodeUnauthorized:            http.StatusUnauthorized,
	domain.CodeForbidden:               http.StatusForbidden,
	domain.CodeNotFound:                http.StatusNotFound,
	domain.CodeIdempotencyConflict:     http.StatusConflict,
	domain.CodeIdempotencyInProgress:   http.StatusConflict,
	domain.CodePaymentNotCancelable:    http.StatusConflict,
	domain.CodeKYBInProgress:           http.StatusConflict,
	domain.CodeKYBAlreadyApproved:      http.StatusConflict,
	domain.CodeInvalidState:            http.StatusConflict,
	domain.CodeRequestTooLarge:         http.StatusRequestEntityTooLarge,
	domain.CodeRequestTimeout:          http.StatusRequestTimeout,
	domain.CodeKYBNotApproved:          http.StatusUnprocessableEntity,
	domain.CodeComplianceRejected:      http.StatusUnprocessableEntity,
	domain.CodeInsufficientFunds:       http.StatusUnprocessableEntity,
	domain.CodeAccountNotActive:        http.StatusUnprocessableEntity,
	domain.CodeLimitExceeded:           http.StatusUnprocessableEntity,
	domain.CodeLiveNotEnabled:          http.StatusUnprocessableEntity,
	domain.CodeCounterpartyNotVerified: http.StatusUnprocessableEntity,
	domain.CodeNotImplemented:          http.StatusNotImplemented,
	domain.CodeRateLimited:             http.StatusTooManyRequests,
	domain.CodeInternal:                http.StatusInternalServerError,
	domain.CodeUnavailable:             http.StatusServiceUnavailable,
	domain.CodeReplayTooLarge:          http.StatusBadRequest,
}

// StatusOf is the HTTP status of an error code, from the table above: the
// console answers its pages' errors with the API's statuses.
func StatusOf(code domain.Code) int {
	if status, ok := statusOf[code]; ok {
		return status
	}
	return http.StatusInternalServerError
}

// HeaderShouldRetry tells a client whether sending the same request again
// (with the same Idempotency-Key) can succeed: the answer's own verdict,
// which the client libraries follow over their defaults.
const HeaderShouldRetry = "x-should-retry"

// shouldRetry is that verdict: yes for a request that did not run (in
// progress under its key, timed out, rate limited, the server unavailable
// or failing); no for every other refusal, which the same request meets
// again (an idempotency conflict above all: it never will succeed).
func shouldRetry(code domain.Code, status int) bool {
	switch {
	case code == domain.CodeIdempotencyInProgress,
		status == http.StatusRequestTimeout, status == http.StatusTooManyRequests,
		status >= 500 && status != http.StatusNotImplemented: // a 501 meets the same refusal again
		return true
	}
	return false
}

// ErrorBody is the error response of every route.
type ErrorBody struct {
	Code       domain.Code `json:"code"`
	Message    string      `json:"message"`
	RequestID  string      `json:"request_id"`
	Param      string      `json:"param,omitempty"`
	ResourceID string      `json:"resource_id,omitempty"`
}

// handleError turns any error a handler returns into the API's error body.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		// Too late for an error body (a streamed CSV, say): log it at least.
		s.log.Error("error after the response started", "request_id", requestID(c), "route", c.Path(), "error", err)
		return
	}
	body, status := s.errorBody(err, c)
	body.RequestID = ensureRequestID(c)
	c.Response().Header().Set(HeaderShouldRetry, strconv.FormatBool(shouldRetry(body.Code, status)))
	switch status {
	case http.StatusServiceUnavailable:
		c.Response().Header().Set("Retry-After", "1")
	case http.StatusTooManyRequests:
		if c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", "1")
		}
	}
	_ = c.JSON(status, body)
}

func (s *Server) errorBody(err error, c echo.Context) (ErrorBody, int) {
	if g := bodyGuardOf(c); g != nil && g.TimedOut() {
		// Whatever the handler made of the failed read, the cause is this.
		return ErrorBody{Code: domain.CodeRequestTimeout, Message: fmt.Sprintf(
			"the request body arrived too slowly: it must arrive within %s, plus 1 s per %d KiB",
			s.cfg.BodyReadGrace, s.cfg.BodyMinRate>>10)}, http.StatusRequestTimeout
	}
	var de *domain.Error
	if errors.As(err, &de) {
		status, ok := statusOf[de.Code]
		if !ok {
			status = http.StatusInternalServerError
		}
		return ErrorBody{Code: de.Code, Message: de.Message, Param: de.Param, ResourceID: de.ResourceID}, status
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			return ErrorBody{Code: domain.CodeNotFound, Message: "no such route: " + c.Request().Method + " " + c.Request().URL.Path}, http.StatusNotFound
		case http.StatusRequestEntityTooLarge:
			return tooLarge(), http.StatusRequestEntityTooLarge
		}
		if he.Code >= 400 && he.Code < 500 {
			return ErrorBody{Code: domain.CodeInvalidRequest, Message: http.StatusText(he.Code)}, http.StatusBadRequest
		}
	}
	if eventstore.OutOfRange(err) {
		// Only reachable by amounts no bank holds (a balance past 9.2e18
		// cents): the request is what is wrong, not the service.
		return ErrorBody{Code: domain.CodeInvalidRequest, Message: "an amount or balance would exceed what the ledger can hold"}, http.StatusBadRequest
	}
	if eventstore.Unavailable(err) {
		s.log.Warn("database unavailable", "request_id", requestID(c), "error", err)
		return ErrorBody{Code: domain.CodeUnavailable, Message: "the service is temporarily unavailable; retry shortly"}, http.StatusServiceUnavailable
	}
	if eventstore.Retryable(err) {
		// The command lost its race on every attempt (a stream, a balance
		// or what a decision read kept changing under it): nothing was
		// stored, and the same request later will likely pass.
		s.log.Warn("command lost its race on every attempt", "request_id", requestID(c), "route", c.Path(), "error", err)
		return ErrorBody{Code: domain.CodeUnavailable, Message: "the service is temporarily unavailable; retry shortly"}, http.StatusServiceUnavailable
	}
	if errors.Is(err, context.Canceled) && c.Request().Context().Err() != nil {
		// The client went away; nobody reads this answer.
		return ErrorBody{Code: domain.CodeUnavailable, Message: "request canceled"}, http.StatusServiceUnavailable
	}
	s.log.Error("internal error", "request_id", requestID(c), "route", c.Path(), "error", err)
	return ErrorBody{Code: domain.CodeInternal, Message: "an internal error occurred; it has been logged with the request id"}, http.StatusInternalServerError
}

// ensureRequestID is the request's id, made here if the error came before
// withRequestID ran: no error answer goes out without one.
func ensureRequestID(c echo.Context) string {
	if id := requestID(c); id != "" {
		return id
	}
	id := domain.NewID("req_")
	c.Set(requestIDKey, id)
	c.Response().Header().Set("X-Request-Id", id)
	return id
}

func tooLarge() ErrorBody {
	return ErrorBody{Code: domain.CodeRequestTooLarge, Message: "request bodies are limited to 1 MiB"}
}
