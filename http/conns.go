package http

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of the connection caps (TREASURY_MAX_CONNS and
// TREASURY_MAX_CONNS_PER_IP). One address may hold a sixteenth of the
// whole, so that a few stalled or greedy clients cannot take every slot.
const (
	DefaultMaxConns      = 4096
	DefaultMaxConnsPerIP = 256
)

// ConnLimits caps the open connections of a listener; 0 is no cap.
type ConnLimits struct {
	MaxConns      int // overall
	MaxConnsPerIP int // per client address (turn it off behind a proxy)
}

// WrapListener caps the open connections of ln, overall and per client
// address, and makes net/http's own error answers (malformed requests,
// headers too large) JSON like every other answer (serve it with
// Server.HTTPServer, whose hooks tell a handler's response from those
// answers). A connection over a cap
// is closed at once, before anything is read: waiting in accept would keep
// everyone else waiting too.
func WrapListener(ln net.Listener, limits ConnLimits, log *slog.Logger) net.Listener {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &capListener{Listener: ln, limits: limits, log: log, perIP: map[netip.Addr]int{}}
}

// WrapListener is the package's WrapListener that also counts, on the
// server's /metrics, the connections its caps refused
// (treasury_http_connections_refused_total{cap="overall"|"per_address"}).
func (s *Server) WrapListener(ln net.Listener, limits ConnLimits) net.Listener {
	l := WrapListener(ln, limits, s.log).(*capListener)
	l.refusedTotal = s.metrics.connsRefused
	return l
}

type capListener struct {
	net.Listener
	limits       ConnLimits
	log          *slog.Logger
	refusedTotal *prometheus.CounterVec // nil: not counted

	mu         sync.Mutex
	open       int
	perIP      map[netip.Addr]int
	refused    int
	lastWarned time.Time
}

func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c.RemoteAddr())
		if !l.acquire(ip) {
			_ = c.Close()
			continue
		}
		return &apiConn{Conn: c, log: l.log, release: func() { l.release(ip) }}, nil
	}
}

// acquire takes a slot for a connection from ip, or reports there is none.
func (l *capListener) acquire(ip netip.Addr) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	overall := l.limits.MaxConns > 0 && l.open >= l.limits.MaxConns
	perIP := l.limits.MaxConnsPerIP > 0 && l.perIP[ip] >= l.limits.MaxConnsPerIP
	if overall || perIP {
		l.noteRefusedLocked(ip, overall)
		return false
	}
	l.open++
	l.perIP[ip]++
	return true
}

func (l *capListener) release(ip netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
}

// noteRefusedLocked logs refusals at most every 10 s, with their count: a
// flood must not become a flood of log lines.
func (l *capListener) noteRefusedLocked(ip netip.Addr, overall bool) {
	if l.refusedTotal != nil {
		label := "per_address"
		if overall {
			label = "overall"
		}
		l.refusedTotal.WithLabelValues(label).Inc()
	}
	l.refused++
	if time.Since(l.lastWarned) < 10*time.Second {
		return
	}
	cap := "TREASURY_MAX_CONNS_PER_IP"
	if overall {
		cap = "TREASURY_MAX_CONNS"
	}
	l.log.Warn("connections refused: too many open", "refused", l.refused, "cap", cap,
		"client_ip", ip.String(), "open", l.open, "open_from_client", l.perIP[ip])
	l.refused, l.lastWarned = 0, time.Now()
}

// clientIP is the client a connection counts as (clientKey of its peer);
// the zero Addr for a listener without addresses (a Unix socket).
func clientIP(a net.Addr) netip.Addr {
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return clientKey(ap.Addr())
	}
	return netip.Addr{}
}

// clientKey is the one notion of "a client" that the per-address caps
// count by (connections here, failed authentications in ratelimit.go):
// an IPv4 address (IPv4-mapped IPv6 unmapped), or an IPv6 address's /64,
// which one host usually has whole — counting by /128 would give such a
// host 2^64 quotas.
func clientKey(a netip.Addr) netip.Addr {
	a = a.Unmap()
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().Addr()
	}
	return a
}

// apiConn is an accepted connection: it frees its slot when closed and
// rewrites net/http's plain-text error answers into the API's JSON.
type apiConn struct {
	net.Conn
	log     *slog.Logger
	release func()
	once    sync.Once
	// handling is set while a handler's response is being written (from
	// the handler's start until the connection is idle again, which is
	// after net/http's last flush of it): net/http's own error answers
	// come only outside a response, and a response's bytes (a CSV export,
	// a JSON body quoting one of them) are never rewritten.
	handling atomic.Bool
}

func (c *apiConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (c *apiConn) Write(p []byte) (int, error) {
	if c.handling.Load() {
		return c.Conn.Write(p)
	}
	if answer, ok := jsonParserError(p, c.log, c.RemoteAddr()); ok {
		if _, err := c.Conn.Write(answer); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// CloseWrite lets net/http half-close before it hangs up on a client still
// sending (after a 431), so that the client can read the answer.
func (c *apiConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// apiConnKey is the request context key of the apiConn a request came on.
type apiConnKey struct{}

// withAPIConn is the http.Server's ConnContext: it lets markHandling find
// the connection of a request.
func withAPIConn(ctx context.Context, c net.Conn) context.Context {
	if ac, ok := c.(*apiConn); ok {
		return context.WithValue(ctx, apiConnKey{}, ac)
	}
	return ctx
}

// markHandling marks the request's connection as carrying a handler's
// response, until trackIdle sees it idle.
func markHandling(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ac, ok := r.Context().Value(apiConnKey{}).(*apiConn); ok {
			ac.handling.Store(true)
		}
		next.ServeHTTP(w, r)
	})
}

// trackIdle is the http.Server's ConnState: a connection goes idle once
// the last response's bytes are written.
func trackIdle(c net.Conn, state http.ConnState) {
	if ac, ok := c.(*apiConn); ok && state == http.StateIdle {
		ac.handling.Store(false)
	}
}
