// Package http is Treasury's REST API: echo routes, authentication,
// idempotency, errors and pagination, one file per resource. Handlers only
// decode, call app or projections, and encode.
package http

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sync/singleflight"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/projections/queries"
)

// Config is what the API needs beyond the app.
type Config struct {
	OperatorKey  string     // TREASURY_OPERATOR_KEY; empty disables operator routes
	RateLimitOff bool       // TREASURY_RATE_LIMIT=off
	RateLimit    *RateLimit // TREASURY_RATE_LIMIT=N:B, over the defaults
	// Replicas, if set, is how many replicas serve the API (see
	// eventstore.Leases.Replicas): each enforces its share of the limits.
	Replicas func() int
	// RequestTimeout bounds each request's work; default 30 s.
	RequestTimeout time.Duration
	// Pending, if set, tells /readyz whether migrations wait to be applied
	// (cmd wires migrations.Pending: http does not import migrations).
	Pending func(context.Context) (bool, error)
	// Ready, if set, gates /v1 until it returns true (migrations applied).
	Ready func() bool
	// ReadHeaderTimeout bounds the reading of a request's header; default 10 s.
	ReadHeaderTimeout time.Duration
	// A request body must arrive within BodyReadGrace plus one second per
	// BodyMinRate bytes; defaults DefaultBodyReadGrace, DefaultBodyMinRate.
	BodyReadGrace time.Duration
	BodyMinRate   int
	// Collectors are more metrics /metrics exposes (cmd adds the
	// database round trips: http does not see the pool's tracer).
	Collectors []prometheus.Collector
	// ACH cuts live ACH files for POST /operator/rails/ach/files; nil
	// when live ACH is not configured (cmd wires the bank connector:
	// http does not import it).
	ACH ACHCutter
	// LiveRails says, for /readyz, which live rails are connected and why
	// not the others.
	LiveRails []app.RailStatus
	// Console, if set, serves /console and everything under it (cmd
	// wires the console package: http does not import it).
	Console http.Handler
}

// ACHCutter cuts the live ACH files due now, standard payments included,
// writes them to the outbox and returns them.
type ACHCutter interface {
	Cut(ctx context.Context, standard bool) ([]ach.FileCreated, error)
}

// Server is the HTTP API.
type Server struct {
	echo     *echo.Echo
	app      *app.App
	pool     *pgxpool.Pool
	cfg      Config
	log      *slog.Logger
	metrics  *metrics
	registry *prometheus.Registry
	limiter  *limiter
	creds    *credentialCache
	lookups  singleflight.Group // lookUpCredentialShared's
	// credentialByHash looks a key up by its secret's hash.
	credentialByHash func(ctx context.Context, hash string) (queries.Credential, bool, error)
}

// New builds the API over an App.
func New(a *app.App, cfg Config) *Server {
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.ReadHeaderTimeout == 0 {
		cfg.ReadHeaderTimeout = 10 * time.Second
	}
	if cfg.BodyReadGrace == 0 {
		cfg.BodyReadGrace = DefaultBodyReadGrace
	}
	if cfg.BodyMinRate == 0 {
		cfg.BodyMinRate = DefaultBodyMinRate
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cfg.Collectors...)
	s := &Server{
		echo: echo.New(), app: a, pool: a.Pool, cfg: cfg, log: a.Log,
		metrics: newMetrics(reg), registry: reg, limiter: newLimiter(cfg.RateLimitOff, cfg.RateLimit, cfg.Replicas),
		creds: newCredentialCache(),
	}
	s.credentialByHash = func(ctx context.Context, hash string) (queries.Credential, bool, error) {
		return queries.CredentialByHash(ctx, s.pool, hash)
	}
	s.echo.HideBanner, s.echo.HidePort = true, true
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.JSONSerializer = jsonSerializer{}
	s.echo.Use(s.observe, withRequestID, s.guardBody, s.recoverPanics, s.withTimeout, s.untilReady, limitBody, validQuery)
	s.routes()
	return s
}

// ServeHTTP makes the Server an http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.echo.ServeHTTP(w, r) }

// Routes lists "METHOD path" of every route (for the OpenAPI test).
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

func (s *Server) withTimeout(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), s.cfg.RequestTimeout)
		defer cancel()
		c.SetRequest(c.Request().WithContext(ctx))
		return next(c)
	}
}

// untilReady answers 503 on /v1 while the database is not migrated yet.
func (s *Server) untilReady(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.Ready != nil && !s.cfg.Ready() && strings.HasPrefix(c.Request().URL.Path, "/v1/") {
			return &domain.Error{Code: domain.CodeUnavailable, Message: "the service is starting; retry shortly"}
		}
		return next(c)
	}
}

func (s *Server) routes() {
	e := s.echo
	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/metrics", s.metricsHandler)

	if s.cfg.Console != nil {
		console := echo.WrapHandler(s.cfg.Console)
		e.Any("/console", console)
		e.Any("/console/*", console)
	}

	v1 := e.Group("/v1")
	v1.GET("/openapi.json", s.openAPI)

	operator := []echo.MiddlewareFunc{s.authenticate, operatorOnly, s.rateLimit}
	v1.POST("/platforms", s.createPlatform, operator...)
	v1.GET("/operator/platforms", s.listPlatforms, operator...)
	v1.GET("/operator/platforms/:id", s.getPlatform, operator...)
	v1.PATCH("/operator/platforms/:id", s.configurePlatform, operator...)
	v1.POST("/operator/platforms/:id/approve", s.approvePlatform, operator...)
	v1.POST("/operator/platforms/:id/enable-live", s.enableLive, operator...)
	v1.POST("/operator/platforms/:id/fund", s.fundPlatform, operator...)
	v1.POST("/operator/kyb/:id/decision", s.operatorDecideKYB, operator...)
	v1.GET("/operator/rails/ach/files", s.listACHFiles, operator...)
	v1.POST("/operator/rails/ach/files", s.cutACHFiles, operator...)

	platform := []echo.MiddlewareFunc{s.authenticate, platformOnly, s.rateLimit}
	v1.GET("/platform", s.getOwnPlatform, platform...)
	v1.GET("/platform/settings", s.getSettings, platform...)
	v1.PATCH("/platform/settings", s.updateSettings, platform...)
	v1.GET("/platform/revenue-share", s.revenueShare, platform...)
	v1.POST("/platform/api-keys", s.createAPIKey, platform...)
	v1.GET("/platform/api-keys", s.listAPIKeys, platform...)
	v1.DELETE("/platform/api-keys/:id", s.revokeAPIKey, platform...)
	v1.POST("/platform/api-keys/:id/roll", s.rollAPIKey, platform...)

	v1.POST("/virtual-accounts", s.openVirtualAccount, platform...)
	v1.GET("/virtual-accounts", s.listVirtualAccounts, platform...)
	// The hot reads check a cached key in their own round trip (s.reads).
	checkedRead := []echo.MiddlewareFunc{s.authenticateInCommand, platformOnly, s.rateLimit}
	v1.GET("/virtual-accounts/:id", s.getVirtualAccount, checkedRead...)
	v1.GET("/virtual-accounts/:id/balance", s.getBalance, checkedRead...)
	v1.GET("/virtual-accounts/:id/transactions", s.listTransactions, checkedRead...)
	v1.GET("/virtual-accounts/:id/statements/:month", s.getStatement, platform...)
	v1.POST("/virtual-accounts/:id/freeze", s.freezeVirtualAccount, platform...)
	v1.POST("/virtual-accounts/:id/unfreeze", s.unfreezeVirtualAccount, platform...)
	v1.POST("/virtual-accounts/:id/close", s.closeVirtualAccount, platform...)

	v1.GET("/ledger/accounts", s.listLedgerAccounts, platform...)
	v1.GET("/ledger/entries", s.listLedgerEntries, checkedRead...)
	v1.POST("/ledger/entries", s.postJournalEntry, platform...)
	v1.GET("/ledger/exports", s.exportLedger, platform...)
	v1.GET("/ledger/journal-entries", s.listJournalEntries, platform...)
	v1.GET("/ledger/journal-entries/:id", s.getJournalEntry, platform...)

	// The payment's command checks the key itself (the hot path's round trips).
	v1.POST("/payments", s.createPayment, s.authenticateInCommand, platformOnly, s.rateLimit)
	v1.GET("/payments", s.listPayments, checkedRead...)
	v1.GET("/payments/:id", s.getPayment, checkedRead...)
	v1.POST("/payments/:id/cancel", s.cancelPayment, platform...)
	v1.POST("/payments/:id/approve", s.approvePayment, platform...)
	v1.POST("/payments/:id/deny", s.denyPayment, platform...)

	v1.POST("/counterparties", s.createCounterparty, platform...)
	v1.GET("/counterparties", s.listCounterparties, platform...)
	v1.GET("/counterparties/:id", s.getCounterparty, platform...)
	v1.DELETE("/counterparties/:id", s.deleteCounterparty, platform...)
	v1.POST("/counterparties/:id/verify", s.verifyCounterparty, platform...)

	v1.POST("/book-transfers", s.createBookTransfer, platform...)
	v1.GET("/book-transfers", s.listBookTransfers, platform...)
	v1.GET("/book-transfers/:id", s.getBookTransfer, platform...)

	v1.POST("/kyb", s.submitKYB, platform...)
	v1.GET("/kyb", s.listKYB, platform...)
	v1.GET("/kyb/:id", s.getKYB, platform...)

	v1.POST("/webhooks", s.createWebhook, platform...)
	v1.GET("/webhooks", s.listWebhooks, platform...)
	v1.GET("/webhooks/:id", s.getWebhook, platform...)
	v1.PATCH("/webhooks/:id", s.updateWebhook, platform...)
	v1.DELETE("/webhooks/:id", s.deleteWebhook, platform...)
	v1.POST("/webhooks/:id/rotate-secret", s.rotateWebhookSecret, platform...)
	v1.POST("/webhooks/:id/test", s.testWebhook, platform...)
	v1.POST("/webhooks/:id/replay", s.replayWebhook, platform...)
	v1.GET("/webhooks/:id/deliveries", s.listDeliveries, platform...)
	v1.POST("/webhooks/:id/deliveries/:delivery_id/retry", s.retryDelivery, platform...)

	v1.GET("/events", s.listEvents, platform...)
	v1.GET("/events/:id", s.getEvent, platform...)

	sandbox := []echo.MiddlewareFunc{s.authenticate, platformOnly, sandboxOnly, s.rateLimit}
	v1.POST("/simulations/inbound-transfers", s.simulateInboundTransfer, sandbox...)
	v1.POST("/simulations/kyb/:id/decision", s.simulateKYBDecision, sandbox...)
	v1.POST("/simulations/payments/:id/complete", s.simulatePaymentComplete, sandbox...)
	v1.POST("/simulations/payments/:id/fail", s.simulatePaymentFail, sandbox...)
	v1.POST("/simulations/payments/:id/release", s.simulatePaymentRelease, sandbox...)
}

// meta is the event metadata of a request.
func meta(c echo.Context) app.Meta {
	m := app.Meta{RequestID: requestID(c)}
	if p := principalOf(c); p != nil {
		if p.operator {
			m.Actor = "operator"
		} else {
			m.Actor = p.keyID
		}
	}
	return m
}
