-- Counterparties (API.md §12): bank accounts a platform pays again and
-- again, with their prenote verification. Written inline by the
-- counterparties projection; a deleted one keeps its row (deleted), which
-- the API no longer shows. account_number is kept whole: a payment to the
-- counterparty copies it; the API shows its last four digits only.
-- payments.counterparty_id names the counterparty a payment was made to.

-- +goose Up
CREATE TABLE counterparties (
    id                  text PRIMARY KEY,
    platform_id         text NOT NULL,
    environment         text NOT NULL,
    name                text NOT NULL,
    account_number      text NOT NULL,
    routing_number      text NOT NULL,
    account_type        text NOT NULL,
    verification_status text NOT NULL,
    verification_method text,
    failure_code        text,
    metadata            jsonb NOT NULL,
    deleted             boolean NOT NULL DEFAULT false,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL
);
CREATE INDEX counterparties_by_platform ON counterparties (platform_id, environment, id DESC) WHERE NOT deleted;
ALTER TABLE payments ADD COLUMN counterparty_id text;

-- +goose Down
ALTER TABLE payments DROP COLUMN counterparty_id;
DROP TABLE counterparties;
