package queries

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/domain/ach"
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

// NewACHFileView shows a file just cut (not yet transmitted).
func NewACHFileView(f ach.FileCreated) ACHFileView {
	return ACHFileView{ID: f.ACHFileID, Object: "ach_file", Name: f.Name, EntryCount: f.EntryCount(),
		TotalCredit: f.TotalCredit(), CreatedAt: NewTime(f.At)}
}

// ListACHFiles lists the files, newest first.
func ListACHFiles(ctx context.Context, db eventstore.DB, page Page) (List[ACHFileView], error) {
	rows, err := db.Query(ctx, `SELECT id, name, entry_count, total_credit, created_at, transmitted_at FROM ach_files
        WHERE ($1 = '' OR id < $1) ORDER BY id DESC LIMIT $2`, page.After, page.Limit+1)
	if err != nil {
		return List[ACHFileView]{}, err
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ACHFileView, error) {
		v := ACHFileView{Object: "ach_file"}
		var created time.Time
		var transmitted *time.Time
		err := r.Scan(&v.ID, &v.Name, &v.EntryCount, &v.TotalCredit, &created, &transmitted)
		v.CreatedAt, v.TransmittedAt = NewTime(created), NewTimePtr(transmitted)
		return v, err
	})
	if err != nil {
		return List[ACHFileView]{}, err
	}
	return NewList(items, page, func(v ACHFileView) string { return v.ID }), nil
}
