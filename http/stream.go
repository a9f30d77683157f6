package http

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// streamStart is the status line and headers of a streamed response, sent
// with its first byte.
type streamStart struct {
	contentType string
	header      map[string]string
}

// streamWriter starts the response at its first byte, so that an error
// found before it still gets a JSON error status.
type streamWriter struct {
	c       echo.Context
	start   streamStart
	started bool
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.begin()
	return w.c.Response().Write(p)
}

func (w *streamWriter) begin() {
	if w.started {
		return
	}
	w.started = true
	h := w.c.Response().Header()
	h.Set(echo.HeaderContentType, w.start.contentType)
	for k, v := range w.start.header {
		h.Set(k, v)
	}
	w.c.Response().WriteHeader(http.StatusOK)
}

// stream answers 200 with what write writes. An error before the first
// byte is returned, for the error handler to answer; an error after it
// aborts the response, so the client sees a failure instead of a short
// body that ends like a complete one.
func stream(c echo.Context, start streamStart, write func(*streamWriter) error) error {
	w := &streamWriter{c: c, start: start}
	err := write(w)
	switch {
	case err == nil:
		w.begin() // an empty body is still a 200
		return nil
	case !w.started:
		return err
	}
	abortStream(c, err)
	return nil // not reached
}

const streamAbortKey = "stream_abort"

// abortStream sends what was written, then ends the connection without
// the final chunk (HTTP/1.1) or with a stream reset (HTTP/2): net/http does
// that for a handler that panics with http.ErrAbortHandler, and logs nothing.
// recoverPanics lets that panic through; observe logs the request through
// recordAbort.
func abortStream(c echo.Context, cause error) {
	c.Set(streamAbortKey, cause)
	c.Response().Flush()
	panic(http.ErrAbortHandler)
}

// recordAbort logs an aborted stream as an error, and counts it under the
// status "aborted": the 200 sent is not what happened. observe defers it,
// as an aborted request unwinds past observe's own log line.
func (s *Server) recordAbort(c echo.Context, start time.Time) {
	cause, ok := c.Get(streamAbortKey).(error)
	if !ok {
		return
	}
	route := c.Path()
	elapsed := time.Since(start)
	s.metrics.requests.WithLabelValues(c.Request().Method, route, "aborted").Inc()
	s.metrics.latency.WithLabelValues(c.Request().Method, route, "aborted").Observe(elapsed.Seconds())
	attrs := []any{"request_id", requestID(c), "method", c.Request().Method, "route", route,
		"status", c.Response().Status, "aborted", true, "error", cause.Error(),
		"bytes", c.Response().Size, "duration_ms", float64(elapsed.Microseconds()) / 1000}
	if p := principalOf(c); p != nil && p.platformID != "" {
		attrs = append(attrs, "platform_id", p.platformID, "environment", p.env.String())
	}
	s.log.Log(c.Request().Context(), slog.LevelError, "request", attrs...)
}
