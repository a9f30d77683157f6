package projections_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/webhook"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// An endpoint's or an account's event on a stream that is not theirs (a
// short or foreign stream id) is no row of theirs: the inline projectors
// write nothing for it, and never slice past the id (they used to panic).
func TestEventsOnAForeignStreamWriteNothing(t *testing.T) {
	for _, ev := range []domain.Event{webhook.Deleted{At: time.Now()}, account.Frozen{At: time.Now()}} {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, stream := range []string{"x", "runnertest-" + ev.EventType()} {
			r := eventstore.RecordedEvent{StreamID: stream, Type: ev.EventType(), Data: data, Metadata: []byte(`{}`), Event: ev}
			b, err := projections.ProjectInline([]eventstore.RecordedEvent{r})
			if err != nil {
				t.Fatalf("%s on %q: %v", ev.EventType(), stream, err)
			}
			into := &pgx.Batch{}
			if n, err := b.MoveWritesTo(into); err != nil || n != 0 {
				t.Errorf("%s on %q: %d writes (%v), want none", ev.EventType(), stream, n, err)
			}
		}
	}
}
