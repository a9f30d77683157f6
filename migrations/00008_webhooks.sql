-- Webhook endpoints (inline projection of their streams), their secrets
-- (kept out of the log: an auditor replaying it must not learn them), and
-- the deliveries with their attempts (operational state of the sender).

-- +goose Up
CREATE TABLE webhook_endpoints (
    id           text PRIMARY KEY,
    platform_id  text NOT NULL,
    environment  text NOT NULL,
    url          text NOT NULL,
    events       text[] NOT NULL,
    description  text NOT NULL,
    status       text NOT NULL,
    retry_policy jsonb NOT NULL,
    deleted      boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX webhook_endpoints_by_platform ON webhook_endpoints (platform_id, environment, id);

CREATE TABLE webhook_secrets (
    endpoint_id text NOT NULL,
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz,          -- null: the current secret
    PRIMARY KEY (endpoint_id, created_at)
);

CREATE TABLE webhook_deliveries (
    id              text PRIMARY KEY,
    endpoint_id     text NOT NULL,
    event_id        text NOT NULL,
    event_type      text NOT NULL,
    payload         jsonb NOT NULL,
    status          text NOT NULL,     -- pending | succeeded | failed
    attempt_count   integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz,
    committed_at    timestamptz NOT NULL,  -- when the state change committed (latency is measured from it)
    created_at      timestamptz NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_by_endpoint ON webhook_deliveries (endpoint_id, id);

CREATE TABLE webhook_attempts (
    delivery_id   text NOT NULL,
    attempted_at  timestamptz NOT NULL,
    status_code   integer,
    duration_ms   integer NOT NULL,
    error         text,
    response_body text,
    PRIMARY KEY (delivery_id, attempted_at)
);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_secrets;
DROP TABLE webhook_endpoints;
