package http

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opentreasury/treasury/domain"
)

// MaxBodyBytes is the largest request body accepted (API.md §1).
const MaxBodyBytes = 1 << 20

var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:\-]{1,64}$`)

const requestIDKey = "request_id"

// withRequestID keeps the client's X-Request-Id when it is safe, else makes one.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Request().Header.Get("X-Request-Id")
		if !safeRequestID.MatchString(id) {
			id = domain.NewID("req_")
		}
		c.Set(requestIDKey, id)
		c.Response().Header().Set("X-Request-Id", id)
		return next(c)
	}
}

func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// validQuery refuses query parameters that are not valid UTF-8 or hold a
// NUL character: no filter could match them, and PostgreSQL refuses them.
func validQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for name, values := range c.QueryParams() {
			for _, v := range values {
				if !utf8.ValidString(v) || strings.ContainsRune(v, 0) || !utf8.ValidString(name) || strings.ContainsRune(name, 0) {
					return domain.Invalid(strings.ToValidUTF8(strings.ReplaceAll(name, "\x00", ""), "?"), "query parameters must be UTF-8 text without NUL characters")
				}
			}
		}
		return next(c)
	}
}

// recoverPanics turns a panic into a logged 500 internal_error.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("panic", "request_id", requestID(c), "route", c.Path(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return next(c)
	}
}

// limitBody refuses bodies over MaxBodyBytes with 413.
func limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength > MaxBodyBytes {
			return &domain.Error{Code: domain.CodeRequestTooLarge, Message: "request bodies are limited to 1 MiB"}
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, MaxBodyBytes)
		return next(c)
	}
}

type metrics struct {
	requests     *prometheus.CounterVec
	latency      *prometheus.HistogramVec
	connsRefused *prometheus.CounterVec // by Server.WrapListener's caps
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "treasury_http_requests_total", Help: "HTTP requests by route, method and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "treasury_http_request_duration_seconds",
			Help:    "HTTP request latency by route, method and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route", "status"}),
	}
	m.connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "treasury_http_connections_refused_total",
		Help: "API connections closed unread because a connection cap was reached, by cap.",
	}, []string{"cap"})
	reg.MustRegister(m.requests, m.latency, m.connsRefused)
	return m
}

// observe records metrics and one structured log line per request. It runs
// outermost, after the error handler has written the status.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		defer s.recordAbort(c, start)   // an aborted stream panics past the log line below
		client := c.Request().Context() // inner middleware replace the request with derived contexts, ended by then
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		route := c.Path()
		if route == "" {
			route = "unmatched"
		}
		status := strconv.Itoa(c.Response().Status)
		elapsed := time.Since(start)
		level := slog.LevelInfo
		// A client that went away before its answer (a tab closed, a load
		// generator stopping) gets a 503 nobody reads: no failure of the
		// service, so neither an error in the log nor a 5xx in the metrics.
		gone := c.Response().Status >= 500 && errors.Is(client.Err(), context.Canceled)
		switch {
		case gone:
			status = "canceled"
		case c.Response().Status >= 500:
			level = slog.LevelError
		}
		s.metrics.requests.WithLabelValues(c.Request().Method, route, status).Inc()
		s.metrics.latency.WithLabelValues(c.Request().Method, route, status).Observe(elapsed.Seconds())
		attrs := []any{"request_id", requestID(c), "method", c.Request().Method, "route", route,
			"status", c.Response().Status, "duration_ms", float64(elapsed.Microseconds()) / 1000}
		if gone {
			attrs = append(attrs, "canceled_by_client", true)
		}
		if p := principalOf(c); p != nil && p.platformID != "" {
			attrs = append(attrs, "platform_id", p.platformID, "environment", p.env.String())
		}
		s.log.Log(c.Request().Context(), level, "request", attrs...)
		return nil
	}
}
