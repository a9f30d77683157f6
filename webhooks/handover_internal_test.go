package webhooks

import (
	"context"
	"testing"
)

// Given a sender, then it hands a round to the fan-out only while it runs
// and has one free; the round takes no delivery to an endpoint held back
// and no more than a claim would (2×Concurrency); a round given nothing
// is given back.
func TestAHandoverTakesWhatAClaimWould(t *testing.T) {
	s := &Sender{Concurrency: 1}
	s.init()
	if s.takeHandover() != nil {
		t.Fatal("a sender that does not run took a round")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.ctx = ctx

	s.slow["ep_slow"] = 1 // a request outstanding past its round
	h := s.takeHandover()
	if h == nil {
		t.Fatal("a running sender with every round free took none")
	}
	if h.take("ep_slow") {
		t.Error("the round took a delivery to an endpoint held back")
	}
	if !h.take("ep_a") || !h.take("ep_b") || h.take("ep_c") {
		t.Error("the round did not take exactly 2×Concurrency deliveries")
	}
	h.send(nil)
	if len(s.slots) != 0 {
		t.Errorf("%d rounds under way after a round was given back empty, want 0", len(s.slots))
	}

	for range MaxRounds {
		if s.takeHandover() == nil {
			t.Fatal("a free round was refused")
		}
	}
	if s.takeHandover() != nil {
		t.Error("a round was taken while every round was under way")
	}
	cancel()
	for range MaxRounds {
		<-s.slots
	}
	if s.takeHandover() != nil {
		t.Error("a stopped sender took a round")
	}
}
