package app

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ach"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
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
	// awaitingPrenotesSQL finds the live counterparties whose prenote
	// waits for a file, oldest request first (index
	// counterparties_live_prenotes); every cut takes them.
	awaitingPrenotesSQL = `SELECT id FROM counterparties
    WHERE environment = 'live' AND verification_status = 'pending' AND NOT deleted AND prenote_trace_number IS NULL
    ORDER BY updated_at, id LIMIT $1`
)

// CutACHFile cuts live mode's next outbound ACH file (API.md §10): the
// pending live ACH payments the window takes (the same-day ones; the
// standard ones too when standard) become submitted with their trace
// numbers and the file's id, in the transaction that records the file on
// its ACH day, and the credits owed back go in it too, and the live
// counterparties' prenotes asked for (each recorded on its counterparty
// with its trace number). It returns the file, or nil when nothing waited
// for one.
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
		prenotes, err := awaitingPrenotes(ctx, tx)
		if err != nil {
			return Result{}, err
		}
		for _, id := range slices.Sorted(maps.Keys(prenotes)) {
			cp := prenotes[id].State
			pending = append(pending, ach.Pending{CounterpartyID: id, Prenote: true, Savings: cp.AccountType == counterparty.AccountSavings,
				PlatformID: cp.PlatformID, Rail: rails.ACHSameDay.String(), AccountNumber: cp.AccountNumber,
				RoutingNumber: cp.RoutingNumber, Name: cp.Name, CreatedAt: cp.UpdatedAt})
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
			if e.Prenote {
				cp := prenotes[e.CounterpartyID]
				events, err := counterparty.DecidePrenoteSubmitted(cp.State, counterparty.PrenoteSubmitted{ACHFileID: f.ACHFileID,
					TraceNumber: e.TraceNumber, SettlesAt: e.SettlesAt, At: at})
				if err != nil {
					return Result{}, err
				}
				reqs = append(reqs, eventstore.AppendRequest{Stream: counterpartyStream(cp.Owner, e.CounterpartyID), Expected: cp.Version, Events: events})
				continue
			}
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

// awaitingPrenotes loads the live counterparties whose prenote waits for
// a file, by id; one that moved since its row was read (deleted, say) is
// left out.
func awaitingPrenotes(ctx context.Context, tx *commandTx) (map[string]loaded[counterparty.State], error) {
	rows, err := tx.Query(ctx, awaitingPrenotesSQL, ach.MaxEntries)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	recs, err := loadStreams(ctx, tx, counterparties, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]loaded[counterparty.State], len(ids))
	for _, id := range ids {
		l, err := foldBatchStream(recs, counterparties, nil, id)
		if domain.CodeOf(err) == domain.CodeNotFound {
			continue // deleted since
		}
		if err != nil {
			return nil, err
		}
		if l.State.AwaitsFile() {
			out[id] = l
		}
	}
	return out, nil
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
	return a.forEachSettled(ctx, settledLiveACHSQL, asOf, func(id string) (bool, error) {
		completed := false
		err := a.changePayment(ctx, meta, nil, id, func(s payment.State) any {
			if s.Status != payment.StatusSubmitted {
				return nil
			}
			completed = true
			return payment.Complete{At: now()}
		})
		return completed, err
	})
}

// forEachSettled runs settle on each id settledSQL finds settled by asOf,
// one command each, and says how many it changed.
func (a *App) forEachSettled(ctx context.Context, settledSQL string, asOf time.Time, settle func(id string) (bool, error)) (int, error) {
	rows, err := a.Pool.Query(ctx, settledSQL, asOf)
	if err != nil {
		return 0, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		changed, err := settle(id)
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

// settledPrenotesSQL finds the live counterparties whose prenote's entry
// settled by $1.
const settledPrenotesSQL = `SELECT id FROM counterparties
    WHERE environment = 'live' AND verification_status = 'pending' AND NOT deleted AND prenote_settles_at <= $1
    ORDER BY prenote_settles_at, id`

// VerifySettledPrenotes verifies the live counterparties whose prenote
// settled by asOf without a return (API.md §12); a return that comes later
// still fails them. It says how many it verified.
func (a *App) VerifySettledPrenotes(ctx context.Context, meta Meta, asOf time.Time) (int, error) {
	return a.forEachSettled(ctx, settledPrenotesSQL, asOf, func(id string) (bool, error) {
		return a.changeLiveCounterparty(ctx, meta, id, func(s counterparty.State) []domain.Event {
			return counterparty.DecidePrenoteSettled(s, asOf, now())
		})
	})
}

// changeLiveCounterparty appends what decide returns to the counterparty
// id's stream, whoever owns it (the rails' commands act for the bank, not
// for a platform), and says whether it appended anything. A counterparty
// deleted meanwhile is left alone.
func (a *App) changeLiveCounterparty(ctx context.Context, meta Meta, id string, decide func(counterparty.State) []domain.Event) (bool, error) {
	changed := false
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		changed = false
		l, err := loadStream(ctx, tx, counterparties, nil, id)
		if domain.CodeOf(err) == domain.CodeNotFound {
			return Result{}, nil
		}
		if err != nil || l.Owner.Environment != domain.Live {
			return Result{}, err
		}
		events := decide(l.State)
		if len(events) == 0 {
			return Result{}, nil
		}
		changed = true
		_, err = appendAndProject(ctx, tx, counterpartyStream(l.Owner, id), l.Version, meta, events)
		return Result{}, err
	})
	return changed, err
}
