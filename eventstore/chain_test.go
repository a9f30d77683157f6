package eventstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// chainSetup appends n test events over a few streams and links them all.
func chainSetup(t *testing.T, n int) (context.Context, *pgxpool.Pool, []eventstore.RecordedEvent) {
	t.Helper()
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	for i := 0; i < n; i++ {
		s := stream(fmt.Sprintf("chain-%d", i%3))
		mustAppend(t, ctx, pool, s, int64(i/3), events(i%3, i, 1)...)
	}
	linkAll(t, ctx, pool)
	recs, err := eventstore.ReadAll(ctx, pool, eventstore.Position{}, 10000)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("read %d events, want %d", len(recs), n)
	}
	return ctx, pool, recs
}

func linkAll(t *testing.T, ctx context.Context, pool *pgxpool.Pool) {
	t.Helper()
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := eventstore.ChainSubscription(pool, nil).CatchUpTo(ctx, head); err != nil {
		t.Fatalf("link: %v", err)
	}
}

func verify(t *testing.T, ctx context.Context, pool *pgxpool.Pool) (*eventstore.ChainBreak, int64) {
	t.Helper()
	br, n, err := eventstore.VerifyChain(ctx, pool)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return br, n
}

// withTriggersOff runs sql against events with the immutability trigger disabled.
func withTriggersOff(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(ctx, `ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete`); err != nil {
		t.Fatal(err)
	}
	tag, err := pool.Exec(ctx, sql, args...)
	if _, err2 := pool.Exec(ctx, `ALTER TABLE events ENABLE TRIGGER events_no_update_or_delete`); err2 != nil {
		t.Fatal(err2)
	}
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("%s: %d rows affected, want 1", sql, tag.RowsAffected())
	}
}

func chainSeqOf(t *testing.T, ctx context.Context, pool *pgxpool.Pool, eventID string) int64 {
	t.Helper()
	var seq int64
	if err := pool.QueryRow(ctx, `SELECT seq FROM event_chain WHERE event_id = $1`, eventID).Scan(&seq); err != nil {
		t.Fatalf("chain seq of %s: %v", eventID, err)
	}
	return seq
}

func TestChainLinksEveryEventGaplessAndVerifies(t *testing.T) {
	const n = 12
	ctx, pool, recs := chainSetup(t, n)

	br, links := verify(t, ctx, pool)
	if br != nil || links != n {
		t.Fatalf("verify = %v, %d links; want nil, %d", br, links, n)
	}
	rows, err := pool.Query(ctx, `SELECT seq, event_id FROM event_chain ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for rows.Next() {
		var seq int64
		var id string
		if err := rows.Scan(&seq, &id); err != nil {
			t.Fatal(err)
		}
		if seq != int64(i+1) {
			t.Fatalf("link %d has seq %d (not gapless)", i, seq)
		}
		if id != recs[i].EventID {
			t.Fatalf("seq %d links %s, want %s (commit order)", seq, id, recs[i].EventID)
		}
		i++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("%d links, want %d", i, n)
	}

	// Idempotent: running the subscription again (same or new instance) adds nothing.
	linkAll(t, ctx, pool)
	if k, err := eventstore.ChainSubscription(pool, nil).Step(ctx); err != nil || k != 0 {
		t.Fatalf("extra step = %d, %v; want 0, nil", k, err)
	}
	var count, maxSeq int64
	if err := pool.QueryRow(ctx, `SELECT count(*), coalesce(max(seq), 0) FROM event_chain`).Scan(&count, &maxSeq); err != nil {
		t.Fatal(err)
	}
	if count != n || maxSeq != n {
		t.Fatalf("after relinking: %d links, max seq %d; want %d", count, maxSeq, n)
	}

	// New events extend the chain from where it stopped.
	mustAppend(t, ctx, pool, stream("chain-more"), 0, events(9, 0, 3)...)
	linkAll(t, ctx, pool)
	br, links = verify(t, ctx, pool)
	if br != nil || links != n+3 {
		t.Fatalf("verify after more = %v, %d; want nil, %d", br, links, n+3)
	}
}

func TestChainHashIsPublishedFormula(t *testing.T) {
	ctx, pool, recs := chainSetup(t, 5)
	var prev []byte
	for i, e := range recs {
		var eh, ch []byte
		if err := pool.QueryRow(ctx, `SELECT event_hash, chain_hash FROM event_chain WHERE event_id = $1`, e.EventID).Scan(&eh, &ch); err != nil {
			t.Fatal(err)
		}
		wantEH := sha256.Sum256(eventstore.CanonicalBytes(e))
		c := sha256.New()
		c.Write(prev)
		c.Write(wantEH[:])
		wantCH := c.Sum(nil)
		if !bytes.Equal(eh, wantEH[:]) || !bytes.Equal(ch, wantCH) {
			t.Fatalf("event %d: stored hashes differ from SHA-256 formula", i)
		}
		gotEH, gotCH := eventstore.Link(prev, e)
		if !bytes.Equal(gotEH, wantEH[:]) || !bytes.Equal(gotCH, wantCH) {
			t.Fatalf("event %d: Link differs from SHA-256(prev || SHA-256(canonical))", i)
		}
		prev = ch
	}
	// Canonical bytes are stable and carry the fields in a fixed order.
	cb := string(eventstore.CanonicalBytes(recs[0]))
	if cb != string(eventstore.CanonicalBytes(recs[0])) {
		t.Fatal("canonical bytes not deterministic")
	}
	last := -1
	for _, f := range []string{"event_id", "stream_id", "stream_version", "event_type", "schema_version",
		"platform_id", "environment", "data", "metadata", "recorded_at"} {
		i := strings.Index(cb, `"`+f+`":`)
		if i <= last {
			t.Fatalf("field %s missing or out of order in %s", f, cb)
		}
		last = i
	}
}

func TestChainDetectsEditedEvent(t *testing.T) {
	ctx, pool, recs := chainSetup(t, 8)
	victim := recs[4]
	withTriggersOff(t, ctx, pool, `UPDATE events SET data = jsonb_set(data, '{note}', '"tampered"') WHERE event_id = $1`, victim.EventID)
	br, _ := verify(t, ctx, pool)
	if br == nil {
		t.Fatal("edited event not detected")
	}
	if want := chainSeqOf(t, ctx, pool, victim.EventID); br.Seq != want || br.EventID != victim.EventID {
		t.Fatalf("break = %v; want seq %d event %s", br, want, victim.EventID)
	}
	if !strings.Contains(br.Problem, "edited") {
		t.Fatalf("problem %q does not mention edited", br.Problem)
	}
}

func TestChainDetectsEditedMetadataAndTime(t *testing.T) {
	ctx, pool, recs := chainSetup(t, 4)
	withTriggersOff(t, ctx, pool, `UPDATE events SET recorded_at = recorded_at + interval '1 microsecond' WHERE event_id = $1`, recs[1].EventID)
	br, _ := verify(t, ctx, pool)
	if br == nil || br.EventID != recs[1].EventID || !strings.Contains(br.Problem, "edited") {
		t.Fatalf("recorded_at edit: break = %v", br)
	}
}

func TestChainDetectsDeletedEvent(t *testing.T) {
	ctx, pool, recs := chainSetup(t, 8)
	victim := recs[3]
	seq := chainSeqOf(t, ctx, pool, victim.EventID)
	withTriggersOff(t, ctx, pool, `DELETE FROM events WHERE event_id = $1`, victim.EventID)
	br, _ := verify(t, ctx, pool)
	if br == nil {
		t.Fatal("deleted event not detected")
	}
	if br.Seq != seq || br.EventID != victim.EventID || !strings.Contains(br.Problem, "deleted") {
		t.Fatalf("break = %v; want seq %d event %s deleted", br, seq, victim.EventID)
	}
}

func TestChainDetectsInsertedEvent(t *testing.T) {
	ctx, pool, recs := chainSetup(t, 6)
	// An event slipped in behind the chain's back, with a commit position
	// older than the last linked event's.
	src := recs[2]
	_, err := pool.Exec(ctx, `INSERT INTO events (transaction_id, event_id, stream_id, stream_version, event_type,
            schema_version, platform_id, environment, data, metadata, recorded_at)
        SELECT '1'::xid8, 'evt_forged', stream_id, 1000, event_type, schema_version, platform_id, environment,
            data, metadata, recorded_at FROM events WHERE event_id = $1`, src.EventID)
	if err != nil {
		t.Fatal(err)
	}
	br, _ := verify(t, ctx, pool)
	if br == nil {
		t.Fatal("inserted event not detected")
	}
	if br.EventID != "evt_forged" || !strings.Contains(br.Problem, "inserted") {
		t.Fatalf("break = %v; want evt_forged inserted", br)
	}
}

func TestChainDetectsTamperedChainHash(t *testing.T) {
	ctx, pool, _ := chainSetup(t, 6)
	if _, err := pool.Exec(ctx, `UPDATE event_chain SET chain_hash = sha256(chain_hash) WHERE seq = 3`); err != nil {
		t.Fatal(err)
	}
	br, _ := verify(t, ctx, pool)
	if br == nil || br.Seq != 3 {
		t.Fatalf("tampered chain hash: break = %v; want at seq 3", br)
	}

	// Tampering an event_hash alone (keeping the chain hash) is also caught.
	ctx, pool, _ = chainSetup(t, 6)
	if _, err := pool.Exec(ctx, `UPDATE event_chain SET event_hash = sha256(event_hash) WHERE seq = 2`); err != nil {
		t.Fatal(err)
	}
	if br, _ := verify(t, ctx, pool); br == nil || br.Seq != 2 {
		t.Fatalf("tampered event hash: break = %v; want at seq 2", br)
	}

	// A removed link shows as a sequence gap.
	ctx, pool, _ = chainSetup(t, 6)
	if _, err := pool.Exec(ctx, `DELETE FROM event_chain WHERE seq = 4`); err != nil {
		t.Fatal(err)
	}
	if br, _ := verify(t, ctx, pool); br == nil || br.Seq != 5 {
		t.Fatalf("removed link: break = %v; want at seq 5", br)
	}
}

// chainRows is the whole chain as "seq event_id event_hash chain_hash".
func chainRows(t *testing.T, ctx context.Context, pool *pgxpool.Pool) []string {
	t.Helper()
	rows, err := pool.Query(ctx, `SELECT seq, event_id, event_hash, chain_hash FROM event_chain ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var seq int64
		var id string
		var eh, ch []byte
		if err := rows.Scan(&seq, &id, &eh, &ch); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s %x %x", seq, id, eh, ch))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// Given a log linked one event per batch, when the chain is dropped and
// linked again in batches of many, then every row (seq, event, both
// hashes) is the same.
func TestChainBatchLinksTheSameRowsAsOneAtATime(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.Pool(t)
	for i := range 23 {
		mustAppend(t, ctx, pool, stream(fmt.Sprintf("batch-%d", i%4)), int64(i/4), events(i%4, i, 1)...)
	}
	waitReadable(t, ctx, pool) // CatchUp stops at the first empty step
	one := eventstore.ChainSubscription(pool, nil)
	one.BatchSize = 1
	if n, err := one.CatchUp(ctx); err != nil || n != 23 {
		t.Fatalf("one at a time: %d, %v", n, err)
	}
	want := chainRows(t, ctx, pool)

	if _, err := pool.Exec(ctx, `DELETE FROM event_chain`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DELETE FROM subscription_checkpoints WHERE name = $1`, eventstore.ChainName); err != nil {
		t.Fatal(err)
	}
	many := eventstore.ChainSubscription(pool, nil)
	many.BatchSize = 10
	if n, err := many.CatchUp(ctx); err != nil || n != 23 {
		t.Fatalf("in batches: %d, %v", n, err)
	}
	if got := chainRows(t, ctx, pool); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("batched chain differs:\n got %v\nwant %v", got, want)
	}
	if br, n := verify(t, ctx, pool); br != nil || n != 23 {
		t.Fatalf("verify = %v, %d", br, n)
	}
}

// Given a linked chain, when the next batch's handler fails after linking
// (the transaction rolls back), then nothing of it stays, and the next
// step links the same events at the same seqs, with no gap.
func TestChainRolledBackBatchLeavesNoGap(t *testing.T) {
	ctx, pool, _ := chainSetup(t, 5)
	more := mustAppend(t, ctx, pool, stream("rollback"), 0, events(7, 0, 4)...)
	waitReadable(t, ctx, pool) // a step reads only below every running transaction

	failing := eventstore.ChainSubscription(pool, nil)
	link := failing.Handle
	linked := 0
	failing.Handle = func(ctx context.Context, tx pgx.Tx, evs []eventstore.RecordedEvent) error {
		if err := link(ctx, tx, evs); err != nil {
			return err
		}
		linked += len(evs)
		return errors.New("boom after linking")
	}
	if n, err := failing.Step(ctx); err == nil || n != 0 {
		t.Fatalf("failing step = %d, %v; want 0 and the error", n, err)
	}
	if linked != 4 {
		t.Fatalf("the failing handler linked %d events, want 4", linked)
	}
	var count, maxSeq int64
	if err := pool.QueryRow(ctx, `SELECT count(*), max(seq) FROM event_chain`).Scan(&count, &maxSeq); err != nil {
		t.Fatal(err)
	}
	if count != 5 || maxSeq != 5 {
		t.Fatalf("after the rollback: %d links up to seq %d, want 5 up to 5", count, maxSeq)
	}

	if n, err := eventstore.ChainSubscription(pool, nil).Step(ctx); err != nil || n != 4 {
		t.Fatalf("next step = %d, %v; want 4", n, err)
	}
	for i, e := range more {
		if seq := chainSeqOf(t, ctx, pool, e.EventID); seq != int64(6+i) {
			t.Errorf("%s linked at seq %d, want %d", e.EventID, seq, 6+i)
		}
	}
	if br, n := verify(t, ctx, pool); br != nil || n != 9 {
		t.Fatalf("verify = %v, %d; want clean, 9", br, n)
	}
}
