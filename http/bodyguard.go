package http

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// Defaults of the request-body deadline (Config.BodyReadGrace and
// Config.BodyMinRate): a body has 10 s, then must keep arriving at 32 KiB/s
// on average, so the largest body (1 MiB) is read within 42 s and a client
// dripping bytes is cut off after about 10 s.
const (
	DefaultBodyReadGrace = 10 * time.Second
	DefaultBodyMinRate   = 32 << 10
)

// answerLinger is how long the connection still reads the rest of a body
// after an answer went out without it: long enough for a client that sent
// its whole body to have it drained (closing with unread data resets the
// connection, and the client may lose the answer), short enough that a
// client that stalls its body holds nothing.
const answerLinger = time.Second

// netHTTPDrainLimit is how much of an unread body net/http reads after the
// answer to keep the connection (maxPostHandlerReadBytes in its server.go).
const netHTTPDrainLimit = 256 << 10

const bodyGuardKey = "body_guard"

// guardBody bounds how long a request body may take to arrive and closes
// the connection when an answer goes out before the body was read whole,
// so that net/http does not wait for a body nobody needs (a 401 to a
// client that sent one byte of a 100-byte body used to wait forever).
func (s *Server) guardBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength == 0 || req.Body == nil || req.Body == http.NoBody {
			return next(c)
		}
		g := &bodyGuard{body: req.Body, rc: http.NewResponseController(c.Response()), length: req.ContentLength,
			start: time.Now(), grace: s.cfg.BodyReadGrace, minRate: s.cfg.BodyMinRate}
		_ = g.rc.SetReadDeadline(g.deadline())
		req.Body = g
		c.Set(bodyGuardKey, g)
		c.Response().Before(func() { g.answerStarting(c.Response().Header()) })
		return next(c)
	}
}

func bodyGuardOf(c echo.Context) *bodyGuard {
	g, _ := c.Get(bodyGuardKey).(*bodyGuard)
	return g
}

// bodyGuard is a request body that must arrive at a minimum rate: byte n
// is due grace + n/minRate after the request started. It moves the
// connection's read deadline as bytes arrive.
type bodyGuard struct {
	body    io.ReadCloser
	rc      *http.ResponseController
	length  int64 // declared; -1 if chunked
	start   time.Time
	grace   time.Duration
	minRate int

	mu       sync.Mutex
	read     int64
	sawEOF   bool
	timedOut bool
}

func (g *bodyGuard) Read(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sawEOF {
		// Past the end, the server reads the connection in the
		// background (to notice a client that goes away) with no deadline:
		// setting one now would cancel the request when it passed.
		return g.body.Read(p)
	}
	_ = g.rc.SetReadDeadline(g.deadline())
	return g.note(g.body.Read(p))
}

func (g *bodyGuard) note(n int, err error) (int, error) {
	g.read += int64(n)
	switch {
	case err == io.EOF:
		g.sawEOF = true
	case errors.Is(err, os.ErrDeadlineExceeded):
		g.timedOut = true
	}
	return n, err
}

func (g *bodyGuard) Close() error { return g.body.Close() }

func (g *bodyGuard) deadline() time.Time {
	return g.start.Add(g.grace + time.Duration(float64(g.read)/float64(g.minRate)*float64(time.Second)))
}

// TimedOut reports whether the body stopped arriving at the minimum rate.
func (g *bodyGuard) TimedOut() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.timedOut
}

// answerStarting runs just before the response header is written. A body
// not read to its end is drained of what has already arrived; if some is
// still missing, the answer closes the connection and the server stops
// waiting for the rest after answerLinger.
func (g *bodyGuard) answerStarting(h http.Header) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sawEOF || g.length-g.read >= netHTTPDrainLimit {
		// Too much left for net/http to drain: it already closes the
		// connection after answering, without reading on.
		return
	}
	_ = g.rc.SetReadDeadline(time.Now()) // what is buffered, and nothing more
	if _, err := io.Copy(io.Discard, readerFunc(func(p []byte) (int, error) { return g.note(g.body.Read(p)) })); err == nil {
		return // the whole body was there: the connection stays open
	}
	g.timedOut = false // the answer is already chosen; this was the drain's own deadline
	h.Set("Connection", "close")
	linger := time.Now().Add(answerLinger)
	if d := g.deadline(); d.Before(linger) {
		linger = d
	}
	_ = g.rc.SetReadDeadline(linger)
}

type readerFunc func([]byte) (int, error)

func (f readerFunc) Read(p []byte) (int, error) { return f(p) }
