package http

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opentreasury/treasury/app"
)

// GET /healthz: the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// GET /readyz: the database is reachable and the migrations are current.
func (s *Server) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.pool.Ping(ctx); err != nil {
		c.Response().Header().Set("Retry-After", "1")
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
	}
	pending, err := false, error(nil)
	if s.cfg.Pending != nil {
		pending, err = s.cfg.Pending(ctx)
	}
	if err != nil || pending {
		c.Response().Header().Set("Retry-After", "1")
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "migrations pending"})
	}
	if s.cfg.Ready != nil && !s.cfg.Ready() {
		// Ready only once /v1 is: its gate opens just after the migrations.
		c.Response().Header().Set("Retry-After", "1")
		return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "starting"})
	}
	return c.JSON(http.StatusOK, readiness{Status: "ready", LiveRails: s.cfg.LiveRails, ReadReplica: s.replicaState(ctx)})
}

// replicaState is the read replica's state for /readyz: "standby" when it
// answers as one, else why not (the primary serves the lists meanwhile,
// so the service is ready either way); empty without a replica.
func (s *Server) replicaState(ctx context.Context) string {
	if s.app.Replica == nil {
		return ""
	}
	// Briefly: an unreachable replica must not make /readyz slow. Its
	// error is not shown (it names hosts); the service logs it.
	ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := s.app.Replica.Check(ctx); err != nil {
		return "unavailable (lists are read on the primary)"
	}
	return "standby"
}

// readiness is /readyz's answer when the service is ready: it also says
// which live rails are connected (a live payment on one that is not stays
// pending).
type readiness struct {
	Status    string           `json:"status"`
	LiveRails []app.RailStatus `json:"live_rails,omitempty"`
	// ReadReplica is DATABASE_REPLICA_URL's state, when it is set.
	ReadReplica string `json:"read_replica,omitempty"`
}

// GET /metrics: Prometheus exposition.
func (s *Server) metricsHandler(c echo.Context) error {
	promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
