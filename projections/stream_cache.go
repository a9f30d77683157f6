package projections

import (
	"sort"
	"strings"

	"github.com/opentreasury/treasury/eventstore"
)

// StreamCache holds the events of the streams the public events fold
// (payments, businesses, inbound transfers, counterparties; of a journal entry only its
// first event, the only one read), kept across batches so that showing a
// resource as it was at an event costs no read of the log.
//
// A replay from the start of the log (NewReplayCache) sees every event, so
// it holds every such stream whole and answers for all of them. The live
// subscriber (NewLiveCache) starts anywhere in the log: it answers only
// for streams it holds from their first event, reads the others from the
// log once, and forgets the oldest streams past its bound.
type StreamCache struct {
	streams  map[string][]eventstore.RecordedEvent
	whole    bool     // holds every stream from its start (a replay from the start of the log)
	max      int      // streams held at most; 0: no bound
	inserted []string // streams in the order they were first held, for forgetting
}

// NewReplayCache is the cache of a replay from the start of the log.
func NewReplayCache() *StreamCache {
	return &StreamCache{streams: map[string][]eventstore.RecordedEvent{}, whole: true}
}

// NewLiveCache is the cache of the live subscriber, holding at most max
// streams.
func NewLiveCache(max int) *StreamCache {
	return &StreamCache{streams: map[string][]eventstore.RecordedEvent{}, max: max}
}

// cacheable says whether the cache holds the stream (and so answers for it).
func cacheable(streamID string) bool {
	for _, p := range []string{"payment-", "kyb_entity-", "inbound_transfer-", "journal_entry-", "counterparty-"} {
		if strings.HasPrefix(streamID, p) {
			return true
		}
	}
	return false
}

// holdsUpTo reports whether the cache answers for the stream folded up to
// version upTo: a replay's cache always does; a live one when it has every
// version from the first to upTo (the log may bring a stream's versions
// out of order, and a live cache skips events of streams it did not see
// start), never for upTo 0 (every event before a position).
func (c *StreamCache) holdsUpTo(id string, upTo int64) bool {
	if c == nil {
		return false
	}
	if c.whole {
		return true
	}
	s := c.streams[id]
	if upTo == 0 || int64(len(s)) < upTo {
		return false
	}
	for i := range upTo {
		if s[i].StreamVersion != i+1 {
			return false
		}
	}
	return true
}

func (c *StreamCache) stream(id string) []eventstore.RecordedEvent { return c.streams[id] }

// add records e in version order, once: an event seen again (a batch
// retried after a rollback; the log is immutable, so it is the same) is
// already there, and the log's order (by transaction id) may bring a
// stream's versions out of order. A live cache starts a stream only at
// its first event: later ones alone could not be folded.
func (c *StreamCache) add(e *eventstore.RecordedEvent) {
	if c == nil || !cacheable(e.StreamID) {
		return
	}
	if strings.HasPrefix(e.StreamID, "journal_entry-") && e.StreamVersion != 1 {
		return
	}
	s, ok := c.streams[e.StreamID]
	if !ok && !c.whole && e.StreamVersion != 1 {
		return
	}
	i := sort.Search(len(s), func(i int) bool { return s[i].StreamVersion >= e.StreamVersion })
	if i < len(s) && s[i].StreamVersion == e.StreamVersion {
		return
	}
	s = append(s, eventstore.RecordedEvent{})
	copy(s[i+1:], s[i:])
	s[i] = *e
	c.streams[e.StreamID] = s
	if !ok && c.max > 0 {
		c.inserted = append(c.inserted, e.StreamID)
		for len(c.streams) > c.max {
			delete(c.streams, c.inserted[0])
			c.inserted = c.inserted[1:]
		}
	}
}

// ForgetAfter drops the events after pos: a failed transaction replayed
// them, and the next attempt replays them again.
func (c *StreamCache) ForgetAfter(pos eventstore.Position) {
	for id, s := range c.streams {
		kept := s[:0]
		for _, e := range s {
			if !pos.Less(eventstore.PositionOf(e)) {
				kept = append(kept, e)
			}
		}
		c.streams[id] = kept
	}
}
