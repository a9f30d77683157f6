-- Inline projections of the platform streams: commands and authentication
-- read them in the same transaction that writes the events.

-- +goose Up
CREATE TABLE platforms (
    id                 text PRIMARY KEY,
    name               text NOT NULL,
    contact_email      text NOT NULL,
    status             text NOT NULL,
    live_enabled       boolean NOT NULL DEFAULT false,
    revenue_share_rate numeric NOT NULL DEFAULT 0,
    interest_rate      numeric NOT NULL DEFAULT 0,
    fee_schedule       jsonb NOT NULL,
    rate_limit         jsonb,
    metadata           jsonb NOT NULL DEFAULT '{}',
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);

CREATE TABLE platform_settings (
    platform_id text NOT NULL,
    environment text NOT NULL,
    settings    jsonb NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (platform_id, environment)
);

CREATE TABLE api_keys (
    id           text PRIMARY KEY,
    platform_id  text NOT NULL,
    environment  text NOT NULL,
    name         text NOT NULL,
    prefix       text NOT NULL,
    secret_hash  text NOT NULL UNIQUE,   -- hex SHA-256; the secret itself is never stored
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    replaced_by  text
);
CREATE INDEX api_keys_by_platform ON api_keys (platform_id, environment, id);

-- Operational, not derived from the log: when a key was last seen.
CREATE TABLE api_key_usage (
    key_id       text PRIMARY KEY,
    last_used_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE api_key_usage;
DROP TABLE api_keys;
DROP TABLE platform_settings;
DROP TABLE platforms;
