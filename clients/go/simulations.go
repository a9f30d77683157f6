package treasury

import (
	"context"

	"github.com/opentreasury/treasury/clients/go/api"
)

// SimulationsService is the sandbox's simulations (/simulations); a live key
// gets a PermissionDeniedError.
type SimulationsService struct{ c *Client }

// InboundTransfer simulates money arriving in a virtual account
// (POST /simulations/inbound-transfers): rtp and fednow credit at once, ACH
// after the platform's sandbox delay.
func (s *SimulationsService) InboundTransfer(ctx context.Context, body SimulateInboundTransferRequest, opts ...RequestOption) (*InboundTransfer, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.SimulateInboundTransferWithResponse(ctx, &api.SimulateInboundTransferParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON201, r.JSON200)
}

// KYBDecision decides a verification in pending_review
// (POST /simulations/kyb/{id}/decision).
func (s *SimulationsService) KYBDecision(ctx context.Context, id string, body KYBDecisionRequest, opts ...RequestOption) (*KYBVerification, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.SimulateKYBDecisionWithResponse(ctx, id, &api.SimulateKYBDecisionParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// CompletePayment settles a payment now (POST /simulations/payments/{id}/complete).
func (s *SimulationsService) CompletePayment(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.SimulatePaymentCompleteWithResponse(ctx, id, &api.SimulatePaymentCompleteParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// FailPayment fails a payment with a network code, an ACH return code (R01…)
// or an ISO 20022 reason (AC03…) (POST /simulations/payments/{id}/fail).
func (s *SimulationsService) FailPayment(ctx context.Context, id string, body SimulatePaymentFailRequest, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.SimulatePaymentFailWithResponse(ctx, id, &api.SimulatePaymentFailParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// ReleasePayment releases a scheduled payment now
// (POST /simulations/payments/{id}/release), as the service does at 06:00 ET
// on its ScheduledFor date: the payment rules run on today's balance, daily
// limit, fee and approval threshold. Passed, the answer is the payment held
// (JournalEntryId set) and pending, or requires_approval at the platform's
// payment_approval_threshold; event payment.released. Refused by a rule, it is
// failed with Failure.Code the rule's (insufficient_funds, limit_exceeded,
// account_not_active, kyb_not_approved, compliance_rejected) and
// Failure.NetworkCode nil, nothing held; event payment.failed.
//
// A payment that is not scheduled (released already, canceled) is a
// ConflictError with code invalid_state: a payment is released once. Another
// platform's or a live payment is a NotFoundError; a live key or the operator
// key gets a PermissionDeniedError.
func (s *SimulationsService) ReleasePayment(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.SimulatePaymentReleaseWithResponse(ctx, id, &api.SimulatePaymentReleaseParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
