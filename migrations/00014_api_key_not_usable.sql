-- A payment checks its cached API key in its first, pipelined round trip
-- (app's keyUsableSQL). A key found revoked or expired must stop the
-- pipeline there, before the idempotency claim and the balance lock that
-- follow it, so the check raises (SQLSTATE TR401, ours: app answers 401)
-- instead of returning no row.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION api_key_not_usable(key_id text) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'API key % is revoked or expired', key_id
        USING ERRCODE = 'TR401';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION api_key_not_usable(text);
