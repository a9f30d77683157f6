package http

import (
	"log/slog"
	"net/http"
	"time"
)

// MaxHeaderBytes bounds a request's header block. Keys, ids and
// idempotency keys are short: 64 KiB is far beyond what any request of
// the API needs, and bounds what a connection that drips headers holds.
const MaxHeaderBytes = 64 << 10

// HTTPServer is the *http.Server that serves the API (serve, dev and the
// tests share it). Its deadlines bound what a slow client can hold: the
// header within ReadHeaderTimeout, the body at BodyMinRate after
// BodyReadGrace (guardBody), the whole exchange within WriteTimeout.
// Serve it on a listener from WrapListener.
func (s *Server) HTTPServer() *http.Server {
	body := s.maxBodyTime()
	srv := &http.Server{
		Handler:           markHandling(s),
		ConnContext:       withAPIConn,
		ConnState:         trackIdle,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		// A backstop until a handler first reads the body; from then
		// guardBody sets the read deadline.
		ReadTimeout: s.cfg.ReadHeaderTimeout + body,
		// From the end of the header: the body, the work, the answer.
		WriteTimeout:   body + s.cfg.RequestTimeout + 30*time.Second,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: MaxHeaderBytes,
	}
	if s.log != nil {
		srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	}
	return srv
}

// maxBodyTime is how long the largest accepted body may take at the
// minimum rate.
func (s *Server) maxBodyTime() time.Duration {
	return s.cfg.BodyReadGrace + time.Duration(MaxBodyBytes/s.cfg.BodyMinRate)*time.Second
}
