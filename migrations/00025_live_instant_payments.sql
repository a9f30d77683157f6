-- The instant-payments connector reads the live rtp and fednow payments in
-- flight every 250 ms: a partial index keeps that read off the rest of
-- payments (sandbox, ACH, settled), which it would otherwise scan.

-- +goose Up
CREATE INDEX payments_live_instant ON payments (created_at, id)
    WHERE environment = 'live' AND status IN ('pending', 'submitted') AND rail IN ('rtp', 'fednow');

-- +goose Down
DROP INDEX payments_live_instant;
