package eventstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Partition is one of Count parts of the log, split by stream: a reader
// whose handling does not depend on the order across streams (the
// sandbox's scheduler, the KYB decider) runs as Count readers, each with
// its own checkpoint and lease, which several replicas read in parallel.
// Every event of a stream is in the same part, so a stream's events keep
// their order. The zero Partition (or Count 1) is the whole log.
type Partition struct {
	Index, Count int
}

// Whole reports whether p is the whole log.
func (p Partition) Whole() bool { return p.Count <= 1 }

// Name is the checkpoint (and lease) name of this part of the reader
// named base: base itself for the whole log, else base#index/count.
func (p Partition) Name(base string) string {
	if p.Whole() {
		return base
	}
	return base + "#" + strconv.Itoa(p.Index) + "/" + strconv.Itoa(p.Count)
}

// Partitions are the count parts of the log (one, the whole log, when
// count is 1 or less).
func Partitions(count int) []Partition {
	if count <= 1 {
		return []Partition{{}}
	}
	parts := make([]Partition, count)
	for i := range parts {
		parts[i] = Partition{Index: i, Count: count}
	}
	return parts
}

// PartitionNames are the checkpoint names of base's count parts.
func PartitionNames(base string, count int) []string {
	var names []string
	for _, p := range Partitions(count) {
		names = append(names, p.Name(base))
	}
	return names
}

// BaseName is the reader a checkpoint name belongs to (the name without
// its partition).
func BaseName(name string) string {
	base, _, _ := strings.Cut(name, "#")
	return base
}

// PartitionSQL is the condition that a row whose key (a stream id, a
// platform id: text) is the SQL expression key falls in p; "" for the
// whole log. PostgreSQL's hashtext is stable across servers of a major
// version, and every replica computes it in the same database.
func (p Partition) SQL(key string) string {
	if p.Whole() {
		return ""
	}
	return fmt.Sprintf("mod(hashtext(%s)::bigint + 2147483648, %d) = %d", key, p.Count, p.Index)
}

// Filter narrows what a subscription reads: events of the given types
// only (all if none), and of its partition only. What it skips never
// leaves the database; the checkpoint still moves past it (see
// readFiltered).
type Filter struct {
	Types     []string
	Partition Partition
}

// none reports whether the filter lets every event through.
func (f Filter) none() bool { return len(f.Types) == 0 && f.Partition.Whole() }

// where is the filter's SQL condition, types taken from parameter $n.
func (f Filter) where(n int) string {
	var conds []string
	if len(f.Types) > 0 {
		conds = append(conds, "event_type = ANY($"+strconv.Itoa(n)+")")
	}
	if c := f.Partition.SQL("stream_id"); c != "" {
		conds = append(conds, c)
	}
	if len(conds) == 0 {
		return ""
	}
	return " AND " + strings.Join(conds, " AND ")
}

// alignSQL makes the checkpoint $1 of a part of the reader $2 split in $3
// parts, or moves it forward, to where the last other split of the reader
// that ran after it stood: the oldest checkpoint of that split, which had
// handled every event before it. A split counts only when all its parts
// have checkpoints (one whose parts were not all made yet may not have
// handled the missing parts' events); the reader whole is the split of 1.
// With none, a new checkpoint starts at the start of the log. So a reader
// split into parts, or into another number of them, or back to an earlier
// number (whose old checkpoints stand where they stopped), neither skips an
// event nor reads again more than the oldest part of the split before it
// had left: readers are split only where handling an event twice changes
// nothing. It returns the checkpoint when it made or moved it, no row
// otherwise.
const alignSQL = `WITH sibling AS (
        SELECT name, transaction_id, global_position, updated_at,
            coalesce(nullif(split_part(split_part(name, '#', 2), '/', 2), ''), '1') AS split
        FROM subscription_checkpoints WHERE split_part(name, '#', 1) = $2),
    own AS (SELECT updated_at FROM sibling WHERE name = $1),
    latest AS (SELECT split FROM sibling WHERE split <> $3 GROUP BY split
        HAVING count(*) = max(split::int) AND max(updated_at) > coalesce((SELECT updated_at FROM own), '-infinity')
        ORDER BY max(updated_at) DESC LIMIT 1),
    start AS (SELECT transaction_id, global_position FROM sibling WHERE split = (SELECT split FROM latest)
        ORDER BY transaction_id, global_position LIMIT 1)
    INSERT INTO subscription_checkpoints AS c (name, transaction_id, global_position, updated_at)
    SELECT $1, coalesce(s.transaction_id, '0'), coalesce(s.global_position, 0), clock_timestamp()
    FROM (SELECT) one LEFT JOIN start s ON true
    ON CONFLICT (name) DO UPDATE SET transaction_id = excluded.transaction_id, global_position = excluded.global_position,
        updated_at = clock_timestamp()
        WHERE EXISTS (SELECT FROM start) AND (c.transaction_id, c.global_position) < (excluded.transaction_id, excluded.global_position)
    RETURNING transaction_id::text::bigint, global_position`

// StartCheckpoint makes the named checkpoint of a reader's part if it has
// none (see alignSQL): for a reader that keeps its own position (the
// webhook feeds and the NATS forwarder, by public_events seq).
func StartCheckpoint(ctx context.Context, db DB, name string, part Partition) error {
	var txid, pos int64
	err := db.QueryRow(ctx, alignSQL, name, BaseName(name), strconv.Itoa(max(part.Count, 1))).Scan(&txid, &pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	return err
}

// AlignSplit brings the checkpoints of base's parts forward to where the
// reader's last other split stood, if that split ran after them (see
// alignSQL): called before the parts run, after TREASURY_READER_PARTITIONS
// changed. A step under way elsewhere meanwhile fails its checkpoint's
// compare-and-set and reads again from the new position.
func AlignSplit(ctx context.Context, db DB, base string, parts []Partition) error {
	for _, p := range parts {
		if err := StartCheckpoint(ctx, db, p.Name(base), p); err != nil {
			return fmt.Errorf("align %s: %w", p.Name(base), err)
		}
	}
	return nil
}
