package queries

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// PaymentView is a payment as the API shows it.
type PaymentView struct {
	ID                   string              `json:"id"`
	Object               string              `json:"object"`
	VirtualAccountID     string              `json:"virtual_account_id"`
	Amount               int64               `json:"amount"`
	Currency             string              `json:"currency"`
	Rail                 string              `json:"rail"`
	Destination          payment.Destination `json:"destination"`
	Status               string              `json:"status"`
	Fee                  int64               `json:"fee"`
	IdempotencyKey       string              `json:"idempotency_key"`
	Description          string              `json:"description"`
	Metadata             map[string]string   `json:"metadata"`
	Failure              *rails.Failure      `json:"failure"`
	ExpectedSettlementAt Time                `json:"expected_settlement_at"`
	SubmittedAt          *Time               `json:"submitted_at"`
	CompletedAt          *Time               `json:"completed_at"`
	FailedAt             *Time               `json:"failed_at"`
	CanceledAt           *Time               `json:"canceled_at"`
	Environment          string              `json:"environment"`
	CreatedAt            Time                `json:"created_at"`
}

// NewPaymentView shows a payment folded from the log.
func NewPaymentView(s payment.State) PaymentView {
	return PaymentView{ID: s.PaymentID, Object: "payment", VirtualAccountID: s.VirtualAccountID, Amount: s.Amount,
		Currency: "USD", Rail: s.Rail, Destination: s.Destination, Status: s.Status, Fee: s.Fee,
		IdempotencyKey: s.IdempotencyKey, Description: s.Description, Metadata: Metadata(s.Metadata), Failure: s.Failure,
		ExpectedSettlementAt: NewTime(s.ExpectedSettlementAt), SubmittedAt: NewTimePtr(s.SubmittedAt),
		CompletedAt: NewTimePtr(s.CompletedAt), FailedAt: NewTimePtr(s.FailedAt), CanceledAt: NewTimePtr(s.CanceledAt),
		Environment: s.Environment.String(), CreatedAt: NewTime(s.At)}
}

const paymentColumns = `id, virtual_account_id, amount, rail, destination, status, fee, idempotency_key, description,
    metadata, failure, expected_settlement_at, submitted_at, completed_at, failed_at, canceled_at, environment, created_at`

func scanPayment(row pgx.Row) (PaymentView, error) {
	var p PaymentView
	var expected, created time.Time
	var submitted, completed, failed, canceled *time.Time
	err := row.Scan(&p.ID, &p.VirtualAccountID, &p.Amount, &p.Rail, &p.Destination, &p.Status, &p.Fee,
		&p.IdempotencyKey, &p.Description, &p.Metadata, &p.Failure, &expected, &submitted, &completed, &failed,
		&canceled, &p.Environment, &created)
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
}

// ListPayments lists the scope's payments, newest first.
func ListPayments(ctx context.Context, db eventstore.DB, s Scope, f PaymentFilter, page Page) (List[PaymentView], error) {
	from, to := f.Created.args()
	rows, err := db.Query(ctx, `SELECT `+paymentColumns+` FROM payments
        WHERE platform_id = $1 AND environment = $2 AND ($3 = '' OR virtual_account_id = $3)
          AND ($4 = '' OR status = $4) AND ($5 = '' OR rail = $5) AND ($6 = '' OR idempotency_key = $6)
          AND ($7::timestamptz IS NULL OR created_at >= $7) AND ($8::timestamptz IS NULL OR created_at < $8)
          AND ($9 = '' OR id < $9)
        ORDER BY id DESC LIMIT $10`, s.PlatformID, s.Environment.String(), f.VirtualAccountID, f.Status, f.Rail,
		f.IdempotencyKey, from, to, page.After, page.Limit+1)
	if err != nil {
		return List[PaymentView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (PaymentView, error) { return scanPayment(r) })
	if err != nil {
		return List[PaymentView]{}, err
	}
	return NewList(items, page, func(p PaymentView) string { return p.ID }), nil
}

// Metadata is metadata as the API shows it: an empty object, never null.
func Metadata(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
