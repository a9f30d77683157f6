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

-- Charts opened before: their balances so far, from the ledger entries.
INSERT INTO platform_balances (ledger_account_id, platform_id, environment, code, normal_balance, posted)
SELECT la.id, la.platform_id, la.environment, la.code, la.normal_balance,
       coalesce(sum(CASE WHEN e.direction = la.normal_balance THEN e.amount ELSE -e.amount END)
                FILTER (WHERE e.status = 'posted'), 0)::bigint
FROM ledger_accounts la LEFT JOIN ledger_entries e ON e.ledger_account_id = la.id
WHERE la.virtual_account_id IS NULL AND la.code IN ('platform_operating', 'platform_fees', 'operator_funding')
GROUP BY la.id;

-- +goose Down
DROP TABLE platform_balances;
