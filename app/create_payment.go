package app

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/kyb"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// CreatePayment accepts a payment and holds amount + fee, in one
// transaction under the account's balance lock. The rules and their
// order are payment.DecideCreate's; this loads their inputs and appends
// what it decides.
//
// It is the hot path, so it runs pipelined, in two round trips: one batch
// with BEGIN, the writer gate, the check of a cached API key, the claim
// of the idempotency key (with the new payment's id, so no second write
// is needed), the lock of the balance row and the reads the rules need;
// then, the decision made in Go, one batch with the two appends, the
// inline projections' writes, the read of the payment to answer with and
// COMMIT. The balance row is locked for one round trip. Only a daily
// limit (its sum) or a platform with no chart yet costs more; a refusal
// costs a ROLLBACK.
func (a *App) CreatePayment(ctx context.Context, meta Meta, idem *Idempotency, c Caller, req payment.Request) (Result, error) {
	// Validated before the idempotency key is looked at: a malformed
	// request is a 400 whatever key it carries.
	if _, err := req.Validate(); err != nil {
		return Result{}, err
	}
	if idem == nil {
		return Result{}, domain.Invalid("idempotency_key", "idempotency_key is required (in the body or the Idempotency-Key header)")
	}
	meta = withIdempotencyKey(meta, idem)
	id := domain.NewID(domain.PrefixPayment)
	cmd := command{idem: idem, resourceID: id, claimInBatch: true, pipelined: true, verifyKeyID: c.VerifyKeyID}
	return a.execute(ctx, cmd, func(ctx context.Context, tx *commandTx) (Result, error) {
		in, err := loadPaymentInputs(ctx, tx, c, idem, id, req.VirtualAccountID)
		if err != nil || !in.claimed {
			return Result{}, err // not claimed: the runner replays the earlier result
		}
		decision := in.decisionInputs(c, idem, req, id, now())
		// The parties' rules need nothing more: a payment they refuse makes
		// no more reads than it did before the decider (DecideCreate runs
		// them again, in their place).
		if err := payment.CheckParties(decision); err != nil {
			return Result{}, err
		}
		if decision.Settings.DailyPaymentLimit != nil {
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
		created, recorded := events[0], events[1]
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
		err = tx.appendProjectReadAndCommit(ctx, meta, read,
			eventstore.AppendRequest{Stream: paymentStream(c, id), Events: []domain.Event{created}},
			eventstore.AppendRequest{Stream: journalStream(c, decision.IDs.JournalEntry), Events: []domain.Event{recorded}})
		return res, err
	})
}

// paymentInputs is what CreatePayment's rules read.
type paymentInputs struct {
	claimed   bool // false: the idempotency key was used before
	account   lockedAccount
	kybStatus string
	settings  queries.SettingsView
	fees      map[string]int64
	chart     map[string]string
}

// loadPaymentInputs claims the idempotency key for paymentID, locks the
// account's balance row and reads the rules' inputs, in one batch. The
// statements run in order, each with its own snapshot, so the account's
// status is read after its lock was granted (a close committed by the
// lock's previous holder is seen).
func loadPaymentInputs(ctx context.Context, tx *commandTx, c Caller, idem *Idempotency, paymentID, accountID string) (paymentInputs, error) {
	var in paymentInputs
	env := c.Environment.String()
	b := &pgx.Batch{}
	tx.queueClaim(b)
	// Only a request that claimed the key locks the row: a replay must not
	// queue behind the account's payments in flight.
	b.Queue(`SELECT b.posted, b.pending_inbound, b.pending_outbound
        FROM account_balances b JOIN virtual_accounts v ON v.id = b.virtual_account_id
        WHERE b.virtual_account_id = $1 AND v.platform_id = $2 AND v.environment = $3
          AND EXISTS (SELECT 1 FROM idempotency_keys
                      WHERE scope = $4 AND environment = $5 AND key = $6 AND resource_id = $7)
        FOR UPDATE OF b`, accountID, c.PlatformID, env, idem.Scope, idem.Environment, idem.Key, paymentID)
	b.Queue(`SELECT v.status, v.entity_ref, v.ledger_account_id, coalesce(k.status, $2)
        FROM virtual_accounts v LEFT JOIN kyb_entities k
          ON k.platform_id = v.platform_id AND k.environment = v.environment AND k.entity_ref = v.entity_ref
        WHERE v.id = $1`, accountID, kyb.StatusNotStarted)
	b.Queue(queries.SettingsQuery, c.PlatformID, env)
	b.Queue(`SELECT fee_schedule FROM platforms WHERE id = $1`, c.PlatformID)
	b.Queue(`SELECT code, id FROM ledger_accounts WHERE platform_id = $1 AND environment = $2 AND virtual_account_id IS NULL`,
		c.PlatformID, env)
	br, err := tx.sendFirst(ctx, b)
	if err != nil {
		return in, err
	}
	defer br.Close()

	if in.claimed, err = tx.claimed(br); err != nil {
		return in, err
	}
	in.account.ID = accountID
	bal := &in.account.Balance
	if err := br.QueryRow().Scan(&bal.Posted, &bal.PendingInbound, &bal.PendingOutbound); errors.Is(err, pgx.ErrNoRows) {
		if in.claimed {
			return in, domain.NotFound("virtual_account", accountID)
		}
	} else if err != nil {
		return in, err
	}
	acc := &in.account
	if err := br.QueryRow().Scan(&acc.Status, &acc.EntityRef, &acc.LedgerAccountID, &in.kybStatus); err != nil && !errors.Is(err, pgx.ErrNoRows) {
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
	return in, br.Close()
}

// decisionInputs are the rules' inputs as loaded, for DecideCreate; the
// daily sum and a new chart are filled in later, when needed.
func (in paymentInputs) decisionInputs(c Caller, idem *Idempotency, req payment.Request, paymentID string, at time.Time) payment.CreateInputs {
	acc := in.account
	return payment.CreateInputs{Request: req, PlatformID: c.PlatformID, Environment: c.Environment, IdempotencyKey: idem.Key,
		Account:   payment.Sender{ID: acc.ID, Status: acc.Status, LedgerAccountID: acc.LedgerAccountID, Balance: acc.Balance},
		KYBStatus: in.kybStatus, Settings: in.settings.Settings, FeeSchedule: in.fees, Chart: in.chart, Now: at,
		IDs: payment.NewIDs{Payment: paymentID, JournalEntry: domain.NewID(domain.PrefixJournalEntry),
			LedgerEntry: func() string { return domain.NewID(domain.PrefixLedgerEntry) }}}
}

// spentToday sums the account's payments of the day that count toward the
// daily limit (failed and canceled ones do not). It runs under the
// account's balance lock, so concurrent payments see each other.
func spentToday(ctx context.Context, tx pgx.Tx, accountID string, at time.Time) (int64, error) {
	start, end := payment.DailyWindow(at)
	var spent int64
	err := tx.QueryRow(ctx, `SELECT coalesce(sum(amount), 0) FROM payments
        WHERE virtual_account_id = $1 AND created_at >= $2 AND created_at < $3 AND status NOT IN ('failed', 'canceled')`,
		accountID, start, end).Scan(&spent)
	return spent, err
}

func paymentStream(c Caller, id string) eventstore.Stream {
	return payments.stream(c, id)
}
