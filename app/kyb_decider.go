package app

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
)

// KYBDeciderName is the checkpoint name of the KYB decider.
const KYBDeciderName = "kyb_decider"

// KYBDecider is the subscriber that decides filed verifications with the
// environment's Verifier (the sandbox's EIN rules; live: manual review).
// It reads the log, so a verification filed just before a crash is still
// decided after the restart; deciding twice changes nothing. It asks the
// log for kyb.Submitted only: the thousands of other events a second
// brings never leave the database (the checkpoint still moves past them).
// Its own transaction writes only the checkpoint (each decision is a
// command of its own), and it moves on nearly every wake-up: it commits
// without waiting for the WAL flush, since a checkpoint lost in a crash
// only means deciding again, which changes nothing.
func (a *App) KYBDecider(wake <-chan struct{}) *eventstore.Subscription {
	return &eventstore.Subscription{Name: KYBDeciderName, Pool: a.Pool, Wake: wake, Log: a.Log, Derived: true,
		Types: []string{(kyb.Submitted{}).EventType()},
		Handle: func(ctx context.Context, _ pgx.Tx, events []eventstore.RecordedEvent) error {
			for i := range events {
				if events[i].Type != (kyb.Submitted{}).EventType() {
					continue
				}
				ev, err := events[i].Decode()
				if err != nil {
					return err
				}
				sub := ev.(kyb.Submitted)
				d := kyb.VerifierFor(sub.Environment).Verify(sub, now())
				if err := a.DecideKYB(ctx, Meta{Actor: "kyb_decider", CausationID: events[i].EventID}, nil, d); err != nil {
					return err
				}
			}
			return nil
		}}
}
