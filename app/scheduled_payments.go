package app

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/projections/queries"
)

// ReleasePayment runs a scheduled payment's rules now (API.md §12): held
// and pending (or awaiting its approval), or failed with the rule it
// broke. caller nil is the clock, for any platform's payment; it leaves a
// payment no longer scheduled alone, where a caller (the sandbox's
// simulation) gets invalid_state. Two releases at once hold once: the
// second sees the first's events (the payment's stream version) and
// finds it no longer scheduled.
func (a *App) ReleasePayment(ctx context.Context, meta Meta, caller *Caller, id string) (released bool, err error) {
	_, err = a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		released = false
		pay, err := loadStream(ctx, tx, payments, caller, id)
		if err != nil {
			return Result{}, err
		}
		s, version, c := pay.State, pay.Version, pay.Owner
		if s.Status != payment.StatusScheduled {
			if caller == nil {
				return Result{}, nil
			}
			return Result{}, domain.Errorf(domain.CodeInvalidState, "only a scheduled payment can be released; this one is %s", s.Status)
		}
		in, err := a.releaseInputs(ctx, tx, meta, c, s)
		if err != nil {
			return Result{}, err
		}
		events, err := payment.DecideRelease(s, in)
		if err != nil || len(events) == 0 {
			return Result{}, err
		}
		var paymentEvents []domain.Event
		var hold *ledger.Recorded
		for _, e := range events {
			if r, ok := e.(ledger.Recorded); ok {
				hold = &r
				continue
			}
			paymentEvents = append(paymentEvents, e)
		}
		if _, err := appendAndProject(ctx, tx, paymentStream(c, id), version, meta, paymentEvents); err != nil {
			return Result{}, err
		}
		if hold != nil {
			if _, err := appendAndProject(ctx, tx, journalStream(c, hold.JournalEntryID), 0, meta, []domain.Event{*hold}); err != nil {
				return Result{}, err
			}
		}
		released = true
		return Result{ID: id}, nil
	})
	return released, err
}

// releaseInputs reads what a scheduled payment's rules read today, under
// its account's balance lock (held until the command commits).
func (a *App) releaseInputs(ctx context.Context, tx *commandTx, meta Meta, c Caller, s payment.State) (payment.CreateInputs, error) {
	locked, err := lockAccounts(ctx, tx, c, []string{s.VirtualAccountID})
	if err != nil {
		return payment.CreateInputs{}, err
	}
	acc := locked[s.VirtualAccountID]
	in := payment.CreateInputs{Request: payment.ReleaseRequest(s), PlatformID: c.PlatformID, Environment: c.Environment,
		IdempotencyKey: s.IdempotencyKey, Now: now(),
		Account: payment.Sender{ID: acc.ID, Status: acc.Status, LedgerAccountID: acc.LedgerAccountID, Balance: acc.Balance},
		IDs:     payment.NewIDs{Payment: s.PaymentID, JournalEntry: domain.NewID(domain.PrefixJournalEntry), LedgerEntry: newLedgerEntryID}}
	if in.KYBStatus, err = kybStatusOf(ctx, tx, c, acc.EntityRef); err != nil {
		return in, err
	}
	settings, err := queries.GetSettings(ctx, tx, c.PlatformID, c.Environment)
	if err != nil {
		return in, err
	}
	in.Settings = settings.Settings
	if in.Settings.DailyPaymentLimit != nil {
		if in.SpentToday, err = spentToday(ctx, tx, acc.ID, in.Now); err != nil {
			return in, err
		}
	}
	if err := tx.QueryRow(ctx, `SELECT fee_schedule FROM platforms WHERE id = $1`, c.PlatformID).Scan(&in.FeeSchedule); err != nil {
		return in, err
	}
	in.Chart, err = a.ensureChart(ctx, tx, meta, c)
	return in, err
}

// ReleaseDuePayments releases the scheduled payments whose release time
// is at or before dueBy, one command each (one payment's trouble leaves
// the others to go), and says how many it released or failed.
func (a *App) ReleaseDuePayments(ctx context.Context, dueBy time.Time) (int, error) {
	ids, err := a.dueIDs(ctx, `SELECT id FROM payments WHERE status = 'scheduled' AND release_at <= $1
        ORDER BY release_at, id LIMIT 500`, dueBy)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		released, err := a.ReleasePayment(ctx, Meta{Actor: "payment_clock"}, nil, id)
		if err != nil {
			return n, err
		}
		if released {
			n++
		}
	}
	return n, nil
}

// dueIDs reads the ids a clock pass works on.
func (a *App) dueIDs(ctx context.Context, sql string, at time.Time) ([]string, error) {
	rows, err := a.Pool.Query(ctx, sql, at)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// RunPaymentClock, every interval until ctx ends, releases the scheduled
// payments whose time has come (06:00 ET on their date) and cancels the
// approvals that expired (API.md §12). A pass that fails is logged and
// tried again at the next tick.
func (a *App) RunPaymentClock(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		at := time.Now()
		if n, err := a.ReleaseDuePayments(ctx, at); err != nil && ctx.Err() == nil {
			a.Log.Warn("scheduled payments: release pass failed", "error", err)
		} else if n > 0 {
			a.Log.Info("scheduled payments released", "count", n)
		}
		if n, err := a.ExpireApprovals(ctx, at); err != nil && ctx.Err() == nil {
			a.Log.Warn("approval expiry pass failed", "error", err)
		} else if n > 0 {
			a.Log.Info("payments canceled: approval expired", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
