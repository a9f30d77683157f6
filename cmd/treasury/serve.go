package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank"
	"github.com/opentreasury/treasury/bank/instant"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/console"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/eventstore"
	apihttp "github.com/opentreasury/treasury/http"
	"github.com/opentreasury/treasury/migrations"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/sandbox"
	"github.com/opentreasury/treasury/webhooks"
	"github.com/opentreasury/treasury/webhooks/jetstream"
)

func serveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the API and the log subscribers (migrates first unless TREASURY_MIGRATE=false)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			if cfg.DatabaseURL == "" {
				return errors.New("DATABASE_URL is not set (for a local sandbox, run `treasury dev` or `make run`)")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log := newLogger(cfg.LogLevel)
			pool, err := openPool(ctx, cfg.DatabaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return fmt.Errorf("listen on %s (TREASURY_ADDR): %w", cfg.Addr, err)
			}
			return serve(ctx, cfg, pool, ln, log)
		},
	}
}

// serve runs the API on ln until ctx ends. It starts answering at once:
// /healthz is up, and /v1 answers 503 until the migrations are applied
// (retried while the database is unreachable).
func serve(ctx context.Context, cfg config, pool *pgxpool.Pool, ln net.Listener, log *slog.Logger) error {
	if cfg.PprofAddr != "" {
		stopPprof, err := startPprof(cfg.PprofAddr, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopPprof()
	}
	var ready atomic.Bool
	switch {
	case cfg.schemaCurrent:
		ready.Store(true)
	case cfg.MigrateOnStart:
		go migrateUntilDone(ctx, pool, log, &ready)
	default:
		go waitUntilMigrated(ctx, pool, log, &ready)
	}
	bgPool, err := backgroundPool(ctx, pool, cfg.ReaderPartitions)
	if err != nil {
		ln.Close()
		return err
	}
	defer bgPool.Close()
	notifier := eventstore.NewNotifier(bgPool, log)
	go notifier.Run(eventstore.WithOrigin(ctx, eventstore.OriginNotify))
	a := app.New(pool, notifier, log)
	a.RoutingNumber = cfg.RoutingNumber
	if cfg.ReadYourWritesWait > 0 {
		a.ReadYourWritesWithin = cfg.ReadYourWritesWait
		a.Projected = eventstore.NewProgress(bgPool, projections.AsyncNames()...)
		go a.Projected.Run(eventstore.WithOrigin(ctx, eventstore.OriginProgress))
	}
	// The API's commands go at the pace the log's readers keep.
	var pacer *eventstore.Pacer // nil: no pacing
	if cfg.PaceMaxLag > 0 {
		pacer = eventstore.NewPacer(cfg.PaceMaxLag, paceMaxWait)
	}
	a.Pacer = pacer
	// The readers' own commands, on the background connections, unpaced.
	bg := *a
	bg.Pool = bgPool
	bg.Pacer = nil
	closeReplica, err := useReplica(ctx, cfg.ReplicaURL, a) // lists and exports, after bg's copy: the readers write
	if err != nil {
		ln.Close()
		return err
	}
	defer closeReplica()
	liveRails, closeRails, err := liveConnector(cfg, &bg, log)
	if err != nil {
		ln.Close()
		return err
	}
	defer closeRails()
	var forwarder *jetstream.Forwarder
	if cfg.NATSURL != "" {
		pub, closePub, err := jetstream.Connect(cfg.NATSURL, log)
		if err != nil {
			ln.Close()
			return fmt.Errorf("TREASURY_NATS_URL: %w", err)
		}
		defer closePub()
		forwarder = &jetstream.Forwarder{Pool: bgPool, Publisher: pub, Wake: notifier.SubscribeTo(eventstore.TopicPublicEvents), Log: log}
		log.Info("public events are forwarded to NATS JetStream", "stream", jetstream.StreamName, "subjects", "treasury.>")
	}
	parts := eventstore.Partitions(cfg.ReaderPartitions)
	leases := eventstore.NewLeases(bgPool, readerNames(cfg, parts), log)
	runWebhooks, err := newWebhooks(cfg, bgPool, &bg, notifier, pacer, parts, leases, log)
	if err != nil {
		ln.Close()
		return err
	}
	// Done once the leases are given back (or the readers never started):
	// the background pool must outlive that.
	leasesDone := make(chan struct{})
	go func() {
		defer close(leasesDone)
		runWhenReady(ctx, &ready, func() {
			// Plans made while the tables were small are made again as they grow.
			go (&eventstore.StatisticsKeeper{DB: bgPool, Log: log}).Run(ctx)
			startReaders(ctx, cfg, parts, leases, bgPool, &bg, a, notifier, pacer, forwarder, runWebhooks, liveRails, log)
			leases.Run(ctx) // until ctx ends; then the leases go back, so another replica reads at once
		})
	}()
	var achCutter apihttp.ACHCutter
	if liveRails.ACHOut != nil {
		achCutter = liveRails.ACHOut
	}
	web, err := console.New(console.Config{App: a, OperatorKey: cfg.OperatorKey})
	if err != nil {
		return err
	}
	api := apihttp.New(a, apihttp.Config{
		ACH: achCutter, LiveRails: liveRails.Rails(), Console: web,
		OperatorKey: cfg.OperatorKey, RateLimitOff: cfg.RateLimitOff, RateLimit: cfg.RateLimit, Replicas: leases.Replicas,
		Ready:   ready.Load,
		Pending: func(ctx context.Context) (bool, error) { return migrations.Pending(ctx, pool) },
		Collectors: append(append(roundTripsCollectors(pool), pacerCollectors(pacer)...),
			append(replicaCollectors(a.Replica), leasesCollector{leases})...),
	})
	if cfg.OperatorKey == "" {
		log.Warn("TREASURY_OPERATOR_KEY is not set: operator routes answer 401")
	}
	srv := api.HTTPServer()
	// Every request's context derives from this one, so the API's round
	// trips count as api. Not from ctx: SIGTERM must not cancel requests
	// that Shutdown lets finish.
	apiCtx := eventstore.WithOrigin(context.Background(), eventstore.OriginAPI)
	srv.BaseContext = func(net.Listener) context.Context { return apiCtx }
	ln = api.WrapListener(ln, withinFileLimit(cfg.Conns, log))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("treasury listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	select { // the leases given back before the background pool closes
	case <-leasesDone:
	case <-time.After(3 * time.Second):
	}
	return err
}

// fdReserve is the file descriptors kept for everything but API
// connections: the database pool, the pprof listener, logs, migrations.
const fdReserve = 256

// withinFileLimit lowers the overall connection cap below the process's
// open-file limit (Go raises the soft limit to the hard one at start), so
// that a full house of connections never makes accept fail with "too many
// open files", which would stall every client, /healthz included.
func withinFileLimit(l apihttp.ConnLimits, log *slog.Logger) apihttp.ConnLimits {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > math.MaxInt32 {
		return l
	}
	if room := int64(rl.Cur) - fdReserve; int64(l.MaxConns) > room {
		log.Warn("TREASURY_MAX_CONNS lowered to fit the open-file limit (raise it with ulimit -n)",
			"configured", l.MaxConns, "open_file_limit", rl.Cur, "max_conns", max(room, 1))
		l.MaxConns = int(max(room, 1))
	}
	return l
}

// startPprof serves net/http/pprof on addr (TREASURY_PPROF_ADDR), on a
// listener and a mux of its own: never on the API's port, never on
// http.DefaultServeMux (which importing net/http/pprof fills, and which
// nothing here serves). The returned function closes it at once, ending a
// profile being taken, so that it never holds up the service's shutdown.
func startPprof(addr string, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (TREASURY_PPROF_ADDR): %w", addr, err)
	}
	// No WriteTimeout: /debug/pprof/profile?seconds=N answers after N s.
	srv := &http.Server{Handler: pprofHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("pprof listener stopped", "error", err)
		}
	}()
	log.Info("pprof listening (TREASURY_PPROF_ADDR)", "addr", ln.Addr().String())
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() {
		log.Warn("the profiler listens beyond loopback: anyone who reaches it can read the process's internals", "addr", ln.Addr().String())
	}
	return func() {
		_ = srv.Close()
		<-done
	}, nil
}

// pprofHandler is net/http/pprof on its own mux: /debug/pprof/ (the index
// and every named profile: heap, allocs, goroutine, block, mutex, …),
// cmdline, profile (CPU), symbol and trace.
func pprofHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// runWhenReady starts the log's subscribers once the schema is current.
func runWhenReady(ctx context.Context, ready *atomic.Bool, start func()) {
	for !ready.Load() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
	}
	start()
}

func migrateUntilDone(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, ready *atomic.Bool) {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		n, err := migrations.Up(ctx, pool)
		if err == nil {
			log.Info("migrations current", "applied", n)
			ready.Store(true)
			return
		}
		log.Warn("migrations not applied yet; retrying", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// waitUntilMigrated keeps /v1 at 503 until someone else (treasury migrate)
// has brought the schema up to date: it only reads.
func waitUntilMigrated(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, ready *atomic.Bool) {
	warned := false
	for ctx.Err() == nil {
		pending, err := migrations.Pending(ctx, pool)
		if err == nil && !pending {
			ready.Store(true)
			return
		}
		if !warned {
			log.Warn("TREASURY_MIGRATE=false and the database is not migrated: /v1 answers 503 until `treasury migrate` runs", "error", err)
			warned = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// splitReaders are the readers split into TREASURY_READER_PARTITIONS
// parts: those whose work does not depend on the order across streams
// (across platforms, for the public events' readers).
func splitReaders(cfg config) []string {
	split := []string{app.KYBDeciderName, sandbox.SubscriptionName, webhooks.FanoutName}
	if cfg.NATSURL != "" {
		split = append(split, jetstream.CheckpointName)
	}
	return split
}

// readerNames are the leases of the readers a replica runs (see
// eventstore.Leases): the projections, the hash chain, and each part of
// the readers that are split.
func readerNames(cfg config, parts []eventstore.Partition) []string {
	names := append(projections.AsyncNames(), eventstore.ChainName)
	for _, base := range splitReaders(cfg) {
		for _, p := range parts {
			names = append(names, p.Name(base))
		}
	}
	return names
}

// startReaders starts the log's readers (each steps only while this
// replica holds its lease), the webhooks, and the rail connectors. The
// parts of the split readers are first brought to where the last other
// split of each stood (TREASURY_READER_PARTITIONS changed since: see
// eventstore.AlignSplit).
func startReaders(ctx context.Context, cfg config, parts []eventstore.Partition, leases *eventstore.Leases,
	bgPool *pgxpool.Pool, bg, a *app.App, notifier *eventstore.Notifier, pacer *eventstore.Pacer,
	forwarder *jetstream.Forwarder, runWebhooks func(context.Context), liveRails bank.Connector, log *slog.Logger) {
	for _, base := range splitReaders(cfg) {
		if err := eventstore.AlignSplit(ctx, bgPool, base, parts); err != nil {
			log.Warn("reader parts not aligned with the previous split; each new part starts where it would have", "error", err)
		}
	}
	if forwarder != nil {
		for _, p := range parts {
			f := *forwarder
			f.Partition, f.Lease = p, leases
			if p.Index > 0 {
				f.Wake = notifier.SubscribeTo(eventstore.TopicPublicEvents)
			}
			go f.Run(eventstore.WithOrigin(ctx, eventstore.OriginWebhooks))
		}
	}
	for _, s := range projections.AsyncSubscribers() {
		proj := projections.NewSubscription(s, bgPool, notifier.Subscribe(), log)
		proj.Pacer = pacer
		proj.Lease = leases
		proj.OnCommit = a.Projected.Kick // writes waiting to be readable
		if s.Name == projections.PublicEventsSubscription {
			proj.OnCommit = func() {
				a.Projected.Kick()
				notifier.NotifyOf(eventstore.TopicPublicEvents) // wake the webhook feed
			}
		}
		go proj.Run(eventstore.WithOrigin(ctx, eventstore.OriginProjections))
	}
	for _, p := range parts {
		kyb := bg.KYBDecider(notifier.Subscribe())
		kyb.Name, kyb.Partition, kyb.Lease = p.Name(kyb.Name), p, leases
		kyb.Pacer = pacer
		go kyb.Run(eventstore.WithOrigin(ctx, eventstore.OriginKYB))
	}
	chain := eventstore.ChainSubscription(bgPool, notifier.Subscribe())
	chain.Pacer = pacer
	chain.Lease = leases
	go chain.Run(eventstore.WithOrigin(ctx, eventstore.OriginChain))
	runWebhooks(eventstore.WithOrigin(ctx, eventstore.OriginWebhooks))
	sim := &sandbox.Simulator{App: bg, Pool: bgPool, Log: log, Pacer: pacer}
	sandboxRails := sandbox.Connector{Sim: sim, Wake: notifier.Subscribe, Parts: parts, Lease: leases}
	go sandboxRails.Run(eventstore.WithOrigin(ctx, eventstore.OriginSandbox))
	go liveRails.Run(eventstore.WithOrigin(ctx, eventstore.OriginBank))
	go bg.RunPaymentClock(ctx, time.Minute)
}

// newWebhooks builds the watermill fan-out (public events → deliveries,
// a feed per part) and the sender, and returns what runs them. Built
// before serve answers: a router that cannot be built stops serve, rather
// than leave the feed's leases held here with nothing to read them.
func newWebhooks(cfg config, pool *pgxpool.Pool, a *app.App, notifier *eventstore.Notifier, pacer *eventstore.Pacer,
	parts []eventstore.Partition, leases *eventstore.Leases, log *slog.Logger) (func(context.Context), error) {
	sender := &webhooks.Sender{Pool: pool, App: a, Log: log, Wake: notifier.SubscribeTo(eventstore.TopicDeliveries), AllowPrivate: cfg.WebhookAllowPriv}
	var feeds []*webhooks.FeedSubscriber
	for _, p := range parts {
		feeds = append(feeds, &webhooks.FeedSubscriber{Pool: pool, Wake: notifier.SubscribeTo(eventstore.TopicPublicEvents), Log: log, Pacer: pacer,
			Partition: p, Lease: leases})
	}
	delivered := func() { notifier.NotifyOf(eventstore.TopicDeliveries) }
	router, err := webhooks.NewRouter(feeds, &webhooks.Fanout{Pool: pool, Delivered: delivered, Sender: sender}, log)
	if err != nil {
		return nil, fmt.Errorf("webhook router: %w", err)
	}
	// The fan-out handler works on its message's context, not the router's: label it too.
	router.AddMiddleware(func(h message.HandlerFunc) message.HandlerFunc {
		return func(msg *message.Message) ([]*message.Message, error) {
			msg.SetContext(eventstore.WithOrigin(msg.Context(), eventstore.OriginWebhooks))
			return h(msg)
		}
	})
	return func(ctx context.Context) {
		go func() {
			if err := router.Run(ctx); err != nil && ctx.Err() == nil {
				log.Error("webhook router stopped", "error", err)
			}
		}()
		go sender.Run(ctx)
	}, nil
}

// achOutbound is live ACH's connector to the sponsor bank, or nil when
// TREASURY_ACH_OUTBOX is unset.
func achOutbound(cfg config, a *app.App, log *slog.Logger) (*bank.ACHOutbound, error) {
	if cfg.ACH == nil {
		return nil, nil
	}
	folder, err := transport.Open(cfg.ACH.Outbox, cfg.ACH.SFTP)
	if err != nil {
		return nil, fmt.Errorf("TREASURY_ACH_OUTBOX: %w", err)
	}
	log.Info("live ACH files go to the outbox", "outbox", folder.String())
	return &bank.ACHOutbound{App: a, Outbox: folder, Log: log, Originator: ach.Originator{
		RoutingNumber: cfg.RoutingNumber, Origin: cfg.ACH.Origin, CompanyID: cfg.ACH.CompanyID, CompanyName: cfg.ACH.CompanyName}}, nil
}

// achInbound reads the files the bank sends, or is nil when
// TREASURY_ACH_INBOX is unset.
func achInbound(cfg config, a *app.App, log *slog.Logger) (*bank.ACHInbound, error) {
	if cfg.ACH == nil || cfg.ACH.Inbox == "" {
		return nil, nil
	}
	folder, err := transport.Open(cfg.ACH.Inbox, cfg.ACH.SFTP)
	if err != nil {
		return nil, fmt.Errorf("TREASURY_ACH_INBOX: %w", err)
	}
	log.Info("the bank's ACH files are read from the inbox", "inbox", folder.String())
	return &bank.ACHInbound{App: a, Inbox: folder, Log: log, Every: cfg.ACH.InboxPoll}, nil
}

// liveConnector is live mode's rail connector, with the parts the
// configuration sets, and what closes their folders.
func liveConnector(cfg config, a *app.App, log *slog.Logger) (bank.Connector, func(), error) {
	var c bank.Connector
	closeAll := func() {
		if c.ACHOut != nil {
			c.ACHOut.Outbox.Close()
		}
		if c.ACHIn != nil {
			c.ACHIn.Inbox.Close()
		}
	}
	var err error
	if c.ACHOut, err = achOutbound(cfg, a, log); err != nil {
		return c, closeAll, err
	}
	if c.ACHIn, err = achInbound(cfg, a, log); err != nil {
		closeAll()
		return c, func() {}, err
	}
	if cfg.Instant != nil {
		log.Info("live RTP and FedNow payments go to the bank's instant-payments API", "url", cfg.Instant.URL)
		c.Instant = &bank.InstantOutbound{App: a, Log: log, RoutingNumber: cfg.RoutingNumber,
			Client: &instant.Client{BaseURL: cfg.Instant.URL, Auth: cfg.Instant.Auth}}
	}
	return c, closeAll, nil
}
