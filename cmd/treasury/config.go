package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
	apihttp "github.com/opentreasury/treasury/http"
)

// config is everything read from the environment (API.md §9).
type config struct {
	DatabaseURL      string
	Addr             string
	OperatorKey      string
	RoutingNumber    string
	WebhookAllowPriv bool
	RateLimitOff     bool
	RateLimit        *apihttp.RateLimit
	LogLevel         slog.Level
	MigrateOnStart   bool
	// schemaCurrent says the caller has just brought the schema up to
	// date (`treasury dev`), so /v1 answers from the first request: the
	// curl commands dev prints before serving must work as soon as they
	// are read, not answer 503 until a background check has run.
	schemaCurrent bool
	// PprofAddr, when set (TREASURY_PPROF_ADDR, e.g. 127.0.0.1:6060),
	// serves net/http/pprof on a listener of its own; unset, there is none.
	PprofAddr string
	// ReadYourWritesWait bounds how long a write waits for the lists to
	// show it (TREASURY_READ_YOUR_WRITES_WAIT, a duration; 0 answers at
	// once, without read-your-writes).
	ReadYourWritesWait time.Duration
	// PaceMaxLag is how far behind the log's readers may fall before the
	// API's commands wait for them (TREASURY_PACE_MAX_LAG; 0 turns pacing
	// off).
	PaceMaxLag time.Duration
	// Conns caps the API's open connections (TREASURY_MAX_CONNS,
	// TREASURY_MAX_CONNS_PER_IP; a per-address cap of 0 is none).
	Conns apihttp.ConnLimits
	// ACH is live ACH's connection to the sponsor bank (API.md §10); nil
	// when TREASURY_ACH_OUTBOX is unset (live ACH payments stay pending).
	ACH *achConfig
	// NATSURL, when set (TREASURY_NATS_URL), turns on the forwarder of the
	// public events to NATS JetStream (issue #20).
	NATSURL string
	// ReaderPartitions is how many parts the readers that may be split
	// (the webhook feed, the NATS forwarder, the sandbox's scheduler, the
	// KYB decider) are split into, each with its own checkpoint and lease
	// (TREASURY_READER_PARTITIONS, 1 to 64, default 1: one machine reads
	// fastest whole; with several replicas, at least their number).
	ReaderPartitions int
	// Instant is live RTP's and FedNow's connection to the bank's
	// instant-payments API (API.md §10); nil when TREASURY_INSTANT_URL is
	// unset (live RTP and FedNow payments stay pending).
	Instant *instantConfig
	// ReplicaURL, when set (DATABASE_REPLICA_URL), is a streaming replica
	// that serves lists and exports (replica.go).
	ReplicaURL string
}

// instantConfig is where live instant payments are sent.
type instantConfig struct {
	URL  string // TREASURY_INSTANT_URL: https://…, or http:// to a loopback address (a local bank-sim)
	Auth string // TREASURY_INSTANT_AUTH: the Authorization header's value
}

// loadInstant reads the instant-payments API's settings. Payments leave
// over TLS: plain http is taken only to this machine, where bank-sim runs.
func loadInstant() (*instantConfig, error) {
	raw := strings.TrimSpace(os.Getenv("TREASURY_INSTANT_URL"))
	if raw == "" {
		if os.Getenv("TREASURY_INSTANT_AUTH") != "" {
			return nil, fmt.Errorf("TREASURY_INSTANT_AUTH is set without TREASURY_INSTANT_URL")
		}
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("TREASURY_INSTANT_URL must be an https:// address with no credentials, query or fragment, not %q", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, fmt.Errorf("TREASURY_INSTANT_URL %q: plain http only to a loopback address (a local bank-sim); the bank's API is https://", raw)
		}
	default:
		return nil, fmt.Errorf("TREASURY_INSTANT_URL must be an https:// address, not %q", raw)
	}
	auth := os.Getenv("TREASURY_INSTANT_AUTH")
	if strings.ContainsAny(auth, "\r\n") {
		return nil, fmt.Errorf("TREASURY_INSTANT_AUTH must be one line")
	}
	return &instantConfig{URL: strings.TrimRight(raw, "/"), Auth: auth}, nil
}

// achConfig is where live ACH files go and who sends them.
type achConfig struct {
	Outbox      string        // TREASURY_ACH_OUTBOX: file:///path or sftp://user@host:port/path
	Inbox       string        // TREASURY_ACH_INBOX, the same forms; empty: nothing is read from the bank
	InboxPoll   time.Duration // TREASURY_ACH_INBOX_POLL: how often the inbox is read
	Origin      string        // TREASURY_ACH_ORIGIN, 10 characters
	CompanyID   string        // TREASURY_ACH_COMPANY_ID, up to 10
	CompanyName string        // TREASURY_ACH_COMPANY_NAME, up to 16
	SFTP        transport.SFTPConfig
}

// loadACH reads live ACH's settings: none without an outbox; with one,
// the originator's settings are required.
func loadACH() (*achConfig, error) {
	outbox := strings.TrimSpace(os.Getenv("TREASURY_ACH_OUTBOX"))
	if outbox == "" {
		if strings.TrimSpace(os.Getenv("TREASURY_ACH_INBOX")) != "" {
			return nil, fmt.Errorf("TREASURY_ACH_INBOX is set without TREASURY_ACH_OUTBOX: the inbox holds the bank's answers to the files sent from the outbox")
		}
		return nil, nil
	}
	c := &achConfig{Outbox: outbox, Inbox: strings.TrimSpace(os.Getenv("TREASURY_ACH_INBOX")), Origin: os.Getenv("TREASURY_ACH_ORIGIN"), CompanyID: os.Getenv("TREASURY_ACH_COMPANY_ID"),
		CompanyName: os.Getenv("TREASURY_ACH_COMPANY_NAME"),
		SFTP:        transport.SFTPConfig{KeyFile: os.Getenv("TREASURY_SFTP_KEY_FILE"), KnownHostsFile: os.Getenv("TREASURY_SFTP_KNOWN_HOSTS")}}
	poll, err := durationSetting("TREASURY_ACH_INBOX_POLL", time.Minute, time.Hour, "from 1s to 1h")
	if err != nil || poll < time.Second {
		return nil, fmt.Errorf("TREASURY_ACH_INBOX_POLL must be a duration from 1s to 1h, not %q", os.Getenv("TREASURY_ACH_INBOX_POLL"))
	}
	c.InboxPoll = poll
	for _, f := range []struct {
		name, value string
		min, max    int
	}{{"TREASURY_ACH_ORIGIN", c.Origin, 10, 10}, {"TREASURY_ACH_COMPANY_ID", c.CompanyID, 1, 10},
		{"TREASURY_ACH_COMPANY_NAME", c.CompanyName, 1, 16}} {
		if len(f.value) < f.min || len(f.value) > f.max || !printableASCII(f.value) {
			return nil, fmt.Errorf("%s must be %d to %d printable ASCII characters when TREASURY_ACH_OUTBOX is set, not %q", f.name, f.min, f.max, f.value)
		}
	}
	return c, nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func loadConfig() (config, error) {
	c := config{
		DatabaseURL:   os.Getenv("DATABASE_URL"),
		Addr:          envOr("TREASURY_ADDR", ":8080"),
		OperatorKey:   os.Getenv("TREASURY_OPERATOR_KEY"),
		RoutingNumber: envOr("TREASURY_ROUTING_NUMBER", app.DefaultRoutingNumber),
		PprofAddr:     strings.TrimSpace(os.Getenv("TREASURY_PPROF_ADDR")),
		NATSURL:       strings.TrimSpace(os.Getenv("TREASURY_NATS_URL")),
	}
	if c.OperatorKey != "" && len(c.OperatorKey) < 32 {
		return c, fmt.Errorf("TREASURY_OPERATOR_KEY must be at least 32 characters")
	}
	var err error
	// Unset means migrate; any spelling of false (0, FALSE, f) skips it, and
	// anything else is refused rather than guessed.
	migrate, err := envBool("TREASURY_MIGRATE")
	c.MigrateOnStart = os.Getenv("TREASURY_MIGRATE") == "" || migrate
	if err != nil {
		return c, err
	}
	if c.WebhookAllowPriv, err = envBool("TREASURY_WEBHOOK_ALLOW_PRIVATE"); err != nil {
		return c, err
	}
	switch rl := strings.TrimSpace(os.Getenv("TREASURY_RATE_LIMIT")); rl {
	case "", "default":
	case "off":
		c.RateLimitOff = true
	default:
		per, burst, ok := strings.Cut(rl, ":")
		p, err1 := strconv.Atoi(per)
		b, err2 := strconv.Atoi(burst)
		if !ok || err1 != nil || err2 != nil || p < 1 || b < 1 {
			return c, fmt.Errorf("TREASURY_RATE_LIMIT must be off or PER_SECOND:BURST (e.g. 100:200), not %q", rl)
		}
		c.RateLimit = &apihttp.RateLimit{PerSecond: p, Burst: b}
	}
	if err := c.LogLevel.UnmarshalText([]byte(envOr("TREASURY_LOG_LEVEL", "info"))); err != nil {
		return c, fmt.Errorf("TREASURY_LOG_LEVEL must be debug, info, warn or error")
	}
	if c.PprofAddr != "" {
		if err := checkPprofAddr(c.PprofAddr, c.Addr); err != nil {
			return c, err
		}
	}
	if c.ReadYourWritesWait, err = durationSetting("TREASURY_READ_YOUR_WRITES_WAIT", app.DefaultReadYourWritesWithin,
		time.Minute, "from 0s to 1m (e.g. 5s)"); err != nil {
		return c, err
	}
	if c.PaceMaxLag, err = durationSetting("TREASURY_PACE_MAX_LAG", defaultPaceMaxLag,
		10*time.Second, "from 0s (no pacing) to 10s (e.g. 150ms)"); err != nil {
		return c, err
	}
	if c.Conns, err = connLimits(); err != nil {
		return c, err
	}
	if c.ReaderPartitions, err = readerPartitions(); err != nil {
		return c, err
	}
	if !rails.ValidABA(c.RoutingNumber) {
		return c, fmt.Errorf("TREASURY_ROUTING_NUMBER %q is not a 9-digit ABA routing number with a valid checksum", c.RoutingNumber)
	}
	if c.Instant, err = loadInstant(); err != nil {
		return c, err
	}
	if c.ACH, err = loadACH(); err != nil {
		return c, err
	}
	if c.ReplicaURL, err = replicaURL(); err != nil {
		return c, err
	}
	return c, nil
}

// readerPartitions reads TREASURY_READER_PARTITIONS.
func readerPartitions() (int, error) {
	v := strings.TrimSpace(os.Getenv("TREASURY_READER_PARTITIONS"))
	if v == "" {
		return 1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 64 {
		return 0, fmt.Errorf("TREASURY_READER_PARTITIONS %q must be a number from 1 to 64", v)
	}
	return n, nil
}

// connLimits reads TREASURY_MAX_CONNS (a positive number) and
// TREASURY_MAX_CONNS_PER_IP (a positive number, or off behind a proxy,
// where every connection comes from the proxy's address).
func connLimits() (apihttp.ConnLimits, error) {
	l := apihttp.ConnLimits{MaxConns: apihttp.DefaultMaxConns, MaxConnsPerIP: apihttp.DefaultMaxConnsPerIP}
	if v := strings.TrimSpace(os.Getenv("TREASURY_MAX_CONNS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return l, fmt.Errorf("TREASURY_MAX_CONNS must be a positive number of connections, not %q", v)
		}
		l.MaxConns = n
	}
	switch v := strings.TrimSpace(os.Getenv("TREASURY_MAX_CONNS_PER_IP")); v {
	case "":
	case "off":
		l.MaxConnsPerIP = 0
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return l, fmt.Errorf("TREASURY_MAX_CONNS_PER_IP must be a positive number of connections or off, not %q", v)
		}
		l.MaxConnsPerIP = n
	}
	return l, nil
}

// checkPprofAddr refuses a TREASURY_PPROF_ADDR that is not HOST:PORT, or
// whose port is the API's: the profiler never shares the API's listener.
func checkPprofAddr(addr, apiAddr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("TREASURY_PPROF_ADDR must be HOST:PORT (e.g. 127.0.0.1:6060), not %q: %v", addr, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("TREASURY_PPROF_ADDR %q: the port must be a number from 0 to 65535", addr)
	}
	if _, apiPort, err := net.SplitHostPort(apiAddr); err == nil && n != 0 {
		if m, err := strconv.ParseUint(apiPort, 10, 16); err == nil && m == n {
			return fmt.Errorf("TREASURY_PPROF_ADDR %q uses the API's port (TREASURY_ADDR %q): give the profiler a port of its own", addr, apiAddr)
		}
	}
	return nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func envBool(name string) (bool, error) {
	v := os.Getenv(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s must be true or false", name)
	}
	return b, nil
}

func newLogger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// openPool connects with settings that keep transactions short: a
// transaction left idle holds back every log reader, so PostgreSQL ends it.
func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["application_name"] = "treasury"
	rp["idle_in_transaction_session_timeout"] = "60000"
	if cfg.MaxConns < 16 {
		cfg.MaxConns = 16
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	cfg.ConnConfig.Tracer = &eventstore.RoundTrips{} // treasury_db_round_trips_total, by origin
	return pgxpool.NewWithConfig(ctx, cfg)
}

// backgroundConns is the size of the pool of the log's readers, the
// sandbox settler and the webhook sender: a connection for each
// subscription's step (a second one while the projections' and the hash
// chain's read ahead, and the KYB decider's command beside its step), the
// feed and the fan-out, the progress poller, the notifier, the settler's
// workers and its claim, the sender's claim and records, with room.
const backgroundConns = 24

// backgroundPool opens the derived side's own connections, with api's
// settings. Sharing api's pool, the readers and the settler queued behind
// every waiting request for a connection, and fell seconds behind the
// commands whenever the clients outnumbered the pool.
// Each part of a split reader beyond the first (TREASURY_READER_PARTITIONS)
// adds four readers that may step at once, and a connection each.
func backgroundPool(ctx context.Context, api *pgxpool.Pool, partitions int) (*pgxpool.Pool, error) {
	cfg := api.Config()
	cfg.ConnConfig.RuntimeParams["application_name"] = "treasury-background"
	cfg.MaxConns = int32(backgroundConns + 4*(max(partitions, 1)-1))
	cfg.MinConns = 0
	return pgxpool.NewWithConfig(ctx, cfg)
}

// The pacer's bounds: the API's commands wait while a reader of the log
// is more than TREASURY_PACE_MAX_LAG (default defaultPaceMaxLag) behind,
// each at most paceMaxWait. A reader's lag overshoots the bound by about
// a batch: at 150 ms the slowest reader's lag p99 stays under 250 ms at
// 64 clients, for the same payments a second as at 200 ms (docs/performance.md,
// Performance).
const (
	defaultPaceMaxLag = 150 * time.Millisecond
	paceMaxWait       = time.Second
)

// durationSetting reads the duration in the variable name: def when unset,
// an error that names the variable when it is not a duration from 0 to
// most (which says, in words, what is taken).
func durationSetting(name string, def, most time.Duration, what string) (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > most {
		return 0, fmt.Errorf("%s must be a duration %s, not %q", name, what, v)
	}
	return d, nil
}
