// Package sandbox simulates the outside world for sandbox platforms: it
// reads the log and schedules what a bank would do later (settle an ACH
// transfer after a delay), then does it by issuing commands. The schedule
// is a table written in the subscription's transaction, so a transfer
// pending when the process dies still settles after it comes back.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/counterparty"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// SubscriptionName is the simulator's checkpoint name.
const SubscriptionName = "sandbox"

// Actions in the schedule; the row id is action + ":" + object id.
const (
	actionSettleInbound = "settle_inbound"
	actionSubmitPayment = "submit_payment"
	actionSettlePayment = "settle_payment"
	// actionSettlePrenote answers a counterparty's prenote (API.md §12).
	actionSettlePrenote = "settle_prenote"
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
	// Workers is how many actions run at once; default DefaultWorkers.
	// Each holds a pool connection while its command runs, and the pool
	// is shared with the API and the subscriptions: the bound keeps a
	// backlog from taking every connection.
	Workers int
	// Batch is how many due actions one round claims; default
	// DefaultBatch.
	Batch int
	// PaymentBatch is how many payments one command transaction settles;
	// default DefaultPaymentBatch.
	PaymentBatch int
	// Pacer, if set, hears how far behind the settler is (see
	// eventstore.Pacer).
	Pacer *eventstore.Pacer

	scheduledOnce sync.Once
	scheduled     chan struct{} // the subscription wrote plans: the settler looks at once
}

// scheduledCh is the settler's wake-up by the subscription (created once).
func (s *Simulator) scheduledCh() chan struct{} {
	s.scheduledOnce.Do(func() { s.scheduled = make(chan struct{}, 1) })
	return s.scheduled
}

// Subscription turns sandbox events into scheduled actions. It reads only
// the types it schedules: the rest of the log stays in the database.
func (s *Simulator) Subscription(wake <-chan struct{}) *eventstore.Subscription {
	return &eventstore.Subscription{Name: SubscriptionName, Pool: s.Pool, Wake: wake, Log: s.Log, Handle: s.schedule, Derived: true,
		Types: []string{(inbound.Received{}).EventType(), (payment.Created{}).EventType(), (payment.Approved{}).EventType(),
			(payment.Released{}).EventType(), (counterparty.VerificationRequested{}).EventType()},
		// An instant payment is due as soon as it is scheduled: wake the
		// settler rather than leave it to its poll.
		OnCommit: func() {
			select {
			case s.scheduledCh() <- struct{}{}:
			default:
			}
		}}
}

// schedule plans a batch of events as a set: the plans are collected in
// Go, the platform settings the ACH payments need read in one query, and
// the plans written in one statement.
func (s *Simulator) schedule(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var (
		p        plans
		payments []payment.Created
	)
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
			p.add(actionSettleInbound, e.InboundTransferID, e.ExpectedAt)
		case (payment.Created{}).EventType():
			ev, err := r.Decode()
			if err != nil {
				return err
			}
			e := ev.(payment.Created)
			if e.RequiresApproval || e.ScheduledFor != "" {
				continue // no rail sees it before its approval, or its release
			}
			payments = appendOrSettle(&p, payments, e)
		case (payment.Released{}).EventType():
			ev, err := r.Decode()
			if err != nil {
				return err
			}
			e := ev.(payment.Released)
			if e.RequiresApproval {
				continue
			}
			// Released now, as if created now.
			env, _ := domain.ParseEnvironment(r.Environment)
			payments = appendOrSettle(&p, payments, payment.Created{PaymentID: strings.TrimPrefix(r.StreamID, payment.StreamID("")),
				PlatformID: r.PlatformID, Environment: env, Rail: e.Rail, ExpectedSettlementAt: e.ExpectedSettlementAt, At: e.At})
		case (counterparty.VerificationRequested{}).EventType():
			ev, err := r.Decode()
			if err != nil {
				return err
			}
			// Answered after the ACH same-day delay the command read from
			// the platform's settings, whatever auto_settle says: no
			// simulation route answers a prenote. A prenote sent again
			// after a failure is a new action (the old one is done).
			e := ev.(counterparty.VerificationRequested)
			p.add(actionSettlePrenote, strings.TrimPrefix(r.StreamID, counterparty.StreamID(""))+"@"+strconv.FormatInt(r.StreamVersion, 10), e.ExpectedAt)
		case (payment.Approved{}).EventType():
			ev, err := r.Decode()
			if err != nil {
				return err
			}
			// Released now, as if created now: the approval's settlement.
			e := ev.(payment.Approved)
			env, _ := domain.ParseEnvironment(r.Environment)
			payments = appendOrSettle(&p, payments, payment.Created{PaymentID: strings.TrimPrefix(r.StreamID, payment.StreamID("")),
				PlatformID: r.PlatformID, Environment: env, Rail: e.Rail, ExpectedSettlementAt: e.ExpectedSettlementAt, At: e.At})
		}
	}
	if len(payments) > 0 {
		settings, err := autoSettle(ctx, tx, payments)
		if err != nil {
			return err
		}
		for _, e := range payments {
			schedulePayment(&p, e, settings[settingsKey{e.PlatformID, e.Environment}])
		}
	}
	return p.write(ctx, tx)
}

// appendOrSettle plans an instant payment at once, and adds an ACH one to
// those whose platform settings are read before they are planned.
func appendOrSettle(p *plans, ach []payment.Created, e payment.Created) []payment.Created {
	if r, _ := rails.Parse(e.Rail); rails.IsInstant(r) {
		p.add(actionSettlePayment, e.PaymentID, e.At)
		return ach
	}
	return append(ach, e)
}

// schedulePayment plans a sandbox ACH payment: it is submitted after
// SubmitAfter and settles at its expected time, unless the platform turned
// auto_settle off (then the simulation endpoints decide). RTP and FedNow
// settle at once (see schedule).
func schedulePayment(p *plans, e payment.Created, autoSettle bool) {
	submit := e.At.Add(SubmitAfter)
	if e.ExpectedSettlementAt.Before(submit) {
		submit = e.ExpectedSettlementAt
	}
	p.add(actionSubmitPayment, e.PaymentID, submit)
	if autoSettle {
		p.add(actionSettlePayment, e.PaymentID, e.ExpectedSettlementAt)
	}
}

type settingsKey struct {
	platformID string
	env        domain.Environment
}

// autoSettle reads, in one query, whether each (platform, environment) of
// the payments settles its sandbox payments on its own.
func autoSettle(ctx context.Context, tx pgx.Tx, payments []payment.Created) (map[settingsKey]bool, error) {
	out := map[settingsKey]bool{}
	var platforms, envs []string
	for _, e := range payments {
		k := settingsKey{e.PlatformID, e.Environment}
		if _, ok := out[k]; !ok {
			out[k] = false
			platforms, envs = append(platforms, e.PlatformID), append(envs, e.Environment.String())
		}
	}
	rows, err := tx.Query(ctx, `SELECT k.platform_id, k.environment, s.settings, s.updated_at
        FROM unnest($1::text[], $2::text[]) AS k (platform_id, environment)
        LEFT JOIN platform_settings s ON s.platform_id = k.platform_id AND s.environment = k.environment`, platforms, envs)
	if err != nil {
		return nil, err
	}
	type found struct {
		platformID, env string
		row             settingsRow
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (found, error) {
		var f found
		err := r.Scan(&f.platformID, &f.env, &f.row.raw, &f.row.updated)
		return f, err
	})
	if err != nil {
		return nil, err
	}
	for _, f := range got {
		env, _ := domain.ParseEnvironment(f.env)
		v, err := queries.ScanSettings(f.row, f.platformID, env)
		if err != nil {
			return nil, err
		}
		out[settingsKey{f.platformID, env}] = v.Sandbox != nil && v.Sandbox.AutoSettle
	}
	return out, nil
}

// settingsRow hands one row of platform_settings (or none: raw nil) to
// queries.ScanSettings, which lays it over the defaults.
type settingsRow struct {
	raw     []byte
	updated *time.Time
}

func (r settingsRow) Scan(dest ...any) error {
	if r.raw == nil {
		return pgx.ErrNoRows
	}
	if len(dest) != 2 {
		return errors.New("sandbox: settings row scanned into " + strconv.Itoa(len(dest)) + " values, want 2")
	}
	raw, ok1 := dest[0].(*[]byte)
	updated, ok2 := dest[1].(*time.Time)
	if !ok1 || !ok2 {
		return errors.New("sandbox: settings row scanned into unexpected types")
	}
	*raw, *updated = r.raw, *r.updated
	return nil
}

type planned struct {
	action, object string
	due            time.Time
}

// plans are the schedule rows of a batch, in order.
type plans struct{ list []planned }

func (p *plans) add(action, objectID string, due time.Time) {
	p.list = append(p.list, planned{action, objectID, due})
}

// write inserts the plans in one statement; a row already scheduled (the
// batch handled again after a crash) or planned twice keeps its first plan.
func (p *plans) write(ctx context.Context, tx pgx.Tx) error {
	if len(p.list) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(p.list))
	var ids, actions []string
	var dues []time.Time
	for _, pl := range p.list {
		id := pl.action + ":" + pl.object
		if seen[id] {
			continue
		}
		seen[id] = true
		ids, actions, dues = append(ids, id), append(actions, pl.action), append(dues, pl.due)
	}
	_, err := tx.Exec(ctx, `INSERT INTO sandbox_schedule (id, action, due_at)
        SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[])
        ON CONFLICT (id) DO NOTHING`, ids, actions, dues)
	return err
}

// RunSettler performs due actions until ctx ends; it returns once the
// round in flight has stopped.
func (s *Simulator) RunSettler(ctx context.Context) {
	poll := s.Poll
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	s.Pacer.Woke(SettlerName)
	for ctx.Err() == nil {
		n, err := s.SettleDue(ctx)
		if err != nil && ctx.Err() == nil && s.Log != nil {
			s.Log.Warn("sandbox settler", "error", err)
		}
		if n > 0 {
			continue
		}
		s.Pacer.Idle(SettlerName)
		select {
		case <-ctx.Done():
		case <-s.scheduledCh():
		case <-time.After(poll):
		}
		s.Pacer.Woke(SettlerName)
	}
	s.Pacer.Idle(SettlerName)
}

// SettlerName is the settler's name to the Pacer.
const SettlerName = "sandbox_settler"

// Lease is how long a claimed action is reserved for the process that
// claimed it; if that process dies, another takes it after the lease.
const Lease = 30 * time.Second

// Defaults of the settler's knobs. A worker waits on the database most of
// the time, so more workers than cores pays; 8 leaves half of the server's
// 16 connections to the rest. Payments go PaymentBatch to a transaction,
// so a round of 800 is a few transactions per worker: a backlog (the
// scheduler held back by a long transaction elsewhere, say) drains in few
// rounds, each with one claim and one delete. An action falling due waits
// for the round in flight; a round claims only what is due, so without a
// backlog rounds stay small.
const (
	DefaultWorkers = 8
	DefaultBatch   = 800
)

type job struct {
	id, action, object string
	due                time.Time
	// account is a payment's virtual account (empty for other objects):
	// the balance row its settlement updates.
	account string
}

// step orders one object's actions: a payment is submitted before it
// settles. Submit is never due after settle, but a lease rewrites due_at,
// so the action, not due_at, is what orders them.
func step(action string) int {
	if action == actionSubmitPayment {
		return 0
	}
	return 1
}

// SettleDue performs the actions that are due now and returns how many it
// performed. A batch is claimed with a lease in one short statement (no
// transaction stays open while commands run: an open transaction would
// hold back every reader of the log), performed by Workers goroutines,
// and the performed ones deleted in one statement. The payments' actions
// go by PaymentBatch payments per command transaction
// (app.RunSandboxPaymentActions); the other actions one command each. One
// object's actions (a payment's submit and settle) run in order, never side
// by side. A failing action, and the rest of its object's actions, wait out
// the lease and are retried without blocking the others (a batch that
// fails is retried one payment at a time at once, so only the failing
// payment waits); commands are idempotent, so a crash between performing
// and deleting repeats them harmlessly.
func (s *Simulator) SettleDue(ctx context.Context) (int, error) {
	start := time.Now()
	groups, short, err := s.claim(ctx)
	if err != nil {
		return 0, err
	}
	// Reported once the round is done: the claim took everything due
	// when it began (short), and the round performed it.
	defer s.Pacer.Read(SettlerName, start, short)
	if len(groups) == 0 {
		return 0, nil
	}
	var (
		mu       sync.Mutex
		done     []string
		firstErr error
	)
	record := func(ids []string, err error) {
		mu.Lock()
		defer mu.Unlock()
		done = append(done, ids...)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	// one performs a group's actions in order, one command each.
	one := func(g []job) {
		for _, j := range g {
			err := s.perform(ctx, j)
			if err != nil {
				record(nil, err)
				return // the object's later actions must not overtake this one
			}
			record([]string{j.id}, nil)
		}
	}
	work := make(chan [][]job)
	var wg sync.WaitGroup
	units := s.units(groups)
	for range min(s.workers(), len(units)) {
		wg.Go(func() {
			for u := range work {
				if len(u) == 1 && !paymentGroup(u[0]) {
					one(u[0])
					continue
				}
				err := s.performPayments(ctx, u)
				if err == nil {
					for _, g := range u {
						for _, j := range g {
							record([]string{j.id}, nil)
						}
					}
					continue
				}
				if ctx.Err() != nil {
					record(nil, err)
					continue // the rest wait out their lease
				}
				if s.Log != nil {
					s.Log.Warn("sandbox settler: batch failed, retrying its payments one by one", "payments", len(u), "error", err)
				}
				for _, g := range u {
					one(g)
				}
			}
		})
	}
feed:
	for _, u := range units {
		select {
		case work <- u:
		case <-ctx.Done():
			break feed // the rest wait out their lease
		}
	}
	close(work)
	wg.Wait()
	if len(done) == 0 {
		return 0, firstErr
	}
	// Delete even after ctx ended, so what was performed need not run
	// again (best effort: a process that exits first repeats them after
	// the lease, harmlessly, since commands are idempotent).
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.Pool.Exec(dctx, `DELETE FROM sandbox_schedule WHERE id = ANY($1)`, done); err != nil {
		return len(done), errors.Join(firstErr, err)
	}
	return len(done), firstErr
}

// DefaultPaymentBatch is how many payments one settler transaction
// completes unless PaymentBatch says otherwise. Bigger batches cost fewer
// commits, but hold their accounts' balance rows (which the API's
// payments wait for) longer.
const DefaultPaymentBatch = 50

func (s *Simulator) paymentBatch() int {
	if s.PaymentBatch > 0 {
		return s.PaymentBatch
	}
	return DefaultPaymentBatch
}

// paymentGroup says whether a group is a payment's actions only.
func paymentGroup(g []job) bool {
	for _, j := range g {
		if j.action != actionSubmitPayment && j.action != actionSettlePayment {
			return false
		}
	}
	return true
}

// units splits the claimed groups into what one worker performs at a
// time: a batch of payment groups, or one other group alone. Payments go
// in batches of at most PaymentBatch, spread over the workers rather than
// left to one of them, and grouped by account: a batch locks the balance
// rows of its accounts at its end, and batches that shared accounts (say,
// ten hot ones) queued for each row behind the API's payments while
// holding the rows they had locked already, which the API's payments then
// waited for in turn (a convoy). Now two batches share an account only
// when it alone has more than a batch due, and then those batches lock its
// row only.
func (s *Simulator) units(groups [][]job) [][][]job {
	var units [][][]job
	byAccount := map[string][][]job{}
	var accounts []string // in the order of their oldest group
	pays := 0
	for _, g := range groups {
		if !paymentGroup(g) {
			units = append(units, [][]job{g})
			continue
		}
		a := g[0].account
		if _, ok := byAccount[a]; !ok {
			accounts = append(accounts, a)
		}
		byAccount[a] = append(byAccount[a], g)
		pays++
	}
	size := min(s.paymentBatch(), max(1, (pays+s.workers()-1)/s.workers()))
	var unit [][]job
	for _, a := range accounts {
		gs := byAccount[a]
		if len(gs) > size { // one account's backlog: batches of it alone, one row each
			for len(gs) > 0 {
				n := min(size, len(gs))
				units = append(units, gs[:n:n])
				gs = gs[n:]
			}
			continue
		}
		if len(unit)+len(gs) > size { // never more than a batch
			units = append(units, unit)
			unit = nil
		}
		unit = append(unit, gs...)
	}
	if len(unit) > 0 {
		units = append(units, unit)
	}
	return units
}

// performPayments performs payment groups in one command transaction.
func (s *Simulator) performPayments(ctx context.Context, groups [][]job) error {
	var actions []app.SandboxPaymentAction
	for _, g := range groups {
		for _, j := range g {
			actions = append(actions, app.SandboxPaymentAction{PaymentID: j.object, Submit: j.action == actionSubmitPayment,
				Meta: app.Meta{Actor: "sandbox", CausationID: j.id}})
		}
	}
	return s.App.RunSandboxPaymentActions(ctx, actions)
}

func (s *Simulator) workers() int {
	if s.Workers > 0 {
		return s.Workers
	}
	return DefaultWorkers
}

// claim leases up to Batch due actions, oldest first, and returns them
// grouped by object, each group in the order its actions must run. A
// payment's settlement is claimed only once its submission is performed
// (its row deleted): claimed in flight elsewhere, or failed and waiting,
// the settlement would overtake it. Not "while its submission is leased":
// two settlers claiming at once each read the schedule as it was before
// the other's claim, so one took the settlement while the other took the
// submission (TestSettlersOfSeveralReplicasShareOneBacklog); a row that
// is still there is seen by every claim that could overtake it.
func (s *Simulator) claim(ctx context.Context) (groups [][]job, short bool, err error) {
	batch := s.Batch
	if batch <= 0 {
		batch = DefaultBatch
	}
	rows, err := s.Pool.Query(ctx, `WITH due AS (
            SELECT id, due_at FROM sandbox_schedule c
            WHERE due_at <= now() AND NOT (action = $3 AND EXISTS (SELECT 1 FROM sandbox_schedule p
                WHERE p.id = $4::text || ':' || substr(c.id, length($3::text) + 2)))
            ORDER BY due_at, action <> $4::text LIMIT $2 FOR UPDATE OF c SKIP LOCKED)
        UPDATE sandbox_schedule s SET due_at = now() + $1::interval FROM due WHERE s.id = due.id
        RETURNING s.id, s.action, due.due_at`, Lease.String(), batch, actionSettlePayment, actionSubmitPayment)
	if err != nil {
		return nil, false, err
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (job, error) {
		var j job
		err := r.Scan(&j.id, &j.action, &j.due)
		_, j.object, _ = strings.Cut(j.id, ":")
		return j, err
	})
	if err != nil {
		return nil, false, err
	}
	if err := s.findAccounts(ctx, jobs); err != nil {
		return nil, false, err
	}
	// Groups in the order of their oldest action; within one, by step.
	slices.SortFunc(jobs, func(a, b job) int { return a.due.Compare(b.due) })
	at := map[string]int{}
	for _, j := range jobs {
		i, ok := at[j.object]
		if !ok {
			i = len(groups)
			at[j.object] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], j)
	}
	for _, g := range groups {
		slices.SortStableFunc(g, func(a, b job) int { return cmp.Compare(step(a.action), step(b.action)) })
	}
	return groups, len(jobs) < batch, nil
}

// findAccounts sets the account of each payment's job, read after the
// claim in a statement of its own: looked up in the claim's RETURNING, it
// made the claim (an UPDATE, holding a transaction id and so every reader
// of the log) take up to a second and a half under load.
func (s *Simulator) findAccounts(ctx context.Context, jobs []job) error {
	var ids []string
	for _, j := range jobs {
		if j.action == actionSubmitPayment || j.action == actionSettlePayment {
			ids = append(ids, j.object)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := s.Pool.Query(ctx, `SELECT id, virtual_account_id FROM payments WHERE id = ANY($1)`, ids)
	if err != nil {
		return err
	}
	account := map[string]string{}
	var id, va string
	if _, err := pgx.ForEachRow(rows, []any{&id, &va}, func() error { account[id] = va; return nil }); err != nil {
		return err
	}
	for i := range jobs {
		if jobs[i].action == actionSubmitPayment || jobs[i].action == actionSettlePayment {
			jobs[i].account = account[jobs[i].object]
		}
	}
	return nil
}

func (s *Simulator) perform(ctx context.Context, j job) error {
	meta := app.Meta{Actor: "sandbox", CausationID: j.id}
	switch j.action {
	case actionSettleInbound:
		return s.App.CompleteInboundTransfer(ctx, meta, j.object)
	case actionSubmitPayment:
		return s.App.SubmitPayment(ctx, meta, j.object)
	case actionSettlePayment:
		return s.App.SettleSandboxPayment(ctx, meta, j.object)
	case actionSettlePrenote:
		id, _, _ := strings.Cut(j.object, "@")
		return s.App.SettleSandboxPrenote(ctx, meta, id)
	}
	return errors.New("unknown sandbox action " + j.action)
}
