package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// VirtualAccountsService is virtual accounts (/virtual-accounts).
type VirtualAccountsService struct{ c *Client }

// Create opens a virtual account (POST /virtual-accounts).
func (s *VirtualAccountsService) Create(ctx context.Context, body CreateVirtualAccountRequest, opts ...RequestOption) (*VirtualAccount, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CreateVirtualAccountWithResponse(ctx, &api.CreateVirtualAccountParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// Retrieve returns a virtual account (GET /virtual-accounts/{id}).
func (s *VirtualAccountsService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*VirtualAccount, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetVirtualAccountWithResponse(ctx, id, &api.GetVirtualAccountParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// List walks every virtual account, newest first (GET /virtual-accounts).
// params.Metadata filters on metadata: each pair is sent as
// metadata[key]=value (key and value URL-encoded) on every page's request, and
// an account must match them all.
func (s *VirtualAccountsService) List(ctx context.Context, params *ListVirtualAccountsParams, opts ...RequestOption) iter.Seq2[VirtualAccount, error] {
	p := valueOf(params)
	p.Metadata = metadataFilter(p.Metadata)
	return paginate(p.Cursor, func(cursor *string) ([]VirtualAccount, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListVirtualAccountsWithResponse(ctx, &q, ed)
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

// Balance returns an account's balance, now or as it was at params.AsOf
// (GET /virtual-accounts/{id}/balance).
func (s *VirtualAccountsService) Balance(ctx context.Context, id string, params *GetVirtualAccountBalanceParams, opts ...RequestOption) (*Balance, error) {
	p := valueOf(params)
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetVirtualAccountBalanceWithResponse(ctx, id, &p, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Transactions walks every transaction of an account
// (GET /virtual-accounts/{id}/transactions).
func (s *VirtualAccountsService) Transactions(ctx context.Context, id string, params *ListTransactionsParams, opts ...RequestOption) iter.Seq2[Transaction, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]Transaction, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListTransactionsWithResponse(ctx, id, &q, ed)
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

// Statement returns an account's statement of a month, "YYYY-MM"
// (GET /virtual-accounts/{id}/statements/{month}).
func (s *VirtualAccountsService) Statement(ctx context.Context, id, month string, opts ...RequestOption) (*Statement, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetStatementWithResponse(ctx, id, month,
		&api.GetStatementParams{Format: Ptr(api.GetStatementParamsFormatJson)}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// StatementCSV returns an account's statement of a month as CSV
// (GET /virtual-accounts/{id}/statements/{month}?format=csv).
func (s *VirtualAccountsService) StatementCSV(ctx context.Context, id, month string, opts ...RequestOption) ([]byte, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetStatementWithResponse(ctx, id, month,
		&api.GetStatementParams{Format: Ptr(api.GetStatementParamsFormatCsv)}, ed)
	if err != nil {
		return nil, err
	}
	return rawResult(r.HTTPResponse, r.Body)
}

// Freeze freezes an account (POST /virtual-accounts/{id}/freeze): it cannot
// send payments until unfrozen.
func (s *VirtualAccountsService) Freeze(ctx context.Context, id string, opts ...RequestOption) (*VirtualAccount, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.FreezeVirtualAccountWithResponse(ctx, id, &api.FreezeVirtualAccountParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Unfreeze makes a frozen account active again (POST /virtual-accounts/{id}/unfreeze).
func (s *VirtualAccountsService) Unfreeze(ctx context.Context, id string, opts ...RequestOption) (*VirtualAccount, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.UnfreezeVirtualAccountWithResponse(ctx, id, &api.UnfreezeVirtualAccountParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Close closes an account at zero balance, for good (POST /virtual-accounts/{id}/close).
func (s *VirtualAccountsService) Close(ctx context.Context, id string, opts ...RequestOption) (*VirtualAccount, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CloseVirtualAccountWithResponse(ctx, id, &api.CloseVirtualAccountParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
