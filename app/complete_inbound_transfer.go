package app

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// CompleteInboundTransfer settles a pending inbound transfer: the transfer
// completes and its journal entry posts. Completing a completed transfer
// changes nothing, so the settler may safely run it twice.
func (a *App) CompleteInboundTransfer(ctx context.Context, meta Meta, id string) error {
	return a.run(ctx, func(ctx context.Context, tx pgx.Tx) error {
		recs, version, err := eventstore.Load(ctx, tx, inbound.StreamID(id))
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			return domain.NotFound("inbound_transfer", id)
		}
		s, err := eventstore.Fold(recs, inbound.State{}, inbound.Evolve)
		if err != nil {
			return err
		}
		if s.Status != inbound.StatusPending {
			return nil
		}
		env, _ := domain.ParseEnvironment(recs[0].Environment)
		c := Caller{PlatformID: recs[0].PlatformID, Environment: env}
		if _, err := lockAccounts(ctx, tx, c, []string{s.VirtualAccountID}); err != nil {
			return err
		}
		je, jeVersion, err := loadJournalEntry(ctx, tx, c, s.JournalEntryID)
		if err != nil {
			return err
		}
		at := now()
		if _, err := a.appendAndProject(ctx, tx, inboundStream(c, id), version, meta,
			[]domain.Event{inbound.Completed{InboundTransferID: id, At: at}}); err != nil {
			return err
		}
		_, err = a.appendAndProject(ctx, tx, journalStream(c, je.ID), jeVersion, meta,
			[]domain.Event{ledger.Posted{JournalEntryID: je.ID, Lines: je.Lines, At: at}})
		return err
	})
}
