package queries

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/booktransfer"
	"github.com/opentreasury/treasury/eventstore"
)

// BookTransferView is a book transfer as the API shows it.
type BookTransferView struct {
	ID                   string            `json:"id"`
	Object               string            `json:"object"`
	FromVirtualAccountID string            `json:"from_virtual_account_id"`
	ToVirtualAccountID   string            `json:"to_virtual_account_id"`
	Amount               int64             `json:"amount"`
	Currency             string            `json:"currency"`
	Description          string            `json:"description"`
	Status               string            `json:"status"`
	IdempotencyKey       string            `json:"idempotency_key"`
	JournalEntryID       string            `json:"journal_entry_id"`
	Metadata             map[string]string `json:"metadata"`
	Environment          string            `json:"environment"`
	CreatedAt            Time              `json:"created_at"`
}

// NewBookTransferView shows a book transfer from its event.
func NewBookTransferView(e booktransfer.Completed) BookTransferView {
	return BookTransferView{ID: e.BookTransferID, Object: "book_transfer", FromVirtualAccountID: e.FromVirtualAccountID,
		ToVirtualAccountID: e.ToVirtualAccountID, Amount: e.Amount, Currency: "USD", Description: e.Description,
		Status: booktransfer.StatusCompleted, IdempotencyKey: e.IdempotencyKey, JournalEntryID: e.JournalEntryID,
		Metadata: Metadata(e.Metadata), Environment: e.Environment.String(), CreatedAt: NewTime(e.At)}
}

const bookTransferColumns = `id, from_virtual_account_id, to_virtual_account_id, amount, description, idempotency_key,
    journal_entry_id, metadata, environment, created_at`

func scanBookTransfer(row pgx.Row) (BookTransferView, error) {
	var v BookTransferView
	var created time.Time
	err := row.Scan(&v.ID, &v.FromVirtualAccountID, &v.ToVirtualAccountID, &v.Amount, &v.Description, &v.IdempotencyKey,
		&v.JournalEntryID, &v.Metadata, &v.Environment, &created)
	v.Object, v.Currency, v.Status, v.CreatedAt = "book_transfer", "USD", booktransfer.StatusCompleted, NewTime(created)
	return v, err
}

// GetBookTransfer returns one of the scope's book transfers.
func GetBookTransfer(ctx context.Context, db eventstore.DB, s Scope, id string) (BookTransferView, error) {
	v, err := scanBookTransfer(db.QueryRow(ctx, `SELECT `+bookTransferColumns+` FROM book_transfers
        WHERE id = $1 AND platform_id = $2 AND environment = $3`, id, s.PlatformID, s.Environment.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return v, domain.NotFound("book_transfer", id)
	}
	return v, err
}

// BookTransferFilter narrows ListBookTransfers.
type BookTransferFilter struct {
	// VirtualAccountID: transfers out of or into this account.
	VirtualAccountID string
	Created          TimeRange
	Metadata         map[string]string // every pair must be in the transfer's metadata
}

// ListBookTransfers lists the scope's book transfers, newest first.
func ListBookTransfers(ctx context.Context, db eventstore.DB, s Scope, f BookTransferFilter, page Page) (List[BookTransferView], error) {
	w := &where{args: []any{s.PlatformID, s.Environment.String()}}
	w.add("(from_virtual_account_id = ? OR to_virtual_account_id = ?)", f.VirtualAccountID)
	w.add("metadata @> ?::jsonb", metadataFilter(f.Metadata))
	w.add("created_at >= ?", f.Created.After)
	w.add("created_at < ?", f.Created.Before)
	w.add("id < ?", page.After)
	w.args = append(w.args, page.Limit+1)
	rows, err := db.Query(ctx, `SELECT `+bookTransferColumns+` FROM book_transfers
        WHERE platform_id = $1 AND environment = $2`+w.sql+`
        ORDER BY id DESC LIMIT $`+strconv.Itoa(len(w.args)), w.args...)
	if err != nil {
		return List[BookTransferView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (BookTransferView, error) { return scanBookTransfer(r) })
	if err != nil {
		return List[BookTransferView]{}, err
	}
	return NewList(items, page, func(v BookTransferView) string { return v.ID }), nil
}
