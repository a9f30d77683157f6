package app

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// SandboxPaymentAction is one thing the sandbox rail does to a payment:
// submit it (SubmitPayment) or settle it (SettleSandboxPayment).
type SandboxPaymentAction struct {
	PaymentID string
	Submit    bool // submit; otherwise settle
	Meta      Meta
}

// RunSandboxPaymentActions performs many sandbox rail actions in one
// command transaction, so that the settler keeps pace with the payments
// the API creates: a transaction per payment (begin, loads, locks,
// appends, projections, a WAL flush at commit) is what it cannot afford.
//
// Each action appends, with its own metadata, exactly the events
// SubmitPayment or SettleSandboxPayment would append on its own, and the
// inline projections apply them alike; one payment's actions run in the
// order given. The command is pipelined, in three round trips: BEGIN with
// the payments' streams, the journal entries, and then the events of all
// actions (each with its own metadata), the inline projections and COMMIT
// in one batch. The transaction takes its id at its first append, so it
// holds back the log's readers (which read below the oldest transaction
// still running) for one round trip, not three. No balance row is locked
// up front (see below); a deadlock or a stream that moved meanwhile is
// retried by the runner, the whole batch.
//
// All or nothing: any error (a payment not found, say) rolls back every
// action, and the caller retries them one at a time.
func (a *App) RunSandboxPaymentActions(ctx context.Context, actions []SandboxPaymentAction) error {
	if len(actions) == 0 {
		return nil
	}
	var ids []string
	seen := map[string]bool{}
	for _, act := range actions {
		if !seen[act.PaymentID] {
			seen[act.PaymentID] = true
			ids = append(ids, act.PaymentID)
		}
	}
	_, err := a.execute(ctx, command{pipelined: true}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, runSandboxPaymentActions(ctx, tx, actions, ids)
	})
	return err
}

// runSandboxPaymentActions is the batch's command: load, decide, append.
func runSandboxPaymentActions(ctx context.Context, tx *commandTx, actions []SandboxPaymentAction, ids []string) error {
	pays, err := loadPayments(ctx, tx, ids)
	if err != nil {
		return err
	}
	// The journal entries of the payments the rail will touch (as
	// changePayment loads them only when there is a command). Unlike
	// changePayment, no balance row is locked up front: submitting and
	// settling never lower what an account has available (a settled
	// payment moves its hold to posted, a failed one releases it), so
	// there is no overdraft to guard, and rows locked for a whole
	// batch made the API's payments wait (a quarter of PostgreSQL's
	// active time in the profile). The projection's UPDATE at the end
	// locks them, until the commit only.
	var entries []string
	for _, act := range actions {
		p := pays[act.PaymentID]
		if act.Submit || p.s.Environment == domain.Sandbox {
			entries = append(entries, p.s.JournalEntryID)
		}
	}
	jes, err := loadEntries(ctx, tx, pays, entries)
	if err != nil {
		return err
	}

	// Decide every action in Go, in order (a payment's second action
	// sees what its first did), then append them all in one round trip.
	var reqs []eventstore.AppendRequest
	for _, act := range actions {
		p := pays[act.PaymentID]
		var cmd any
		if act.Submit {
			cmd = payment.Submit{At: now()}
		} else if p.s.Environment == domain.Sandbox { // the sandbox rail never touches live payments
			cmd = sandboxVerdict(p.s)
		} else {
			continue
		}
		je := jes[p.s.JournalEntryID]
		if je.err != nil {
			return je.err
		}
		events, err := payment.Decide(p.s, cmd)
		if err != nil {
			return err
		}
		if len(events) == 0 {
			continue
		}
		meta := act.Meta
		reqs = append(reqs, eventstore.AppendRequest{Stream: paymentStream(p.c, p.s.PaymentID), Expected: p.version,
			Events: events, Meta: &meta})
		at := now()
		var jeEvents []domain.Event
		for _, e := range events {
			p.s = payment.Evolve(p.s, e)
			switch e.(type) {
			case payment.Completed:
				jeEvents = append(jeEvents, ledger.Posted{JournalEntryID: je.s.ID, Lines: je.s.Lines, At: at})
			case payment.Failed, payment.Canceled:
				if je.s.Status == ledger.StatusPending {
					jeEvents = append(jeEvents, ledger.Archived{JournalEntryID: je.s.ID, Lines: je.s.Lines, At: at})
				}
			}
		}
		p.version += int64(len(events))
		if len(jeEvents) > 0 {
			reqs = append(reqs, eventstore.AppendRequest{Stream: journalStream(p.c, je.s.ID), Expected: je.version,
				Events: jeEvents, Meta: &meta})
			for _, e := range jeEvents {
				je.s = ledger.Evolve(je.s, e)
			}
			je.version += int64(len(jeEvents))
		}
	}
	if len(reqs) == 0 {
		return nil
	}
	// Each request carries its action's metadata (AppendRequest.Meta).
	return tx.appendProjectReadAndCommit(ctx, Meta{}, nil, reqs...)
}

// sandboxVerdict is SettleSandboxPayment's command: the magic destination
// account numbers fail with their network codes, any other settles.
func sandboxVerdict(s payment.State) payment.Settle {
	r, _ := rails.Parse(s.Rail)
	cmd := payment.Settle{At: now()}
	if code := rails.SandboxOutcome(r, s.Destination.AccountNumber); code != "" {
		f := rails.FailureFor(r, code)
		cmd.Failure = &f
	}
	return cmd
}

type batchPayment struct {
	s       payment.State
	version int64
	c       Caller
}

// batchEntry is a journal entry as its payment's owner may see it: err is
// the not-found error of one that is not.
type batchEntry struct {
	s       ledger.State
	version int64
	err     error
}

// loadPayments folds the payments' streams, read in one statement (the
// command's first batch), as loadStream folds one.
func loadPayments(ctx context.Context, tx *commandTx, ids []string) (map[string]*batchPayment, error) {
	b := &pgx.Batch{}
	b.Queue(loadStreamsSQL, streamIDs(payments, ids))
	br, err := tx.sendFirst(ctx, b)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	recs, err := scanStreams(rows)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]*batchPayment, len(ids))
	for _, id := range ids {
		l, err := foldBatchStream(recs, payments, nil, id)
		if err != nil {
			return nil, err
		}
		out[id] = &batchPayment{s: l.State, version: l.Version, c: l.Owner}
	}
	return out, nil
}

// loadEntries folds the journal entries of the payments, read in one
// statement; an entry another platform owns is not found.
func loadEntries(ctx context.Context, tx pgx.Tx, pays map[string]*batchPayment, entries []string) (map[string]*batchEntry, error) {
	recs, err := loadStreams(ctx, tx, journalEntries, entries)
	if err != nil {
		return nil, err
	}
	owners := map[string]Caller{}
	for _, p := range pays {
		owners[p.s.JournalEntryID] = p.c
	}
	out := make(map[string]*batchEntry, len(entries))
	for _, id := range entries {
		owner := owners[id]
		l, err := foldBatchStream(recs, journalEntries, &owner, id)
		if err != nil && domain.CodeOf(err) != domain.CodeNotFound {
			return nil, err
		}
		out[id] = &batchEntry{s: l.State, version: l.Version, err: err}
	}
	return out, nil
}

func foldBatchStream[S any](recs map[string][]eventstore.RecordedEvent, g aggregate[S], caller *Caller, id string) (loaded[S], error) {
	evs := recs[g.streamID(id)]
	var version int64
	if len(evs) > 0 {
		version = evs[len(evs)-1].StreamVersion
	}
	return foldStream(evs, version, g, caller, id)
}

// loadStreamsSQL reads what folding needs of several streams' events.
const loadStreamsSQL = `SELECT stream_id, stream_version, event_type, coalesce(platform_id, ''), coalesce(environment, ''), data
    FROM events WHERE stream_id = ANY($1) ORDER BY stream_id, stream_version`

// loadStreams reads the streams of the aggregates ids of one kind.
func loadStreams[S any](ctx context.Context, tx pgx.Tx, g aggregate[S], ids []string) (map[string][]eventstore.RecordedEvent, error) {
	rows, err := tx.Query(ctx, loadStreamsSQL, streamIDs(g, ids))
	if err != nil {
		return nil, err
	}
	return scanStreams(rows)
}

// streamIDs are the streams of the aggregates ids of one kind.
func streamIDs[S any](g aggregate[S], ids []string) []string {
	streams := make([]string, len(ids))
	for i, id := range ids {
		streams[i] = g.streamID(id)
	}
	return streams
}

func scanStreams(rows pgx.Rows) (map[string][]eventstore.RecordedEvent, error) {
	defer rows.Close()
	out := map[string][]eventstore.RecordedEvent{}
	for rows.Next() {
		var r eventstore.RecordedEvent
		if err := rows.Scan(&r.StreamID, &r.StreamVersion, &r.Type, &r.PlatformID, &r.Environment, (*[]byte)(&r.Data)); err != nil {
			return nil, err
		}
		if evs := out[r.StreamID]; len(evs) > 0 && evs[len(evs)-1].StreamVersion != r.StreamVersion-1 {
			return nil, fmt.Errorf("stream %s: version %d after %d", r.StreamID, r.StreamVersion, evs[len(evs)-1].StreamVersion)
		}
		out[r.StreamID] = append(out[r.StreamID], r)
	}
	return out, rows.Err()
}
