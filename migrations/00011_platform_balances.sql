-- The locked balance rows of the platform-level accounts that only manual
-- entries and fundings touch (platform_operating, platform_fees,
-- operator_funding): commands lock them to bound every balance they
-- produce and, in live, to keep them from going below zero. posted is in
-- the account's normal direction. The hot accounts (rail clearing, service
-- fee revenue) get no row: payments never queue on a lock for them.

-- +goose Up
CREATE TABLE platform_balances (
    ledger_account_id text PRIMARY KEY,
    platform_id       text NOT NULL,
    environment       text NOT NULL,
    code              text NOT NULL,
    normal_balance    text NOT NULL,
    posted            bigint NOT NULL DEFAULT 0
);

-- The one place that computes a lockable account's balance when it has no
-- row: this backfill, and commands that find a row missing (a chart opened
-- by a replica older than this table). It reads the posted lines from the
-- log, never ledger_entries, which is projected asynchronously and may lag
-- the commits. ids NULL means every lockable account. The sum is clamped
-- into bigint: old data past int64 must not fail the migration (such an
-- account then answers limit_exceeded until reversed). Returns the number
-- of rows inserted; a row another transaction inserts first is kept.
-- +goose StatementBegin
CREATE FUNCTION insert_platform_balances_from_log(ids text[]) RETURNS bigint LANGUAGE sql AS $$
WITH missing AS (
    SELECT la.id, la.platform_id, la.environment, la.code, la.normal_balance
    FROM ledger_accounts la
    WHERE la.virtual_account_id IS NULL
      AND la.code IN ('platform_operating', 'platform_fees', 'operator_funding')
      AND (ids IS NULL OR la.id = ANY(ids))
      AND NOT EXISTS (SELECT 1 FROM platform_balances p WHERE p.ledger_account_id = la.id)
), credits AS (
    SELECT l.line->>'ledger_account_id' AS id,
           sum(CASE WHEN l.line->>'direction' = 'credit' THEN (l.line->>'amount')::numeric
                    ELSE -(l.line->>'amount')::numeric END) AS net
    FROM events e CROSS JOIN LATERAL jsonb_array_elements(e.data->'lines') AS l(line)
    WHERE ((e.event_type = 'ledger.journal_entry.recorded' AND e.data->>'status' = 'posted')
           OR e.event_type = 'ledger.journal_entry.posted')
      AND (e.platform_id, e.environment) IN (SELECT platform_id, environment FROM missing)
      AND coalesce(l.line->>'virtual_account_id', '') = ''
      AND l.line->>'ledger_account_id' IN (SELECT id FROM missing)
    GROUP BY 1
), inserted AS (
    INSERT INTO platform_balances (ledger_account_id, platform_id, environment, code, normal_balance, posted)
    SELECT m.id, m.platform_id, m.environment, m.code, m.normal_balance,
           least(greatest(CASE WHEN m.normal_balance = 'credit' THEN coalesce(c.net, 0) ELSE -coalesce(c.net, 0) END,
                          -9223372036854775808), 9223372036854775807)::bigint
    FROM missing m LEFT JOIN credits c ON c.id = m.id
    ON CONFLICT (ledger_account_id) DO NOTHING
    RETURNING 1
)
SELECT count(*) FROM inserted
$$;
-- +goose StatementEnd

-- Charts opened before: their balances so far.
SELECT insert_platform_balances_from_log(NULL);

-- +goose Down
DROP FUNCTION insert_platform_balances_from_log(text[]);
DROP TABLE platform_balances;
