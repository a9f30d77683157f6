package app

import (
	"context"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/rails"
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
func (a *App) SimulateInboundTransfer(ctx context.Context, meta Meta, idem *Idempotency, c Caller, in SimulateInboundTransfer) (Result, error) {
	if c.Environment != domain.Sandbox {
		return Result{}, domain.Errorf(domain.CodeForbidden, "inbound transfers are simulated in the sandbox only")
	}
	rail, err := inbound.Validate(in.Amount, in.Rail, in.Originator, in.Description)
	if err != nil {
		return Result{}, err
	}
	meta = withIdempotencyKey(meta, idem)
	return a.execute(ctx, command{idem: idem}, func(ctx context.Context, tx *commandTx) (Result, error) {
		locked, err := lockAccounts(ctx, tx, c, []string{in.VirtualAccountID})
		if err != nil {
			return Result{}, err
		}
		acc := locked[in.VirtualAccountID]
		if acc.Status == account.StatusClosed.String() {
			return Result{}, &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: acc.ID, Message: "a closed account rejects inbound funds"}
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
		err = a.creditAccount(ctx, tx, meta, c, acc, credit{ID: id, Rail: rail, Amount: in.Amount,
			Originator: in.Originator, Description: in.Description, ExpectedAt: expected, At: at})
		return Result{ID: id}, err
	})
}

// credit is funds arriving in a virtual account.
type credit struct {
	ID          string // the inbound transfer's
	Rail        rails.Rail
	Amount      int64
	Originator  inbound.Originator
	Description string // "" for the default
	// ExpectedAt is when it settles: at At or before, it posts at once.
	ExpectedAt, At time.Time
}

// creditAccount records a credit to acc, whose balance row tx holds: the
// inbound transfer (completed, if it settles at once) and its journal
// entry, funded by the rail's clearing account.
func (a *App) creditAccount(ctx context.Context, tx *commandTx, meta Meta, c Caller, acc lockedAccount, in credit) error {
	chart, err := a.ensureChart(ctx, tx, meta, c)
	if err != nil {
		return err
	}
	jeID := domain.NewID(domain.PrefixJournalEntry)
	desc := in.Description
	if desc == "" {
		desc = "Inbound " + in.Rail.String() + " from " + in.Originator.Name
	}
	lines := []ledger.Line{
		{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.RailClearing(in.Rail.String())],
			Direction: ledger.Debit, Amount: in.Amount, Type: ledger.TypeInboundTransfer},
		{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: acc.LedgerAccountID, VirtualAccountID: acc.ID,
			Direction: ledger.Credit, Amount: in.Amount, Type: ledger.TypeInboundTransfer},
	}
	instant := !in.ExpectedAt.After(in.At)
	status := ledger.StatusPending
	if instant {
		status = ledger.StatusPosted
	}
	// Under the account's lock: the credit may not take the account past
	// the balance bound (completion moves pending to posted and keeps the
	// sum, so it needs no check of its own).
	if err := ledger.CheckLimits(map[string]ledger.Balance{acc.ID: acc.Balance}, lines); err != nil {
		return err
	}
	transfer := []domain.Event{inbound.Received{InboundTransferID: in.ID, VirtualAccountID: acc.ID, Amount: in.Amount,
		Rail: in.Rail.String(), Originator: in.Originator, Description: desc, JournalEntryID: jeID, ExpectedAt: in.ExpectedAt, At: in.At}}
	if instant {
		transfer = append(transfer, inbound.Completed{InboundTransferID: in.ID, At: in.At})
	}
	if _, err := appendAndProject(ctx, tx, inboundStream(c, in.ID), 0, meta, transfer); err != nil {
		return err
	}
	_, err = appendAndProject(ctx, tx, journalStream(c, jeID), 0, meta, []domain.Event{ledger.Recorded{
		JournalEntryID: jeID, PlatformID: c.PlatformID, Environment: c.Environment, Type: ledger.TypeInboundTransfer,
		Description: desc, Status: status, Lines: lines, Source: ledger.Source{Type: "inbound_transfer", ID: in.ID},
		EffectiveAt: in.At, At: in.At}})
	return err
}

func inboundStream(c Caller, id string) eventstore.Stream {
	return inboundTransfers.stream(c, id)
}
