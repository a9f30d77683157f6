package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// KYBService is business verifications (/kyb).
type KYBService struct{ c *Client }

// Create submits a business for verification (POST /kyb); it starts pending.
func (s *KYBService) Create(ctx context.Context, body KYBSubmitRequest, opts ...RequestOption) (*KYBVerification, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.SubmitKYBWithResponse(ctx, &api.SubmitKYBParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// Retrieve returns a verification with its decision (GET /kyb/{id}).
func (s *KYBService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*KYBVerification, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetKYBVerificationWithResponse(ctx, id, &api.GetKYBVerificationParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// List walks every verification (GET /kyb).
func (s *KYBService) List(ctx context.Context, params *ListKYBVerificationsParams, opts ...RequestOption) iter.Seq2[KYBVerification, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]KYBVerification, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListKYBVerificationsWithResponse(ctx, &q, ed)
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
