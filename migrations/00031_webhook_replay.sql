-- Webhook replays (POST /webhooks/:id/replay, API.md §12): the replays
-- themselves (an inline projection of webhook_endpoint.replay_requested,
-- so rebuild and audit cover them), and deliveries that carry the replay
-- that made them.
--
-- A replay sends an event to an endpoint again as a new delivery, so a
-- delivery is no longer unique by (endpoint, event) alone: the fan-out's
-- deliveries (replay_id null) stay unique by it, and a replay's by
-- (replay, event).
--
-- Replays drain in a lane of their own: the sender claims due deliveries
-- of the fan-out first (their own partial index) and fills the rest of a
-- round from the replay lane, so a replay of 10,000 events never sits in
-- front of a new event.

-- +goose Up
CREATE TABLE webhook_replays (
    id             text PRIMARY KEY,
    endpoint_id    text NOT NULL,
    platform_id    text NOT NULL,
    environment    text NOT NULL,
    created_after  timestamptz NOT NULL,
    created_before timestamptz NOT NULL,
    types          text[],             -- null: the endpoint's subscriptions
    replayed       integer NOT NULL,
    created_at     timestamptz NOT NULL
);

ALTER TABLE webhook_deliveries ADD COLUMN replay_id text;
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_endpoint_id_event_id_key;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (endpoint_id, event_id) WHERE replay_id IS NULL;
CREATE UNIQUE INDEX webhook_deliveries_replayed_once ON webhook_deliveries (replay_id, event_id) WHERE replay_id IS NOT NULL;

DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending' AND replay_id IS NULL;
CREATE INDEX webhook_deliveries_replay_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending' AND replay_id IS NOT NULL;

-- +goose Down
DROP INDEX webhook_deliveries_replay_due;
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
DELETE FROM webhook_deliveries WHERE replay_id IS NOT NULL;
DROP INDEX webhook_deliveries_replayed_once;
DROP INDEX webhook_deliveries_once;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_endpoint_id_event_id_key UNIQUE (endpoint_id, event_id);
ALTER TABLE webhook_deliveries DROP COLUMN replay_id;
DROP TABLE webhook_replays;
