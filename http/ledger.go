package http

import (
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/queries"
)

// GET /v1/ledger/accounts
func (s *Server) listLedgerAccounts(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	var list queries.List[queries.LedgerAccountView]
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		list, err = queries.ListLedgerAccounts(c.Request().Context(), db, scopeOf(c), pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// GET /v1/ledger/entries
func (s *Server) listLedgerEntries(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.EntryFilter{
		VirtualAccountID: c.QueryParam("virtual_account_id"), LedgerAccountID: c.QueryParam("ledger_account_id"),
		Type: c.QueryParam("type"), Direction: c.QueryParam("direction"), Status: c.QueryParam("status"),
	}
	if f.VirtualAccountID != "" && f.LedgerAccountID != "" {
		return domain.Invalid("ledger_account_id", "scope to one account: virtual_account_id or ledger_account_id, not both")
	}
	if f.Direction != "" {
		if _, ok := ledger.ParseDirection(f.Direction); !ok {
			return domain.Invalid("direction", "direction must be debit or credit")
		}
	}
	if f.Status != "" && f.Status != ledger.StatusPending && f.Status != ledger.StatusPosted && f.Status != ledger.StatusArchived {
		return domain.Invalid("status", "status must be pending, posted or archived")
	}
	// Ledger entries have the transaction types and funding (which posts
	// to platform accounts only, so no transaction shows it).
	if f.Type != "" && !transactionTypes[f.Type] && f.Type != ledger.TypeFunding {
		return domain.Invalid("type", "unknown entry type %q", f.Type)
	}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	var list queries.List[queries.LedgerEntryView]
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		list, err = queries.ListLedgerEntries(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

type journalLineRequest struct {
	LedgerAccountID  string `json:"ledger_account_id"`
	VirtualAccountID string `json:"virtual_account_id"`
	Direction        string `json:"direction"`
	Amount           *int64 `json:"amount"`
}

type journalEntryRequest struct {
	Type             string               `json:"type"`
	Description      string               `json:"description"`
	VirtualAccountID string               `json:"virtual_account_id"`
	Direction        string               `json:"direction"`
	Amount           *int64               `json:"amount"`
	Lines            []journalLineRequest `json:"lines"`
	Reverses         string               `json:"reverses"`
	EffectiveAt      *string              `json:"effective_at"`
	IdempotencyKey   string               `json:"idempotency_key"`
	Metadata         map[string]string    `json:"metadata"`
}

// POST /v1/ledger/entries
func (s *Server) postJournalEntry(c echo.Context) error {
	var req journalEntryRequest
	body, err := bind(c, &req)
	if err != nil {
		return err
	}
	p := principalOf(c)
	idem, err := idempotency(c, p.platformID, p.env.String(), "post_journal_entry", body, req.IdempotencyKey)
	if err != nil {
		return err
	}
	in := app.PostJournalEntry{Type: req.Type, Description: req.Description, VirtualAccountID: req.VirtualAccountID,
		Direction: req.Direction, Amount: req.Amount, Reverses: req.Reverses, Metadata: req.Metadata}
	if req.EffectiveAt != nil {
		t, err := time.Parse(time.RFC3339Nano, *req.EffectiveAt)
		if err != nil {
			return domain.Invalid("effective_at", "effective_at must be an RFC 3339 time")
		}
		in.EffectiveAt = &t
	}
	for _, l := range req.Lines {
		in.Lines = append(in.Lines, app.JournalLine{LedgerAccountID: l.LedgerAccountID, VirtualAccountID: l.VirtualAccountID,
			Direction: l.Direction, Amount: l.Amount})
	}
	if req.Lines != nil && len(req.Lines) == 0 {
		return domain.Invalid("lines", "a journal entry needs at least 2 lines")
	}
	res, err := s.app.PostJournalEntry(c.Request().Context(), meta(c), idem, callerOf(c), in)
	if err != nil {
		return err
	}
	v, err := queries.JournalEntryFromLog(c.Request().Context(), s.pool, scopeOf(c), res.ID)
	if err != nil {
		return err
	}
	return created(c, res, v)
}

// GET /v1/ledger/journal-entries/:id: a journal entry with its lines,
// read from the log (current the moment a command commits); another
// platform's or environment's is 404.
func (s *Server) getJournalEntry(c echo.Context) error {
	id, err := pathID(c, "id", domain.PrefixJournalEntry, "journal_entry")
	if err != nil {
		return err
	}
	v, err := queries.JournalEntryFromLog(c.Request().Context(), s.pool, scopeOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// GET /v1/ledger/journal-entries: the scope's journal entries with their
// lines, newest first, each as GET /ledger/journal-entries/:id shows it.
// virtual_account_id, like the payments list's, only filters: an unknown
// or another platform's account gives an empty list.
func (s *Server) listJournalEntries(c echo.Context) error {
	pg, err := page(c)
	if err != nil {
		return err
	}
	f := queries.JournalEntryFilter{Type: c.QueryParam("type"), Status: c.QueryParam("status"),
		VirtualAccountID: c.QueryParam("virtual_account_id"), SourceType: c.QueryParam("source_type"),
		SourceID: c.QueryParam("source_id")}
	if f.Type != "" && !ledger.IsJournalType(f.Type) {
		return domain.Invalid("type", "type must be one of %s", strings.Join(ledger.JournalTypes, ", "))
	}
	if f.Status != "" && !slices.Contains(ledger.Statuses, f.Status) {
		return domain.Invalid("status", "status must be pending, posted or archived")
	}
	if f.SourceType != "" && !slices.Contains(ledger.SourceTypes, f.SourceType) {
		return domain.Invalid("source_type", "source_type must be one of %s", strings.Join(ledger.SourceTypes, ", "))
	}
	if f.Created, err = createdRange(c); err != nil {
		return err
	}
	if f.Metadata, err = metadataQuery(c); err != nil {
		return err
	}
	var list queries.List[queries.JournalEntryView]
	err = s.readList(c, projectedList, func(db eventstore.DB) (err error) {
		list, err = queries.ListJournalEntries(c.Request().Context(), db, scopeOf(c), f, pg)
		return err
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// GET /v1/ledger/exports
func (s *Server) exportLedger(c echo.Context) error {
	r, err := createdRange(c)
	if err != nil {
		return err
	}
	name := "ledger-" + time.Now().UTC().Format("20060102T150405Z") + ".csv"
	start := streamStart{contentType: "text/csv; charset=utf-8",
		header: map[string]string{"Content-Disposition": `attachment; filename="` + name + `"`}}
	return stream(c, start, func(w *streamWriter) error {
		return s.readList(c, projectedList, func(db eventstore.DB) error {
			err := queries.WriteLedgerExport(c.Request().Context(), db, scopeOf(c), r, w)
			if err != nil && w.started {
				return app.AnswerStarted(err) // not again from the start on the primary
			}
			return err
		})
	})
}
