package projections_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/inbound"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/eventstore/pgtest"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/projections/rebuild"
)

// auditSetup creates a platform, an account and an inbound transfer, and
// catches up the asynchronous projections.
func auditSetup(t *testing.T) (context.Context, *pgxpool.Pool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	pool := pgtest.Pool(t)
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	res, err := a.RegisterPlatform(ctx, app.Meta{}, nil, app.RegisterPlatform{Name: "Acme", ContactEmail: "ops@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ApprovePlatform(ctx, app.Meta{}, res.ID); err != nil {
		t.Fatal(err)
	}
	c := app.Caller{PlatformID: res.ID, Environment: domain.Sandbox}
	r, err := a.OpenVirtualAccount(ctx, app.Meta{}, nil, c, app.OpenVirtualAccount{PlatformID: res.ID, EntityRef: "biz", Type: "checking"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SimulateInboundTransfer(ctx, app.Meta{}, nil, c, app.SimulateInboundTransfer{VirtualAccountID: r.ID, Amount: 10000, Rail: "rtp",
		Originator: inbound.Originator{Name: "Bob", AccountNumber: "123456789", RoutingNumber: "021000021"}}); err != nil {
		t.Fatal(err)
	}
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := projections.CatchUp(ctx, pool, head, nil); err != nil {
		t.Fatal(err)
	}
	return ctx, pool, r.ID
}

func auditCompare(t *testing.T, ctx context.Context, pool *pgxpool.Pool) ([]rebuild.TableDiff, int) {
	t.Helper()
	diffs, n, err := rebuild.CompareWithLog(ctx, pool)
	if err != nil {
		t.Fatalf("CompareWithLog: %v", err)
	}
	return diffs, n
}

func diffOn(diffs []rebuild.TableDiff, table string) *rebuild.TableDiff {
	for i := range diffs {
		if diffs[i].Table == table {
			return &diffs[i]
		}
	}
	return nil
}

func TestCompareWithLogCleanAfterActivity(t *testing.T) {
	ctx, pool, _ := auditSetup(t)
	diffs, n := auditCompare(t, ctx, pool)
	if len(diffs) != 0 {
		t.Fatalf("clean projections differ from the log: %+v", diffs)
	}
	var events int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&events); err != nil {
		t.Fatal(err)
	}
	if n != events || n == 0 {
		t.Fatalf("compared %d events, log has %d", n, events)
	}
}

func TestCompareWithLogDetectsEditedBalance(t *testing.T) {
	ctx, pool, va := auditSetup(t)
	tag, err := pool.Exec(ctx, `UPDATE account_balances SET posted = posted + 1 WHERE virtual_account_id = $1`, va)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("edit balance: %v, %d rows", err, tag.RowsAffected())
	}
	diffs, _ := auditCompare(t, ctx, pool)
	d := diffOn(diffs, "account_balances")
	if d == nil || d.OnlyLive != 1 || d.OnlyRebuilt != 1 {
		t.Fatalf("diffs = %+v; want account_balances 1/1", diffs)
	}
	if len(diffs) != 1 {
		t.Fatalf("diffs = %+v; want only account_balances", diffs)
	}
}

func TestCompareWithLogDetectsEditedLedgerEntry(t *testing.T) {
	ctx, pool, _ := auditSetup(t)
	tag, err := pool.Exec(ctx, `UPDATE ledger_entries SET amount = amount + 1 WHERE id = (SELECT min(id) FROM ledger_entries)`)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("edit ledger entry: %v, %d rows", err, tag.RowsAffected())
	}
	diffs, _ := auditCompare(t, ctx, pool)
	if d := diffOn(diffs, "ledger_entries"); d == nil || d.OnlyLive != 1 || d.OnlyRebuilt != 1 {
		t.Fatalf("diffs = %+v; want ledger_entries 1/1", diffs)
	}
}

func TestCompareWithLogDetectsDeletedAndExtraRows(t *testing.T) {
	ctx, pool, va := auditSetup(t)
	if _, err := pool.Exec(ctx, `DELETE FROM account_balances WHERE virtual_account_id = $1`, va); err != nil {
		t.Fatal(err)
	}
	diffs, _ := auditCompare(t, ctx, pool)
	if d := diffOn(diffs, "account_balances"); d == nil || d.OnlyLive != 0 || d.OnlyRebuilt != 1 {
		t.Fatalf("diffs = %+v; want account_balances 0/1", diffs)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO account_balances (virtual_account_id, posted) VALUES ($1, 10000), ('va_ghost', 5)`, va); err != nil {
		t.Fatal(err)
	}
	diffs, _ = auditCompare(t, ctx, pool)
	if d := diffOn(diffs, "account_balances"); d == nil || d.OnlyLive != 1 || d.OnlyRebuilt != 0 {
		t.Fatalf("diffs = %+v; want account_balances 1/0 (the ghost row)", diffs)
	}
}

func TestLedgerImbalance(t *testing.T) {
	ctx, pool, _ := auditSetup(t)
	entries, total, err := rebuild.LedgerImbalance(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 || total != 0 {
		t.Fatalf("clean ledger: entries %v, total %d", entries, total)
	}
	var nEntries int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&nEntries); err != nil || nEntries == 0 {
		t.Fatalf("no ledger entries to check (%d, %v)", nEntries, err)
	}
	var id, journal, direction string
	if err := pool.QueryRow(ctx, `SELECT id, journal_entry_id, direction FROM ledger_entries ORDER BY id LIMIT 1`).Scan(&id, &journal, &direction); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE ledger_entries SET amount = amount + 7 WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	entries, total, err = rebuild.LedgerImbalance(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !strings.HasPrefix(entries[0], journal+" (") {
		t.Fatalf("entries = %v; want one naming %s", entries, journal)
	}
	want := int64(7)
	if direction != "debit" {
		want = -7
	}
	if total != want {
		t.Fatalf("total imbalance %d, want %d", total, want)
	}
}

func TestCompareWithLogLeavesNothingBehind(t *testing.T) {
	ctx, pool, _ := auditSetup(t)
	snapshot := func() map[string]string {
		out := map[string]string{}
		for _, tbl := range []string{"account_balances", "ledger_entries", "ledger_accounts", "events", "subscription_checkpoints", "event_chain"} {
			var s string
			if err := pool.QueryRow(ctx, `SELECT coalesce(string_agg(t::text, '|' ORDER BY t::text), '') FROM `+tbl+` t`).Scan(&s); err != nil {
				t.Fatalf("snapshot %s: %v", tbl, err)
			}
			out[tbl] = s
		}
		return out
	}
	before := snapshot()
	for i := 0; i < 2; i++ { // twice: a leftover scratch schema would make the second fail
		auditCompare(t, ctx, pool)
	}
	var scratch int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'audit_scratch'`).Scan(&scratch); err != nil {
		t.Fatal(err)
	}
	if scratch != 0 {
		t.Fatal("audit_scratch schema left behind")
	}
	after := snapshot()
	for k, v := range before {
		if after[k] != v {
			t.Fatalf("CompareWithLog changed live table %s", k)
		}
	}
	// The search_path change was local to the rolled-back transaction.
	var sp string
	if err := pool.QueryRow(ctx, `SHOW search_path`).Scan(&sp); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(sp, "audit_scratch") {
		t.Fatalf("search_path leaked: %s", sp)
	}
}

// The audit replays each asynchronous projector up to its own
// subscriber's checkpoint: with the ledger caught up and the public
// events behind, both are what the log says they should be so far.
func TestCompareWithLogEachSubscriberAtItsOwnCheckpoint(t *testing.T) {
	ctx, pool, va := auditSetup(t)
	var platformID string
	if err := pool.QueryRow(ctx, `SELECT platform_id FROM virtual_accounts WHERE id = $1`, va).Scan(&platformID); err != nil {
		t.Fatal(err)
	}
	a := app.New(pool, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	c := app.Caller{PlatformID: platformID, Environment: domain.Sandbox}
	if _, err := a.SimulateInboundTransfer(ctx, app.Meta{}, nil, c, app.SimulateInboundTransfer{VirtualAccountID: va, Amount: 500, Rail: "rtp",
		Originator: inbound.Originator{Name: "Bob", AccountNumber: "123456789", RoutingNumber: "021000021"}}); err != nil {
		t.Fatal(err)
	}
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	ledger := projections.NewSubscription(projections.AsyncSubscriberNamed(projections.LedgerSubscription), pool, nil, nil)
	if err := ledger.CatchUpTo(ctx, head); err != nil {
		t.Fatal(err)
	}
	behind, err := eventstore.ReadCheckpoint(ctx, pool, projections.PublicEventsSubscription)
	if err != nil || !behind.Less(head) {
		t.Fatalf("the public events should be behind: at %+v, head %+v, %v", behind, head, err)
	}
	if diffs, _ := auditCompare(t, ctx, pool); len(diffs) != 0 {
		t.Fatalf("the audit compared a subscriber's tables beyond or short of its checkpoint: %+v", diffs)
	}
}
