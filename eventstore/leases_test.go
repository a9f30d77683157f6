package eventstore_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore"
)

// Short leases, so that the test sees several expire.
const (
	testTTL   = 600 * time.Millisecond
	testEvery = 150 * time.Millisecond
)

// replica is a lease manager the test beats itself, so that it can die
// (stop beating without giving anything back) as a killed process does.
type replica struct {
	*eventstore.Leases
	stop chan struct{}
	done chan struct{}
}

func startReplica(t *testing.T, ctx context.Context, leases *eventstore.Leases) *replica {
	t.Helper()
	r := &replica{Leases: leases, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for {
			if err := r.Beat(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("beat of %s: %v", r.ID, err)
			}
			select {
			case <-r.stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(r.Every):
			}
		}
	}()
	return r
}

// die stops the replica's heartbeat and waits for it: its leases lapse.
func (r *replica) die() {
	close(r.stop)
	<-r.done
}

func leaseNames(n int) []string {
	var names []string
	for i := range n {
		names = append(names, fmt.Sprintf("reader_%02d", i))
	}
	return names
}

// heldBy samples who holds what, and fails at once if two replicas hold
// one lease at the same instant.
func heldBy(t *testing.T, replicas []*replica, names []string) map[string]string {
	t.Helper()
	owner := map[string]string{}
	for _, r := range replicas {
		for _, name := range names {
			if !r.Holds(name) {
				continue
			}
			if o, ok := owner[name]; ok {
				t.Fatalf("lease %s held by %s and %s at once", name, o, r.ID)
			}
			owner[name] = r.ID
		}
	}
	return owner
}

// awaitSpread polls until the replicas hold every lease between them, each
// its fair share, and returns how long that took.
func awaitSpread(t *testing.T, replicas []*replica, names []string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	share := (len(names) + len(replicas) - 1) / len(replicas)
	for {
		owner := heldBy(t, replicas, names)
		count := map[string]int{}
		for _, o := range owner {
			count[o]++
		}
		fair := len(owner) == len(names)
		for _, r := range replicas {
			fair = fair && count[r.ID] >= len(names)/len(replicas) && count[r.ID] <= share
		}
		if fair {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("after %v the leases are held %v, want all %d spread over %d replicas", within, count, len(names), len(replicas))
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

func TestLeasesSpreadOverReplicasAndOutliveADeadOne(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 12)
	names := leaseNames(12)
	newReplica := func() *replica {
		l := eventstore.NewLeases(pool, names, discard)
		l.TTL, l.Every = testTTL, testEvery
		return startReplica(t, ctx, l)
	}

	// One replica takes every lease; a second and a third take their share
	// from it as they come.
	a := newReplica()
	awaitSpread(t, []*replica{a}, names, 5*time.Second)
	b := newReplica()
	awaitSpread(t, []*replica{a, b}, names, 5*time.Second)
	c := newReplica()
	awaitSpread(t, []*replica{a, b, c}, names, 5*time.Second)

	// A replica dies without giving its leases back: the others take them
	// over once they expire, within TTL and a heartbeat or two (the
	// survivors see it alive until its heartbeat is TTL old).
	lost := b.Held()
	b.die()
	took := awaitSpread(t, []*replica{a, c}, names, 5*time.Second)
	if bound := testTTL + 3*testEvery; took > bound {
		t.Errorf("the dead replica's leases %v were taken over after %v, want within %v", lost, took, bound)
	}
	var takeovers int
	if err := pool.QueryRow(ctx, `SELECT sum(takeovers) FROM reader_leases WHERE name = ANY($1)`, lost).Scan(&takeovers); err != nil {
		t.Fatal(err)
	}
	if takeovers < len(lost) {
		t.Errorf("takeovers counted %d, want at least %d (the dead replica's leases)", takeovers, len(lost))
	}

	// A replica that stops cleanly gives its leases back: the last one
	// takes them at its next heartbeat, without waiting for them to expire.
	runCtx, stop := context.WithCancel(ctx)
	d := eventstore.NewLeases(pool, names, discard)
	d.TTL, d.Every = testTTL, testEvery
	ran := make(chan struct{})
	go func() { defer close(ran); d.Run(runCtx) }()
	dr := &replica{Leases: d}
	awaitSpread(t, []*replica{a, c, dr}, names, 5*time.Second)
	gave := d.Held()
	stop()
	<-ran
	if held := d.Held(); len(held) != 0 {
		t.Errorf("a stopped replica still holds %v", held)
	}
	var still int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM reader_leases WHERE owner = $1`, d.ID).Scan(&still); err != nil {
		t.Fatal(err)
	}
	if still != 0 {
		t.Errorf("a stopped replica left %d of its leases %v to expire, want them given back", still, gave)
	}
	awaitSpread(t, []*replica{a, c}, names, 5*time.Second)
	if got := a.Replicas(); got != 2 {
		t.Errorf("replicas seen alive = %d, want 2", got)
	}
	a.die()
	c.die()
}

// Readers split into partitions, run by two replicas by their leases,
// handle every event once, each stream's events in order; when one replica
// dies the other reads on from where it stopped.
func TestPartitionedSubscriptionsOverReplicas(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 24)
	createScratch(t, ctx, pool, true) // a second handling of an event fails the handler
	const parts = 4
	names := eventstore.PartitionNames("split", parts)
	if !slices.Equal(names, []string{"split#0/4", "split#1/4", "split#2/4", "split#3/4"}) {
		t.Fatalf("partition names %v", names)
	}

	type running struct {
		*replica
		cancel context.CancelFunc
		wg     *sync.WaitGroup
	}
	start := func(by string) running {
		l := eventstore.NewLeases(pool, names, discard)
		l.TTL, l.Every = testTTL, testEvery
		r := startReplica(t, ctx, l)
		subCtx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, p := range eventstore.Partitions(parts) {
			sub := &eventstore.Subscription{Name: p.Name("split"), Partition: p, Lease: l, Pool: pool, BatchSize: 5,
				PollInterval: 20 * time.Millisecond, Log: discard, Types: []string{testEvent{}.EventType()},
				Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
					return insertScratch(ctx, tx, by, evs)
				}}
			wg.Go(func() { sub.Run(subCtx) })
		}
		return running{r, cancel, &wg}
	}
	appendMany := func(prefix string, streams, each int) {
		var wg sync.WaitGroup
		for s := range streams {
			wg.Go(func() {
				st := stream(fmt.Sprintf("%s_%d", prefix, s))
				for v := range each {
					if _, err := eventstore.Append(ctx, pool, st, int64(v), eventstore.Metadata{}, testEvent{Worker: s, Seq: v + 1}); err != nil {
						t.Errorf("append: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
	}

	a, b := start("a"), start("b")
	awaitSpread(t, []*replica{a.replica, b.replica}, names, 5*time.Second)
	appendMany("first", 16, 10)
	waitScratch(t, ctx, pool, 160, 10*time.Second)

	// b dies: its readers stop, its leases lapse, a reads their parts on.
	b.cancel()
	b.wg.Wait()
	b.die()
	appendMany("second", 16, 5)
	waitScratch(t, ctx, pool, 240, 10*time.Second)

	rows := scratchRows(t, ctx, pool)
	last := map[string]int64{}
	by := map[string]int{}
	for _, r := range rows {
		if r.StreamVersion != last[r.StreamID]+1 {
			t.Fatalf("stream %s: version %d handled after %d", r.StreamID, r.StreamVersion, last[r.StreamID])
		}
		last[r.StreamID] = r.StreamVersion
		by[r.HandledBy]++
	}
	if by["a"] == 0 || by["b"] == 0 {
		t.Errorf("handled by %v: both replicas should have read their parts", by)
	}
	// Every part is read from its own checkpoint: no event of the log is
	// in two parts, and together the parts hold them all.
	var inParts, all int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type = $1`, testEvent{}.EventType()).Scan(&all); err != nil {
		t.Fatal(err)
	}
	for _, p := range eventstore.Partitions(parts) {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE event_type = $1 AND `+p.SQL("stream_id"), testEvent{}.EventType()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Errorf("part %s is empty: the split does not spread 32 streams", p.Name("split"))
		}
		inParts += n
	}
	if inParts != all {
		t.Errorf("the parts hold %d events, the log %d", inParts, all)
	}
	a.cancel()
	a.wg.Wait()
	a.die()
}

// A reader split into parts starts each part where the reader stood, not
// at the start of the log; and parts of a new split where the oldest part
// of the old one stood.
func TestPartitionsStartWhereTheirReaderStood(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 8)
	createScratch(t, ctx, pool, true)
	appendSome(t, ctx, pool, "before", 12)
	whole := &eventstore.Subscription{Name: "resplit", Pool: pool, Log: discard,
		Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
			return insertScratch(ctx, tx, "whole", evs)
		}}
	waitCatchUp(t, ctx, whole, 12)
	after := appendSome(t, ctx, pool, "after", 9)

	handledBy := func(by string) int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM scratch WHERE handled_by = $1`, by).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// catchUp polls the parts until they handled want events between them
	// (a transaction elsewhere on the server may hold the newest back).
	catchUp := func(count int, by string, want int) {
		subs := []*eventstore.Subscription{}
		for _, p := range eventstore.Partitions(count) {
			subs = append(subs, &eventstore.Subscription{Name: p.Name("resplit"), Partition: p, Pool: pool, Log: discard,
				Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
					return insertScratch(ctx, tx, by, evs)
				}})
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			for _, sub := range subs {
				if _, err := sub.CatchUp(ctx); err != nil {
					t.Fatalf("%s: %v", sub.Name, err) // a second handling would fail the unique event id
				}
			}
			n := handledBy(by)
			if n > want {
				t.Fatalf("the parts handled %d events, want %d", n, want)
			}
			if n == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the parts handled %d of %d events before the deadline", n, want)
			}
			time.Sleep(5 * time.Millisecond) // poll interval
		}
	}
	catchUp(3, "three", len(after))
	rows := scratchRows(t, ctx, pool)
	var split []string
	for _, r := range rows {
		if r.HandledBy == "three" {
			split = append(split, r.EventID)
		}
	}
	slices.Sort(split)
	want := slices.Clone(after)
	slices.Sort(want)
	if !slices.Equal(split, want) {
		t.Fatalf("the parts handled %d events, want the %d appended after the whole reader's checkpoint", len(split), len(want))
	}

	// Split again in two: the new parts start at the oldest of the three
	// (all at the head here), so nothing is handled again.
	more := appendSome(t, ctx, pool, "later", 4)
	catchUp(2, "two", len(more))
}

// The parts of one reader go to different replicas, so that they are read
// in parallel: whether a replica gives them back to a newcomer or two
// replicas take them from the start.
func TestLeasesSpreadThePartsOfOneReader(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 12)
	var names []string
	for _, base := range []string{"alpha", "beta", "gamma"} {
		names = append(names, eventstore.PartitionNames(base, 2)...)
	}
	check := func(replicas []*replica) {
		t.Helper()
		awaitSpread(t, replicas, names, 5*time.Second)
		for _, r := range replicas {
			bases := map[string]int{}
			for _, name := range r.Held() {
				bases[eventstore.BaseName(name)]++
			}
			for base, n := range bases {
				if n > 1 {
					t.Errorf("replica %s holds %d parts of %s (%v): the parts should be on different replicas", r.ID, n, base, r.Held())
				}
			}
		}
	}
	start := func() *replica {
		l := eventstore.NewLeases(pool, names, discard)
		l.TTL, l.Every = testTTL, testEvery
		return startReplica(t, ctx, l)
	}
	// A newcomer gets one part of each reader from the replica that held all.
	a := start()
	awaitSpread(t, []*replica{a}, names, 5*time.Second)
	b := start()
	check([]*replica{a, b})
	a.die()
	b.die()
	// Replicas starting together (the leases all free) take one part of each.
	if _, err := pool.Exec(ctx, `UPDATE reader_leases SET owner = NULL, expires_at = '-infinity'`); err != nil {
		t.Fatal(err)
	}
	c, d := start(), start()
	check([]*replica{c, d})
	c.die()
	d.die()
}

// A reader split again, back to an earlier number of parts (whose old
// checkpoints stand where they stopped), is brought forward to where its
// last complete split stood, the oldest part of it; a split whose parts
// were not all made is no guide.
func TestAlignSplitBringsOldCheckpointsForward(t *testing.T) {
	ctx := testCtx(t)
	pool := newPool(t, 8)
	createScratch(t, ctx, pool, false)
	sub := func(p eventstore.Partition) *eventstore.Subscription {
		return &eventstore.Subscription{Name: p.Name("realign"), Partition: p, Pool: pool, Log: discard,
			Handle: func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
				return insertScratch(ctx, tx, "any", evs)
			}}
	}
	pos := func(name string) eventstore.Position {
		t.Helper()
		p, ok := checkpoint(t, ctx, pool, name)
		if !ok {
			t.Fatalf("no checkpoint %s", name)
		}
		return p
	}
	// catchUpPast polls the parts' steps until each checkpoint is past from.
	catchUpPast := func(from eventstore.Position, parts ...eventstore.Partition) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for _, p := range parts {
			for {
				if _, err := sub(p).CatchUp(ctx); err != nil {
					t.Fatal(err)
				}
				if at, ok := checkpoint(t, ctx, pool, p.Name("realign")); ok && from.Less(at) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s did not pass %+v", p.Name("realign"), from)
				}
				time.Sleep(5 * time.Millisecond) // poll interval
			}
		}
	}
	appendSome(t, ctx, pool, "first", 6)
	catchUpPast(eventstore.Position{}, eventstore.Partition{})
	whole := pos("realign")

	three := eventstore.Partitions(3)
	appendSome(t, ctx, pool, "second", 9)
	catchUpPast(whole, three...)
	appendSome(t, ctx, pool, "third", 3)
	catchUpPast(pos(three[0].Name("realign")), three[0]) // part 0 ahead, 1 and 2 behind it
	oldest := pos(three[0].Name("realign"))
	for _, p := range three[1:] {
		if at := pos(p.Name("realign")); at.Less(oldest) {
			oldest = at
		}
	}
	if !whole.Less(oldest) {
		t.Fatalf("the split's oldest part %+v is not past the whole reader's old checkpoint %+v", oldest, whole)
	}

	// Back to one part: the whole reader's checkpoint moves from where it
	// stopped to the oldest part of the split that ran since.
	if err := eventstore.AlignSplit(ctx, pool, "realign", eventstore.Partitions(1)); err != nil {
		t.Fatal(err)
	}
	if got := pos("realign"); got != oldest {
		t.Errorf("the whole reader after realigning is at %+v, want the split's oldest part %+v (it stood at %+v)", got, oldest, whole)
	}
	// Aligning again changes nothing: it is the latest split now.
	if err := eventstore.AlignSplit(ctx, pool, "realign", eventstore.Partitions(1)); err != nil {
		t.Fatal(err)
	}
	if got := pos("realign"); got != oldest {
		t.Errorf("aligned twice: %+v, want %+v", got, oldest)
	}

	// A split of two whose second part was never made is incomplete: a new
	// split of four starts from the whole reader (the latest complete one),
	// not from the lone part, whichever is newer.
	if _, err := pool.Exec(ctx, `INSERT INTO subscription_checkpoints (name, transaction_id, global_position, updated_at)
        VALUES ('realign#0/2', '0', 0, clock_timestamp() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	if err := eventstore.AlignSplit(ctx, pool, "realign", eventstore.Partitions(4)); err != nil {
		t.Fatal(err)
	}
	for _, p := range eventstore.Partitions(4) {
		if got := pos(p.Name("realign")); got != oldest {
			t.Errorf("%s starts at %+v, want the whole reader's %+v", p.Name("realign"), got, oldest)
		}
	}
}
