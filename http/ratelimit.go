package http

import (
	"math"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
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
	// replicas is how many replicas share the limits: each enforces its
	// share (see share). Nil: this one alone.
	replicas func() int
	mu       sync.Mutex
	buckets  map[string]*bucket
	failures *authFailures
}

type bucket struct {
	limit RateLimit // the platform's limit, this replica's share of it in lim
	share RateLimit
	lim   *rate.Limiter
}

func newLimiter(off bool, global *RateLimit, replicas func() int) *limiter {
	return &limiter{off: off, overrides: global, replicas: replicas, buckets: map[string]*bucket{}, failures: newAuthFailures()}
}

// share is one replica's part of a limit that n replicas enforce together,
// each with buckets of its own in memory (no round trip to a shared store
// on every request): the rate and the burst divided by n, rounded up.
// Behind a balancer that spreads a platform's requests evenly, the
// platform gets its limit; one that sends them all to one replica gets
// 1/n of it, and its 429s say so by their RateLimit-* headers, which
// describe the share of the replica that answered.
func (r RateLimit) share(n int) RateLimit {
	if n <= 1 {
		return r
	}
	return RateLimit{PerSecond: (r.PerSecond + n - 1) / n, Burst: (r.Burst + n - 1) / n}
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
		if b.lim.TokensAt(now) >= float64(b.share.Burst) {
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
	whole := l.limitFor(p)
	limit := whole
	if l.replicas != nil {
		limit = whole.share(l.replicas())
	}
	l.mu.Lock()
	if len(l.buckets) >= maxBuckets {
		l.sweep()
	}
	id := bucketOf(p)
	b := l.buckets[id]
	now := time.Now()
	switch {
	case b == nil || b.limit != whole:
		// New, or the operator changed the limit: a full bucket at once.
		b = &bucket{limit: whole, share: limit, lim: rate.NewLimiter(rate.Limit(limit.PerSecond), limit.Burst)}
		l.buckets[id] = b
	case b.share != limit:
		// Another number of replicas: the tokens left stay, up to the new
		// burst, so a replica joining or leaving hands no platform a
		// fresh burst.
		b.lim.SetLimitAt(now, rate.Limit(limit.PerSecond))
		b.lim.SetBurstAt(now, limit.Burst)
		b.share = limit
	}
	l.mu.Unlock()

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
	buckets *simplelru.LRU[string, *failureBucket] // by client address
	known   map[string]struct{}                    // secret hashes that authenticated
}

// failureBucket is a token bucket of failures. Unlike rate.Limiter, it
// can take a token before a lookup and give it back when the key is
// found. Guarded by authFailures.mu.
type failureBucket struct {
	tokens float64
	at     time.Time
}

func (b *failureBucket) refill(now time.Time) {
	b.tokens = math.Min(authFailureBurst, b.tokens+now.Sub(b.at).Seconds()/authFailureEvery.Seconds())
	b.at = now
}

func (b *failureBucket) take(now time.Time) bool {
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

func (b *failureBucket) giveBack(now time.Time) {
	b.refill(now)
	b.tokens = math.Min(authFailureBurst, b.tokens+1)
}

// retryAfter is the whole seconds until the next token.
func (b *failureBucket) retryAfter() int {
	return int(math.Max(1, math.Ceil((1-b.tokens)*authFailureEvery.Seconds())))
}

func newAuthFailures() *authFailures {
	buckets, err := simplelru.NewLRU[string, *failureBucket](maxBuckets, nil)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &authFailures{buckets: buckets, known: map[string]struct{}{}}
}

const errTooManyFailures = "too many failed authentications from this address; retry after the Retry-After seconds"

// clientAddress is the client failures count against: clientKey of the
// connection's peer (X-Forwarded-For is the client's to write, so it is
// believed only when the server is configured with an echo IPExtractor for
// a trusted proxy).
func clientAddress(c echo.Context) string {
	ip := echo.ExtractIPDirect()(c.Request())
	if c.Echo().IPExtractor != nil {
		ip = c.RealIP()
	}
	if a, err := netip.ParseAddr(ip); err == nil {
		return clientKey(a).String()
	}
	return ip
}

// bucket returns addr's bucket. The table holds maxBuckets addresses;
// a new one past that evicts the address seen least lately, in O(1): it
// has most likely refilled, and forgetting a full bucket changes nothing.
// (Sharing one bucket among the new addresses instead let failures from
// 10,000 addresses lock out every fresh legitimate one.) Called with f.mu
// held.
func (f *authFailures) bucket(addr string, now time.Time) *failureBucket {
	if b, ok := f.buckets.Get(addr); ok {
		return b
	}
	b := &failureBucket{tokens: authFailureBurst, at: now}
	f.buckets.Add(addr, b)
	return b
}

// failed records a failed authentication from addr: 401, or 429 with
// Retry-After once addr is over its budget.
func (f *authFailures) failed(c echo.Context, addr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.bucket(addr, time.Now())
	if b.take(time.Now()) {
		return errUnauthorized
	}
	return tooManyFailures(c, b.retryAfter())
}

// lookUp lets a key be looked up in the database, or refuses it (429)
// when addr is over its failure budget and the key has not authenticated
// lately. An unknown key's lookup takes its token before the lookup, so
// concurrent guesses cannot overdraw the budget; found gives it back.
func (f *authFailures) lookUp(c echo.Context, addr, hash string) (keyLookup, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := keyLookup{f: f, addr: addr, hash: hash}
	if _, known := f.known[hash]; known {
		return l, nil
	}
	b := f.bucket(addr, time.Now())
	if !b.take(time.Now()) {
		return l, tooManyFailures(c, b.retryAfter())
	}
	l.charged = b
	return l, nil
}

// keyLookup is one lookup allowed by lookUp.
type keyLookup struct {
	f       *authFailures
	addr    string
	hash    string
	charged *failureBucket // the bucket a token was taken from in advance
}

// found gives back the token taken in advance and remembers the key.
func (l keyLookup) found() {
	if l.f == nil { // limiting is off
		return
	}
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.giveBackLocked()
	if _, ok := l.f.known[l.hash]; ok {
		return
	}
	if len(l.f.known) >= maxKnownKeys {
		clear(l.f.known) // refilled by the next successes
	}
	l.f.known[l.hash] = struct{}{}
}

// notFound is the answer to a key the lookup did not find. A key that
// had authenticated (revoked or expired since) is forgotten: else a leaked
// and revoked key would cost a lookup on every request, even at 429.
func (l keyLookup) notFound(c echo.Context) error {
	if l.f == nil {
		return errUnauthorized
	}
	l.f.mu.Lock()
	delete(l.f.known, l.hash)
	l.f.mu.Unlock()
	if l.charged != nil {
		return errUnauthorized // its token is already taken
	}
	return l.f.failed(c, l.addr)
}

// failedLookup gives back the token taken in advance for a lookup that
// could not answer (the database failed, the client went away): that is
// not a failed authentication.
func (l keyLookup) failedLookup() {
	if l.f == nil {
		return
	}
	l.f.mu.Lock()
	defer l.f.mu.Unlock()
	l.giveBackLocked()
}

func (l keyLookup) giveBackLocked() {
	if l.charged != nil {
		l.charged.giveBack(time.Now())
	}
}

func tooManyFailures(c echo.Context, retryAfter int) error {
	c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfter))
	return &domain.Error{Code: domain.CodeRateLimited, Message: errTooManyFailures}
}
