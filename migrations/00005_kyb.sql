-- KYB: verifications and the status of each business, inline projections
-- of the business streams (payments decide on the status).

-- +goose Up
CREATE TABLE kyb_verifications (
    id                 text PRIMARY KEY,
    platform_id        text NOT NULL,
    environment        text NOT NULL,
    entity_ref         text NOT NULL,
    virtual_account_id text NOT NULL,
    status             text NOT NULL,
    business           jsonb NOT NULL,   -- masked: EIN's last 4 digits only
    beneficial_owners  jsonb NOT NULL,   -- masked: no SSN digits
    decision           jsonb,
    review_eta         timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE INDEX kyb_verifications_by_platform ON kyb_verifications (platform_id, environment, id);

CREATE TABLE kyb_entities (
    platform_id     text NOT NULL,
    environment     text NOT NULL,
    entity_ref      text NOT NULL,
    status          text NOT NULL,
    verification_id text NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (platform_id, environment, entity_ref)
);

-- +goose Down
DROP TABLE kyb_entities;
DROP TABLE kyb_verifications;
