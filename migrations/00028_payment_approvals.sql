-- Approvals (API.md §12): a payment at or above the platform's approval
-- threshold waits, held, for a second key. approval is the payment's
-- approval as the API shows it (null when it needed none); cancel_reason
-- says why a payment was canceled when the platform did not cancel it.
-- The expiry sweep finds the payments still waiting by status.

-- +goose Up
ALTER TABLE payments ADD COLUMN approval jsonb, ADD COLUMN cancel_reason text;
CREATE INDEX payments_awaiting_approval ON payments (created_at) WHERE status = 'requires_approval';

-- +goose Down
DROP INDEX payments_awaiting_approval;
ALTER TABLE payments DROP COLUMN approval, DROP COLUMN cancel_reason;
