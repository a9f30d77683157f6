-- Live ACH credits we cannot apply (API.md §10: an unknown account number
-- is returned R03, a closed account R02) are owed back to their
-- originator in our next outbound file. A projection of the log
-- (ach.inbound_file_applied owes them, ach.file_created pays them),
-- rebuilt with ach_files; the cut reads the unpaid ones from its partial
-- index.

-- +goose Up
CREATE TABLE ach_returns (
    id             text PRIMARY KEY,
    inbound_sha256 text NOT NULL,        -- the bank's file the credit came in
    original_trace text NOT NULL,
    code           text NOT NULL,
    amount         bigint NOT NULL,
    data           jsonb NOT NULL,       -- the ach.ReturnOwed, as the cut needs it
    created_at     timestamptz NOT NULL,
    ach_file_id    text,                 -- null: owed, in no file yet
    trace_number   text
);
CREATE INDEX ach_returns_owed ON ach_returns (created_at, id) WHERE ach_file_id IS NULL;

-- +goose Down
DROP TABLE ach_returns;
