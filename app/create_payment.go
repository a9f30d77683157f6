package app

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/platform"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// CreatePayment accepts a payment and holds amount + fee, in one
// transaction under the account's balance lock. The business rules run in
// this order: account active, KYB approved, screening, daily limit,
// available ≥ amount + fee.
func (a *App) CreatePayment(ctx context.Context, meta Meta, idem *Idempotency, c Caller, req payment.Request) (Result, error) {
	rail, err := req.Validate()
	if err != nil {
		return Result{}, err
	}
	if idem == nil {
		return Result{}, domain.Invalid("idempotency_key", "idempotency_key is required (in the body or the Idempotency-Key header)")
	}
	meta = withIdempotencyKey(meta, idem)
	return a.runIdempotent(ctx, idem, func(ctx context.Context, tx pgx.Tx) (Result, error) {
		locked, err := lockAccounts(ctx, tx, c, []string{req.VirtualAccountID})
		if err != nil {
			return Result{}, err
		}
		acc := locked[req.VirtualAccountID]
		if acc.Status != "active" {
			return Result{}, &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: acc.ID,
				Message: "the virtual account is " + acc.Status + "; only active accounts send payments"}
		}
		if err := requireKYBApproved(ctx, tx, c, acc.EntityRef, acc.ID); err != nil {
			return Result{}, err
		}
		if domain.ScreeningHit(req.Destination.Name) {
			return Result{}, &domain.Error{Code: domain.CodeComplianceRejected, Param: "destination.name",
				Message: "the destination name is on the screening list"}
		}
		at := now()
		settings, err := projections.GetSettings(ctx, tx, c.PlatformID, c.Environment)
		if err != nil {
			return Result{}, err
		}
		if err := checkDailyLimit(ctx, tx, acc.ID, req.Amount, settings.DailyPaymentLimit, at); err != nil {
			return Result{}, err
		}
		fee, err := feeFor(ctx, tx, c.PlatformID, rail)
		if err != nil {
			return Result{}, err
		}
		chart, err := a.ensureChart(ctx, tx, meta, c)
		if err != nil {
			return Result{}, err
		}
		id := domain.NewID(domain.PrefixPayment)
		jeID := domain.NewID(domain.PrefixJournalEntry)
		lines := paymentLines(acc, chart, rail, req.Amount, fee)
		balances := map[string]ledger.Balance{acc.ID: acc.Balance}
		if err := ledger.CheckFunds(balances, lines, ledger.StatusPending); err != nil {
			return Result{}, err
		}
		desc := req.Description
		if desc == "" {
			desc = "Payment to " + req.Destination.Name
		}
		created := payment.Created{PaymentID: id, PlatformID: c.PlatformID, Environment: c.Environment,
			VirtualAccountID: acc.ID, Amount: req.Amount, Fee: fee, Rail: rail.String(), Destination: req.Destination,
			IdempotencyKey: idem.Key, Description: req.Description, Metadata: req.Metadata, JournalEntryID: jeID,
			ExpectedSettlementAt: a.expectedSettlement(c.Environment, rail, settings.Sandbox, at), At: at}
		if _, err := a.appendAndProject(ctx, tx, paymentStream(c, id), 0, meta, []domain.Event{created}); err != nil {
			return Result{}, err
		}
		_, err = a.appendAndProject(ctx, tx, journalStream(c, jeID), 0, meta, []domain.Event{ledger.Recorded{
			JournalEntryID: jeID, PlatformID: c.PlatformID, Environment: c.Environment, Type: ledger.TypePayment,
			Description: desc, Status: ledger.StatusPending, Lines: lines, Source: ledger.Source{Type: "payment", ID: id},
			EffectiveAt: at, At: at}})
		return Result{ID: id}, err
	})
}

// paymentLines hold the amount (to the rail's clearing account) and the fee
// (to service fee revenue), both out of the virtual account.
func paymentLines(acc lockedAccount, chart map[string]string, rail rails.Rail, amount, fee int64) []ledger.Line {
	lines := []ledger.Line{
		{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: acc.LedgerAccountID, VirtualAccountID: acc.ID,
			Direction: ledger.Debit, Amount: amount, Type: ledger.TypePayment},
		{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.RailClearing(rail.String())],
			Direction: ledger.Credit, Amount: amount, Type: ledger.TypePayment},
	}
	if fee > 0 {
		lines = append(lines,
			ledger.Line{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: acc.LedgerAccountID, VirtualAccountID: acc.ID,
				Direction: ledger.Debit, Amount: fee, Type: ledger.TypePaymentFee},
			ledger.Line{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.CodeServiceFeeRevenue],
				Direction: ledger.Credit, Amount: fee, Type: ledger.TypePaymentFee})
	}
	return lines
}

func requireKYBApproved(ctx context.Context, tx pgx.Tx, c Caller, entityRef, accountID string) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM kyb_entities WHERE platform_id = $1 AND environment = $2 AND entity_ref = $3`,
		c.PlatformID, c.Environment.String(), entityRef).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		status = kyb.StatusNotStarted
	} else if err != nil {
		return err
	}
	if status != kyb.StatusApproved {
		return &domain.Error{Code: domain.CodeKYBNotApproved, ResourceID: accountID,
			Message: "the business behind this account is not KYB approved (kyb_status " + status + ")"}
	}
	return nil
}

// checkDailyLimit refuses a payment that would take the account's payments
// of the day (UTC; failed and canceled ones do not count) past the limit.
// It runs under the account's balance lock, so concurrent payments see
// each other.
func checkDailyLimit(ctx context.Context, tx pgx.Tx, accountID string, amount int64, limit *int64, at time.Time) error {
	if limit == nil {
		return nil
	}
	day := at.UTC().Truncate(24 * time.Hour)
	var spent int64
	if err := tx.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM payments
        WHERE virtual_account_id = $1 AND created_at >= $2 AND created_at < $3 AND status NOT IN ('failed', 'canceled')`,
		accountID, day, day.Add(24*time.Hour)).Scan(&spent); err != nil {
		return err
	}
	if spent+amount > *limit {
		return &domain.Error{Code: domain.CodeLimitExceeded, ResourceID: accountID,
			Message: "this payment would take the account past its daily payment limit"}
	}
	return nil
}

func feeFor(ctx context.Context, tx pgx.Tx, platformID string, rail rails.Rail) (int64, error) {
	var fees map[string]int64
	if err := tx.QueryRow(ctx, `SELECT fee_schedule FROM platforms WHERE id = $1`, platformID).Scan(&fees); err != nil {
		return 0, err
	}
	if fee, ok := fees[rail.String()]; ok {
		return fee, nil
	}
	return rails.DefaultFee(rail), nil
}

// expectedSettlement follows the real calendars in live; in the sandbox,
// the platform's simulated delays (RTP and FedNow at once).
func (a *App) expectedSettlement(env domain.Environment, rail rails.Rail, sb *platform.SandboxSettings, at time.Time) time.Time {
	if env != domain.Sandbox || sb == nil {
		return rails.ExpectedSettlement(rail, at)
	}
	switch rail {
	case rails.ACHSameDay:
		return at.Add(time.Duration(sb.ACHSameDayDelaySeconds) * time.Second)
	case rails.ACHStandard:
		return at.Add(time.Duration(sb.ACHStandardDelaySeconds) * time.Second)
	}
	return at
}

func paymentStream(c Caller, id string) eventstore.Stream {
	return eventstore.Stream{ID: payment.StreamID(id), Type: payment.StreamType, PlatformID: c.PlatformID, Environment: c.Environment.String()}
}
