package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// BookTransfersService is book transfers (/book-transfers): money moved at
// once between two virtual accounts of the caller's platform and environment.
type BookTransfersService struct{ c *Client }

// Create moves money from one of the caller's accounts to another, at once
// (POST /book-transfers): the answer is the transfer, completed, with both
// balances moved and one posted journal entry of type book_transfer.
//
// The server requires an idempotency key, so one is always sent, as for
// payments: the Idempotency-Key header and the body's idempotency_key are the
// same, body.IdempotencyKey if set, else the key of WithIdempotencyKey, else a
// random one, and it is the same on every retry of the call. Sending the same
// key and body again returns the original transfer (a replay, which moves
// nothing); the same key with another body is a ConflictError with code
// idempotency_conflict.
//
// Refusals: the same account on both sides or a bad field, a BadRequestError
// naming it in Param; an account of another platform or environment, or an
// unknown one, a NotFoundError; an UnprocessableEntityError, with the account
// in ResourceID, when the sender is not active or its business not KYB
// approved (account_not_active, kyb_not_approved), the receiver is closed
// (account_not_active; a frozen account still receives), or the sender's
// available balance is too low (insufficient_funds).
func (s *BookTransfersService) Create(ctx context.Context, body BookTransferRequest, opts ...RequestOption) (*BookTransfer, error) {
	ctx, rc, ed := prepare(ctx, opts)
	switch {
	case body.IdempotencyKey != "" && rc.idempotencyKey == "":
		rc.idempotencyKey = body.IdempotencyKey
	case body.IdempotencyKey == "":
		if rc.idempotencyKey == "" {
			rc.idempotencyKey = newIdempotencyKey()
		}
		body.IdempotencyKey = rc.idempotencyKey
	}
	r, err := s.c.raw.CreateBookTransferWithResponse(ctx, &api.CreateBookTransferParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// Retrieve returns a book transfer (GET /book-transfers/{id}); another
// platform's or environment's id, or an unknown one, is a NotFoundError.
func (s *BookTransfersService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*BookTransfer, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetBookTransferWithResponse(ctx, id, &api.GetBookTransferParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// List walks every book transfer of the caller's environment, newest first
// (GET /book-transfers), with the filters combined: params.VirtualAccountId
// keeps the transfers out of or into that account, params.CreatedAfter
// (inclusive) and params.CreatedBefore (exclusive) bound their creation, and
// params.Metadata filters on metadata: each pair is sent as
// metadata[key]=value (key and value URL-encoded) on every page's request, and
// a transfer must match them all.
func (s *BookTransfersService) List(ctx context.Context, params *ListBookTransfersParams, opts ...RequestOption) iter.Seq2[BookTransfer, error] {
	p := valueOf(params)
	p.Metadata = metadataFilter(p.Metadata)
	return paginate(p.Cursor, func(cursor *string) ([]BookTransfer, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListBookTransfersWithResponse(ctx, &q, ed)
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
