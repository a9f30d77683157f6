package eventstore

import (
	"context"
	"fmt"
	"time"
)

// ReadAhead is the next batch of the log, read on a connection of its own
// while a reader works on the current batch: a reader behind the head then
// spends its time handling events, not waiting for the read and the
// decoding of the next ones. The log is immutable and a read stops below
// the oldest running transaction whatever the connection (see ReadAll),
// so the batch read ahead is a prefix of what the reader would read
// itself if it starts where the read ahead did — the whole of it when
// full (the reader's own open transaction may hold a read ahead's horizon
// back: a short one is read again).
type ReadAhead struct {
	from  Position
	began time.Time            // when the read was sent: what it saw is the log as of then
	done  chan readAheadResult // buffered: the read never waits for its reader
}

type readAheadResult struct {
	events []RecordedEvent
	last   Position
	err    error
}

// StartReadAhead reads up to limit events after from through db (a pool:
// not the connection the reader holds), only those of the given types if
// the filter lets through (see readFiltered), decoded if decode is set, in the background.
func StartReadAhead(ctx context.Context, db DB, from Position, limit int, decode bool, filter Filter) *ReadAhead {
	ra := &ReadAhead{from: from, began: time.Now(), done: make(chan readAheadResult, 1)}
	go func() {
		var events []RecordedEvent
		var last Position
		var err error
		if filter.none() {
			events, err = ReadAll(ctx, db, from, limit)
			if len(events) > 0 {
				last = PositionOf(events[len(events)-1])
			}
		} else {
			events, last, err = readFiltered(ctx, db, from, limit, filter)
		}
		if err == nil && decode {
			err = DecodeAll(events)
		}
		ra.done <- readAheadResult{events, last, err}
	}()
	return ra
}

// ReadAheadBatch is what a ReadAhead read.
type ReadAheadBatch struct {
	From   Position        // where the read began: the reader uses it only from there
	Began  time.Time       // when it was sent
	Events []RecordedEvent // decoded if asked
	Last   Position        // where the checkpoint may move: the last event, or past skipped ones (Types)
}

// Await waits for the read; ok is false when it failed (the reader then
// reads for itself) or nothing was read ahead (ra is nil). A reader waits
// before it takes its own connection: with a pool of one, the read could
// otherwise never get one.
func (ra *ReadAhead) Await(ctx context.Context) (b ReadAheadBatch, ok bool) {
	if ra == nil {
		return b, false
	}
	select {
	case r := <-ra.done:
		return ReadAheadBatch{ra.from, ra.began, r.events, r.last}, r.err == nil
	case <-ctx.Done():
		return b, false
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
