package queries

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// PaymentView is a payment as the API shows it.
type PaymentView struct {
	ID               string              `json:"id"`
	Object           string              `json:"object"`
	VirtualAccountID string              `json:"virtual_account_id"`
	Amount           int64               `json:"amount"`
	Currency         string              `json:"currency"`
	Rail             string              `json:"rail"`
	Destination      payment.Destination `json:"destination"`
	// CounterpartyID: the counterparty the payment was made to, whose
	// destination it copied (absent for a raw destination, so that the
	// events of other payments keep their bytes).
	CounterpartyID string            `json:"counterparty_id,omitempty"`
	Status         string            `json:"status"`
	Fee            int64             `json:"fee"`
	IdempotencyKey string            `json:"idempotency_key"`
	Description    string            `json:"description"`
	Metadata       map[string]string `json:"metadata"`
	// JournalEntryID is the entry that holds and then posts amount + fee
	// (GET /ledger/journal-entries/:id); its source names the payment.
	JournalEntryID *string        `json:"journal_entry_id"`
	Failure        *rails.Failure `json:"failure"`
	// TraceNumber and ACHFileID: a live ACH payment's, once in a file
	// (absent otherwise, so that the public events of other payments keep
	// their bytes).
	TraceNumber string `json:"trace_number,omitempty"`
	ACHFileID   string `json:"ach_file_id,omitempty"`
	// NotificationOfChange is the latest the receiving bank sent for a
	// live ACH payment (absent otherwise).
	NotificationOfChange *ChangeView `json:"notification_of_change,omitempty"`
	// Approval: a payment at or above the platform's approval threshold's
	// (absent on every other payment, so that their events keep their
	// bytes); CancellationReason: why a canceled payment was canceled when
	// the platform did not cancel it ("approval_expired").
	Approval           *ApprovalView `json:"approval,omitempty"`
	CancellationReason string        `json:"cancellation_reason,omitempty"`
	// ScheduledFor: a scheduled payment's date (absent on others, so that
	// their events keep their bytes).
	ScheduledFor         string `json:"scheduled_for,omitempty"`
	ExpectedSettlementAt Time   `json:"expected_settlement_at"`
	SubmittedAt          *Time  `json:"submitted_at"`
	CompletedAt          *Time  `json:"completed_at"`
	FailedAt             *Time  `json:"failed_at"`
	CanceledAt           *Time  `json:"canceled_at"`
	Environment          string `json:"environment"`
	CreatedAt            Time   `json:"created_at"`
}

// NewPaymentView shows a payment folded from the log.
func NewPaymentView(s payment.State) PaymentView {
	return PaymentView{ID: s.PaymentID, Object: "payment", VirtualAccountID: s.VirtualAccountID, Amount: s.Amount,
		Currency: "USD", Rail: s.Rail, Destination: s.Destination, CounterpartyID: s.CounterpartyID, Status: s.Status, Fee: s.Fee,
		IdempotencyKey: s.IdempotencyKey, Description: s.Description, Metadata: Metadata(s.Metadata),
		JournalEntryID: nonEmpty(s.JournalEntryID), Failure: s.Failure,
		TraceNumber: s.TraceNumber, ACHFileID: s.ACHFileID, NotificationOfChange: NewChangeView(s.Change),
		Approval: NewApprovalView(s.Approval), CancellationReason: s.CancelReason, ScheduledFor: s.ScheduledFor, ExpectedSettlementAt: NewTime(s.ExpectedSettlementAt), SubmittedAt: NewTimePtr(s.SubmittedAt),
		CompletedAt: NewTimePtr(s.CompletedAt), FailedAt: NewTimePtr(s.FailedAt), CanceledAt: NewTimePtr(s.CanceledAt),
		Environment: s.Environment.String(), CreatedAt: NewTime(s.At)}
}

const paymentColumns = `id, virtual_account_id, amount, rail, destination, status, fee, idempotency_key, description,
    metadata, failure, expected_settlement_at, submitted_at, completed_at, failed_at, canceled_at, environment, created_at,
    coalesce(trace_number, ''), coalesce(ach_file_id, ''), notification_of_change, approval, coalesce(cancel_reason, ''),
    nullif(journal_entry_id, ''), coalesce(to_char(scheduled_for, 'YYYY-MM-DD'), ''), coalesce(counterparty_id, '')`

func scanPayment(row pgx.Row) (PaymentView, error) {
	var p PaymentView
	var expected, created time.Time
	var submitted, completed, failed, canceled *time.Time
	err := row.Scan(&p.ID, &p.VirtualAccountID, &p.Amount, &p.Rail, &p.Destination, &p.Status, &p.Fee,
		&p.IdempotencyKey, &p.Description, &p.Metadata, &p.Failure, &expected, &submitted, &completed, &failed,
		&canceled, &p.Environment, &created, &p.TraceNumber, &p.ACHFileID, &p.NotificationOfChange, &p.Approval, &p.CancellationReason,
		&p.JournalEntryID, &p.ScheduledFor, &p.CounterpartyID)
	p.Object, p.Currency = "payment", "USD"
	p.ExpectedSettlementAt, p.CreatedAt = NewTime(expected), NewTime(created)
	p.SubmittedAt, p.CompletedAt, p.FailedAt, p.CanceledAt = NewTimePtr(submitted), NewTimePtr(completed), NewTimePtr(failed), NewTimePtr(canceled)
	return p, err
}

// GetPayment returns one of the scope's payments.
func GetPayment(ctx context.Context, db eventstore.DB, s Scope, id string) (PaymentView, error) {
	p, err := scanPayment(db.QueryRow(ctx, `SELECT `+paymentColumns+` FROM payments
        WHERE id = $1 AND platform_id = $2 AND environment = $3`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return p, domain.NotFound("payment", id)
	}
	return p, err
}

// PaymentFilter narrows ListPayments.
type PaymentFilter struct {
	VirtualAccountID string
	Status           string
	Rail             string
	IdempotencyKey   string
	Created          TimeRange
	// Metadata: every pair must be in the payment's metadata.
	Metadata map[string]string
}

// ListPayments lists the scope's payments, newest first. Its statement
// names only the filters given, so that each combination gets a plan of
// its own: one for every combination (each filter "$n = ” OR …") let the
// planner use no index but the platform's, and a look-up by idempotency
// key read every payment of the platform.
func ListPayments(ctx context.Context, db eventstore.DB, s Scope, f PaymentFilter, page Page) (List[PaymentView], error) {
	w := &where{args: []any{s.PlatformID, s.Environment.String()}}
	w.add("virtual_account_id = ?", f.VirtualAccountID)
	w.add("status = ?", f.Status)
	w.add("rail = ?", f.Rail)
	// payments has no index on the key; idempotency_keys has it as its
	// primary key, naming the payment it made.
	w.add(`id = (SELECT resource_id FROM idempotency_keys WHERE scope = $1 AND environment = $2 AND key = ?)
          AND idempotency_key = ?`, f.IdempotencyKey)
	w.add("metadata @> ?::jsonb", metadataFilter(f.Metadata))
	w.add("created_at >= ?", f.Created.After)
	w.add("created_at < ?", f.Created.Before)
	w.add("id < ?", page.After)
	w.args = append(w.args, page.Limit+1)
	rows, err := db.Query(ctx, `SELECT `+paymentColumns+` FROM payments
        WHERE platform_id = $1 AND environment = $2`+w.sql+`
        ORDER BY id DESC LIMIT $`+strconv.Itoa(len(w.args)), w.args...)
	if err != nil {
		return List[PaymentView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentView, error) { return scanPayment(r) })
	if err != nil {
		return List[PaymentView]{}, err
	}
	return NewList(items, page, func(p PaymentView) string { return p.ID }), nil
}

// where is a statement's conditions, added only for the filters given.
type where struct {
	sql  string
	args []any
}

// add appends " AND cond", its every ? the next parameter, bound to v,
// unless v is its type's zero value (a filter not given).
func (w *where) add(cond string, v any) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return
		}
	case time.Time:
		if x.IsZero() {
			return
		}
	}
	w.args = append(w.args, v)
	w.sql += " AND " + strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(w.args)))
}

// metadataFilter is a metadata filter as the jsonb containment operand
// (@>), or "" for none.
func metadataFilter(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	b, _ := json.Marshal(m) // a map of strings always encodes
	return string(b)
}

// Metadata is metadata as the API shows it: an empty object, never null.
func Metadata(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// ChangeView is a notification of change: what the receiving bank says to
// use instead for the next payment to this destination.
type ChangeView struct {
	Code          string `json:"code"`
	CorrectedData string `json:"corrected_data"`
}

// NewChangeView shows a notification of change, if any.
func NewChangeView(c *payment.NotificationOfChange) *ChangeView {
	if c == nil {
		return nil
	}
	return &ChangeView{Code: c.Code, CorrectedData: c.CorrectedData}
}

// ApprovalView is where a payment that needed an approval stands: the key
// that created it (which cannot approve it), until when it may be
// approved, and the decision once made.
type ApprovalView struct {
	CreatedBy    string  `json:"created_by"`
	ExpiresAt    Time    `json:"expires_at"`
	ApprovedAt   *Time   `json:"approved_at"`
	ApprovedBy   *string `json:"approved_by"`
	DeniedAt     *Time   `json:"denied_at"`
	DeniedBy     *string `json:"denied_by"`
	DenialReason *string `json:"denial_reason"`
}

// NewApprovalView shows a payment's approval, if it needed one.
func NewApprovalView(a *payment.Approval) *ApprovalView {
	if a == nil {
		return nil
	}
	v := &ApprovalView{CreatedBy: a.CreatedBy, ExpiresAt: NewTime(a.ExpiresAt),
		ApprovedAt: NewTimePtr(a.ApprovedAt), DeniedAt: NewTimePtr(a.DeniedAt)}
	if a.ApprovedAt != nil {
		v.ApprovedBy = &a.ApprovedBy
	}
	if a.DeniedAt != nil {
		v.DeniedBy, v.DenialReason = &a.DeniedBy, &a.Reason
		if a.Reason == "" {
			v.DenialReason = nil
		}
	}
	return v
}

// nonEmpty is s, or nil (JSON null) when it is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
