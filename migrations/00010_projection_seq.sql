-- seq orders the rows of the asynchronous projections (lists paginate on
-- it; the webhook feed follows public_events by it). Identity sequences
-- leave gaps when a subscriber's batch rolls back, and a replay of the log
-- numbers without them, so a rebuild or an audit disagreed with the live
-- tables after any crash. The projector now numbers rows itself, max + 1
-- in its own transaction (it is the only writer), so the log alone
-- decides every seq and a rollback leaves no gap.

-- Rows already there are renumbered without the gaps (their order, commit
-- order, is kept), and the webhook fan-out's position with them.

-- +goose Up
UPDATE subscription_checkpoints
   SET global_position = (SELECT count(*) FROM public_events WHERE seq <= subscription_checkpoints.global_position)
 WHERE name = 'webhook_fanout';
ALTER TABLE journal_entries ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE ledger_entries ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE account_transactions ALTER COLUMN seq DROP IDENTITY;
ALTER TABLE public_events ALTER COLUMN seq DROP IDENTITY;
UPDATE journal_entries t SET seq = n.rn FROM (SELECT id, row_number() OVER (ORDER BY seq) AS rn FROM journal_entries) n WHERE t.id = n.id AND t.seq <> n.rn;
UPDATE ledger_entries t SET seq = n.rn FROM (SELECT id, row_number() OVER (ORDER BY seq) AS rn FROM ledger_entries) n WHERE t.id = n.id AND t.seq <> n.rn;
UPDATE account_transactions t SET seq = n.rn FROM (SELECT id, row_number() OVER (ORDER BY seq) AS rn FROM account_transactions) n WHERE t.id = n.id AND t.seq <> n.rn;
UPDATE public_events t SET seq = n.rn FROM (SELECT id, row_number() OVER (ORDER BY seq) AS rn FROM public_events) n WHERE t.id = n.id AND t.seq <> n.rn;
CREATE UNIQUE INDEX journal_entries_seq ON journal_entries (seq);
CREATE UNIQUE INDEX ledger_entries_seq ON ledger_entries (seq);
CREATE UNIQUE INDEX account_transactions_seq ON account_transactions (seq);
CREATE UNIQUE INDEX public_events_seq ON public_events (seq);

-- +goose Down
DROP INDEX journal_entries_seq, ledger_entries_seq, account_transactions_seq, public_events_seq;
ALTER TABLE journal_entries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
ALTER TABLE ledger_entries ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
ALTER TABLE account_transactions ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
ALTER TABLE public_events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
SELECT setval(pg_get_serial_sequence('journal_entries', 'seq'), coalesce(max(seq), 0) + 1, false) FROM journal_entries;
SELECT setval(pg_get_serial_sequence('ledger_entries', 'seq'), coalesce(max(seq), 0) + 1, false) FROM ledger_entries;
SELECT setval(pg_get_serial_sequence('account_transactions', 'seq'), coalesce(max(seq), 0) + 1, false) FROM account_transactions;
SELECT setval(pg_get_serial_sequence('public_events', 'seq'), coalesce(max(seq), 0) + 1, false) FROM public_events;
