package sandbox

import (
	"context"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/rails"
)

// Connector is the sandbox's rail connector (app.RailConnector): the
// simulator's scheduler, a subscriber of the log, and its settler.
type Connector struct {
	Sim  *Simulator
	Wake <-chan struct{} // the log's wake-ups, for the scheduler
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
	schedule := c.Sim.Subscription(c.Wake)
	schedule.Pacer = c.Sim.Pacer
	go schedule.Run(ctx)
	c.Sim.RunSettler(ctx)
}
