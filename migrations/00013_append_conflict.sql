-- A pipelined append (eventstore.QueueAppend) must fail, not return zero
-- rows, when its stream moved: PostgreSQL then skips the rest of the
-- pipeline, the inline projections' writes and COMMIT among them, and the
-- command's runner rolls back and retries. Plain SQL cannot raise, so the
-- append statement calls this when it inserted nothing. SQLSTATE TR409 is
-- ours (eventstore.Retryable knows it); VOLATILE so that it only runs in
-- the CASE branch that needs it.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION stream_version_conflict(stream text, expected bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'stream % is not at version %', stream, expected
        USING ERRCODE = 'TR409';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION stream_version_conflict(text, bigint);
