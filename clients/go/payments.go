package treasury

import (
	"context"
	"iter"

	"github.com/opentreasury/treasury/clients/go/api"
)

// PaymentsService is payments (/payments).
type PaymentsService struct{ c *Client }

// Create sends a payment (POST /payments) to exactly one of body.Destination
// (an account number, routing number and name) and body.CounterpartyId (a
// saved counterparty, "cp_…": see Counterparties): both or neither is a
// BadRequestError with Param counterparty_id. A payment to a counterparty
// copies its name, account and routing numbers into the payment's Destination
// and carries CounterpartyId (nil on payments to a raw destination); an
// unknown, deleted, or another platform's or environment's counterparty is a
// NotFoundError with Param counterparty_id. With the platform setting
// require_verified_counterparty on (Platform.Settings.Update), a payment to a
// counterparty that is not verified, or to a raw destination, is an
// UnprocessableEntityError with code counterparty_not_verified (Param
// counterparty_id and ResourceID the counterparty, or Param destination).
//
// The Idempotency-Key header and the
// body's idempotency_key are the same: body.IdempotencyKey if set, else the
// key of WithIdempotencyKey, else a random one. Sending the same key and body
// again returns the original payment (a replay); the same key with another
// body is a ConflictError with code idempotency_conflict.
//
// When the platform's payment_approval_threshold is set, a payment whose
// amount is at or above it is created requires_approval, with an Approval:
// held like a pending one (amount + fee leave available) but sent to no rail
// until another key approves it (Approve), or until it is denied (Deny) or
// canceled (Cancel); unapproved 7 days after its creation it is canceled with
// CancellationReason approval_expired.
//
// With body.ScheduledFor (a Date, YYYY-MM-DD in Eastern time: after today,
// Eastern, and at most 365 days ahead, else a BadRequestError naming
// scheduled_for in Param) the payment is created scheduled: only the account,
// its business's KYB and the destination's screening are checked now (a 422
// as for any payment), nothing is held, JournalEntryId is nil and no rail sees
// it; it carries ScheduledFor (nil on payments that were not scheduled). At
// 06:00 ET on that date it is released: the five rules run on that day's
// balance, daily limit, fee and approval threshold, and it becomes pending
// (held, JournalEntryId set) or requires_approval, event payment.released, or
// failed with the rule's Failure.Code and a nil Failure.NetworkCode. Cancel
// cancels it while it is scheduled; in the sandbox,
// Simulations.ReleasePayment releases it at once.
//
// The payment's JournalEntryId names the journal entry that holds amount + fee
// and posts them when it completes (archived if it is canceled, denied or
// fails first): Ledger.JournalEntries.Retrieve returns it, with Source
// {payment, the payment's id} on the entry and on each of its lines. A return
// after settlement is a payment_reversal journal entry of its own, with the
// same Source, named by the first one's ReversedBy; JournalEntryId does not
// change.
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

// Retrieve returns a payment (GET /payments/{id}): the polling path. Its
// JournalEntryId leads to its money in the ledger (see Create).
func (s *PaymentsService) Retrieve(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.GetPaymentWithResponse(ctx, id, &api.GetPaymentParams{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// List walks every payment, newest first (GET /payments). params.Status
// keeps one status (ListPaymentsParamsStatusRequiresApproval lists the
// payments waiting for a second key, ListPaymentsParamsStatusScheduled those
// waiting for their date). params.Metadata
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

// Cancel cancels a payment (POST /payments/{id}/cancel): a pending one, one
// in requires_approval (still waiting for its second key), or a scheduled one
// (not released yet; it held nothing). It becomes canceled and its held
// amount + fee, if any, are released. A submitted, completed,
// failed, denied or already canceled payment is a ConflictError with code
// payment_not_cancelable.
func (s *PaymentsService) Cancel(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.CancelPaymentWithResponse(ctx, id, &api.CancelPaymentParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Approve releases a payment in requires_approval to its rail (POST
// /payments/{id}/approve): the answer is the payment, pending, with
// Approval.ApprovedAt and Approval.ApprovedBy (the calling key's id) set; it
// settles from then on like any payment, and its ExpectedSettlementAt counts
// from the approval.
//
// A payment at or above the platform's payment_approval_threshold (see
// Platform.Settings.Update) is created requires_approval, held but sent to no
// rail, and takes a second key: approving it with the key that created it
// (Approval.CreatedBy), or with the operator key, is a PermissionDeniedError
// with code forbidden; create another key with Platform.APIKeys.Create and
// approve with a client holding its secret. A payment in any other status is a
// ConflictError with code invalid_state; another platform's or environment's
// is a NotFoundError.
func (s *PaymentsService) Approve(ctx context.Context, id string, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.ApprovePaymentWithResponse(ctx, id, &api.ApprovePaymentParams{}, api.EmptyRequest{}, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}

// Deny refuses a payment in requires_approval (POST /payments/{id}/deny): the
// answer is the payment, denied (final), its held amount + fee released, with
// Approval.DeniedAt, Approval.DeniedBy (the calling key's id) and
// Approval.DenialReason (body.Reason; null when none is given) set. Any key of
// the platform may deny, the one that created the payment included.
//
// body.Reason is optional, at most 500 characters (a longer one is a
// BadRequestError naming reason in Param); the zero DenyPaymentRequest gives
// none. A payment in any other status is a ConflictError with code
// invalid_state; another platform's or environment's is a NotFoundError.
func (s *PaymentsService) Deny(ctx context.Context, id string, body DenyPaymentRequest, opts ...RequestOption) (*Payment, error) {
	ctx, _, ed := prepare(ctx, opts)
	r, err := s.c.raw.DenyPaymentWithResponse(ctx, id, &api.DenyPaymentParams{}, body, ed)
	if err != nil {
		return nil, err
	}
	return result(r.HTTPResponse, r.Body, r.JSON200)
}
