package app

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// CreatePayment accepts a payment and holds amount + fee. The rules and
// their order are payment.DecideCreate's; this loads their inputs and
// appends what it decides.
//
// It is the hot path, so it runs pipelined, in two round trips, and holds
// nothing while it decides. The first batch (BEGIN, the writer gate, the
// check of a cached API key, then the look-up of the idempotency key and
// the reads the rules need) writes and locks nothing, so the transaction
// takes no id: the log's readers, which wait for every older transaction
// id to end, never wait for a payment's decision. The second batch claims
// the key, locks the account's balance row, checks that what the decision
// relied on still holds (payment.DecidedOn: funds for the hold, the
// account's status, its business's KYB status, the daily limit), then
// appends, writes the inline projections, reads the payment to answer
// with, and commits. The balance row is locked only for that one round
// trip. When the check fails (another payment took the funds, the account
// was frozen), nothing was written: the command reads and decides again.
// Only a daily limit (its sum) or a platform with no chart yet costs a
// round trip more; a refusal costs a ROLLBACK.
func (a *App) CreatePayment(ctx context.Context, meta Meta, idem *Idempotency, c Caller, req payment.Request) (Result, error) {
	// Validated before the idempotency key is looked at: a malformed
	// request is a 400 whatever key it carries.
	if err := req.CheckTarget(); err != nil {
		return Result{}, err
	}
	if _, err := req.Validate(); err != nil {
		return Result{}, err
	}
	if idem == nil {
		return Result{}, domain.Invalid("idempotency_key", "idempotency_key is required (in the body or the Idempotency-Key header)")
	}
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixPayment)
	cmd := command{idem: idem, resourceID: id, claimAtCommit: true, pipelined: true, verifyKeyID: c.VerifyKeyID}
	return a.execute(ctx, cmd, func(ctx context.Context, tx *commandTx) (Result, error) {
		in, err := loadPaymentInputs(ctx, tx, c, req.VirtualAccountID, req.CounterpartyID)
		if err != nil || !in.keyFree {
			return Result{}, err // the key is taken: the runner replays the earlier result
		}
		req := req
		if cp := in.counterparty; cp != nil { // the payment copies the counterparty's destination
			req.Destination = cp.destination
		}
		decision := in.decisionInputs(c, idem, req, id, now())
		if cp := in.counterparty; cp != nil {
			decision.Counterparty = &payment.CounterpartyRef{ID: req.CounterpartyID, VerificationStatus: cp.status}
		}
		decision.CreatedBy = meta.Actor
		// The parties' rules need nothing more: a payment they refuse makes
		// no more reads than it did before the decider (DecideCreate runs
		// them again, in their place).
		if err := payment.CheckParties(decision); err != nil {
			return Result{}, err
		}
		scheduled := req.ScheduledFor != ""
		if decision.Settings.DailyPaymentLimit != nil && !scheduled { // a scheduled payment's limit is its release's
			if decision.SpentToday, err = spentToday(ctx, tx, decision.Account.ID, decision.Now); err != nil {
				return Result{}, err
			}
		}
		if len(decision.Chart) == 0 {
			if decision.Chart, err = a.ensureChart(ctx, tx, meta, c); err != nil {
				return Result{}, err
			}
		}
		events, err := payment.DecideCreate(decision)
		if err != nil {
			return Result{}, err
		}
		tx.claimAtCommit()
		appends := []eventstore.AppendRequest{{Stream: paymentStream(c, id), Events: events}}
		if !scheduled { // a scheduled payment holds nothing: there is nothing to check again under the lock
			recorded := events[1].(ledger.Recorded)
			paymentEvents := append([]domain.Event{events[0]}, events[2:]...) // Created, then ApprovalRequired if any
			queueStillStands(tx, payment.DecidedOn(decision, recorded))
			appends = []eventstore.AppendRequest{{Stream: paymentStream(c, id), Events: paymentEvents},
				{Stream: journalStream(c, decision.IDs.JournalEntry), Events: []domain.Event{recorded}}}
		}
		res := Result{ID: id}
		// The answer is read in the same batch as the inline writes: no
		// read-back after the commit, on another connection.
		// A read that fails after the commit leaves the payment made and
		// unread: the caller reads it afresh (Payment nil).
		read := func(db eventstore.DB) error {
			v, err := queries.GetPayment(ctx, db, queries.Scope{PlatformID: c.PlatformID, Environment: c.Environment}, id)
			if err != nil && tx.committed {
				a.Log.Warn("payment committed, its read failed; answering from a fresh read", "payment_id", id, "error", err)
				return nil
			}
			if err == nil {
				res.Payment = &v
			}
			return err
		}
		err = tx.appendProjectReadAndCommit(ctx, meta, read, appends...)
		return res, err
	})
}

// paymentInputs is what CreatePayment's rules read.
type paymentInputs struct {
	keyFree   bool // false: the idempotency key was used before
	account   payment.Sender
	kybStatus string
	settings  queries.SettingsView
	fees      map[string]int64
	chart     map[string]string
	// counterparty is the payment's counterparty, when it names one.
	counterparty *paymentCounterparty
}

// paymentCounterparty is what a payment reads of its counterparty.
type paymentCounterparty struct {
	destination payment.Destination
	status      string
}

// loadPaymentInputs looks the idempotency key up and reads the rules'
// inputs, in one batch that locks and writes nothing: what the decision
// relies on is checked again under the balance lock (queueStillStands).
// counterpartyID, if set, is read too: the caller's, not deleted (else 404
// on counterparty_id, as for any id of another platform or environment).
// A counterparty deleted after this read is paid all the same: as if the
// delete came after the payment.
func loadPaymentInputs(ctx context.Context, tx *commandTx, c Caller, accountID, counterpartyID string) (paymentInputs, error) {
	var in paymentInputs
	env := c.Environment.String()
	b := &pgx.Batch{}
	tx.queueKeyLookup(b)
	b.Queue(`SELECT b.posted, b.pending_inbound, b.pending_outbound, v.status, v.ledger_account_id, coalesce(k.status, $4)
        `+accountWithKYB+`
        WHERE b.virtual_account_id = $1 AND v.platform_id = $2 AND v.environment = $3`, accountID, c.PlatformID, env, kyb.StatusNotStarted)
	b.Queue(queries.SettingsQuery, c.PlatformID, env)
	b.Queue(`SELECT fee_schedule FROM platforms WHERE id = $1`, c.PlatformID)
	b.Queue(`SELECT code, id FROM ledger_accounts WHERE platform_id = $1 AND environment = $2 AND virtual_account_id IS NULL`,
		c.PlatformID, env)
	if counterpartyID != "" {
		b.Queue(`SELECT name, account_number, routing_number, verification_status FROM counterparties
            WHERE id = $1 AND platform_id = $2 AND environment = $3 AND NOT deleted`, counterpartyID, c.PlatformID, env)
	}
	br, err := tx.sendFirst(ctx, b)
	if err != nil {
		return in, err
	}
	defer br.Close()

	if in.keyFree, err = tx.keyFree(br); err != nil || !in.keyFree {
		return in, err
	}
	acc := &in.account
	acc.ID = accountID
	bal := &acc.Balance
	err = br.QueryRow().Scan(&bal.Posted, &bal.PendingInbound, &bal.PendingOutbound, &acc.Status, &acc.LedgerAccountID, &in.kybStatus)
	if errors.Is(err, pgx.ErrNoRows) {
		return in, domain.NotFound("virtual_account", accountID)
	}
	if err != nil {
		return in, err
	}
	if in.settings, err = queries.ScanSettings(br.QueryRow(), c.PlatformID, c.Environment); err != nil {
		return in, err
	}
	if err := br.QueryRow().Scan(&in.fees); err != nil {
		return in, err
	}
	rows, err := br.Query()
	if err != nil {
		return in, err
	}
	in.chart = map[string]string{}
	for rows.Next() {
		var code, id string
		if err := rows.Scan(&code, &id); err != nil {
			rows.Close()
			return in, err
		}
		in.chart[code] = id
	}
	if err := rows.Err(); err != nil {
		return in, err
	}
	if counterpartyID != "" {
		cp := &paymentCounterparty{}
		d := &cp.destination
		err := br.QueryRow().Scan(&d.Name, &d.AccountNumber, &d.RoutingNumber, &cp.status)
		if errors.Is(err, pgx.ErrNoRows) {
			return in, &domain.Error{Code: domain.CodeNotFound, Param: "counterparty_id", Message: "no such counterparty: " + counterpartyID}
		}
		if err != nil {
			return in, err
		}
		in.counterparty = cp
	}
	return in, br.Close()
}

// queueStillStands queues, at the head of the command's last batch, the
// lock of the account's balance row and then, in a statement of its own
// (so that it reads what the lock's previous holder committed), the check
// of s: it raises decision_inputs_changed (eventstore.InputsChangedState,
// retried by the runner) unless the row still has the hold's funds, the
// account and its business the statuses decided on, and the day's
// payments room within the limit. Its funds arithmetic is
// ledger.Balance.Available's, in SQL.
func queueStillStands(tx *commandTx, s payment.StandsIf) {
	tx.beforeAppend(`SELECT 1 FROM account_balances WHERE virtual_account_id = $1 FOR UPDATE`, s.AccountID)
	if s.MaxSpentToday == nil {
		tx.beforeAppend(stillStandsSQL, s.AccountID, s.MinAvailable, s.AccountStatus, kyb.StatusNotStarted, s.KYBStatus)
		return
	}
	tx.beforeAppend(stillStandsWithinLimitSQL,
		s.AccountID, s.DayStart, s.DayEnd, s.MinAvailable, s.AccountStatus, kyb.StatusNotStarted, s.KYBStatus, *s.MaxSpentToday)
}

// The check at commit, without and with a daily limit. Two statements, not
// one with "$n IS NULL OR (the day's sum)": PostgreSQL's generic plan of
// that one kept the sum's subplan, so it planned the statement afresh at
// every payment.
const (
	stillStandsSQL = `SELECT CASE WHEN b.posted - b.pending_outbound >= $2 AND v.status = $3 AND coalesce(k.status, $4) = $5
        THEN 1 ELSE decision_inputs_changed($1) END
        ` + accountWithKYB + `
        WHERE b.virtual_account_id = $1`
	stillStandsWithinLimitSQL = `SELECT CASE WHEN b.posted - b.pending_outbound >= $4 AND v.status = $5 AND coalesce(k.status, $6) = $7
            AND (` + spentTodaySQL + `) <= $8
        THEN 1 ELSE decision_inputs_changed($1) END
        ` + accountWithKYB + `
        WHERE b.virtual_account_id = $1`
)

// decisionInputs are the rules' inputs as loaded, for DecideCreate; the
// daily sum and a new chart are filled in later, when needed.
func (in paymentInputs) decisionInputs(c Caller, idem *Idempotency, req payment.Request, paymentID string, at time.Time) payment.CreateInputs {
	return payment.CreateInputs{Request: req, PlatformID: c.PlatformID, Environment: c.Environment, IdempotencyKey: idem.Key,
		Account: in.account, KYBStatus: in.kybStatus, Settings: in.settings.Settings, FeeSchedule: in.fees, Chart: in.chart, Now: at,
		IDs: payment.NewIDs{Payment: paymentID, JournalEntry: domain.NewID(domain.PrefixJournalEntry),
			LedgerEntry: func() string { return domain.NewID(domain.PrefixLedgerEntry) }}}
}

// accountWithKYB joins a balance row (b) to its account (v) and the
// account's business (k), which the decision reads and the check at
// commit reads again.
const accountWithKYB = `FROM account_balances b JOIN virtual_accounts v ON v.id = b.virtual_account_id
    LEFT JOIN kyb_entities k ON k.platform_id = v.platform_id AND k.environment = v.environment AND k.entity_ref = v.entity_ref`

// spentToday sums the account's payments of the day that count toward the
// daily limit. Read without the balance lock, the sum is checked again
// under it (queueStillStands).
func spentToday(ctx context.Context, tx pgx.Tx, accountID string, at time.Time) (int64, error) {
	start, end := payment.DailyWindow(at)
	var spent int64
	err := tx.QueryRow(ctx, spentTodaySQL, accountID, start, end).Scan(&spent)
	return spent, err
}

// spentTodaySQL sums the payments of account $1 in [$2, $3) that count
// toward the daily limit (failed, canceled and denied ones do not; a
// scheduled one counts on the day of its release, not of its creation).
const spentTodaySQL = `SELECT coalesce(sum(amount), 0) FROM (
        SELECT amount FROM payments WHERE virtual_account_id = $1 AND created_at >= $2 AND created_at < $3
            AND released_at IS NULL AND status NOT IN ('failed', 'canceled', 'denied', 'scheduled')
        UNION ALL
        SELECT amount FROM payments WHERE virtual_account_id = $1 AND released_at >= $2 AND released_at < $3
            AND status NOT IN ('failed', 'canceled', 'denied')) counted`

func paymentStream(c Caller, id string) eventstore.Stream {
	return payments.stream(c, id)
}
