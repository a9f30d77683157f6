package eventstore

import (
	"context"
	"time"
)

// HeldBack exposes the subscription's held-back check to the tests.
func HeldBack(ctx context.Context, s *Subscription) bool { return s.heldBack(ctx) }

// SetPollEvery sets how often p polls its checkpoint while someone waits
// (before Run): a test of the kicks sets it beyond the test's length.
func SetPollEvery(p *Progress, d time.Duration) { p.pollEvery = d }
