package app

import (
	"context"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// SimulateInboundTransfer is the sandbox's POST /simulations/inbound-transfers.
type SimulateInboundTransfer struct {
	VirtualAccountID string
	Amount           int64
	Rail             string
	Originator       inbound.Originator
	Description      string
}

// SimulateInboundTransfer credits a virtual account: RTP and FedNow post
// at once; ACH is pending until the platform's sandbox delay has passed
// (the sandbox settler completes it, restart-safe).
func (a *App) SimulateInboundTransfer(ctx context.Context, meta Meta, c Caller, in SimulateInboundTransfer) (Result, error) {
	if c.Environment != domain.Sandbox {
		return Result{}, domain.Errorf(domain.CodeForbidden, "inbound transfers are simulated in the sandbox only")
	}
	rail, err := inbound.Validate(in.Amount, in.Rail, in.Originator, in.Description)
	if err != nil {
		return Result{}, err
	}
	return a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		locked, err := lockAccounts(ctx, tx, c, []string{in.VirtualAccountID})
		if err != nil {
			return Result{}, err
		}
		acc := locked[in.VirtualAccountID]
		if acc.Status == account.StatusClosed.String() {
			return Result{}, &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: acc.ID, Message: "a closed account rejects inbound funds"}
		}
		chart, err := a.ensureChart(ctx, tx, meta, c)
		if err != nil {
			return Result{}, err
		}
		settings, err := queries.GetSettings(ctx, tx, c.PlatformID, c.Environment)
		if err != nil {
			return Result{}, err
		}
		at := now()
		expected := at
		if settings.Sandbox != nil {
			expected = at.Add(settings.Sandbox.Delay(rail))
		}
		id := domain.NewID(domain.PrefixInbound)
		jeID := domain.NewID(domain.PrefixJournalEntry)
		desc := in.Description
		if desc == "" {
			desc = "Inbound " + rail.String() + " from " + in.Originator.Name
		}
		lines := []ledger.Line{
			{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.RailClearing(rail.String())],
				Direction: ledger.Debit, Amount: in.Amount, Type: ledger.TypeInboundTransfer},
			{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: acc.LedgerAccountID, VirtualAccountID: acc.ID,
				Direction: ledger.Credit, Amount: in.Amount, Type: ledger.TypeInboundTransfer},
		}
		instant := !expected.After(at)
		status := ledger.StatusPending
		if instant {
			status = ledger.StatusPosted
		}
		// Under the account's lock: the credit may not take the account
		// past the balance bound (completion moves pending to posted and
		// keeps the sum, so it needs no check of its own).
		if err := ledger.CheckLimits(map[string]ledger.Balance{acc.ID: acc.Balance}, lines); err != nil {
			return Result{}, err
		}
		transfer := []domain.Event{inbound.Received{InboundTransferID: id, VirtualAccountID: acc.ID, Amount: in.Amount,
			Rail: rail.String(), Originator: in.Originator, Description: desc, JournalEntryID: jeID, ExpectedAt: expected, At: at}}
		if instant {
			transfer = append(transfer, inbound.Completed{InboundTransferID: id, At: at})
		}
		if _, err := appendAndProject(ctx, tx, inboundStream(c, id), 0, meta, transfer); err != nil {
			return Result{}, err
		}
		_, err = appendAndProject(ctx, tx, journalStream(c, jeID), 0, meta, []domain.Event{ledger.Recorded{
			JournalEntryID: jeID, PlatformID: c.PlatformID, Environment: c.Environment, Type: ledger.TypeInboundTransfer,
			Description: desc, Status: status, Lines: lines, Source: ledger.Source{Type: "inbound_transfer", ID: id},
			EffectiveAt: at, At: at}})
		return Result{ID: id}, err
	})
}

func inboundStream(c Caller, id string) eventstore.Stream {
	return inboundTransfers.stream(c, id)
}
