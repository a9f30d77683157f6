package app_test

import (
	"encoding/json"
	"maps"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/migrations"
)

// Tests of migration 00011's backfill (issue #14 review, finding 2).

const pbMigration = 11

// pbRemigrate runs migration 00011 down and up again, as on a database
// whose charts predate it.
func pbRemigrate(e *env) {
	e.t.Helper()
	db := stdlib.OpenDBFromPool(e.pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, up := range []bool{false, true} {
		if _, err := p.ApplyVersion(e.ctx, pbMigration, up); err != nil {
			e.t.Fatalf("migration %d (up %v): %v", pbMigration, up, err)
		}
	}
}

// pbRows are the platform_balances rows, posted by ledger account id.
func pbRows(e *env) map[string]int64 {
	e.t.Helper()
	rows, err := e.pool.Query(e.ctx, `SELECT ledger_account_id, posted FROM platform_balances`)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var id string
		var posted int64
		if err := rows.Scan(&id, &posted); err != nil {
			e.t.Fatal(err)
		}
		out[id] = posted
	}
	if err := rows.Err(); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// The backfill computes what the inline projector keeps, from the log
// alone: here the asynchronous ledger projection has projected nothing
// (its subscription never runs in these tests), as for entries committed
// just before a deploy.
func TestPlatformBalancesBackfillReadsTheLog(t *testing.T) {
	e := newEnv(t)
	sandbox := e.platform("Acme")
	va := e.openVA(sandbox)
	e.fund(sandbox, va, 1_000)
	credit, err := e.manual(sandbox, ledger.TypeAdjustment, va, "credit", 500)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.manual(sandbox, ledger.TypeFee, va, "debit", 30); err != nil {
		t.Fatal(err)
	}
	chart := e.chart(sandbox)
	if _, err := e.lines(sandbox, ledger.TypeAdjustment, laLine(chart[ledger.CodePlatformFees], "debit", 10),
		laLine(chart[ledger.CodePlatformOperating], "credit", 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.manual(sandbox, ledger.TypeAdjustment, va, "credit", 7); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reverse(sandbox, credit.ID); err != nil {
		t.Fatal(err)
	}
	live, liveVA := pbLiveFunded(e, 1_000)
	if _, err := e.manual(live, ledger.TypeAdjustment, liveVA, "credit", 300); err != nil {
		t.Fatal(err)
	}

	if n := count(t, e.ctx, e.pool, `SELECT count(*) FROM ledger_entries`); n != 0 {
		t.Fatalf("%d ledger entries projected: the test needs the ledger projection behind", n)
	}
	want := pbRows(e)
	if len(want) != 5 || want[chart[ledger.CodePlatformOperating]] != -7+10 || want[chart[ledger.CodePlatformFees]] != 30-10 {
		t.Fatalf("rows kept by the projector: %v", want)
	}
	pbRemigrate(e)
	if got := pbRows(e); !maps.Equal(got, want) {
		t.Fatalf("backfilled rows %v, want the projector's %v", got, want)
	}
}

// Old data past int64 (before the money bounds) must not fail the
// migration: the sum is clamped, and the account answers limit_exceeded.
func TestPlatformBalancesBackfillClampsPastInt64(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	if _, err := e.manual(c, ledger.TypeAdjustment, va, "credit", 1); err != nil { // opens the chart
		t.Fatal(err)
	}
	chart := e.chart(c)
	fees, operating := chart[ledger.CodePlatformFees], chart[ledger.CodePlatformOperating]
	const huge = 9_000_000_000_000_000_000 // twice is past int64
	for range 2 {
		pbAppendRaw(e, c, []ledger.Line{
			{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: fees, Direction: ledger.Credit, Amount: huge, Type: ledger.TypeAdjustment},
			{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: operating, Direction: ledger.Debit, Amount: huge, Type: ledger.TypeAdjustment},
		})
	}
	pbRemigrate(e)
	got := pbRows(e)
	if got[fees] != math.MaxInt64 || got[operating] != math.MinInt64 {
		t.Fatalf("platform_fees %d, platform_operating %d, want clamped to int64", got[fees], got[operating])
	}
	_, err := e.lines(c, ledger.TypeAdjustment, laLine(operating, "debit", 1), laLine(fees, "credit", 1))
	wantCode(t, err, domain.CodeLimitExceeded)
}

// pbAppendRaw writes a posted journal entry straight into the log, as a
// version before the money bounds could have, and returns its id.
func pbAppendRaw(e *env, c app.Caller, lines []ledger.Line) string {
	e.t.Helper()
	id := domain.NewID(domain.PrefixJournalEntry)
	rec := ledger.Recorded{JournalEntryID: id, PlatformID: c.PlatformID, Environment: c.Environment, Type: ledger.TypeAdjustment,
		Description: "old", Status: ledger.StatusPosted, Lines: lines, Source: ledger.Source{Type: "journal_entry", ID: id},
		EffectiveAt: time.Now(), At: time.Now()}
	data, err := json.Marshal(rec)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO events (event_id, stream_id, stream_version, event_type, platform_id, environment, data)
        VALUES ($1, $2, 1, $3, $4, $5, $6)`, domain.NewID("evt"), ledger.StreamID(id), rec.EventType(), c.PlatformID,
		c.Environment.String(), data); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO streams (stream_id, stream_type, platform_id, environment, version)
        VALUES ($1, $2, $3, $4, 1)`, ledger.StreamID(id), ledger.StreamType, c.PlatformID, c.Environment.String()); err != nil {
		e.t.Fatal(err)
	}
	return id
}

// An entry recorded before today's bound on a line's amount can still be
// reversed: the reversal is held to every other rule of a balanced entry.
func TestEntryBeforeTheAmountBoundCanBeReversed(t *testing.T) {
	e := newEnv(t)
	c := e.platform("Acme")
	va := e.openVA(c)
	if _, err := e.manual(c, ledger.TypeAdjustment, va, "credit", 1); err != nil { // opens the chart
		t.Fatal(err)
	}
	chart := e.chart(c)
	const old = 50 * ledger.MaxAmount // refused today as a line
	id := pbAppendRaw(e, c, []ledger.Line{
		{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.CodePlatformFees], Direction: ledger.Credit, Amount: old, Type: ledger.TypeAdjustment},
		{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: chart[ledger.CodePlatformOperating], Direction: ledger.Debit, Amount: old, Type: ledger.TypeAdjustment},
	})
	if _, err := e.reverse(c, id); err != nil {
		t.Fatalf("reversing an entry from before the amount bound: %v", err)
	}
}
