package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// CounterpartiesService is counterparties (/counterparties): bank accounts the
// platform saves once and pays again and again (PaymentRequest.CounterpartyId
// instead of a Destination).
type CounterpartiesService struct{ c *Client }

// Create saves a counterparty (POST /counterparties): 201, its Verification
// unverified with a nil Method. The whole account number is stored (a payment
// to the counterparty copies it) but never shown: the answer carries only
// AccountNumberLast4.
//
// An Idempotency-Key is sent like on every POST (the caller's, see
// WithIdempotencyKey, or a generated one kept across retries): the same key
// and body answer the same counterparty (a replay, 200 with
// Idempotent-Replayed: true), another body is a ConflictError with code
// idempotency_conflict.
//
// A bad field (routing number without a valid ABA checksum, account number
// not of 4 to 17 digits, name not of 1 to 80 characters, account type,
// metadata) is a BadRequestError naming it in Param.
func (s *CounterpartiesService) Create(ctx context.Context, body CounterpartyRequest, opts ...RequestOption) (*Counterparty, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CreateCounterpartyWithResponse(ctx, &api.CreateCounterpartyParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// Retrieve returns a counterparty (GET /counterparties/{id}); a deleted one,
// another platform's or environment's, or an unknown one is a NotFoundError.
func (s *CounterpartiesService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*Counterparty, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetCounterpartyWithResponse(ctx, id, &api.GetCounterpartyParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// List walks every counterparty of the caller's environment, newest first,
// deleted ones left out (GET /counterparties), with the filters combined:
// params.VerificationStatus keeps one verification status
// (ListCounterpartiesParamsVerificationStatusVerified…), params.CreatedAfter
// (inclusive) and params.CreatedBefore (exclusive) bound their creation, and
// params.Metadata filters on metadata: each pair is sent as
// metadata[key]=value (key and value URL-encoded) on every page's request, and
// a counterparty must match them all.
func (s *CounterpartiesService) List(ctx context.Context, params *ListCounterpartiesParams, opts ...RequestOption) iter.Seq2[Counterparty, error] {
	p := valueOf(params)
	p.Metadata = metadataFilter(p.Metadata)
	return paginate(p.Cursor, func(cursor *string) ([]Counterparty, bool, *string, error) {
		q := p // a copy per page: the sequence may be walked more than once
		q.Cursor = cursor
		ctx, _, ed := prepare(ctx, opts)
		r, err := s.c.raw.ListCounterpartiesWithResponse(ctx, &q, ed)
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

// Delete deletes a counterparty (DELETE /counterparties/{id}): the answer is
// {Id, Object counterparty, Deleted true}. From then on it is a NotFoundError
// everywhere, new payments naming it included; a payment to it already in
// flight keeps its copied destination and completes.
func (s *CounterpartiesService) Delete(ctx context.Context, id string, opts ...RequestOption) (*DeletedCounterparty, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.DeleteCounterpartyWithResponse(ctx, id, &api.DeleteCounterpartyParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Verify sends a zero-dollar ACH prenote to the counterparty's account (POST
// /counterparties/{id}/verify); body.Method is
// VerifyCounterpartyRequestMethodPrenote, the one method (the zero value sends
// it too). The answer is the counterparty with Verification.Status pending
// and Method prenote. The outcome comes later: poll Retrieve, or listen for
// the events counterparty.verified and counterparty.verification_failed. In
// the sandbox it comes after the platform's sandbox.ach_same_day_delay_seconds
// (5 s by default), whatever auto_settle says: verified, or failed with
// Verification.FailureCode the ACH return code for the magic account numbers
// 4000000002, …03, …04, …16 and …23 (R02, R03, R04, R16, R23).
//
// With a live key the answer is the same (pending, Method prenote): the
// prenote leaves in the next outbound ACH file (a zero-dollar entry,
// transaction code 23, or 33 to a savings account). It becomes verified when
// its entry settles without a return (event counterparty.verified), or
// failed with the return code when the receiving bank returns it, even after
// it was verified (event counterparty.verification_failed). Nothing answers
// quickly in live: it stays pending until a file is cut and settled.
//
// A pending or verified counterparty, in either environment, is a
// ConflictError with code invalid_state; a failed one may be verified again
// (pending once more, its FailureCode cleared).
func (s *CounterpartiesService) Verify(ctx context.Context, id string, body VerifyCounterpartyRequest, opts ...RequestOption) (*Counterparty, error) {
	if body.Method == "" {
		body.Method = VerifyCounterpartyRequestMethodPrenote
	}
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.VerifyCounterpartyWithResponse(ctx, id, &api.VerifyCounterpartyParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
