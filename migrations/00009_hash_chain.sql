-- The hash chain: every event, in commit order, gets a gapless sequence
-- number and chain_hash = SHA-256(previous chain_hash ‖ event_hash), where
-- event_hash = SHA-256 of the event's canonical bytes. Editing, deleting or
-- inserting an event breaks every link after it.

-- +goose Up
CREATE TABLE event_chain (
    seq        bigint PRIMARY KEY,
    event_id   text NOT NULL UNIQUE,
    event_hash bytea NOT NULL,
    chain_hash bytea NOT NULL
);

-- +goose Down
DROP TABLE event_chain;
