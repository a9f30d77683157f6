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

// blocked says whether the address has failed too often lately.
func (l *failureLimiter) blocked(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.windows.Get(addr)
	return ok && now.Sub(w.start) < failureWindow && w.n >= maxFailures
}

// failed counts a failed sign-in of the address.
func (l *failureLimiter) failed(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.windows.Get(addr)
	if !ok || now.Sub(w.start) >= failureWindow {
		w = &failureWindowCount{start: now}
		l.windows.Add(addr, w)
	}
	w.n++
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
