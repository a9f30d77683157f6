package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
)

// CompleteInboundTransfer settles a pending inbound transfer: the transfer
// completes and its journal entry posts. Completing a completed transfer
// changes nothing, so the settler may safely run it twice.
func (a *App) CompleteInboundTransfer(ctx context.Context, meta Meta, id string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, completeInboundTransfer(ctx, tx, meta, id)
	})
	return err
}

func completeInboundTransfer(ctx context.Context, tx *commandTx, meta Meta, id string) error {
	transfer, err := loadStream(ctx, tx, inboundTransfers, nil, id)
	if err != nil {
		return err
	}
	s, c := transfer.State, transfer.Owner
	if s.Status != inbound.StatusPending {
		return nil
	}
	if _, err := lockAccounts(ctx, tx, c, []string{s.VirtualAccountID}); err != nil {
		return err
	}
	je, err := loadStream(ctx, tx, journalEntries, &c, s.JournalEntryID)
	if err != nil {
		return err
	}
	at := now()
	if _, err := appendAndProject(ctx, tx, inboundStream(c, id), transfer.Version, meta,
		[]domain.Event{inbound.Completed{InboundTransferID: id, At: at}}); err != nil {
		return err
	}
	_, err = appendAndProject(ctx, tx, journalStream(c, je.State.ID), je.Version, meta,
		[]domain.Event{ledger.Posted{JournalEntryID: je.State.ID, Lines: je.State.Lines, At: at}})
	return err
}
