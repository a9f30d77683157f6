package http

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/opentreasury/treasury/domain"
)

// RateLimit is a token bucket: PerSecond tokens a second, up to Burst.
type RateLimit struct {
	PerSecond int
	Burst     int
}

// Default rate limits per key (API.md §3).
var (
	DefaultLiveRateLimit    = RateLimit{PerSecond: 100, Burst: 200}
	DefaultSandboxRateLimit = RateLimit{PerSecond: 25, Burst: 50}
)

// limiter keeps one token bucket per API key.
type limiter struct {
	off       bool
	overrides *RateLimit // global configuration, over the defaults
	mu        sync.Mutex
	buckets   map[string]*bucket
}

type bucket struct {
	limit RateLimit
	lim   *rate.Limiter
}

func newLimiter(off bool, global *RateLimit) *limiter {
	return &limiter{off: off, overrides: global, buckets: map[string]*bucket{}}
}

// limitFor picks, for the operator, the live default; for a platform key
// the platform's override, else the configured global
// limit, else the environment's default.
// maxBuckets bounds the buckets kept before full (idle) ones are dropped.
const maxBuckets = 10_000

// sweep drops buckets that have refilled: forgetting them changes nothing,
// since a new bucket starts full. Called with l.mu held.
func (l *limiter) sweep() {
	now := time.Now()
	for id, b := range l.buckets {
		if b.lim.TokensAt(now) >= float64(b.limit.Burst) {
			delete(l.buckets, id)
		}
	}
}

func (l *limiter) limitFor(p *principal) RateLimit {
	if p.operator {
		return DefaultLiveRateLimit // the operator's key is not a platform's: overrides do not apply
	}
	if p.rateLimit != nil {
		return RateLimit{PerSecond: p.rateLimit.PerSecond, Burst: p.rateLimit.Burst}
	}
	if l.overrides != nil {
		return *l.overrides
	}
	if p.env == domain.Live {
		return DefaultLiveRateLimit
	}
	return DefaultSandboxRateLimit
}

// allow takes a token for the key and sets the RateLimit-* headers, or
// returns 429 with Retry-After.
func (l *limiter) allow(c echo.Context, p *principal) error {
	if l.off {
		return nil
	}
	limit := l.limitFor(p)
	l.mu.Lock()
	if len(l.buckets) >= maxBuckets {
		l.sweep()
	}
	b := l.buckets[p.keyID]
	if b == nil || b.limit != limit {
		b = &bucket{limit: limit, lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst)}
		l.buckets[p.keyID] = b
	}
	l.mu.Unlock()

	now := time.Now()
	allowed := b.lim.AllowN(now, 1)
	tokens := math.Max(0, b.lim.TokensAt(now))
	h := c.Response().Header()
	h.Set("RateLimit-Limit", strconv.Itoa(limit.Burst))
	h.Set("RateLimit-Remaining", strconv.Itoa(int(math.Floor(tokens))))
	h.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil((float64(limit.Burst)-tokens)/float64(limit.PerSecond)))))
	if allowed {
		return nil
	}
	wait := math.Max(1, math.Ceil((1-tokens)/float64(limit.PerSecond)))
	h.Set("Retry-After", strconv.Itoa(int(wait)))
	return &domain.Error{Code: domain.CodeRateLimited, Message: "too many requests for this API key; retry after the Retry-After seconds"}
}
