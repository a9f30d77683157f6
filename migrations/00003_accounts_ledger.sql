-- Virtual accounts, balances, the ledger and its views.

-- +goose Up

-- Inline projections (written by commands, which decide on them).
CREATE TABLE virtual_accounts (
    id                text PRIMARY KEY,
    platform_id       text NOT NULL,
    environment       text NOT NULL,
    entity_ref        text NOT NULL,
    type              text NOT NULL,
    status            text NOT NULL,
    account_number    text NOT NULL,
    routing_number    text NOT NULL,
    ledger_account_id text NOT NULL,
    metadata          jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL
);
-- Closed accounts keep their row, so a number is never issued twice.
CREATE UNIQUE INDEX virtual_accounts_number ON virtual_accounts (environment, account_number);
CREATE INDEX virtual_accounts_by_platform ON virtual_accounts (platform_id, environment, id);
CREATE INDEX virtual_accounts_by_entity ON virtual_accounts (platform_id, environment, entity_ref);

-- The balance row a command locks (FOR UPDATE) before moving money.
CREATE TABLE account_balances (
    virtual_account_id text PRIMARY KEY,
    posted             bigint NOT NULL DEFAULT 0,
    pending_inbound    bigint NOT NULL DEFAULT 0,
    pending_outbound   bigint NOT NULL DEFAULT 0
);

CREATE TABLE ledger_accounts (
    id                 text PRIMARY KEY,
    platform_id        text NOT NULL,
    environment        text NOT NULL,
    code               text NOT NULL,
    virtual_account_id text,
    normal_balance     text NOT NULL,
    created_at         timestamptz NOT NULL
);
CREATE UNIQUE INDEX ledger_accounts_system ON ledger_accounts (platform_id, environment, code) WHERE virtual_account_id IS NULL;

CREATE TABLE inbound_transfers (
    id                 text PRIMARY KEY,
    platform_id        text NOT NULL,
    environment        text NOT NULL,
    virtual_account_id text NOT NULL,
    amount             bigint NOT NULL,
    rail               text NOT NULL,
    originator         jsonb NOT NULL,
    description        text NOT NULL,
    status             text NOT NULL,
    journal_entry_id   text NOT NULL,
    expected_at        timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    completed_at       timestamptz
);

-- Asynchronous projections (built by the "projections" subscription).
CREATE TABLE journal_entries (
    seq          bigint GENERATED ALWAYS AS IDENTITY,
    id           text PRIMARY KEY,
    platform_id  text NOT NULL,
    environment  text NOT NULL,
    type         text NOT NULL,
    description  text NOT NULL,
    status       text NOT NULL,
    source_type  text NOT NULL,
    source_id    text NOT NULL,
    reverses     text,
    reversed_by  text,
    metadata     jsonb NOT NULL DEFAULT '{}',
    effective_at timestamptz NOT NULL,
    created_at   timestamptz NOT NULL
);

CREATE TABLE ledger_entries (
    seq                bigint GENERATED ALWAYS AS IDENTITY,
    id                 text PRIMARY KEY,
    journal_entry_id   text NOT NULL,
    platform_id        text NOT NULL,
    environment        text NOT NULL,
    ledger_account_id  text NOT NULL,
    virtual_account_id text,
    direction          text NOT NULL,
    amount             bigint NOT NULL,
    type               text NOT NULL,
    status             text NOT NULL,
    description        text NOT NULL,
    effective_at       timestamptz NOT NULL,
    created_at         timestamptz NOT NULL,
    posted_at          timestamptz,
    archived_at        timestamptz
);
CREATE INDEX ledger_entries_by_platform ON ledger_entries (platform_id, environment, seq);
CREATE INDEX ledger_entries_by_account ON ledger_entries (ledger_account_id, seq);
CREATE INDEX ledger_entries_by_journal ON ledger_entries (journal_entry_id);

CREATE TABLE account_transactions (
    seq                bigint GENERATED ALWAYS AS IDENTITY,
    id                 text PRIMARY KEY,
    platform_id        text NOT NULL,
    environment        text NOT NULL,
    virtual_account_id text NOT NULL,
    type               text NOT NULL,
    amount             bigint NOT NULL,
    status             text NOT NULL,
    description        text NOT NULL,
    source_type        text NOT NULL,
    source_id          text NOT NULL,
    created_at         timestamptz NOT NULL,
    posted_at          timestamptz
);
CREATE INDEX account_transactions_by_account ON account_transactions (virtual_account_id, seq);

-- Work the sandbox simulator has scheduled (e.g. settle an ACH transfer).
CREATE TABLE sandbox_schedule (
    id          text PRIMARY KEY,
    action      text NOT NULL,
    due_at      timestamptz NOT NULL
);
CREATE INDEX sandbox_schedule_due ON sandbox_schedule (due_at);

-- +goose Down
DROP TABLE sandbox_schedule;
DROP TABLE account_transactions;
DROP TABLE ledger_entries;
DROP TABLE journal_entries;
DROP TABLE inbound_transfers;
DROP TABLE ledger_accounts;
DROP TABLE account_balances;
DROP TABLE virtual_accounts;
