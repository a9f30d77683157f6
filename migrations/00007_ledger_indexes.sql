-- Ledger entries filtered by virtual account (its transactions' ledger view).

-- +goose Up
CREATE INDEX ledger_entries_by_virtual_account ON ledger_entries (virtual_account_id, seq) WHERE virtual_account_id IS NOT NULL;

-- +goose Down
DROP INDEX ledger_entries_by_virtual_account;
