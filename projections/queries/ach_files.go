package queries

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// ACHFileView is an outbound ACH file of live mode, as the operator sees it.
type ACHFileView struct {
	ID          string `json:"id"`
	Object      string `json:"object"`
	Name        string `json:"name"`
	EntryCount  int    `json:"entry_count"`
	TotalCredit int64  `json:"total_credit"`
	CreatedAt   Time   `json:"created_at"`
	// TransmittedAt is when the file was recorded as in the outbox; null
	// while the connector has still to write it.
	TransmittedAt *Time `json:"transmitted_at"`
}

// achFileColumns are what scanACHFile reads.
const achFileColumns = `id, name, entry_count, total_credit, created_at, transmitted_at`

func scanACHFile(r pgx.Row) (ACHFileView, error) {
	v := ACHFileView{Object: "ach_file"}
	var created time.Time
	var transmitted *time.Time
	err := r.Scan(&v.ID, &v.Name, &v.EntryCount, &v.TotalCredit, &created, &transmitted)
	v.CreatedAt, v.TransmittedAt = NewTime(created), NewTimePtr(transmitted)
	return v, err
}

// GetACHFiles reads the files of these ids, in their order.
func GetACHFiles(ctx context.Context, db eventstore.DB, ids []string) ([]ACHFileView, error) {
	rows, err := db.Query(ctx, `SELECT `+achFileColumns+` FROM ach_files WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (ACHFileView, error) { return scanACHFile(r) })
}

// ListACHFiles lists the files, newest first.
func ListACHFiles(ctx context.Context, db eventstore.DB, page Page) (List[ACHFileView], error) {
	rows, err := db.Query(ctx, `SELECT `+achFileColumns+` FROM ach_files
        WHERE ($1 = '' OR id < $1) ORDER BY id DESC LIMIT $2`, page.After, page.Limit+1)
	if err != nil {
		return List[ACHFileView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ACHFileView, error) { return scanACHFile(r) })
	if err != nil {
		return List[ACHFileView]{}, err
	}
	return NewList(items, page, func(v ACHFileView) string { return v.ID }), nil
}
