package app

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// FundPlatform is the operator's POST /operator/platforms/:id/fund: money
// the operator has placed at the bank for the platform, credited to the
// platform's platform_operating account in one environment.
type FundPlatform struct {
	PlatformID  string
	Environment domain.Environment
	Amount      *int64
	Description string
}

func (in FundPlatform) validate() error {
	if err := ledger.CheckManualAmount("amount", in.Amount); err != nil {
		return err
	}
	if utf8.RuneCountInString(in.Description) > MaxDescriptionLen {
		return domain.Invalid("description", "description must be at most %d characters", MaxDescriptionLen)
	}
	return nil
}

// FundPlatform posts one journal entry of type funding: a debit to the
// operator_funding account (added to the platform's chart on first use)
// and a credit to platform_operating, under both accounts' balance locks
// (the bound applies to fundings too). In live it is the only source of
// platform_operating's money; the entry's event carries the operator as
// its actor (meta).
func (a *App) FundPlatform(ctx context.Context, meta Meta, idem *Idempotency, in FundPlatform) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	meta = withIdempotencyKey(meta, idem)
	c := Caller{PlatformID: in.PlatformID, Environment: in.Environment}
	id := domain.NewID(domain.PrefixJournalEntry)
	return a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		if err := checkFundable(ctx, tx, c); err != nil {
			return Result{}, err
		}
		chart, err := a.ensureFundingAccount(ctx, tx, meta, c)
		if err != nil {
			return Result{}, err
		}
		lines := []ledger.Line{
			{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.CodeOperatorFunding],
				Direction: ledger.Debit, Amount: *in.Amount, Type: ledger.TypeFunding},
			{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.CodePlatformOperating],
				Direction: ledger.Credit, Amount: *in.Amount, Type: ledger.TypeFunding},
		}
		if err := checkPlatformAccounts(ctx, tx, c, lines); err != nil {
			return Result{}, err
		}
		desc := strings.TrimSpace(in.Description)
		if desc == "" {
			desc = "Funding by the operator"
		}
		at := now()
		_, err = appendAndProject(ctx, tx, journalStream(c, id), 0, meta, []domain.Event{ledger.Recorded{
			JournalEntryID: id, PlatformID: c.PlatformID, Environment: c.Environment, Type: ledger.TypeFunding,
			Description: desc, Status: ledger.StatusPosted, Lines: lines,
			Source: ledger.Source{Type: "journal_entry", ID: id}, EffectiveAt: at, At: at}})
		return Result{ID: id}, err
	})
}

// checkFundable: the platform exists (404) and, for live, has live enabled
// (422 live_not_enabled).
func checkFundable(ctx context.Context, tx pgx.Tx, c Caller) error {
	var live bool
	err := tx.QueryRow(ctx, `SELECT live_enabled FROM platforms WHERE id = $1`, c.PlatformID).Scan(&live)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.NotFound("platform", c.PlatformID)
	}
	if err != nil {
		return err
	}
	if c.Environment == domain.Live && !live {
		return domain.Errorf(domain.CodeLiveNotEnabled, "the platform's live environment is not enabled")
	}
	return nil
}

// ensureFundingAccount opens the platform's chart if needed and adds the
// operator_funding account to it on the first funding: a second
// ChartOpened on the chart's stream, naming only the new account (the
// stream's expected version makes two first fundings at once retry, not
// open two accounts).
func (a *App) ensureFundingAccount(ctx context.Context, tx pgx.Tx, meta Meta, c Caller) (map[string]string, error) {
	chart, err := a.ensureChart(ctx, tx, meta, c)
	if err != nil || chart[ledger.CodeOperatorFunding] != "" {
		return chart, err
	}
	streamID := ledger.ChartStreamID(c.PlatformID, c.Environment)
	_, version, err := eventstore.Load(ctx, tx, streamID)
	if err != nil {
		return nil, err
	}
	id := domain.NewID(domain.PrefixLedgerAccount)
	s := eventstore.Stream{ID: streamID, Type: "ledger_chart", PlatformID: c.PlatformID, Environment: c.Environment.String()}
	if _, err := appendAndProject(ctx, tx, s, version, meta, []domain.Event{ledger.ChartOpened{
		PlatformID: c.PlatformID, Environment: c.Environment, Accounts: map[string]string{ledger.CodeOperatorFunding: id}, At: now()}}); err != nil {
		return nil, err
	}
	chart[ledger.CodeOperatorFunding] = id
	return chart, nil
}
