-- Live prenotes (API.md §12): a live counterparty's prenote leaves in the
-- next ACH file. The cut finds the prenotes that wait for a file
-- (counterparties_live_prenotes), the settlement those whose entry
-- settled, and the bank's return names one by its trace number and
-- account number. Cleared when a new prenote is asked for.

-- +goose Up
ALTER TABLE counterparties
    ADD COLUMN prenote_ach_file_id  text,
    ADD COLUMN prenote_trace_number text,
    ADD COLUMN prenote_settles_at   timestamptz;
CREATE INDEX counterparties_live_prenotes ON counterparties (updated_at, id)
    WHERE environment = 'live' AND verification_status = 'pending' AND NOT deleted;
CREATE INDEX counterparties_prenote_trace ON counterparties (prenote_trace_number)
    WHERE prenote_trace_number IS NOT NULL;

-- +goose Down
DROP INDEX counterparties_prenote_trace;
DROP INDEX counterparties_live_prenotes;
ALTER TABLE counterparties
    DROP COLUMN prenote_ach_file_id,
    DROP COLUMN prenote_trace_number,
    DROP COLUMN prenote_settles_at;
