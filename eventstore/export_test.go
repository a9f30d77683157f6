package eventstore

import "context"

// HeldBack exposes the subscription's held-back check to the tests.
func HeldBack(ctx context.Context, s *Subscription) bool { return s.heldBack(ctx) }
