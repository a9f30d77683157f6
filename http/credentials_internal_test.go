package http

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"

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

// Concurrent misses of one key on the payment route (every client of a
// busy key when its cache entry expires) share one lookup instead of each
// sending its own to the database.
func TestConcurrentMissesOfAKeyShareOneLookup(t *testing.T) {
	s := New(&app.App{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, Config{})
	release := make(chan struct{})
	var calls atomic.Int32
	s.credentialByHash = func(ctx context.Context, hash string) (queries.Credential, bool, error) {
		calls.Add(1)
		<-release // the lookup is in flight while the others arrive
		return queries.Credential{KeyID: "key_1", PlatformID: "plt_1"}, true, nil
	}
	const clients = 16
	var entered atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entered.Add(1)
			cred, found, _, err := s.lookUpCredentialShared(context.Background(), "hash")
			if err == nil && (!found || cred.KeyID != "key_1") {
				err = fmt.Errorf("shared lookup answered %+v, %v", cred, found)
			}
			errs <- err
		}()
	}
	for deadline := time.Now().Add(5 * time.Second); entered.Load() < clients || calls.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d clients started, %d lookups", entered.Load(), clients, calls.Load())
		}
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// One lookup, plus one for each client the scheduler held back until
	// the first had returned (rare). Each sending its own, as before, is
	// all 16: every one of them blocks in the lookup until the release.
	if n := calls.Load(); n >= clients/2 {
		t.Fatalf("%d concurrent misses of one key made %d lookups, want them to share one", clients, n)
	}
}
