package projections

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/payment"
	"github.com/opentreasury/treasury/domain/rails"
	"github.com/opentreasury/treasury/eventstore"
)

// Payments projects payment streams into the payments table.
type Payments struct{}

func (Payments) Name() string     { return "payments" }
func (Payments) Tables() []string { return []string{"payments"} }

// paymentRow is a payment's row as the batch leaves it: a payment created
// in the batch is inserted once, in its final state; one created before
// is updated with the fields the batch changed (nil: unchanged).
type paymentRow struct {
	created                                *payment.Created
	status                                 string
	failure                                *string // JSON
	updatedAt                              time.Time
	submitted, completed, failed, canceled *time.Time
}

// Project folds the batch's payment events per payment, then writes new
// payments with one INSERT and changed ones with one UPDATE.
func (Payments) Project(b *Batch) error {
	rows := map[string]*paymentRow{}
	var order []string
	for i := range b.Events {
		r := &b.Events[i]
		if !strings.HasPrefix(r.StreamID, payment.StreamID("")) {
			continue
		}
		ev, err := r.Decode()
		if err != nil {
			return err
		}
		id := r.StreamID[len(payment.StreamID("")):]
		row := rows[id]
		if row == nil {
			row = &paymentRow{}
			rows[id] = row
			order = append(order, id)
		}
		switch e := ev.(type) {
		case payment.Created:
			row.created, row.status, row.updatedAt = &e, "pending", e.At
		case payment.Submitted:
			row.status, row.submitted, row.updatedAt = "submitted", &e.At, e.At
		case payment.Completed:
			row.status, row.completed, row.updatedAt = "completed", &e.At, e.At
		case payment.Failed:
			f := jsonString(e.Failure)
			row.status, row.failure, row.failed, row.updatedAt = "failed", &f, &e.At, e.At
		case payment.Canceled:
			row.status, row.canceled, row.updatedAt = "canceled", &e.At, e.At
		}
	}
	var ins, upd paymentColumnsOf
	for _, id := range order {
		row := rows[id]
		if row.created != nil {
			ins.add(id, row)
		} else if row.status != "" {
			upd.add(id, row)
		}
	}
	if len(ins.id) > 0 {
		b.Queue(`INSERT INTO payments (id, platform_id, environment, virtual_account_id, amount, fee, rail, destination,
                idempotency_key, description, metadata, journal_entry_id, expected_settlement_at, created_at,
                status, failure, updated_at, submitted_at, completed_at, failed_at, canceled_at)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::text[],
                $8::jsonb[], $9::text[], $10::text[], $11::jsonb[], $12::text[], $13::timestamptz[], $14::timestamptz[],
                $15::text[], $16::jsonb[], $17::timestamptz[], $18::timestamptz[], $19::timestamptz[], $20::timestamptz[],
                $21::timestamptz[])`,
			ins.id, ins.platform, ins.env, ins.va, ins.amount, ins.fee, ins.rail, ins.destination, ins.key, ins.desc,
			ins.metadata, ins.journal, ins.expected, ins.createdAt,
			ins.status, ins.failure, ins.updatedAt, ins.submitted, ins.completed, ins.failed, ins.canceled)
	}
	if len(upd.id) > 0 {
		b.Queue(`UPDATE payments p SET status = u.status, failure = coalesce(u.failure, p.failure), updated_at = u.updated_at,
                submitted_at = coalesce(u.submitted_at, p.submitted_at), completed_at = coalesce(u.completed_at, p.completed_at),
                failed_at = coalesce(u.failed_at, p.failed_at), canceled_at = coalesce(u.canceled_at, p.canceled_at)
            FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::timestamptz[], $5::timestamptz[], $6::timestamptz[],
                $7::timestamptz[], $8::timestamptz[]) u(id, status, failure, updated_at, submitted_at, completed_at, failed_at, canceled_at)
            WHERE p.id = u.id`,
			upd.id, upd.status, upd.failure, upd.updatedAt, upd.submitted, upd.completed, upd.failed, upd.canceled)
	}
	return nil
}

// paymentColumnsOf holds payment rows column by column, for unnest.
type paymentColumnsOf struct {
	id, platform, env, va, rail, destination, key, desc, metadata, journal, status []string
	amount, fee                                                                    []int64
	expected, createdAt, updatedAt                                                 []time.Time
	failure                                                                        []*string
	submitted, completed, failed, canceled                                         []*time.Time
}

func (c *paymentColumnsOf) add(id string, row *paymentRow) {
	c.id = append(c.id, id)
	c.status = append(c.status, row.status)
	c.failure = append(c.failure, row.failure)
	c.updatedAt = append(c.updatedAt, row.updatedAt)
	c.submitted = append(c.submitted, row.submitted)
	c.completed = append(c.completed, row.completed)
	c.failed = append(c.failed, row.failed)
	c.canceled = append(c.canceled, row.canceled)
	if e := row.created; e != nil {
		c.platform = append(c.platform, e.PlatformID)
		c.env = append(c.env, e.Environment.String())
		c.va = append(c.va, e.VirtualAccountID)
		c.amount = append(c.amount, e.Amount)
		c.fee = append(c.fee, e.Fee)
		c.rail = append(c.rail, e.Rail)
		c.destination = append(c.destination, jsonString(e.Destination))
		c.key = append(c.key, e.IdempotencyKey)
		c.desc = append(c.desc, e.Description)
		c.metadata = append(c.metadata, jsonString(orEmpty(e.Metadata)))
		c.journal = append(c.journal, e.JournalEntryID)
		c.expected = append(c.expected, e.ExpectedSettlementAt)
		c.createdAt = append(c.createdAt, e.At)
	}
}

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
		IdempotencyKey: s.IdempotencyKey, Description: s.Description, Metadata: orEmpty(s.Metadata), Failure: s.Failure,
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

// paymentAt folds a payment's stream up to and including r.
func paymentAt(streams streamSource, r *eventstore.RecordedEvent) (PaymentView, error) {
	s, err := eventstore.Fold(upTo(streams.stream(r.StreamID), r), payment.State{}, payment.Evolve)
	return NewPaymentView(s), err
}
