package eventstore

import (
	"context"
	"fmt"
)

// readAhead is the next batch of the log, read on a connection of its own
// while the handler works on the current batch: a subscriber behind the
// head then spends its time handling events, not waiting for the read
// and the decoding of the next ones. The log is immutable and a read
// stops below the oldest running transaction whatever the connection
// (see ReadAll), so the batch read ahead is exactly what the next step
// would read itself — if it starts where the read ahead did.
type readAhead struct {
	from Position
	done chan readAheadResult // buffered: the reader never waits for Step
}

type readAheadResult struct {
	from   Position
	events []RecordedEvent
	err    error
}

// startReadAhead reads up to limit events after from in the background.
func (s *Subscription) startReadAhead(ctx context.Context, from Position, limit int) {
	ra := &readAhead{from: from, done: make(chan readAheadResult, 1)}
	s.ahead = ra
	go func() {
		events, err := ReadAll(ctx, s.Pool, from, limit)
		if err == nil && s.Decode {
			err = DecodeAll(events)
		}
		ra.done <- readAheadResult{events: events, err: err}
	}()
}

// awaitReadAhead waits for the batch being read ahead, if any, before the
// step takes its own connection (with a pool of one, the reader could
// otherwise never get one). The step uses it only if its checkpoint is
// where the read began (see readAheadResult.from); a rolled-back batch,
// or another owner that moved the checkpoint, makes it read for itself,
// and so does a failed read.
func (s *Subscription) awaitReadAhead(ctx context.Context) *readAheadResult {
	ra := s.ahead
	s.ahead = nil
	if ra == nil {
		return nil
	}
	select {
	case r := <-ra.done:
		if r.err != nil {
			return nil
		}
		r.from = ra.from
		return &r
	case <-ctx.Done():
		return nil
	}
}

// DecodeAll decodes each event in place (once; see RecordedEvent.Decode).
func DecodeAll(events []RecordedEvent) error {
	for i := range events {
		if _, err := events[i].Decode(); err != nil {
			return fmt.Errorf("event %s: %w", events[i].EventID, err)
		}
	}
	return nil
}
