package app

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstantPayment is a live RTP or FedNow payment still in flight, with
// what its pacs.008 carries.
type InstantPayment struct {
	ID                       string
	PlatformID               string
	Rail                     string // rtp or fednow
	Status                   string // pending (not answered yet) or submitted (the bank is settling it)
	Amount                   int64
	DestinationName          string
	DestinationAccountNumber string
	DestinationRoutingNumber string
	VirtualAccountNumber     string
	AccountHolder            string // the business's KYB legal name, or the platform's name
	CreatedAt                time.Time
	SubmittedAt              *time.Time // when it was handed to the bank (nil while pending)
}

// liveInstantSQL reads the live instant payments in flight, pending ones
// first (a backlog of submitted ones being asked about must not keep a new
// payment waiting), oldest first. It uses payments_live_instant.
const liveInstantSQL = `SELECT p.id, p.platform_id, p.rail, p.status, p.amount,
        p.destination->>'name', p.destination->>'account_number', p.destination->>'routing_number',
        v.account_number, coalesce(k.business->>'legal_name', pl.name, ''), p.created_at, p.submitted_at
    FROM payments p
    JOIN virtual_accounts v ON v.id = p.virtual_account_id
    LEFT JOIN platforms pl ON pl.id = p.platform_id
    LEFT JOIN kyb_entities e ON e.platform_id = v.platform_id AND e.environment = v.environment AND e.entity_ref = v.entity_ref
    LEFT JOIN kyb_verifications k ON k.id = e.verification_id
    WHERE p.environment = 'live' AND p.rail IN ('rtp', 'fednow') AND p.status IN ('pending', 'submitted')
    ORDER BY p.status <> 'pending', p.created_at, p.id
    LIMIT $1`

// LiveInstantPayments lists at most limit live rtp and fednow payments
// that are pending or submitted: what the instant-payments connector sends
// or asks the bank about (API.md §10). It reads the payments projection,
// which a command on the payment may have moved on since: the connector's
// commands decide on the payment's stream.
func (a *App) LiveInstantPayments(ctx context.Context, limit int) ([]InstantPayment, error) {
	rows, err := a.Pool.Query(ctx, liveInstantSQL, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (InstantPayment, error) {
		var p InstantPayment
		err := r.Scan(&p.ID, &p.PlatformID, &p.Rail, &p.Status, &p.Amount, &p.DestinationName, &p.DestinationAccountNumber,
			&p.DestinationRoutingNumber, &p.VirtualAccountNumber, &p.AccountHolder, &p.CreatedAt, &p.SubmittedAt)
		return p, err
	})
}
