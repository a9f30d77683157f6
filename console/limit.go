package console

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Failed sign-ins are limited per client address, as the API limits failed
// authentications: after maxFailures within failureWindow, the address's
// sign-ins are refused (429) until the window has passed, so that keys
// cannot be guessed through the console faster than through the API.
const (
	maxFailures   = 20
	failureWindow = time.Minute
	maxAddresses  = 10_000
)

type failureLimiter struct {
	mu      sync.Mutex
	windows *simplelru.LRU[string, *failureWindowCount]
}

type failureWindowCount struct {
	start time.Time
	n     int
}

func newFailureLimiter() *failureLimiter {
	l, err := simplelru.NewLRU[string, *failureWindowCount](maxAddresses, nil)
	if err != nil {
		panic(err) // only for a size ≤ 0
	}
	return &failureLimiter{windows: l}
}

// take counts a sign-in attempt of the address before its key is looked
// up, or says no when the address has failed too often lately: taken
// first, so that concurrent attempts cannot all pass a check made before
// any of them failed. A sign-in that succeeds gives its attempt back.
func (l *failureLimiter) take(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.windows.Get(addr)
	if !ok || now.Sub(w.start) >= failureWindow {
		w = &failureWindowCount{start: now}
		l.windows.Add(addr, w)
	}
	if w.n >= maxFailures {
		return false
	}
	w.n++
	return true
}

// giveBack returns the attempt of a sign-in that succeeded.
func (l *failureLimiter) giveBack(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w, ok := l.windows.Get(addr); ok && w.n > 0 {
		w.n--
	}
}

// clientAddress is the request's peer address, an IPv6 client by its /64
// (as the API counts it).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}
