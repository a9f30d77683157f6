package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// TestPanicBecomesLoggedInternalError: a handler that panics answers 500
// internal_error with the request id, leaks nothing of the panic, and the
// log line carries the same request id and the panic.
func TestPanicBecomesLoggedInternalError(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	s := New(app.New(pgtest.Pool(t), nil, log), Config{})
	s.echo.GET("/v1/boom", func(echo.Context) error { panic("secret internals") })

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/v1/boom", nil)
	req.Header.Set("X-Request-Id", "req-panic-1")
	s.ServeHTTP(rec, req)

	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500: %s", rec.Code, rec.Body)
	}
	var body ErrorBody
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Code != "internal_error" || body.RequestID != "req-panic-1" || strings.Contains(rec.Body.String(), "secret") {
		t.Fatalf("body %s", rec.Body)
	}
	if !strings.Contains(logs.String(), `"request_id":"req-panic-1"`) || !strings.Contains(logs.String(), "secret internals") {
		t.Fatalf("the panic and its request id are not in the log:\n%s", logs.String())
	}
}

// TestOverflowIsABadRequest: a balance pushed past bigint (only by absurd
// amounts) answers 400, not 500.
func TestOverflowIsABadRequest(t *testing.T) {
	s := New(app.New(pgtest.Pool(t), nil, slog.New(slog.NewJSONHandler(&bytes.Buffer{}, nil))), Config{})
	s.echo.GET("/v1/overflow", func(echo.Context) error {
		return fmt.Errorf("project: %w", &pgconn.PgError{Code: "22003", Message: "bigint out of range"})
	})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/overflow", nil))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"invalid_request"`) {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
