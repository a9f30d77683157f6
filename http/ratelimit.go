package http

import (
	"math"
	"net"
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

// Default rate limits of a platform's environment (API.md §3 said per key;
// a bucket per key let ten keys draw ten budgets, so all the keys of one
// platform and environment now share one bucket).
var (
	DefaultLiveRateLimit    = RateLimit{PerSecond: 100, Burst: 200}
	DefaultSandboxRateLimit = RateLimit{PerSecond: 25, Burst: 50}
)

// limiter keeps one token bucket per platform and environment (and one
// for the operator).
type limiter struct {
	off       bool
	overrides *RateLimit // global configuration, over the defaults
	mu        sync.Mutex
	buckets   map[string]*bucket
	failures  *authFailures
}

type bucket struct {
	limit RateLimit
	lim   *rate.Limiter
}

func newLimiter(off bool, global *RateLimit) *limiter {
	return &limiter{off: off, overrides: global, buckets: map[string]*bucket{}, failures: newAuthFailures()}
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
	id := bucketOf(p)
	b := l.buckets[id]
	if b == nil || b.limit != limit {
		b = &bucket{limit: limit, lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst)}
		l.buckets[id] = b
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
	who := "this platform and environment"
	if p.operator {
		who = "the operator key"
	}
	return &domain.Error{Code: domain.CodeRateLimited, Message: "too many requests for " + who + "; retry after the Retry-After seconds"}
}

// bucketOf names the bucket a principal draws on: every key of a
// platform's environment shares one, so more keys never mean more budget.
func bucketOf(p *principal) string {
	if p.operator {
		return "operator"
	}
	return p.platformID + "/" + p.env.String()
}

// Failed authentications are limited per client address: each is a
// database lookup, and a stream of random keys is a search for a real one.
// 20 a minute with a burst of 20; past that, an unknown key gets 429
// before any lookup. Keys that authenticated lately keep working from
// such an address (only failures are throttled), found in memory, so
// the attacker's guesses still cost no lookup.
const (
	authFailureBurst = 20
	authFailureEvery = 3 * time.Second // 20 a minute
	// maxKnownKeys bounds the memory of keys that authenticated lately.
	maxKnownKeys = 10_000
)

type authFailures struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter // by client address
	known   map[string]struct{}      // secret hashes that authenticated
}

func newAuthFailures() *authFailures {
	return &authFailures{buckets: map[string]*rate.Limiter{}, known: map[string]struct{}{}}
}

const errTooManyFailures = "too many failed authentications from this address; retry after the Retry-After seconds"

// clientAddress is the address failures count against: the connection's
// peer (X-Forwarded-For is the client's to write, so it is believed only
// when the server is configured with an echo IPExtractor for a trusted
// proxy). An IPv6 client counts by its /64, which one host usually has whole.
func clientAddress(c echo.Context) string {
	ip := echo.ExtractIPDirect()(c.Request())
	if c.Echo().IPExtractor != nil {
		ip = c.RealIP()
	}
	if parsed := net.ParseIP(ip); parsed != nil && parsed.To4() == nil {
		return parsed.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return ip
}

// bucket returns addr's bucket. When the map is full of buckets still
// refilling, new addresses share one: memory stays bounded and failures
// stay limited. Called with f.mu held.
func (f *authFailures) bucket(addr string) *rate.Limiter {
	if b := f.buckets[addr]; b != nil {
		return b
	}
	if len(f.buckets) >= maxBuckets {
		now := time.Now()
		for a, b := range f.buckets {
			if b.TokensAt(now) >= authFailureBurst {
				delete(f.buckets, a)
			}
		}
		if len(f.buckets) >= maxBuckets {
			addr = "overflow"
			if b := f.buckets[addr]; b != nil {
				return b
			}
		}
	}
	b := rate.NewLimiter(rate.Every(authFailureEvery), authFailureBurst)
	f.buckets[addr] = b
	return b
}

// failed records a failed authentication from addr: 401, or 429 with
// Retry-After once addr is over its budget.
func (f *authFailures) failed(c echo.Context, addr string) error {
	f.mu.Lock()
	b := f.bucket(addr)
	f.mu.Unlock()
	if b.Allow() {
		return errUnauthorized
	}
	return tooManyFailures(c, b)
}

// mayLookUp refuses, before any database lookup, a key that has not
// authenticated lately when addr is over its failure budget.
func (f *authFailures) mayLookUp(c echo.Context, addr, hash string) error {
	f.mu.Lock()
	b := f.bucket(addr)
	_, known := f.known[hash]
	f.mu.Unlock()
	if known || b.Tokens() >= 1 {
		return nil
	}
	return tooManyFailures(c, b)
}

// succeeded remembers a key that authenticated.
func (f *authFailures) succeeded(hash string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.known[hash]; ok {
		return
	}
	if len(f.known) >= maxKnownKeys {
		clear(f.known) // refilled by the next successes
	}
	f.known[hash] = struct{}{}
}

func tooManyFailures(c echo.Context, b *rate.Limiter) error {
	wait := math.Max(1, math.Ceil((1-b.Tokens())*authFailureEvery.Seconds()))
	c.Response().Header().Set("Retry-After", strconv.Itoa(int(wait)))
	return &domain.Error{Code: domain.CodeRateLimited, Message: errTooManyFailures}
}
