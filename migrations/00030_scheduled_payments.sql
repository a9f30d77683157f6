-- Scheduled payments (API.md §12): a payment may wait, scheduled and
-- holding nothing, for its date (scheduled_for, Eastern); it is released
-- at release_at (06:00 ET that day), and released_at records when. The
-- clock finds the due ones by status and release_at.
-- A scheduled payment has no journal entry until it is released.

-- +goose Up
ALTER TABLE payments ADD COLUMN scheduled_for date, ADD COLUMN release_at timestamptz, ADD COLUMN released_at timestamptz;
CREATE INDEX payments_scheduled ON payments (release_at) WHERE status = 'scheduled';
-- The daily limit counts a released payment on the day of its release.
CREATE INDEX payments_released_by_account ON payments (virtual_account_id, released_at) WHERE released_at IS NOT NULL;

-- +goose Down
DROP INDEX payments_released_by_account;
DROP INDEX payments_scheduled;
ALTER TABLE payments DROP COLUMN scheduled_for, DROP COLUMN release_at, DROP COLUMN released_at;
