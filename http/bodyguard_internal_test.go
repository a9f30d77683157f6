package http

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// serveInternal serves s the way cmd/treasury does (its *http.Server over
// a wrapped listener on 127.0.0.1) and returns the address.
func serveInternal(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer()
	go func() { _ = srv.Serve(WrapListener(ln, ConnLimits{}, nil)) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func newInternalServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	return New(app.New(pgtest.Pool(t), nil, slog.New(slog.NewTextHandler(io.Discard, nil))), cfg)
}

// TestBodyClockStartsAtTheFirstRead: a client that sent its whole 100 KB
// body at once is not cut off because the server took longer than the
// grace before reading it (a slow authentication, a busy pool): the body
// was there, in the kernel's buffer, all along.
func TestBodyClockStartsAtTheFirstRead(t *testing.T) {
	const grace = 300 * time.Millisecond
	s := newInternalServer(t, Config{BodyReadGrace: grace})
	s.echo.POST("/v1/test/slow-reader", func(c echo.Context) error {
		time.Sleep(3 * grace) // the server's own delay, before it reads the body
		body, err := readBody(c)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, map[string]int{"bytes": len(body)})
	})
	addr := serveInternal(t, s)

	body := `{"pad":"` + strings.Repeat("x", 100_000) + `"}`
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		_, _ = io.WriteString(c, "POST /v1/test/slow-reader HTTP/1.1\r\nHost: treasury\r\nContent-Type: application/json\r\n"+
			"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || string(got) != `{"bytes":`+strconv.Itoa(len(body))+"}\n" {
		t.Fatalf("status %d %s, want 200 with the whole body read", res.StatusCode, got)
	}
}
