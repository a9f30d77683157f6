-- The event store: the system of record. Everything else is derived from it.

-- +goose Up
CREATE TABLE streams (
    stream_id   text PRIMARY KEY,
    stream_type text NOT NULL,
    platform_id text,
    environment text,
    version     bigint NOT NULL CHECK (version > 0)
);

CREATE TABLE events (
    global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The writer's transaction id: readers order by it and only read below
    -- the oldest running transaction, so a late commit is never skipped.
    transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
    event_id        text NOT NULL UNIQUE,
    stream_id       text NOT NULL,
    stream_version  bigint NOT NULL,
    event_type      text NOT NULL,
    schema_version  integer NOT NULL DEFAULT 1,
    platform_id     text,
    environment     text,
    data            jsonb NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{}',
    recorded_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (stream_id, stream_version)
);
CREATE INDEX events_commit_order ON events (transaction_id, global_position);

-- +goose StatementBegin
CREATE FUNCTION events_are_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'events are immutable: % on events is refused', TG_OP
        USING ERRCODE = 'restrict_violation';
END
$$;
-- +goose StatementEnd

CREATE TRIGGER events_no_update_or_delete BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_are_immutable();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_are_immutable();

-- A subscriber's position in the log, written in the same transaction as
-- the subscriber's own work.
CREATE TABLE subscription_checkpoints (
    name            text PRIMARY KEY,
    transaction_id  xid8 NOT NULL DEFAULT '0',
    global_position bigint NOT NULL DEFAULT 0,
    updated_at      timestamptz NOT NULL DEFAULT now()
);

-- Idempotency keys are written in the command's own transaction.
CREATE TABLE idempotency_keys (
    scope        text NOT NULL,          -- platform id, or 'operator'
    environment  text NOT NULL,
    key          text NOT NULL,
    operation    text NOT NULL,
    request_hash text NOT NULL,
    resource_id  text NOT NULL,
    status_code  integer NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (scope, environment, key)
);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE subscription_checkpoints;
DROP TABLE events;
DROP FUNCTION events_are_immutable();
DROP TABLE streams;
