package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// LedgerService is the double-entry ledger (/ledger).
type LedgerService struct {
	c *Client
	// Accounts: the ledger accounts (GET /ledger/accounts).
	Accounts *LedgerAccountsService
	// Entries: ledger entries, and manual journal entries (/ledger/entries).
	Entries *LedgerEntriesService
	// JournalEntries: journal entries with their lines and source
	// (/ledger/journal-entries).
	JournalEntries *LedgerJournalEntriesService
}

// Export returns the reconciliation export, CSV of every ledger entry with
// running balances (GET /ledger/exports).
func (s *LedgerService) Export(ctx context.Context, params *ExportLedgerParams, opts ...RequestOption) ([]byte, error) {
	p := valueOf(params)
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.ExportLedgerWithResponse(ctx, &p, ed)
	if err != nil {
		return nil, err
	}
	return rawResult(r.HTTPResponse, r.Body)
}

// LedgerAccountsService is the ledger accounts.
type LedgerAccountsService struct{ c *Client }

// List walks every ledger account with its balances (GET /ledger/accounts).
func (s *LedgerAccountsService) List(ctx context.Context, params *ListLedgerAccountsParams, opts ...RequestOption) iter.Seq2[LedgerAccount, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]LedgerAccount, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListLedgerAccountsWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// LedgerEntriesService is ledger entries and manual journal entries.
type LedgerEntriesService struct{ c *Client }

// List walks every ledger entry (GET /ledger/entries). Each entry's Source
// is its journal entry's: the payment, inbound transfer or book transfer that
// made it, or the journal entry itself for a manual entry or a funding.
func (s *LedgerEntriesService) List(ctx context.Context, params *ListLedgerEntriesParams, opts ...RequestOption) iter.Seq2[LedgerEntry, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]LedgerEntry, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListLedgerEntriesWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Create posts a manual journal entry (POST /ledger/entries) in one of its
// three forms; build body with its FromJournalEntryShorthandRequest,
// FromJournalEntryLinesRequest or FromJournalEntryReversalRequest method, or
// with JournalEntryShorthand, JournalEntryLines or JournalEntryReversal.
func (s *LedgerEntriesService) Create(ctx context.Context, body JournalEntryRequest, opts ...RequestOption) (*JournalEntry, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.PostJournalEntryWithResponse(ctx, &api.PostJournalEntryParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// LedgerJournalEntriesService is journal entries, each with its lines.
type LedgerJournalEntriesService struct{ c *Client }

// List walks the platform's journal entries, newest first (ledger order),
// each with its lines and Source exactly as Retrieve returns it
// (GET /ledger/journal-entries). The filters all combine: params.Type (an
// entry's type; payment_fee is only a line's), params.Status,
// params.VirtualAccountId (entries with a line on it; an unknown or another
// platform's account gives an empty list), params.SourceType and
// params.SourceId (a payment's id: its hold and, if it was returned, its
// reversal), params.CreatedAfter and params.CreatedBefore, and
// params.Metadata: each pair is sent as metadata[key]=value (key and value
// URL-encoded) on every page's request, and an entry must match them all. A
// bad value is a BadRequestError naming the parameter in Param.
func (s *LedgerJournalEntriesService) List(ctx context.Context, params *ListJournalEntriesParams, opts ...RequestOption) iter.Seq2[JournalEntry, error] {
	p := valueOf(params)
	p.Metadata = metadataFilter(p.Metadata)
	return paginate(p.Cursor, func(cursor *string) ([]JournalEntry, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListJournalEntriesWithResponse(ctx, &q, ed)
		if err != nil {
			return nil, false, nil, err
		}
		l, err := result(r.HTTPResponse, r.Body, r.JSON200)
		if err != nil {
			return nil, false, nil, err
		}
		return l.Data, l.HasMore, l.NextCursor, nil
	})
}

// Retrieve returns a journal entry with its lines and its Source: the
// payment, the inbound transfer, the book transfer, or, for a manual entry
// (a manual reversal included) or a funding, the journal entry itself (GET
// /ledger/journal-entries/{id}); each line carries the same Source. The ids
// to follow here are a payment's, inbound transfer's, book transfer's or
// ledger entry's JournalEntryId. Another platform's or environment's id, or
// an unknown one, is a NotFoundError.
func (s *LedgerJournalEntriesService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*JournalEntry, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetJournalEntryWithResponse(ctx, id, &api.GetJournalEntryParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// JournalEntryShorthand wraps the one-account form of a journal entry.
func JournalEntryShorthand(r JournalEntryShorthandRequest) JournalEntryRequest {
	var body JournalEntryRequest
	_ = body.FromJournalEntryShorthandRequest(r) // marshalling a struct of strings and ints cannot fail
	return body
}

// JournalEntryLines wraps the lines form of a journal entry.
func JournalEntryLines(r JournalEntryLinesRequest) JournalEntryRequest {
	var body JournalEntryRequest
	_ = body.FromJournalEntryLinesRequest(r)
	return body
}

// JournalEntryReversal wraps the reversal form of a journal entry.
func JournalEntryReversal(r JournalEntryReversalRequest) JournalEntryRequest {
	var body JournalEntryRequest
	_ = body.FromJournalEntryReversalRequest(r)
	return body
}
