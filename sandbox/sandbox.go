// Package sandbox simulates the outside world for sandbox platforms: it
// reads the log and schedules what a bank would do later (settle an ACH
// transfer after a delay), then does it by issuing commands. The schedule
// is a table written in the subscription's transaction, so a transfer
// pending when the process dies still settles after it comes back.
package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
)

// SubscriptionName is the simulator's checkpoint name.
const SubscriptionName = "sandbox"

// Actions in the schedule; the row id is action + ":" + object id.
const (
	actionSettleInbound = "settle_inbound"
	actionSubmitPayment = "submit_payment"
	actionSettlePayment = "settle_payment"
)

// SubmitAfter is how long a sandbox ACH payment stays pending (and can be
// canceled) before the simulated rail takes it.
const SubmitAfter = time.Second

// Simulator schedules and performs the sandbox's simulated bank work.
type Simulator struct {
	App  *app.App
	Pool *pgxpool.Pool
	Log  *slog.Logger
	// Poll bounds how long a due action waits; default 100 ms.
	Poll time.Duration
}

// Subscription turns sandbox events into scheduled actions.
func (s *Simulator) Subscription(wake <-chan struct{}) *eventstore.Subscription {
	return &eventstore.Subscription{Name: SubscriptionName, Pool: s.Pool, Wake: wake, Log: s.Log, Handle: s.schedule}
}

func (s *Simulator) schedule(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	for i := range events {
		r := &events[i]
		if r.Environment != domain.Sandbox.String() {
			continue
		}
		switch r.Type {
		case (inbound.Received{}).EventType():
			ev, err := r.Decode()
			if err != nil {
				return err
			}
			e := ev.(inbound.Received)
			if !e.ExpectedAt.After(e.At) {
				continue // instant rails complete in the same command
			}
			if err := plan(ctx, tx, actionSettleInbound, e.InboundTransferID, e.ExpectedAt); err != nil {
				return err
			}
		case (payment.Created{}).EventType():
			ev, err := r.Decode()
			if err != nil {
				return err
			}
			if err := s.schedulePayment(ctx, tx, ev.(payment.Created)); err != nil {
				return err
			}
		}
	}
	return nil
}

// schedulePayment plans a sandbox payment: RTP and FedNow settle at once;
// ACH is submitted after SubmitAfter and settles at its expected time,
// unless the platform turned auto_settle off (then the simulation
// endpoints decide).
func (s *Simulator) schedulePayment(ctx context.Context, tx pgx.Tx, e payment.Created) error {
	if r, _ := rails.Parse(e.Rail); rails.IsInstant(r) {
		return plan(ctx, tx, actionSettlePayment, e.PaymentID, e.At)
	}
	settings, err := projections.GetSettings(ctx, tx, e.PlatformID, e.Environment)
	if err != nil {
		return err
	}
	submit := e.At.Add(SubmitAfter)
	if e.ExpectedSettlementAt.Before(submit) {
		submit = e.ExpectedSettlementAt
	}
	if err := plan(ctx, tx, actionSubmitPayment, e.PaymentID, submit); err != nil {
		return err
	}
	if settings.Sandbox == nil || !settings.Sandbox.AutoSettle {
		return nil
	}
	return plan(ctx, tx, actionSettlePayment, e.PaymentID, e.ExpectedSettlementAt)
}

func plan(ctx context.Context, tx pgx.Tx, action, objectID string, due time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO sandbox_schedule (id, action, due_at) VALUES ($1, $2, $3)
        ON CONFLICT (id) DO NOTHING`, action+":"+objectID, action, due)
	return err
}

// RunSettler performs due actions until ctx ends.
func (s *Simulator) RunSettler(ctx context.Context) {
	poll := s.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	for ctx.Err() == nil {
		n, err := s.SettleDue(ctx)
		if err != nil && ctx.Err() == nil && s.Log != nil {
			s.Log.Warn("sandbox settler", "error", err)
		}
		if n > 0 {
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(poll):
		}
	}
}

// Lease is how long a claimed action is reserved for the process that
// claimed it; if that process dies, another takes it after the lease.
const Lease = 30 * time.Second

// SettleDue performs the actions that are due now and returns how many it
// performed. Actions are claimed with a lease in one short statement (no
// transaction stays open while commands run: an open transaction would
// hold back every reader of the log), then performed one by one and
// deleted when done. A failing action waits out its lease and is retried
// without blocking the others; commands are idempotent, so a crash between
// performing and deleting repeats one harmlessly.
func (s *Simulator) SettleDue(ctx context.Context) (int, error) {
	rows, err := s.Pool.Query(ctx, `UPDATE sandbox_schedule SET due_at = now() + $1::interval
        WHERE id IN (SELECT id FROM sandbox_schedule WHERE due_at <= now() ORDER BY due_at LIMIT 50 FOR UPDATE SKIP LOCKED)
        RETURNING id, action`, Lease.String())
	if err != nil {
		return 0, err
	}
	type job struct{ id, action string }
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		err := r.Scan(&j.id, &j.action)
		return j, err
	})
	if err != nil {
		return 0, err
	}
	done := 0
	var firstErr error
	for _, j := range jobs {
		if err := s.perform(ctx, j.id, j.action); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if _, err := s.Pool.Exec(ctx, `DELETE FROM sandbox_schedule WHERE id = $1`, j.id); err != nil {
			return done, err
		}
		done++
	}
	return done, firstErr
}

func (s *Simulator) perform(ctx context.Context, id, action string) error {
	_, objectID, _ := strings.Cut(id, ":")
	meta := app.Meta{Actor: "sandbox", CausationID: id}
	switch action {
	case actionSettleInbound:
		return s.App.CompleteInboundTransfer(ctx, meta, objectID)
	case actionSubmitPayment:
		return s.App.SubmitPayment(ctx, meta, objectID)
	case actionSettlePayment:
		return s.App.SettleSandboxPayment(ctx, meta, objectID)
	}
	return errors.New("unknown sandbox action " + action)
}
