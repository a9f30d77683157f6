-- Public events: the domain events as platforms see them (API.md §8),
-- each carrying the resource as GET returned it at that event. Built by
-- the asynchronous projections in commit order; webhooks fan out from here.

-- +goose Up
CREATE TABLE public_events (
    seq         bigint GENERATED ALWAYS AS IDENTITY,
    id          text PRIMARY KEY,
    type        text NOT NULL,
    platform_id text NOT NULL,
    environment text NOT NULL,
    created_at  timestamptz NOT NULL,
    data        jsonb NOT NULL
);
CREATE INDEX public_events_by_platform ON public_events (platform_id, environment, seq);

-- +goose Down
DROP TABLE public_events;
