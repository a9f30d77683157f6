package http

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// A command that lost its race on every attempt (a version conflict, a
// decision whose inputs kept changing, a deadlock) stored nothing and may
// pass later: 503 unavailable with Retry-After, not a 500.
func TestALostRaceIsUnavailableNotInternal(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, code := range []string{eventstore.VersionConflictState, eventstore.InputsChangedState, "40001", "40P01"} {
		rec := httptest.NewRecorder()
		c := echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/v1/payments", nil), rec)
		s.handleError(fmt.Errorf("attempt 20: %w", &pgconn.PgError{Code: code}), c)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
			!strings.Contains(rec.Body.String(), `"code":"unavailable"`) {
			t.Errorf("SQLSTATE %s: %d %s (Retry-After %q), want 503 unavailable with Retry-After", code, rec.Code, rec.Body, rec.Header().Get("Retry-After"))
		}
	}
	rec := httptest.NewRecorder()
	s.handleError(&pgconn.PgError{Code: "23505"}, echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/v1/payments", nil), rec))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("a unique violation: %d, want 500 (a bug, not a lost race)", rec.Code)
	}
}

// x-should-retry on every error answer: a request that did not run may be
// sent again (in progress under its key, timed out, rate limited, the
// server failing); any other refusal meets the same request again.
func TestShouldRetry(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, c := range []struct {
		err  error
		want string
	}{
		{&domain.Error{Code: domain.CodeIdempotencyInProgress}, "true"},
		{&domain.Error{Code: domain.CodeIdempotencyConflict}, "false"},
		{&domain.Error{Code: domain.CodePaymentNotCancelable}, "false"},
		{&domain.Error{Code: domain.CodeInvalidRequest}, "false"},
		{&domain.Error{Code: domain.CodeInsufficientFunds}, "false"},
		{&domain.Error{Code: domain.CodeNotFound}, "false"},
		{&domain.Error{Code: domain.CodeRequestTimeout}, "true"},
		{&domain.Error{Code: domain.CodeRateLimited}, "true"},
		{&domain.Error{Code: domain.CodeUnavailable}, "true"},
		{fmt.Errorf("a bug"), "true"}, // 500: the request ran into a fault, not a refusal
	} {
		rec := httptest.NewRecorder()
		s.handleError(c.err, echo.New().NewContext(httptest.NewRequest(http.MethodPost, "/v1/payments", nil), rec))
		if got := rec.Header().Get("x-should-retry"); got != c.want {
			t.Errorf("%v (%d): x-should-retry %q, want %s", c.err, rec.Code, got, c.want)
		}
	}
}
