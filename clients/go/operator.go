package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// OperatorService is the operator's routes other than platforms
// (/operator/kyb, /operator/rails); they need the operator key.
type OperatorService struct {
	c *Client
	// ACHFiles: the outbound NACHA files (/operator/rails/ach/files).
	ACHFiles *ACHFilesService
}

// DecideKYB decides a verification in pending_review
// (POST /operator/kyb/{id}/decision).
func (s *OperatorService) DecideKYB(ctx context.Context, id string, body KYBDecisionRequest, opts ...RequestOption) (*KYBVerification, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.OperatorDecideKYBWithResponse(ctx, id, &api.OperatorDecideKYBParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// ACHFilesService is the outbound NACHA files.
type ACHFilesService struct{ c *Client }

// List walks every ACH file written (GET /operator/rails/ach/files).
func (s *ACHFilesService) List(ctx context.Context, params *ListACHFilesParams, opts ...RequestOption) iter.Seq2[ACHFile, error] {
	p := valueOf(params)
	return paginate(p.Cursor, func(cursor *string) ([]ACHFile, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListACHFilesWithResponse(ctx, &q, ed)
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

// Cut writes the pending live ACH payments into files now
// (POST /operator/rails/ach/files) and returns the files written.
func (s *ACHFilesService) Cut(ctx context.Context, opts ...RequestOption) (*ACHFileCut, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CutACHFilesWithResponse(ctx, &api.CutACHFilesParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
