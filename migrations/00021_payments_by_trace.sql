-- A return or a notification of change from the bank names a live ACH
-- payment by its trace number only.

-- +goose Up
CREATE UNIQUE INDEX payments_by_trace_number ON payments (trace_number) WHERE trace_number IS NOT NULL;

-- +goose Down
DROP INDEX payments_by_trace_number;
