package bank

import (
	"context"
	"sync"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
)

// Connector is live mode's rail connector (app.RailConnector): the sponsor
// bank's ACH folders and instant-payments API. A part left nil is not
// configured: its payments stay pending, and Rails says what to set.
type Connector struct {
	ACHOut  *ACHOutbound     // TREASURY_ACH_OUTBOX
	ACHIn   *ACHInbound      // TREASURY_ACH_INBOX
	Instant *InstantOutbound // TREASURY_INSTANT_URL
}

var _ app.RailConnector = Connector{}

func (Connector) Environment() domain.Environment { return domain.Live }

// Rails says, for /readyz, which live rails are connected and why not.
func (c Connector) Rails() []app.RailStatus {
	ach := app.RailStatus{Rail: "ach", Connected: c.ACHOut != nil}
	switch {
	case c.ACHOut == nil:
		ach.Reason = "TREASURY_ACH_OUTBOX is unset: live ACH payments stay pending"
	case c.ACHIn == nil:
		ach.Reason = "TREASURY_ACH_INBOX is unset: the bank's returns and credits are not read"
	}
	instant := app.RailStatus{Connected: c.Instant != nil}
	if c.Instant == nil {
		instant.Reason = "TREASURY_INSTANT_URL is unset: live payments on this rail stay pending"
	}
	rtp, fednow := instant, instant
	rtp.Rail, fednow.Rail = "rtp", "fednow"
	return []app.RailStatus{ach, rtp, fednow}
}

// Run runs the parts configured until ctx ends, and waits for them.
func (c Connector) Run(ctx context.Context) {
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	if c.ACHOut != nil {
		run(c.ACHOut.Run)
	}
	if c.ACHIn != nil {
		run(c.ACHIn.Run)
	}
	if c.Instant != nil {
		run(c.Instant.Run)
	}
	wg.Wait()
}
