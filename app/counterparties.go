package app

import (
	"context"
	"time"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// CreateCounterparty saves a counterparty of the caller (POST
// /counterparties), unverified. With an idempotency key, a duplicate gets
// the first one back.
func (a *App) CreateCounterparty(ctx context.Context, meta Meta, idem *Idempotency, c Caller, req counterparty.Request) (Result, error) {
	if err := req.Validate(); err != nil {
		return Result{}, err // a 400 whatever key it carries
	}
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixCounterparty)
	return a.execute(ctx, command{idem: idem, resourceID: id}, func(ctx context.Context, tx *commandTx) (Result, error) {
		events, err := counterparty.DecideCreate(counterparty.CreateInputs{Request: req, ID: id, PlatformID: c.PlatformID,
			Environment: c.Environment, Now: now()})
		if err != nil {
			return Result{}, err
		}
		_, err = appendAndProject(ctx, tx, counterpartyStream(c, id), 0, meta, events)
		return Result{ID: id}, err
	})
}

// VerifyCounterparty sends a prenote to the caller's counterparty (POST
// /counterparties/:id/verify): counterparty.DecideVerify's rules. In the
// sandbox, the answer comes after the platform's ACH same-day delay (the
// sandbox simulator applies it: SettleSandboxPrenote).
func (a *App) VerifyCounterparty(ctx context.Context, meta Meta, c Caller, id, method string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		var delay time.Duration
		if c.Environment == domain.Sandbox {
			settings, err := queries.GetSettings(ctx, tx, c.PlatformID, c.Environment)
			if err != nil {
				return Result{}, err
			}
			if sb := settings.Sandbox; sb != nil {
				delay = time.Duration(sb.ACHSameDayDelaySeconds) * time.Second
			}
		}
		return Result{}, change(ctx, tx, meta, counterparties, c, id, func(s counterparty.State) ([]domain.Event, error) {
			return counterparty.DecideVerify(s, counterparty.VerifyInputs{Method: method, Environment: c.Environment,
				SandboxDelay: delay, Now: now()})
		})
	})
	return err
}

// DeleteCounterparty deletes the caller's counterparty (DELETE
// /counterparties/:id). Payments already made to it keep the destination
// they copied, and go on.
func (a *App) DeleteCounterparty(ctx context.Context, meta Meta, c Caller, id string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		return Result{}, change(ctx, tx, meta, counterparties, c, id, func(s counterparty.State) ([]domain.Event, error) {
			return counterparty.DecideDelete(s, now()), nil
		})
	})
	return err
}

// SettleSandboxPrenote answers a sandbox counterparty's pending prenote
// (counterparty.DecideSandboxPrenote): verified, or failed with the magic
// account number's return code. Anything else (live, answered already,
// deleted meanwhile, no such stream) is left alone, so the simulator may
// run it twice.
func (a *App) SettleSandboxPrenote(ctx context.Context, meta Meta, id string) error {
	_, err := a.execute(ctx, command{}, func(ctx context.Context, tx *commandTx) (Result, error) {
		recs, version, err := eventstore.Load(ctx, tx, counterparty.StreamID(id))
		if err != nil || len(recs) == 0 {
			return Result{}, err
		}
		s, err := eventstore.Fold(recs, counterparty.State{}, counterparty.Evolve)
		if err != nil || s.Environment != domain.Sandbox {
			return Result{}, err
		}
		events := counterparty.DecideSandboxPrenote(s, now())
		if len(events) == 0 {
			return Result{}, nil
		}
		owner := Caller{PlatformID: s.PlatformID, Environment: s.Environment}
		_, err = appendAndProject(ctx, tx, counterpartyStream(owner, id), version, meta, events)
		return Result{}, err
	})
	return err
}

func counterpartyStream(c Caller, id string) eventstore.Stream { return counterparties.stream(c, id) }
