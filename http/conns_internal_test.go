package http

import (
	"io"
	"log/slog"
	"net"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
)

// TestClientKeyCountsIPv6ByItsSlash64: both per-address caps count one
// client the same way: an IPv4 address (mapped or not), an IPv6 /64.
func TestClientKeyCountsIPv6ByItsSlash64(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"203.0.113.7:40000", "203.0.113.7"},
		{"[::ffff:203.0.113.7]:40000", "203.0.113.7"},
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:443", "2001:db8:1:2::"},
		{"[fe80::1%eth0]:443", "fe80::"},
		{"[::1]:80", "::"},
	} {
		ap := netip.MustParseAddrPort(tc.addr)
		if got := clientIP(net.TCPAddrFromAddrPort(ap)); got.String() != tc.want {
			t.Errorf("clientIP(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
	if got := clientIP(&net.UnixAddr{Name: "/tmp/sock", Net: "unix"}); got.IsValid() {
		t.Errorf("a Unix socket's client is %s, want none", got)
	}
}

// TestConnectionCapCountsIPv6BySlash64: with 2 connections per client, a
// third from another address of the same /64 is closed at once, while
// another /64 is served.
func TestConnectionCapCountsIPv6BySlash64(t *testing.T) {
	conns := make(chan net.Conn, 8)
	ln := WrapListener(&fakeListener{conns: conns}, ConnLimits{MaxConnsPerIP: 2}, nil)
	sameHost := []*fakeConn{
		{remote: "[2001:db8:1:2::1]:1000"},
		{remote: "[2001:db8:1:2::2]:1000"},
		{remote: "[2001:db8:1:2:aaaa::3]:1000"},
	}
	otherHost := &fakeConn{remote: "[2001:db8:1:3::1]:1000"}
	for _, c := range sameHost {
		conns <- c
	}
	conns <- otherHost
	for i := range 3 {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		want := []*fakeConn{sameHost[0], sameHost[1], otherHost}[i]
		if got := c.(*apiConn).Conn; got != want {
			t.Fatalf("accept %d returned %s, want %s", i, got.RemoteAddr(), want.RemoteAddr())
		}
	}
	if !sameHost[2].closed.Load() {
		t.Fatal("a third connection from the same /64 was not refused")
	}
}

type fakeListener struct {
	net.Listener
	conns chan net.Conn
}

func (l *fakeListener) Accept() (net.Conn, error) {
	c, ok := <-l.conns
	if !ok {
		return nil, net.ErrClosed
	}
	return c, nil
}

// fakeConn is an accepted connection from remote that records its Close.
type fakeConn struct {
	net.Conn
	remote string
	closed atomic.Bool
}

func (c *fakeConn) RemoteAddr() net.Addr {
	return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(c.remote))
}

func (c *fakeConn) Close() error { c.closed.Store(true); return nil }

// TestRefusedConnectionsAreCounted: a connection a cap refused shows on
// /metrics, by cap, beside the log line that is rate-limited.
func TestRefusedConnectionsAreCounted(t *testing.T) {
	s := New(&app.App{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Config{})
	conns := make(chan net.Conn, 8)
	ln := s.WrapListener(&fakeListener{conns: conns}, ConnLimits{MaxConns: 3, MaxConnsPerIP: 1})
	t.Cleanup(func() { close(conns) }) // ends the Accept left waiting below
	refusedPerAddress := &fakeConn{remote: "203.0.113.7:2000"}
	refusedOverall := &fakeConn{remote: "203.0.113.10:1000"}
	for _, c := range []*fakeConn{
		{remote: "203.0.113.7:1000"}, refusedPerAddress, {remote: "203.0.113.8:1000"},
		{remote: "203.0.113.9:1000"}, refusedOverall,
	} {
		conns <- c
	}
	for range 3 {
		if _, err := ln.Accept(); err != nil {
			t.Fatal(err)
		}
	}
	if !refusedPerAddress.closed.Load() {
		t.Fatal("a second connection from one address was not refused")
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`treasury_http_connections_refused_total{cap="per_address"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, rec.Body.String())
		}
	}
	// Three connections are open, the overall cap: the next, from a new
	// address, is refused.
	go func() { _, _ = ln.Accept() }()
	for deadline := time.Now().Add(5 * time.Second); !refusedOverall.closed.Load(); {
		if time.Now().After(deadline) {
			t.Fatal("a connection over the overall cap was not refused")
		}
		runtime.Gosched()
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `treasury_http_connections_refused_total{cap="overall"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Fatalf("/metrics lacks %s", want)
	}
}
