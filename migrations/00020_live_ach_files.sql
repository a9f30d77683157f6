-- Live ACH (API.md §10): a payment sent in a NACHA file carries its trace
-- number and the file's id, and the operator lists the files. Both are
-- projections of the log (payment.submitted, ach.file_created,
-- ach.file_transmitted), rebuilt with the others.

-- +goose Up
ALTER TABLE payments ADD COLUMN trace_number text, ADD COLUMN ach_file_id text;

CREATE TABLE ach_files (
    id             text PRIMARY KEY,
    day            text NOT NULL,        -- the Eastern date whose stream cut it
    name           text NOT NULL UNIQUE,
    id_modifier    text NOT NULL,
    entry_count    integer NOT NULL,
    total_credit   bigint NOT NULL,
    created_at     timestamptz NOT NULL,
    transmitted_at timestamptz           -- null: not yet known to be in the outbox
);

-- +goose Down
DROP TABLE ach_files;
ALTER TABLE payments DROP COLUMN trace_number, DROP COLUMN ach_file_id;
