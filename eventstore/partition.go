package eventstore

import (
	"fmt"
	"strconv"
	"strings"
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
