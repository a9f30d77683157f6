package app

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
)

// achDays loads an ACH day by its date (live mode's, the operator's: no
// platform owns it).
var achDays = aggregate[ach.Day]{kind: "ach_day", streamType: ach.StreamType, streamID: ach.StreamID,
	initial: func(string) ach.Day { return ach.Day{} }, evolve: ach.Evolve}

func achDayStream(day string) eventstore.Stream {
	return eventstore.Stream{ID: ach.StreamID(day), Type: ach.StreamType, Environment: domain.Live.String()}
}

// pendingSameDaySQL and pendingACHSQL find the payments a cut takes,
// oldest first, at most a file's worth: at a same-day window the same-day
// ones only (a backlog of standard payments must not fill the window's
// file with payments it leaves out), at the day's last both. The cut then
// reads each one's stream. Both use payments_live_ach_pending.
const (
	pendingSameDaySQL = `SELECT id FROM payments
    WHERE environment = 'live' AND rail = 'ach_same_day' AND status = 'pending'
    ORDER BY created_at, id LIMIT $1`
	pendingACHSQL = `SELECT id FROM payments
    WHERE environment = 'live' AND rail IN ('ach_standard', 'ach_same_day') AND status = 'pending'
    ORDER BY created_at, id LIMIT $1`
	// owedReturnsSQL finds the credits owed back, oldest first (index
	// ach_returns_owed); every cut takes them. Locked: a cut of another
	// ACH day (two replicas either side of midnight) waits, then finds
	// them paid.
	owedReturnsSQL = `SELECT data FROM ach_returns WHERE ach_file_id IS NULL ORDER BY created_at, id LIMIT $1 FOR UPDATE`
)

// CutACHFile cuts live mode's next outbound ACH file (API.md §10): the
// pending live ACH payments the window takes (the same-day ones; the
// standard ones too when standard) become submitted with their trace
// numbers and the file's id, in the transaction that records the file on
// its ACH day, and the credits owed back go in it too. It returns the
// file, or nil when nothing waited for one.
// The file is not written here: that comes after the commit (the bank
// connector), and is done again until it is recorded (TransmitACHFile).
//
// A payment is in one file at most: the cut appends to each payment's
// stream with the version it read, so a cut racing another (or a cancel)
// loses and is retried by the runner on what the winner left.
func (a *App) CutACHFile(ctx context.Context, meta Meta, o ach.Originator, standard bool) (*ach.FileCreated, error) {
	var cut *ach.FileCreated
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		cut = nil
		pendingSQL := pendingSameDaySQL
		if standard {
			pendingSQL = pendingACHSQL
		}
		rows, err := tx.Query(ctx, pendingSQL, ach.MaxEntries)
		if err != nil {
			return Result{}, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return Result{}, err
		}
		pays := map[string]*batchPayment{}
		if len(ids) > 0 {
			if pays, err = loadPayments(ctx, tx, ids); err != nil {
				return Result{}, err
			}
		}
		rows, err = tx.Query(ctx, owedReturnsSQL, ach.MaxEntries)
		if err != nil {
			return Result{}, err
		}
		returns, err := pgx.CollectRows(rows, pgx.RowTo[ach.ReturnOwed])
		if err != nil {
			return Result{}, err
		}
		var pending []ach.Pending
		for _, id := range ids {
			p := pays[id]
			if p.s.Status != payment.StatusPending || p.s.Environment != domain.Live {
				continue // the row is behind its stream
			}
			d := p.s.Destination
			pending = append(pending, ach.Pending{PaymentID: id, PlatformID: p.c.PlatformID, Rail: p.s.Rail,
				Amount: p.s.Amount, AccountNumber: d.AccountNumber, RoutingNumber: d.RoutingNumber, Name: d.Name,
				CreatedAt: p.s.At})
		}
		at := now()
		day, err := loadStream(ctx, tx, achDays, nil, ach.DayOf(at))
		if err != nil {
			return Result{}, err
		}
		events, err := ach.Decide(day.State, ach.Cut{ACHFileID: domain.NewID(domain.PrefixACHFile), Originator: o,
			Payments: pending, Returns: returns, Standard: standard, At: at})
		if err != nil || len(events) == 0 {
			return Result{}, err
		}
		f := events[0].(ach.FileCreated)
		reqs := []eventstore.AppendRequest{{Stream: achDayStream(f.Day), Expected: day.Version, Events: events}}
		for _, e := range f.Entries {
			p := pays[e.PaymentID]
			settles := e.SettlesAt
			submitted, err := payment.Decide(p.s, payment.Submit{TraceNumber: e.TraceNumber, ACHFileID: f.ACHFileID,
				SettlesAt: &settles, At: at})
			if err != nil {
				return Result{}, err
			}
			reqs = append(reqs, eventstore.AppendRequest{Stream: paymentStream(p.c, e.PaymentID), Expected: p.version, Events: submitted})
		}
		if err := appendAndProjectAll(ctx, tx, meta, reqs...); err != nil {
			return Result{}, err
		}
		cut = &f
		return Result{ID: f.ACHFileID}, nil
	})
	return cut, err
}

// TransmitACHFile records that a file of the ACH day is in the outbox.
// Recording it twice changes nothing.
func (a *App) TransmitACHFile(ctx context.Context, meta Meta, day, fileID string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		l, err := loadStream(ctx, tx, achDays, nil, day)
		if err != nil {
			return Result{}, err
		}
		events, err := ach.Decide(l.State, ach.Transmit{ACHFileID: fileID, At: now()})
		if err != nil || len(events) == 0 {
			return Result{}, err
		}
		_, err = appendAndProject(ctx, tx, achDayStream(day), l.Version, meta, events)
		return Result{}, err
	})
	return err
}

// UntransmittedACHFiles are the files cut but not recorded as in the
// outbox, oldest first, as their events hold them: what the connector
// writes (again) before it cuts another.
func (a *App) UntransmittedACHFiles(ctx context.Context) ([]ach.FileCreated, error) {
	rows, err := a.Pool.Query(ctx, `SELECT DISTINCT day FROM ach_files WHERE transmitted_at IS NULL ORDER BY day`)
	if err != nil {
		return nil, err
	}
	days, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var out []ach.FileCreated
	for _, day := range days {
		l, err := loadStream(ctx, a.Pool, achDays, nil, day)
		if err != nil {
			return nil, err
		}
		for _, f := range l.State.Untransmitted() {
			out = append(out, f.FileCreated)
		}
	}
	return out, nil
}

// settledLiveACHSQL finds the live ACH payments whose file's entry settled
// by $1 (their expected settlement, which the cut set).
const settledLiveACHSQL = `SELECT id FROM payments
    WHERE environment = 'live' AND status = 'submitted' AND ach_file_id IS NOT NULL AND expected_settlement_at <= $1
    ORDER BY expected_settlement_at, id`

// CompleteSettledACHPayments completes the live ACH payments whose entry
// settled by asOf without a return (API.md §10): their amount and fee
// post; a return that comes later reverses them. It says how many it
// completed. A payment that moved meanwhile (returned, say) is left as
// it is.
func (a *App) CompleteSettledACHPayments(ctx context.Context, meta Meta, asOf time.Time) (int, error) {
	rows, err := a.Pool.Query(ctx, settledLiveACHSQL, asOf)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		completed := false
		err := a.changePayment(ctx, meta, nil, id, func(s payment.State) any {
			if s.Status != payment.StatusSubmitted {
				return nil
			}
			completed = true
			return payment.Complete{At: now()}
		})
		if err != nil {
			return n, err
		}
		if completed {
			n++
		}
	}
	return n, nil
}
