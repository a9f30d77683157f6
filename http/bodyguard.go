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

// drainWait bounds how long an answer sent before its body was read waits
// for the rest of the body. Not at all would reset the connection of a
// client still sending, which may lose the answer; without a bound, a
// client that never sends its body held the connection forever.
const drainWait = 500 * time.Millisecond

const bodyGuardKey = "body_guard"

// guardBody bounds how long a request body may take to arrive, and how
// long an answer sent before the body was read whole waits for the rest
// (a 401 to a client that sent one byte of a 100-byte body used to wait
// forever: net/http reads an unread body before it answers).
func (s *Server) guardBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength == 0 || req.Body == nil || req.Body == http.NoBody {
			return next(c)
		}
		// No deadline yet: the clock starts at the first Read, so time the
		// server spends before reading (authentication, a busy pool) is
		// not charged to the client. Until then ReadTimeout bounds it.
		g := &bodyGuard{body: req.Body, rc: http.NewResponseController(c.Response()),
			grace: s.cfg.BodyReadGrace, minRate: s.cfg.BodyMinRate}
		req.Body = g
		c.Set(bodyGuardKey, g)
		c.Response().Before(g.answerStarting)
		return next(c)
	}
}

func bodyGuardOf(c echo.Context) *bodyGuard {
	g, _ := c.Get(bodyGuardKey).(*bodyGuard)
	return g
}

// bodyGuard is a request body that must arrive at a minimum rate: byte n
// is due grace + n/minRate after the handler first reads the body. It
// moves the connection's read deadline before each Read.
type bodyGuard struct {
	body    io.ReadCloser
	rc      *http.ResponseController
	start   time.Time // the first Read; zero before it
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
	if g.start.IsZero() {
		g.start = time.Now()
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

// answerStarting runs just before the response header is written. Of a
// body not read to its end, net/http then reads up to 256 KiB to keep the
// connection, with whatever read deadline is set: at most drainWait from
// now. A client that sent its whole body keeps its connection and reads
// its answer; one that stalls gets the answer after drainWait, and a close.
func (g *bodyGuard) answerStarting() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sawEOF {
		return
	}
	wait := time.Now().Add(drainWait)
	if d := g.deadline(); !g.start.IsZero() && d.Before(wait) {
		wait = d
	}
	_ = g.rc.SetReadDeadline(wait)
}
