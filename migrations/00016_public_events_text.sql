-- A public event's data is stored as the text the projector wrote, in the
-- form PostgreSQL prints jsonb (keys by length then bytes, ", " and ": "
-- between items), no longer as jsonb: the server parsed ~700 bytes of JSON
-- per public event, a fifth of the projections subscriber backend's work in
-- a replay. The rows written as jsonb print exactly that text, so the
-- conversion keeps every row equal to what a replay writes now, and every
-- reader sees the bytes it saw.

-- +goose Up
ALTER TABLE public_events ALTER COLUMN data TYPE text USING data::text;

-- +goose Down
ALTER TABLE public_events ALTER COLUMN data TYPE jsonb USING data::jsonb;
