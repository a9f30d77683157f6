package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
)

// RailConnector carries one environment's payments on the rails and turns
// what the rails answer into this package's commands — SubmitPayment,
// CompletePayment, FailPayment, CutACHFile (submitting with trace numbers
// and a file id), ReturnACHPayment, NoteACHChange, ApplyACHInbound
// (inbound credits). There are two: the sandbox's simulator
// (sandbox.Connector) and the sponsor bank's (bank.Connector); serve runs
// one for each environment. Only the commands cross: a connector never
// writes the log or the read models itself.
type RailConnector interface {
	// Environment is the one whose payments it carries.
	Environment() domain.Environment
	// Rails says, rail by rail, whether it is connected, and why not.
	Rails() []RailStatus
	// Run carries payments until ctx ends.
	Run(ctx context.Context)
}

// RailStatus is one rail's connection, as /readyz shows it.
type RailStatus struct {
	Rail      string `json:"rail"`
	Connected bool   `json:"connected"`
	// Reason says why a rail is not connected (what to configure).
	Reason string `json:"reason,omitempty"`
}
