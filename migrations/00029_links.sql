-- Links (API.md §12): a ledger entry carries its journal entry's source,
-- and a payment its journal_entry_id. ledger_entries gains the source, read
-- from each journal entry's recorded event in the log (not from
-- journal_entries: the ledger subscriber may be behind). The public events
-- already written show the resource as GET now shows it at that event, so
-- a replay writes the same bytes: a payment.* event's object gains
-- journal_entry_id (from the payments table, written inline with the
-- payment), a ledger.entry.created event's object its source (from the
-- log). jsonb prints keys as the projector writes them (see 00016).

-- +goose Up
ALTER TABLE ledger_entries ADD COLUMN source_type text, ADD COLUMN source_id text;
UPDATE ledger_entries le SET source_type = e.data #>> '{source,type}', source_id = e.data #>> '{source,id}'
    FROM events e
    WHERE e.stream_id = 'journal_entry-' || le.journal_entry_id AND e.event_type = 'ledger.journal_entry.recorded';
ALTER TABLE ledger_entries ALTER COLUMN source_type SET NOT NULL, ALTER COLUMN source_id SET NOT NULL;

UPDATE public_events pe
    SET data = jsonb_set(pe.data::jsonb, '{object,journal_entry_id}', coalesce(to_jsonb(nullif(p.journal_entry_id, '')), 'null'))::text
    FROM payments p
    WHERE pe.type LIKE 'payment.%' AND p.id = pe.data::jsonb #>> '{object,id}';
UPDATE public_events pe
    SET data = jsonb_set(pe.data::jsonb, '{object,source}',
        jsonb_build_object('type', e.data #>> '{source,type}', 'id', e.data #>> '{source,id}'))::text
    FROM events e
    WHERE pe.type = 'ledger.entry.created'
      AND e.stream_id = 'journal_entry-' || (pe.data::jsonb #>> '{object,journal_entry_id}')
      AND e.event_type = 'ledger.journal_entry.recorded';

-- +goose Down
UPDATE public_events SET data = (data::jsonb #- '{object,source}')::text WHERE type = 'ledger.entry.created';
UPDATE public_events SET data = (data::jsonb #- '{object,journal_entry_id}')::text WHERE type LIKE 'payment.%';
ALTER TABLE ledger_entries DROP COLUMN source_type, DROP COLUMN source_id;
