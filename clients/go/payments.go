package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// PaymentsService is payments (/payments).
type PaymentsService struct{ c *Client }

// Create sends a payment (POST /payments). The Idempotency-Key header and the
// body's idempotency_key are the same: body.IdempotencyKey if set, else the
// key of WithIdempotencyKey, else a random one. Sending the same key and body
// again returns the original payment (a replay); the same key with another
// body is a ConflictError with code idempotency_conflict.
func (s *PaymentsService) Create(ctx context.Context, body PaymentRequest, opts ...RequestOption) (*Payment, error) {
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
	r, err := s.c.raw.CreatePaymentWithResponse(ctx, &api.CreatePaymentParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// Retrieve returns a payment (GET /payments/{id}): the polling path.
func (s *PaymentsService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetPaymentWithResponse(ctx, id, &api.GetPaymentParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// List walks every payment, newest first (GET /payments). params.Metadata
// filters on metadata: each pair is sent as metadata[key]=value (key and value
// URL-encoded) on every page's request, and a payment must match them all.
func (s *PaymentsService) List(ctx context.Context, params *ListPaymentsParams, opts ...RequestOption) iter.Seq2[Payment, error] {
	p := valueOf(params)
	p.Metadata = metadataFilter(p.Metadata)
	return paginate(p.Cursor, func(cursor *string) ([]Payment, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListPaymentsWithResponse(ctx, &q, ed)
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

// Cancel cancels a pending payment (POST /payments/{id}/cancel); any other
// status is a ConflictError with code payment_not_cancelable.
func (s *PaymentsService) Cancel(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CancelPaymentWithResponse(ctx, id, &api.CancelPaymentParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
