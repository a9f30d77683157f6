package http

import (
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/opentreasury/treasury/projections/queries"
)

// The credential cache spares the payment route its authentication round
// trip. A key found in it is not trusted on its own: the payment's
// command checks, in its first round trip, that the key is still usable
// (app.Caller.VerifyKeyID), so a revocation or an expiry takes effect on
// the next request, on every replica. What the cache may serve stale, for
// at most credentialTTL, is only the platform's rate limit override (and
// at once on the replica that took the operator's PATCH, which purges it; a
// lookup in flight across the purge does not put its stale read back).
// Routes that do not check the key in their command look it up every time,
// and refresh the cache as they do.
const (
	credentialTTL = 10 * time.Second
	maxCachedKeys = 10_000
)

// credentialCache maps a key's secret hash to what its lookup found.
type credentialCache struct {
	entries *lru.Cache[string, *cachedCredential] // safe for concurrent use
	// gen counts purges: a lookup that began before one must not put back
	// what it read, which may predate the change the purge was for.
	gen atomic.Uint64
}

// cachedCredential is a looked-up key, until expires.
type cachedCredential struct {
	cred    queries.Credential
	expires time.Time
	touched atomic.Int64 // when the key's use was last recorded (Unix ns)
}

func newCredentialCache() *credentialCache {
	entries, err := lru.New[string, *cachedCredential](maxCachedKeys)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &credentialCache{entries: entries}
}

// get is the key's credential if it was looked up less than credentialTTL ago.
func (c *credentialCache) get(hash string, now time.Time) (*cachedCredential, bool) {
	e, ok := c.entries.Get(hash)
	if !ok || now.After(e.expires) {
		return nil, false
	}
	return e, true
}

// generation is what a lookup passes to put: read it before the lookup.
func (c *credentialCache) generation() uint64 { return c.gen.Load() }

// put remembers a key just looked up; touched is when its use was last
// recorded (zero: never); gen is the generation read before the lookup.
// It returns the entry, nil when a purge made the lookup stale.
func (c *credentialCache) put(hash string, cred queries.Credential, touched, now time.Time, gen uint64) *cachedCredential {
	if c.gen.Load() != gen {
		return nil // purged since the lookup began: what it read may be stale
	}
	e := &cachedCredential{cred: cred, expires: now.Add(credentialTTL)}
	// Concurrent misses of one key all put what one lookup read: keep the
	// latest recorded use, so that only one of them records it again.
	if old, ok := c.entries.Peek(hash); ok && old.touched.Load() > touched.UnixNano() {
		touched = time.Unix(0, old.touched.Load())
	}
	e.touched.Store(touched.UnixNano())
	c.entries.Add(hash, e)
	return e
}

// drop forgets a key its command found revoked or expired.
func (c *credentialCache) drop(hash string) { c.entries.Remove(hash) }

// purge forgets every key: a platform's rate limit changed.
func (c *credentialCache) purge() {
	c.gen.Add(1)
	c.entries.Purge()
}

// claimTouch reports whether the key's use is due to be recorded at now
// (once per touchEvery), and if so marks it recorded, so that of many
// concurrent requests only one writes.
func (e *cachedCredential) claimTouch(now time.Time) bool {
	last := e.touched.Load()
	if now.Sub(time.Unix(0, last)) <= touchEvery {
		return false
	}
	return e.touched.CompareAndSwap(last, now.UnixNano())
}
