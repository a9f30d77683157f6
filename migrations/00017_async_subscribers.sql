-- The asynchronous projections run as two subscribers, each with its own
-- checkpoint and PostgreSQL backend: "ledger" (journal entries, ledger
-- entries, account transactions) and "public_events". One subscriber
-- wrote both in one transaction per batch, on one backend, and a replay
-- was bound by that backend's core. Both start where it stood.

-- +goose Up
UPDATE subscription_checkpoints SET name = 'ledger' WHERE name = 'projections';
INSERT INTO subscription_checkpoints (name, transaction_id, global_position, updated_at)
SELECT 'public_events', transaction_id, global_position, updated_at FROM subscription_checkpoints WHERE name = 'ledger'
ON CONFLICT (name) DO NOTHING;

-- +goose Down
-- One subscriber again, from where the slower of the two stood: migrate
-- down with the service stopped and both at the same position, or
-- the faster one's rows are replayed again.
UPDATE subscription_checkpoints l SET transaction_id = p.transaction_id, global_position = p.global_position
  FROM subscription_checkpoints p
 WHERE l.name = 'ledger' AND p.name = 'public_events'
   AND (p.transaction_id, p.global_position) < (l.transaction_id, l.global_position);
DELETE FROM subscription_checkpoints WHERE name = 'public_events';
UPDATE subscription_checkpoints SET name = 'projections' WHERE name = 'ledger';
