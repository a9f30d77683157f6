package sandbox

import (
	"context"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// Connector is the sandbox's rail connector (app.RailConnector): the
// simulator's scheduler, a subscriber of the log, and its settler.
type Connector struct {
	Sim *Simulator
	// Wake gives each part of the scheduler its channel of the log's
	// wake-ups (eventstore.Notifier.Subscribe).
	Wake func() <-chan struct{}
	// Parts are the parts of the log the scheduler is split into (none:
	// the whole log), each run while Lease is held (nil: always).
	Parts []eventstore.Partition
	Lease *eventstore.Leases
}

var _ app.RailConnector = Connector{}

func (Connector) Environment() domain.Environment { return domain.Sandbox }

// Rails are all four, simulated.
func (Connector) Rails() []app.RailStatus {
	out := make([]app.RailStatus, 0, len(rails.All))
	for _, r := range rails.All {
		out = append(out, app.RailStatus{Rail: r.String(), Connected: true})
	}
	return out
}

// Run schedules and settles the sandbox's payments and transfers until ctx
// ends.
func (c Connector) Run(ctx context.Context) {
	for _, p := range c.parts() {
		schedule := c.Sim.Subscription(c.Wake())
		schedule.Name, schedule.Partition, schedule.Lease = p.Name(schedule.Name), p, c.Lease
		schedule.Pacer = c.Sim.Pacer
		go schedule.Run(ctx)
	}
	c.Sim.RunSettler(ctx)
}

func (c Connector) parts() []eventstore.Partition {
	if len(c.Parts) == 0 {
		return eventstore.Partitions(1)
	}
	return c.Parts
}
