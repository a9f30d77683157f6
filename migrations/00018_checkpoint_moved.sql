-- A subscription step moves its checkpoint with a compare-and-set in the
-- same pipeline as its COMMIT (eventstore.Subscription.Step): when the
-- checkpoint is no longer where the step read it (another owner, a
-- rebuild, a process of an earlier release that locked the row instead),
-- the statement must fail, not update nothing, so that PostgreSQL skips
-- the COMMIT and the step's writes roll back. SQLSTATE TR412 is ours
-- (eventstore.CheckpointMovedState).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION checkpoint_moved(subscription text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'the checkpoint of subscription % moved during its step', subscription
        USING ERRCODE = 'TR412';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION checkpoint_moved(text);
