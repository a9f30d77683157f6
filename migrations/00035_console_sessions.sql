-- Console sessions (issue #19): a key exchanged at /console/sign-in for a
-- session cookie. Only hashes are kept: the cookie's token (id_hash), and
-- the platform key's secret hash, looked up again on every request so that
-- a revoked or expired key ends its sessions (operator sessions keep the
-- operator key's hash: a changed TREASURY_OPERATOR_KEY ends them). The
-- CSRF token is compared with every form's. Expired rows are deleted at
-- sign-in.

-- +goose Up
CREATE TABLE console_sessions (
    id_hash     text PRIMARY KEY,
    csrf_token  text NOT NULL,
    operator    boolean NOT NULL,
    key_hash    text NOT NULL,
    key_id      text,
    platform_id text,
    environment text,
    created_at  timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
-- The operator's KYB review queue, every platform's, oldest first.
CREATE INDEX kyb_verifications_in_review ON kyb_verifications (id) WHERE status = 'pending_review';

-- +goose Down
DROP INDEX kyb_verifications_in_review;
DROP TABLE console_sessions;
