-- The live ACH connector's two periodic reads, without scanning payments:
-- the pending live ACH payments a cut takes (a few times a day) and the
-- submitted ones whose entry has settled (every minute). Both indexes are
-- partial: a sandbox payment, or one on another rail, never enters them.

-- +goose Up
CREATE INDEX payments_live_ach_pending ON payments (created_at, id)
    WHERE environment = 'live' AND status = 'pending' AND rail IN ('ach_standard', 'ach_same_day');
CREATE INDEX payments_live_ach_settling ON payments (expected_settlement_at, id)
    WHERE status = 'submitted' AND ach_file_id IS NOT NULL;

-- +goose Down
DROP INDEX payments_live_ach_settling;
DROP INDEX payments_live_ach_pending;
