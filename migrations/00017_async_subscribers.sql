-- The asynchronous projections run as two subscribers, each with its own
-- checkpoint and PostgreSQL backend: "ledger" (journal entries, ledger
-- entries, account transactions) and "public_events". One subscriber
-- wrote both in one transaction per batch, on one backend, and a replay
-- was bound by that backend's core. Both start where it stood.
--
-- A process of the previous release on the migrated database finds no
-- "projections" checkpoint, starts one from the log's beginning and fails
-- every batch on the rows' unique keys (rolled back: it writes nothing, and
-- its read-your-writes waits time out): replace every process before or
-- right after migrating.

-- +goose Up
UPDATE subscription_checkpoints SET name = 'ledger' WHERE name = 'projections';
INSERT INTO subscription_checkpoints (name, transaction_id, global_position, updated_at)
SELECT 'public_events', transaction_id, global_position, updated_at FROM subscription_checkpoints WHERE name = 'ledger'
ON CONFLICT (name) DO NOTHING;

-- +goose Down
-- One subscriber again, from where the slower of the two stood. Migrate
-- down with both at the same position (the service stopped once they
-- caught up): otherwise the merged subscriber fails every batch on the
-- rows the faster one wrote, until `treasury projections rebuild` sets
-- its checkpoint.
UPDATE subscription_checkpoints l SET transaction_id = p.transaction_id, global_position = p.global_position
  FROM subscription_checkpoints p
 WHERE l.name = 'ledger' AND p.name = 'public_events'
   AND (p.transaction_id, p.global_position) < (l.transaction_id, l.global_position);
DELETE FROM subscription_checkpoints WHERE name = 'public_events';
UPDATE subscription_checkpoints SET name = 'projections' WHERE name = 'ledger';
