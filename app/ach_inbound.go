package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/account"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// ACHInboundApplied says whether the bank's file of this SHA-256 (hex) was
// applied already.
func (a *App) ACHInboundApplied(ctx context.Context, sha256 string) (bool, error) {
	var n int
	err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM streams WHERE stream_id = $1`, ach.InboundStreamID(sha256)).Scan(&n)
	return n > 0, err
}

// ApplyACHInbound applies the credits of a file of the bank and records
// the file, in one transaction (API.md §10): a credit to a live virtual
// account becomes a completed inbound transfer, posted at once (the file
// comes when the entry settles); a credit to an unknown account number is
// owed back R03, to a closed one R02, in our next outbound file. The
// file's stream is new or the file was recorded already: then nothing
// changes, so a file is applied once, its credits with it.
//
// The file's returns and notifications of change are applied before, one
// command each (ReturnACHPayment, NoteACHChange): applying one twice
// changes nothing, so a crash before the record only repeats them.
func (a *App) ApplyACHInbound(ctx context.Context, meta Meta, applied ach.InboundApplied, credits []ach.Credit) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		rec := applied
		rec.At = now()
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM streams WHERE stream_id = $1`, ach.InboundStreamID(rec.SHA256)).Scan(&n); err != nil || n > 0 {
			return Result{}, err
		}
		accounts, err := liveAccountsByNumber(ctx, tx, credits)
		if err != nil {
			return Result{}, err
		}
		owners := map[string][]string{} // platform → its accounts credited
		for _, acc := range accounts {
			owners[acc.platformID] = append(owners[acc.platformID], acc.id)
		}
		locked := map[string]lockedAccount{}
		platforms := make([]string, 0, len(owners))
		for p := range owners {
			platforms = append(platforms, p)
		}
		sort.Strings(platforms) // a fixed order: two files never deadlock
		for _, p := range platforms {
			got, err := lockAccounts(ctx, tx, Caller{PlatformID: p, Environment: domain.Live}, owners[p])
			if err != nil {
				return Result{}, err
			}
			for id, acc := range got {
				locked[id] = acc
			}
		}
		ids := make([]string, len(credits))
		for i, c := range credits {
			ids[i] = creditID(c)
		}
		seen, err := existingStreams(ctx, tx, ids)
		if err != nil {
			return Result{}, err
		}
		for i, c := range credits {
			if seen[ids[i]] { // applied from another file: the bank sent it again
				rec.Duplicates++
				continue
			}
			seen[ids[i]] = true
			acc, found := accounts[c.AccountNumber]
			l := locked[acc.id]
			code := ach.CreditReturn(c, found, l.Status == account.StatusClosed.String())
			if code != "" {
				rec.ReturnsOwed = append(rec.ReturnsOwed, ach.ReturnOwed{ID: returnID(ids[i]), Credit: c, Code: code})
				continue
			}
			if c.Prenote || c.Amount == 0 {
				continue // the account exists: nothing to say, nothing to credit
			}
			caller := Caller{PlatformID: acc.platformID, Environment: domain.Live}
			settles := creditSettles(c, rec.At)
			err := a.creditAccount(ctx, tx, meta, caller, l, credit{ID: ids[i], Rail: creditRail(c, rec.At),
				Amount: c.Amount, Originator: inbound.Originator{Name: originatorName(c), RoutingNumber: c.OriginatorRouting},
				Description: strings.TrimSpace(c.EntryDescription + " from " + originatorName(c)), ExpectedAt: settles, At: rec.At})
			if err != nil {
				return Result{}, fmt.Errorf("credit %s to account %s: %w", c.TraceNumber, acc.id, err)
			}
			// It moves the account's balance: the next credit to the same
			// account checks its bound against the new one.
			if settles.After(rec.At) {
				l.Balance.PendingInbound += c.Amount
			} else {
				l.Balance.Posted += c.Amount
			}
			locked[acc.id] = l
			rec.Credited++
		}
		s := eventstore.Stream{ID: ach.InboundStreamID(rec.SHA256), Type: ach.InboundStreamType, Environment: domain.Live.String()}
		_, err = appendAndProject(ctx, tx, s, 0, meta, []domain.Event{rec})
		return Result{}, err
	})
	return err
}

// originatorName is who sent a credit: its batch's company name, else its
// company identification (a bank may leave the name blank).
func originatorName(c ach.Credit) string {
	for _, s := range []string{c.CompanyName, c.CompanyID} {
		if s = strings.TrimSpace(s); s != "" {
			return s
		}
	}
	return "UNKNOWN ORIGINATOR"
}

// creditID is a credit's inbound transfer id, made from what identifies
// the entry (its bank's trace number, effective date, account and amount):
// the same credit in another file the bank sends is the same transfer,
// applied once.
func creditID(c ach.Credit) string {
	day, err := time.ParseInLocation(time.DateOnly, c.EffectiveDate, rails.Eastern)
	if err != nil {
		day = time.Unix(0, 0)
	}
	return domain.IDFor(domain.PrefixInbound, day, fmt.Sprintf("ach-credit|%s|%s|%s|%d", c.TraceNumber, c.EffectiveDate, c.AccountNumber, c.Amount))
}

// returnID is the id of the return owed of the credit whose transfer id
// would be id: applied or returned, a credit is known by one of the two.
func returnID(transferID string) string {
	return domain.PrefixACHReturn + strings.TrimPrefix(transferID, domain.PrefixInbound)
}

// existingStreams says which of these credits were applied (their inbound
// transfer's stream exists) or returned (their return is owed or paid),
// by transfer id.
func existingStreams(ctx context.Context, tx pgx.Tx, ids []string) (map[string]bool, error) {
	streams, returns := make([]string, len(ids)), make([]string, len(ids))
	for i, id := range ids {
		streams[i], returns[i] = inbound.StreamID(id), returnID(id)
	}
	rows, err := tx.Query(ctx, `SELECT substr(stream_id, length($3) + 1) FROM streams WHERE stream_id = ANY($1)
        UNION ALL SELECT $4 || substr(id, length($5) + 1) FROM ach_returns WHERE id = ANY($2)`,
		streams, returns, inbound.StreamID(""), domain.PrefixInbound, domain.PrefixACHReturn)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, id := range found {
		out[id] = true
	}
	return out, nil
}

// creditSettles is when a credit settles: at once when its effective date
// has come, else at 08:30 ET that day (the standard settlement time), its
// funds pending until then (CompleteSettledACHCredits).
func creditSettles(c ach.Credit, at time.Time) time.Time {
	day, err := time.ParseInLocation(time.DateOnly, c.EffectiveDate, rails.Eastern)
	if err != nil || c.EffectiveDate <= ach.DayOf(at) {
		return at
	}
	return day.Add(8*time.Hour + 30*time.Minute)
}

// settledLiveCreditsSQL finds the live inbound ACH credits whose
// settlement time came.
const settledLiveCreditsSQL = `SELECT id FROM inbound_transfers
    WHERE environment = 'live' AND status = 'pending' AND expected_at <= $1 ORDER BY expected_at, id`

// CompleteSettledACHCredits posts the live inbound credits that arrived
// before their effective date, once it has come; it says how many.
func (a *App) CompleteSettledACHCredits(ctx context.Context, meta Meta, asOf time.Time) (int, error) {
	rows, err := a.Pool.Query(ctx, settledLiveCreditsSQL, asOf)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if err := a.CompleteInboundTransfer(ctx, meta, id); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}

// liveAccount is a live virtual account an inbound credit names.
type liveAccount struct{ id, platformID string }

// liveAccountsByNumber finds the live virtual accounts the credits name,
// by account number (unique in an environment, never reused).
func liveAccountsByNumber(ctx context.Context, tx pgx.Tx, credits []ach.Credit) (map[string]liveAccount, error) {
	numbers := make([]string, 0, len(credits))
	for _, c := range credits {
		numbers = append(numbers, c.AccountNumber)
	}
	rows, err := tx.Query(ctx, `SELECT account_number, id, platform_id FROM virtual_accounts
        WHERE environment = 'live' AND account_number = ANY($1)`, numbers)
	if err != nil {
		return nil, err
	}
	out := map[string]liveAccount{}
	var number string
	var acc liveAccount
	_, err = pgx.ForEachRow(rows, []any{&number, &acc.id, &acc.platformID}, func() error {
		out[number] = acc
		return nil
	})
	return out, err
}

// creditRail is the rail of an inbound ACH credit: same-day when it
// settles the day it arrives.
func creditRail(c ach.Credit, at time.Time) rails.Rail {
	if c.EffectiveDate == ach.DayOf(at) {
		return rails.ACHSameDay
	}
	return rails.ACHStandard
}

// ErrNoSuchTrace is the answer of ReturnACHPayment, ReturnACHPrenote and
// NoteACHChange to an entry no live payment (or prenote) of ours is.
var ErrNoSuchTrace = errors.New("no live ACH payment has this trace number, account number and amount")

// ErrChangeOfPrenote is NoteACHChange's answer to a notification of
// change of a counterparty's prenote: not applied (the platform corrects
// the counterparty by saving a new one).
var ErrChangeOfPrenote = errors.New("a notification of change of a prenote is not applied")

// ACHEntryRef names the entry of ours a return or a notification of change
// is about: its trace number, which repeats from one ACH day to the next
// (the sequence starts again each day), and the account number and amount
// the bank's entry repeats from it.
type ACHEntryRef struct {
	TraceNumber   string
	AccountNumber string
	Amount        int64 // 0 in a notification of change: not compared
	// RDFI is the receiving bank's routing number without its check digit
	// (the addenda's original RDFI): the entry went there. Empty: not
	// compared.
	RDFI string
}

// liveACHPayment is the id of the live ACH payment the entry names: the
// latest with its trace number, destination account number and amount.
func (a *App) liveACHPayment(ctx context.Context, ref ACHEntryRef) (string, error) {
	var id string
	err := a.Pool.QueryRow(ctx, `SELECT id FROM payments
        WHERE trace_number = $1 AND environment = 'live' AND destination->>'account_number' = $2 AND ($3 = 0 OR amount = $3)
        ORDER BY created_at DESC, id DESC LIMIT 1`, ref.TraceNumber, ref.AccountNumber, ref.Amount).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: %s (account %s, %d cents)", ErrNoSuchTrace, ref.TraceNumber, ref.AccountNumber, ref.Amount)
	}
	return id, err
}

// ReturnACHPayment applies the bank's return of the live ACH payment the
// entry names: it fails with the return's code (a code the table does not
// know is "unknown", never refused: the bank has spoken), its hold
// released, or its posted entries reversed if it had completed. A payment
// already failed stays as it is. It returns the payment's id.
func (a *App) ReturnACHPayment(ctx context.Context, meta Meta, ref ACHEntryRef, returnCode string) (string, error) {
	id, err := a.liveACHPayment(ctx, ref)
	if err != nil {
		return "", err
	}
	return id, a.changePayment(ctx, meta, nil, id, func(s payment.State) any {
		if s.Status == payment.StatusFailed || s.Status == payment.StatusCanceled {
			return nil
		}
		r, _ := rails.Parse(s.Rail)
		return payment.Fail{Failure: rails.FailureFor(r, returnCode), At: now()}
	})
}

// ReturnACHPrenote applies the bank's return of a live counterparty's
// prenote (a zero-dollar entry: ref.Amount is 0), named by its trace number
// and account number: the counterparty's verification fails with the
// return's code (counterparty.DecidePrenoteReturned). It returns the
// counterparty's id.
func (a *App) ReturnACHPrenote(ctx context.Context, meta Meta, ref ACHEntryRef, returnCode string) (string, error) {
	var id string
	// Trace numbers start again each day and a prenote carries no amount:
	// the receiving bank and the newest file tell apart two prenotes to one
	// account (of two platforms, say) with the same trace.
	err := a.Pool.QueryRow(ctx, `SELECT id FROM counterparties
        WHERE prenote_trace_number = $1 AND environment = 'live' AND account_number = $2 AND NOT deleted
          AND ($3 = '' OR left(routing_number, 8) = $3)
        ORDER BY prenote_ach_file_id DESC, id DESC LIMIT 1`, ref.TraceNumber, ref.AccountNumber, ref.RDFI).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: prenote %s (account %s)", ErrNoSuchTrace, ref.TraceNumber, ref.AccountNumber)
	}
	if err != nil {
		return "", err
	}
	_, err = a.changeLiveCounterparty(ctx, meta, id, func(s counterparty.State) []domain.Event {
		return counterparty.DecidePrenoteReturned(s, ref.TraceNumber, returnCode, now())
	})
	return id, err
}

// NoteACHChange records the receiving bank's notification of change for
// the live ACH payment the entry names (API.md §10): it is kept on the
// payment and emitted as payment.notification_of_change. The same notice
// again changes nothing. It returns the payment's id.
//
// A notification carries no amount, so a prenote's and a payment's to the
// same account with the same trace (another day's) look alike: the entry
// of the newest file is the one it names. A prenote's is not applied
// (ErrChangeOfPrenote, with the counterparty's id).
func (a *App) NoteACHChange(ctx context.Context, meta Meta, ref ACHEntryRef, code, correctedData string) (string, error) {
	ref.Amount = 0 // a notification carries none
	var id string
	var prenote bool
	err := a.Pool.QueryRow(ctx, `SELECT id, prenote FROM (
            (SELECT id, ach_file_id AS file, false AS prenote FROM payments
             WHERE trace_number = $1 AND environment = 'live' AND destination->>'account_number' = $2 AND ach_file_id IS NOT NULL
               AND ($3 = '' OR left(destination->>'routing_number', 8) = $3)
             ORDER BY ach_file_id DESC LIMIT 1)
            UNION ALL
            (SELECT id, prenote_ach_file_id, true FROM counterparties
             WHERE prenote_trace_number = $1 AND environment = 'live' AND account_number = $2
               AND ($3 = '' OR left(routing_number, 8) = $3)
             ORDER BY prenote_ach_file_id DESC LIMIT 1)) entries
        ORDER BY file DESC LIMIT 1`, ref.TraceNumber, ref.AccountNumber, ref.RDFI).Scan(&id, &prenote)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("%w: %s (account %s)", ErrNoSuchTrace, ref.TraceNumber, ref.AccountNumber)
	}
	if err != nil {
		return "", err
	}
	if prenote {
		return id, ErrChangeOfPrenote
	}
	return id, a.changePayment(ctx, meta, nil, id, func(payment.State) any {
		return payment.NoteChange{Code: code, CorrectedData: correctedData, At: now()}
	})
}
