package app

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
)

// PostJournalEntry is a manual journal entry (POST /ledger/entries) in one
// of three forms: shorthand (VirtualAccountID, Direction, Amount), Lines,
// or Reverses.
type PostJournalEntry struct {
	Type             string
	Description      string
	VirtualAccountID string
	Direction        string
	Amount           *int64
	Lines            []JournalLine
	Reverses         string
	EffectiveAt      *time.Time
	Metadata         map[string]string
}

// JournalLine is one line of the Lines form; its rules are the ledger's.
type JournalLine = ledger.ManualLine

// MaxDescriptionLen bounds descriptions of journal entries.
const MaxDescriptionLen = 500

func (a *App) PostJournalEntry(ctx context.Context, meta Meta, idem *Idempotency, c Caller, in PostJournalEntry) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixJournalEntry)
	return a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		chart, err := a.ensureChart(ctx, tx, meta, c)
		if err != nil {
			return Result{}, err
		}
		typ := in.Type
		var lines []ledger.Line
		var reversed *ledger.State
		var reversedVersion int64
		switch {
		case in.Reverses != "":
			l, err := loadStream(ctx, tx, journalEntries, &c, in.Reverses)
			if err != nil {
				return Result{}, err
			}
			st, version := l.State, l.Version
			if err := st.CanReverse(); err != nil {
				return Result{}, err
			}
			if typ == "" {
				typ = ledger.TypeCorrection
			}
			lines = ledger.Mirror(st.Lines, newLedgerEntryID, typ)
			reversed, reversedVersion = &st, version
		case len(in.Lines) > 0:
			if lines, err = resolveLines(ctx, tx, c, in.Lines, typ); err != nil {
				return Result{}, err
			}
		default:
			dir, _ := ledger.ParseDirection(in.Direction)
			if lines, err = ledger.ShorthandLines(in.VirtualAccountID, dir, *in.Amount, typ, chart, newLedgerEntryID); err != nil {
				return Result{}, err
			}
		}
		// A reversal mirrors an entry that may predate today's amount
		// bound: undoing it must stay possible, balanced all the same.
		validate := ledger.ValidateLines
		if reversed != nil {
			validate = ledger.ValidateBalanced
		}
		if err := validate(lines); err != nil {
			return Result{}, err
		}
		if err := checkAccounts(ctx, tx, c, lines, ledger.StatusPosted); err != nil {
			return Result{}, err
		}
		at := now()
		effective := at
		if in.EffectiveAt != nil {
			effective = in.EffectiveAt.UTC()
		}
		desc := in.Description
		if desc == "" && reversed != nil {
			desc = "Reversal of " + reversed.ID
		}
		rec := ledger.Recorded{JournalEntryID: id, PlatformID: c.PlatformID, Environment: c.Environment, Type: typ,
			Description: desc, Status: ledger.StatusPosted, Lines: lines, Source: ledger.Source{Type: "journal_entry", ID: id},
			Metadata: in.Metadata, EffectiveAt: effective, At: at}
		if reversed != nil {
			rec.Reverses = reversed.ID
			if _, err := appendAndProject(ctx, tx, journalStream(c, reversed.ID), reversedVersion, meta,
				[]domain.Event{ledger.Reversed{JournalEntryID: reversed.ID, ReversedBy: id, At: at}}); err != nil {
				return Result{}, err
			}
		}
		_, err = appendAndProject(ctx, tx, journalStream(c, id), 0, meta, []domain.Event{rec})
		return Result{ID: id}, err
	})
}

func (in PostJournalEntry) validate() error {
	if !ledger.IsManualType(in.Type) && !(in.Reverses != "" && in.Type == "") {
		return domain.Invalid("type", "type must be adjustment, fee or correction")
	}
	if utf8.RuneCountInString(in.Description) > MaxDescriptionLen {
		return domain.Invalid("description", "description must be at most %d characters", MaxDescriptionLen)
	}
	if strings.TrimSpace(in.Description) == "" && in.Reverses == "" {
		return domain.Invalid("description", "description is required")
	}
	if err := domain.ValidateMetadata("metadata", in.Metadata); err != nil {
		return err
	}
	shorthand := in.VirtualAccountID != "" || in.Direction != "" || in.Amount != nil
	forms := 0
	for _, used := range []bool{shorthand, len(in.Lines) > 0, in.Reverses != ""} {
		if used {
			forms++
		}
	}
	if forms != 1 {
		return domain.Invalid("lines", "give exactly one of: virtual_account_id with direction and amount; lines; reverses")
	}
	switch {
	case in.Reverses != "":
		if !domain.HasPrefix(in.Reverses, domain.PrefixJournalEntry) {
			return domain.NotFound("journal_entry", in.Reverses)
		}
	case shorthand:
		if !domain.HasPrefix(in.VirtualAccountID, domain.PrefixVirtualAccount) {
			return domain.Invalid("virtual_account_id", "virtual_account_id must be a va_ id")
		}
		if _, ok := ledger.ParseDirection(in.Direction); !ok {
			return domain.Invalid("direction", "direction must be debit or credit")
		}
		return ledger.CheckManualAmount("amount", in.Amount)
	default:
		return ledger.ValidateManualLines(in.Lines)
	}
	return nil
}

// resolveLines turns request lines into ledger lines (ledger.ManualLines)
// after reading the platform's ledger accounts they name.
func resolveLines(ctx context.Context, tx pgx.Tx, c Caller, in []JournalLine, typ string) ([]ledger.Line, error) {
	var ids []string
	for _, l := range in {
		if l.LedgerAccountID != "" {
			ids = append(ids, l.LedgerAccountID)
		}
	}
	known := map[string]ledger.KnownAccount{}
	if len(ids) > 0 {
		rows, err := tx.Query(ctx, `SELECT id, coalesce(virtual_account_id, ''), code FROM ledger_accounts
            WHERE id = ANY($1) AND platform_id = $2 AND environment = $3`, ids, c.PlatformID, c.Environment.String())
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var id string
			var k ledger.KnownAccount
			if err := rows.Scan(&id, &k.VirtualAccountID, &k.Code); err != nil {
				rows.Close()
				return nil, err
			}
			known[id] = k
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return ledger.ManualLines(in, known, typ, newLedgerEntryID)
}

func newLedgerEntryID() string { return domain.NewID(domain.PrefixLedgerEntry) }

// checkAccounts locks every virtual account the lines touch, fills in
// their ledger account ids, refuses closed accounts, debits past the
// available balance and credits past the balance bound; then it locks the
// platform accounts the lines touch (after the virtual accounts, the order
// every command takes) and checks their bounds and, in live, their funds.
func checkAccounts(ctx context.Context, tx pgx.Tx, c Caller, lines []ledger.Line, status string) error {
	if err := checkVirtualAccounts(ctx, tx, c, lines, status); err != nil {
		return err
	}
	return checkPlatformAccounts(ctx, tx, c, lines)
}

func checkVirtualAccounts(ctx context.Context, tx pgx.Tx, c Caller, lines []ledger.Line, status string) error {
	var ids []string
	for _, l := range lines {
		if l.VirtualAccountID != "" {
			ids = append(ids, l.VirtualAccountID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	locked, err := lockAccounts(ctx, tx, c, ids)
	if err != nil {
		return err
	}
	balances := map[string]ledger.Balance{}
	for id, acc := range locked {
		if acc.Status == account.StatusClosed.String() {
			return &domain.Error{Code: domain.CodeAccountNotActive, ResourceID: id, Message: "the virtual account is closed"}
		}
		balances[id] = acc.Balance
	}
	for i := range lines {
		if lines[i].VirtualAccountID != "" {
			lines[i].LedgerAccountID = locked[lines[i].VirtualAccountID].LedgerAccountID
		}
	}
	if err := ledger.CheckFunds(balances, lines, status); err != nil {
		return err
	}
	return ledger.CheckLimits(balances, lines)
}

func journalStream(c Caller, id string) eventstore.Stream {
	return journalEntries.stream(c, id)
}
