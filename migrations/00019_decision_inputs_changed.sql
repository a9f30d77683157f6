-- A payment decides in Go on what its first round trip read without any
-- lock, then, in the round trip that commits, locks the account's balance
-- row and checks that what the decision relied on still holds (app's
-- CreatePayment). When it does not, the check must fail, not return a
-- row, so that PostgreSQL skips the appends and the COMMIT queued after
-- it; the command then reads and decides again. SQLSTATE TR428 is ours
-- (eventstore.InputsChangedState).

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION decision_inputs_changed(subject text) RETURNS int
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'what the decision on % read changed before it could commit', subject
        USING ERRCODE = 'TR428';
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION decision_inputs_changed(text);
