-- Replicas and the leases of the log's readers (issue #20). Every
-- `treasury serve` writes its heartbeat into replicas; each reader (a
-- subscription, or one partition of one) is read by the replica that holds
-- its lease, renewed every second and taken over by another replica once
-- it expires. A replica takes its fair share of the leases (their number
-- over the replicas seen alive) and gives back what it holds beyond it, so
-- the readers spread over the replicas. The leases only say who reads: a
-- reader's steps still take its advisory lock and move its checkpoint by
-- compare-and-set, so two replicas that both believe they hold one (a
-- clock or a pause) never apply an event twice.

-- +goose Up
CREATE TABLE replicas (
    id         text PRIMARY KEY,
    started_at timestamptz NOT NULL,
    seen_at    timestamptz NOT NULL
);

CREATE TABLE reader_leases (
    name       text PRIMARY KEY,
    owner      text,
    expires_at timestamptz NOT NULL DEFAULT '-infinity',
    taken_at   timestamptz,
    takeovers  bigint NOT NULL DEFAULT 0
);

-- +goose Down
DROP TABLE reader_leases;
DROP TABLE replicas;
