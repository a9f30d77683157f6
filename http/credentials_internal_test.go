package http

import (
	"testing"
	"time"

	"github.com/opentreasury/treasury/projections/queries"
)

// A lookup that began before a purge (the operator changed a platform's
// rate limit) must not put back what it read: it may predate the change.
func TestCredentialLookupBeforeAPurgeIsNotCached(t *testing.T) {
	c := newCredentialCache()
	now := time.Now()
	cred := queries.Credential{KeyID: "key_1", PlatformID: "plt_1"}

	gen := c.generation()
	c.purge() // the PATCH commits while the lookup is in flight
	c.put("hash", cred, time.Time{}, now, gen)
	if _, ok := c.get("hash", now); ok {
		t.Fatal("a lookup from before the purge was cached")
	}

	gen = c.generation()
	c.put("hash", cred, time.Time{}, now, gen)
	if e, ok := c.get("hash", now); !ok || e.cred.KeyID != "key_1" {
		t.Fatalf("a lookup after the purge was not cached: %v %v", e, ok)
	}
	if _, ok := c.get("hash", now.Add(credentialTTL+time.Millisecond)); ok {
		t.Fatal("a cached credential outlived its TTL")
	}
}
