-- Payments: an inline projection of the payment streams (GET /payments/:id
-- is the polling path, and the daily limit is decided on it).

-- +goose Up
CREATE TABLE payments (
    id                     text PRIMARY KEY,
    platform_id            text NOT NULL,
    environment            text NOT NULL,
    virtual_account_id     text NOT NULL,
    amount                 bigint NOT NULL,
    fee                    bigint NOT NULL,
    rail                   text NOT NULL,
    destination            jsonb NOT NULL,
    status                 text NOT NULL,
    idempotency_key        text NOT NULL,
    description            text NOT NULL,
    metadata               jsonb NOT NULL DEFAULT '{}',
    failure                jsonb,
    journal_entry_id       text NOT NULL,
    expected_settlement_at timestamptz NOT NULL,
    submitted_at           timestamptz,
    completed_at           timestamptz,
    failed_at              timestamptz,
    canceled_at            timestamptz,
    created_at             timestamptz NOT NULL,
    updated_at             timestamptz NOT NULL
);
CREATE INDEX payments_by_platform ON payments (platform_id, environment, id);
CREATE INDEX payments_by_account ON payments (virtual_account_id, created_at);

-- +goose Down
DROP TABLE payments;
