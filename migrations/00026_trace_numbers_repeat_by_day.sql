-- A trace number's 7-digit sequence starts again every ACH day (API.md
-- §10), so two live ACH payments of different days share trace numbers:
-- the unique index of 00021 refused the second day's cut. A return names
-- its entry by trace number, account number and amount; this index finds
-- the candidates.

-- +goose Up
DROP INDEX payments_by_trace_number;
CREATE INDEX payments_by_trace_number ON payments (trace_number) WHERE trace_number IS NOT NULL;

-- +goose Down
DROP INDEX payments_by_trace_number;
CREATE UNIQUE INDEX payments_by_trace_number ON payments (trace_number) WHERE trace_number IS NOT NULL;
