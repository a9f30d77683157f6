package projections

import (
	"sort"
	"strings"

	"github.com/opentreasury/treasury/eventstore"
)

// StreamCache holds, during a replay from the start of the log, the events
// replayed so far of the streams projectors fold (payments, businesses,
// inbound transfers; of a journal entry only its first event, the only one
// read), so that a projector folding a stream up to the event at hand need
// not read it back from the log. Other streams are read from the log.
type StreamCache map[string][]eventstore.RecordedEvent

// cacheable says whether the cache holds the stream (and so answers for it).
func cacheable(streamID string) bool {
	for _, p := range []string{"payment-", "kyb_entity-", "inbound_transfer-", "journal_entry-"} {
		if strings.HasPrefix(streamID, p) {
			return true
		}
	}
	return false
}

// add records e in version order, once: an event replayed again after a
// rolled-back attempt is already there, and the log's order (by
// transaction id) may bring a stream's versions out of order.
func (c StreamCache) add(e *eventstore.RecordedEvent) {
	if c == nil || !cacheable(e.StreamID) {
		return
	}
	if strings.HasPrefix(e.StreamID, "journal_entry-") && e.StreamVersion != 1 {
		return
	}
	s := c[e.StreamID]
	i := sort.Search(len(s), func(i int) bool { return s[i].StreamVersion >= e.StreamVersion })
	if i < len(s) && s[i].StreamVersion == e.StreamVersion {
		return
	}
	s = append(s, eventstore.RecordedEvent{})
	copy(s[i+1:], s[i:])
	s[i] = *e
	c[e.StreamID] = s
}

// ForgetAfter drops the events after pos: a failed transaction replayed
// them, and the next attempt replays them again.
func (c StreamCache) ForgetAfter(pos eventstore.Position) {
	for id, s := range c {
		kept := s[:0]
		for _, e := range s {
			if !pos.Less(eventstore.PositionOf(e)) {
				kept = append(kept, e)
			}
		}
		c[id] = kept
	}
}
