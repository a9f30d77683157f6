-- Where a webhook's time goes, stage by stage, in a database kept by
-- `go run ./bench -only payments,webhook -keep-database`, on a server with
-- track_commit_timestamp = on (a restart to turn it on; turn it off after):
--   psql -d <kept database> -f bench/webhook_stages.sql
-- Per delivery (p50 / p99 in ms): the event's created_at → its transaction's
-- commit (a), → its public event's commit (p), → the fan-out's insert
-- transaction (d), → the first attempt (s), and created_at → the first
-- attempt's end (t).
WITH d AS (
  SELECT d.event_type, d.committed_at AS t0,
         pg_xact_commit_timestamp(e.xmin) AS t1,
         pg_xact_commit_timestamp(p.xmin) AS t2,
         d.created_at AS t3,
         (SELECT min(attempted_at) FROM webhook_attempts a WHERE a.delivery_id = d.id) AS t4,
         (SELECT min(attempted_at + duration_ms * interval '1 ms') FROM webhook_attempts a WHERE a.delivery_id = d.id) AS t5
  FROM webhook_deliveries d JOIN events e ON e.event_id = d.event_id JOIN public_events p ON p.id = d.event_id
), s AS (
  SELECT event_type,
    extract(epoch FROM t1 - t0)*1000 AS append_to_commit,
    extract(epoch FROM t2 - t1)*1000 AS commit_to_public,
    extract(epoch FROM t3 - t2)*1000 AS public_to_delivery,
    extract(epoch FROM t4 - t3)*1000 AS delivery_to_attempt,
    extract(epoch FROM t5 - t0)*1000 AS total
  FROM d WHERE t4 IS NOT NULL
)
SELECT event_type, count(*),
  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY append_to_commit)::numeric,1) a50,
  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY append_to_commit)::numeric,1) a99,
  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY commit_to_public)::numeric,1) p50,
  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY commit_to_public)::numeric,1) p99,
  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY public_to_delivery)::numeric,1) d50,
  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY public_to_delivery)::numeric,1) d99,
  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY delivery_to_attempt)::numeric,1) s50,
  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY delivery_to_attempt)::numeric,1) s99,
  round(percentile_cont(0.5) WITHIN GROUP (ORDER BY total)::numeric,1) t50,
  round(percentile_cont(0.99) WITHIN GROUP (ORDER BY total)::numeric,1) t99
FROM s GROUP BY ROLLUP(event_type);
