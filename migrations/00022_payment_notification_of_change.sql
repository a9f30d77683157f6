-- A live ACH payment keeps the latest notification of change the receiving
-- bank sent for it (API.md §10): {code, corrected_data}.

-- +goose Up
ALTER TABLE payments ADD COLUMN notification_of_change jsonb;

-- +goose Down
ALTER TABLE payments DROP COLUMN notification_of_change;
