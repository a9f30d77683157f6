-- Book transfers (API.md §12): money moved at once between two virtual
-- accounts of one platform and environment. Written inline by the
-- accounts projection; listed newest first, by platform and environment,
-- optionally by either account.

-- +goose Up
CREATE TABLE book_transfers (
    id                      text PRIMARY KEY,
    platform_id             text NOT NULL,
    environment             text NOT NULL,
    from_virtual_account_id text NOT NULL,
    to_virtual_account_id   text NOT NULL,
    amount                  bigint NOT NULL,
    description             text NOT NULL,
    metadata                jsonb NOT NULL,
    idempotency_key         text NOT NULL,
    journal_entry_id        text NOT NULL,
    created_at              timestamptz NOT NULL
);
CREATE INDEX book_transfers_by_platform ON book_transfers (platform_id, environment, id DESC);
CREATE INDEX book_transfers_by_from ON book_transfers (from_virtual_account_id, id DESC);
CREATE INDEX book_transfers_by_to ON book_transfers (to_virtual_account_id, id DESC);

-- +goose Down
DROP TABLE book_transfers;
