package webhooks

import (
	"context"
	"testing"
	"time"
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
		s.rounds.Done()
	}
	if s.takeHandover() != nil {
		t.Error("a stopped sender took a round")
	}
}

// Given a round handed to the fan-out, when the sender stops before the
// fan-out sends it, then the round is given back unsent (its deliveries
// stay leased, for a claim after the lease) and the sender's wait for its
// rounds ends; and once Run has begun that wait, no round is handed over.
func TestAHandoverOutlivedByItsSenderIsGivenBack(t *testing.T) {
	s := &Sender{}
	s.init()
	ctx, cancel := context.WithCancel(context.Background())
	s.ctx = ctx
	h := s.takeHandover()
	if h == nil {
		t.Fatal("no round for a running sender")
	}
	cancel()
	h.send([]job{{id: "msg_1", endpointID: "ep_a"}})
	h.send(nil) // the fan-out's deferred give-back: a no-op after a send
	if len(s.slots) != 0 {
		t.Errorf("%d rounds under way, want 0", len(s.slots))
	}
	waited := make(chan struct{})
	go func() { s.rounds.Wait(); close(waited) }()
	select {
	case <-waited: // the round was counted once, and done once
	case <-time.After(5 * time.Second):
		t.Fatal("the sender's wait for its rounds did not end")
	}
	if s.inFlight["ep_a"] != nil {
		t.Error("an unsent delivery counts as in flight")
	}

	s.ctx = context.Background()
	s.stopping = true
	if s.takeHandover() != nil {
		t.Error("a round was handed over while Run waited for its rounds")
	}
}
