package queries

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
)

// OriginatorView is who sent an inbound transfer.
type OriginatorView struct {
	Name          string `json:"name"`
	AccountNumber string `json:"account_number"`
	RoutingNumber string `json:"routing_number"`
}

// InboundTransferView is an inbound transfer as the API shows it.
type InboundTransferView struct {
	ID                   string         `json:"id"`
	Object               string         `json:"object"`
	VirtualAccountID     string         `json:"virtual_account_id"`
	Amount               int64          `json:"amount"`
	Currency             string         `json:"currency"`
	Rail                 string         `json:"rail"`
	Originator           OriginatorView `json:"originator"`
	Description          string         `json:"description"`
	Status               string         `json:"status"`
	JournalEntryID       string         `json:"journal_entry_id"`
	ExpectedSettlementAt Time           `json:"expected_settlement_at"`
	CompletedAt          *Time          `json:"completed_at"`
	Environment          string         `json:"environment"`
	CreatedAt            Time           `json:"created_at"`
}

// GetInboundTransfer returns one of the scope's inbound transfers.
func GetInboundTransfer(ctx context.Context, db eventstore.DB, s Scope, id string) (InboundTransferView, error) {
	var v InboundTransferView
	var expected, created time.Time
	var completed *time.Time
	err := db.QueryRow(ctx, `SELECT id, virtual_account_id, amount, rail, originator, description, status,
            journal_entry_id, expected_at, completed_at, environment, created_at
        FROM inbound_transfers WHERE id = $1 AND platform_id = $2 AND environment = $3`, id, s.PlatformID, s.Environment.String()).
		Scan(&v.ID, &v.VirtualAccountID, &v.Amount, &v.Rail, &v.Originator, &v.Description, &v.Status,
			&v.JournalEntryID, &expected, &completed, &v.Environment, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("inbound_transfer", id)
	}
	v.Object, v.Currency = "inbound_transfer", "USD"
	v.ExpectedSettlementAt, v.CompletedAt, v.CreatedAt = NewTime(expected), NewTimePtr(completed), NewTime(created)
	return v, err
}
