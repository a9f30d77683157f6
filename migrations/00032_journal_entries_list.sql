-- GET /ledger/journal-entries (API.md §12): a platform's journal entries,
-- newest first (seq), and those of one source (a payment's hold and its
-- return's reversal). Without the first index the list walks
-- journal_entries_seq backwards through every platform's entries: on 40,000
-- entries a platform with 3 of them read them all (a sequential scan, 7 ms),
-- as did every metadata or time filter; with it, its own rows only (0.2 ms).
-- source_id is unique to its object, so the second index needs no platform:
-- a look-up by source read the whole table (8 ms), now one row (0.05 ms).
-- Neither indexed column ever changes, so the projector's updates of status
-- and reversed_by stay HOT. virtual_account_id is served by
-- ledger_entries_by_virtual_account (00007).

-- +goose Up
CREATE INDEX journal_entries_by_platform ON journal_entries (platform_id, environment, seq);
CREATE INDEX journal_entries_by_source ON journal_entries (source_id);

-- +goose Down
DROP INDEX journal_entries_by_source;
DROP INDEX journal_entries_by_platform;
