package eventstore

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitDone runs p.Wait in a goroutine and returns a channel that receives
// its error.
func waitDone(ctx context.Context, p *Pacer) <-chan error {
	done := make(chan error, 1)
	go func() { done <- p.Wait(ctx) }()
	return done
}

// notYet asserts that nothing arrives on done for a moment (a wait that
// should still be blocked).
func notYet(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		t.Fatalf("%s: Wait returned (%v) while a reader was behind", what, err)
	case <-time.After(150 * time.Millisecond):
	}
}

func within(t *testing.T, done <-chan error, what string) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: Wait still blocked", what)
		return nil
	}
}

func TestPacerDecisions(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name    string
		given   func(p *Pacer)
		wantLag time.Duration // at least; 0: under a second
	}{
		{"no reader", func(*Pacer) {}, 0},
		{"a reader that read the log to its end just now", func(p *Pacer) { p.Read("a", now, true) }, 0},
		{"a reader idle since an old read", func(p *Pacer) { p.Read("a", now.Add(-time.Hour), true); p.Idle("a") }, 0},
		{"a reader whose last short read began a minute ago", func(p *Pacer) { p.Read("a", now.Add(-time.Minute), true) }, time.Minute},
		{"full batches do not move the reader forward", func(p *Pacer) {
			p.Read("a", now.Add(-time.Minute), true)
			p.Read("a", now, false)
		}, time.Minute},
		{"the slowest of two readers counts", func(p *Pacer) {
			p.Read("a", now, true)
			p.Read("b", now.Add(-time.Minute), true)
		}, time.Minute},
		{"a reader woken from a long idle is behind from its wake-up only", func(p *Pacer) {
			p.Read("a", now.Add(-time.Hour), true)
			p.Idle("a")
			p.Woke("a")
		}, 0},
		{"a busy reader woken again keeps its lag", func(p *Pacer) {
			p.Read("a", now.Add(-time.Minute), true)
			p.Woke("a")
		}, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPacer(time.Second, time.Minute)
			tc.given(p)
			lag, _ := p.Behind(now)
			if tc.wantLag == 0 && lag > time.Second || tc.wantLag > 0 && lag < tc.wantLag {
				t.Errorf("Behind = %v, want %v", lag, tc.wantLag)
			}
		})
	}
}

func TestPacerWaitsUntilTheReaderCatchesUp(t *testing.T) {
	p := NewPacer(50*time.Millisecond, time.Minute)
	p.Read("projections", time.Now().Add(-time.Minute), true)
	done := waitDone(context.Background(), p)
	notYet(t, done, "behind")
	p.Read("projections", time.Now().Add(-time.Minute), false) // a full batch: still behind
	notYet(t, done, "after a full batch")
	p.Read("projections", time.Now(), true)
	if err := within(t, done, "caught up"); err != nil {
		t.Fatal(err)
	}
	if n, d := p.Waited(); n != 1 || d < 300*time.Millisecond {
		t.Errorf("Waited = %d, %v; want the one command, for the two notYet windows at least", n, d)
	}
	// Idle readers hold nothing back, however old their last read.
	p.Read("settler", time.Now().Add(-time.Hour), true)
	p.Idle("settler")
	if err := within(t, waitDone(context.Background(), p), "idle"); err != nil {
		t.Fatal(err)
	}
	if n, _ := p.Waited(); n != 1 {
		t.Errorf("Waited counts %d commands, want 1: a command that did not wait is not counted", n)
	}
}

func TestPacerWaitIsBounded(t *testing.T) {
	p := NewPacer(10*time.Millisecond, 100*time.Millisecond)
	p.Read("stuck", time.Now().Add(-time.Hour), true)
	start := time.Now()
	if err := within(t, waitDone(context.Background(), p), "stuck reader"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond {
		t.Errorf("returned after %v, before MaxWait", waited)
	}

	ctx, cancel := context.WithCancel(context.Background())
	p.MaxWait = time.Hour
	done := waitDone(ctx, p)
	notYet(t, done, "before cancel")
	cancel()
	if err := within(t, done, "canceled"); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
}

// While the database is away, commands do not wait for the readers (they
// must answer 503 at once); once a command commits again, they do.
func TestPacerDoesNotWaitWhileTheDatabaseIsAway(t *testing.T) {
	p := NewPacer(10*time.Millisecond, time.Hour)
	p.Read("projections", time.Now().Add(-time.Minute), true)
	done := waitDone(context.Background(), p)
	notYet(t, done, "behind")
	p.Away()
	if err := within(t, done, "the waiting command, once the database is away"); err != nil {
		t.Fatal(err)
	}
	if err := within(t, waitDone(context.Background(), p), "a new command while away"); err != nil {
		t.Fatal(err)
	}
	p.Back()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	notYet(t, waitDone(ctx, p), "back, and the reader still behind")
}

func TestNilPacerNeverWaits(t *testing.T) {
	var p *Pacer
	p.Read("a", time.Now().Add(-time.Hour), true)
	p.Idle("a")
	p.Woke("a")
	p.Away()
	p.Back()
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Many commands wait while readers report from their own goroutines: every
// wait ends once the readers are caught up, none is lost (run with -race).
func TestPacerConcurrentWaitersAndReaders(t *testing.T) {
	p := NewPacer(20*time.Millisecond, time.Hour) // a lost wake-up would hang, not pass late
	readers := []string{"projections", "chain", "sandbox", "kyb"}
	for _, r := range readers {
		p.Read(r, time.Now().Add(-time.Minute), true)
	}
	var released atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			if err := p.Wait(context.Background()); err != nil {
				t.Error(err)
			}
			released.Add(1)
		})
	}
	var readersWG sync.WaitGroup
	for _, r := range readers {
		readersWG.Go(func() {
			for range 50 {
				p.Read(r, time.Now().Add(-time.Minute), false) // busy, full batches
			}
			p.Read(r, time.Now(), true)
			p.Idle(r)
		})
	}
	readersWG.Wait()
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatalf("%d of 64 waits ended once the readers caught up", released.Load())
	}
	if n := released.Load(); n != 64 {
		t.Fatalf("%d of 64 waits ended", n)
	}
}
