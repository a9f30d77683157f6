-- Snapshots of aggregates whose streams grow without bound (the
-- platform's settings and terms). A cache, not a source of truth: the
-- log stays complete, a command reads the snapshot of its code's schema
-- and the events after it, and a snapshot of another schema is ignored
-- (and replaced at the next write). Rebuilds and audits never read it.

-- +goose Up
CREATE TABLE stream_snapshots (
    stream_id      text PRIMARY KEY,
    version        bigint NOT NULL,
    schema_version int NOT NULL,
    state          jsonb NOT NULL,
    taken_at       timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE stream_snapshots;
