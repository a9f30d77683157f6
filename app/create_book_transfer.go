package app

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/eventstore"
)

// CreateBookTransfer moves money between two of the caller's virtual
// accounts at once (POST /book-transfers). The rules are
// booktransfer.Decide's; this locks both balance rows (in id order, as
// every command does), reads the sender's KYB status and appends what it
// decides.
func (a *App) CreateBookTransfer(ctx context.Context, meta Meta, idem *Idempotency, c Caller, req booktransfer.Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err
	}
	if idem == nil {
		return Result{}, domain.Invalid("idempotency_key", "idempotency_key is required (in the body or the Idempotency-Key header)")
	}
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixBookTransfer)
	return a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		locked, err := lockAccounts(ctx, tx, c, []string{req.FromVirtualAccountID, req.ToVirtualAccountID})
		if err != nil {
			return Result{}, err
		}
		party := func(id string) booktransfer.Party {
			acc := locked[id]
			return booktransfer.Party{ID: id, Status: acc.Status, LedgerAccountID: acc.LedgerAccountID, Balance: acc.Balance}
		}
		from, to := party(req.FromVirtualAccountID), party(req.ToVirtualAccountID)
		if from.KYBStatus, err = kybStatusOf(ctx, tx, c, locked[from.ID].EntityRef); err != nil {
			return Result{}, err
		}
		jeID := domain.NewID(domain.PrefixJournalEntry)
		events, err := booktransfer.Decide(booktransfer.Inputs{Request: req, PlatformID: c.PlatformID, Environment: c.Environment,
			IdempotencyKey: idem.Key, From: from, To: to, Now: now(),
			IDs: booktransfer.NewIDs{BookTransfer: id, JournalEntry: jeID, LedgerEntry: newLedgerEntryID}})
		if err != nil {
			return Result{}, err
		}
		if _, err := appendAndProject(ctx, tx, bookTransferStream(c, id), 0, meta, events[:1]); err != nil {
			return Result{}, err
		}
		_, err = appendAndProject(ctx, tx, journalStream(c, jeID), 0, meta, events[1:])
		return Result{ID: id}, err
	})
}

// kybStatusOf is the KYB status of the business entityRef of the caller's
// environment, read in tx (kyb_entities is written inline).
func kybStatusOf(ctx context.Context, tx pgx.Tx, c Caller, entityRef string) (string, error) {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM kyb_entities WHERE platform_id = $1 AND environment = $2 AND entity_ref = $3`,
		c.PlatformID, c.Environment.String(), entityRef).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return kyb.StatusNotStarted, nil
	}
	return status, err
}

func bookTransferStream(c Caller, id string) eventstore.Stream { return bookTransfers.stream(c, id) }
