package projections_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/domain/ledger"
	"github.com/opentreasury/treasury/projections/queries"
)

// Sums of the statement and the ledger export past int64 (issue #14
// review, finding 5). Helpers start with "so". The large amounts come
// from entries written straight into the log, as before the money bounds;
// within the bounds the same totals take ~18.5k entries crediting and
// debiting one account.

const soHuge = 9_000_000_000_000_000_000 // twice is past int64

type soFixture struct {
	c                   app.Caller
	va, vaLA, fees, ops string
}

func soSetup(e *env) soFixture {
	e.t.Helper()
	c := e.platform("Acme")
	f := soFixture{c: c, va: e.openVA(c, "biz_1")}
	if _, err := e.manual(c, ledger.TypeAdjustment, f.va, "credit", 1); err != nil { // opens the chart
		e.t.Fatal(err)
	}
	if err := e.pool.QueryRow(e.ctx, `SELECT id FROM ledger_accounts WHERE virtual_account_id = $1`, f.va).Scan(&f.vaLA); err != nil {
		e.t.Fatal(err)
	}
	for code, to := range map[string]*string{ledger.CodePlatformFees: &f.fees, ledger.CodePlatformOperating: &f.ops} {
		if err := e.pool.QueryRow(e.ctx, `SELECT id FROM ledger_accounts WHERE platform_id = $1 AND environment = $2
            AND virtual_account_id IS NULL AND code = $3`, c.PlatformID, c.Environment.String(), code).Scan(to); err != nil {
			e.t.Fatal(err)
		}
	}
	return f
}

func (f soFixture) vaLine(dir ledger.Direction, amount int64) ledger.Line {
	return ledger.Line{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: f.vaLA, VirtualAccountID: f.va,
		Direction: dir, Amount: amount, Type: ledger.TypeAdjustment}
}

func soLine(la string, dir ledger.Direction, amount int64) ledger.Line {
	return ledger.Line{EntryID: domain.NewID(domain.PrefixLedgerEntry), LedgerAccountID: la, Direction: dir, Amount: amount, Type: ledger.TypeAdjustment}
}

// soAppendRaw writes a posted journal entry at at straight into the log.
func soAppendRaw(e *env, c app.Caller, at time.Time, lines ...ledger.Line) {
	e.t.Helper()
	id := domain.NewID(domain.PrefixJournalEntry)
	rec := ledger.Recorded{JournalEntryID: id, PlatformID: c.PlatformID, Environment: c.Environment, Type: ledger.TypeAdjustment,
		Description: "old", Status: ledger.StatusPosted, Lines: lines, Source: ledger.Source{Type: "journal_entry", ID: id},
		EffectiveAt: at, At: at}
	data, err := json.Marshal(rec)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO events (event_id, stream_id, stream_version, event_type, platform_id, environment, data)
        VALUES ($1, $2, 1, $3, $4, $5, $6)`, domain.NewID("evt"), ledger.StreamID(id), rec.EventType(), c.PlatformID,
		c.Environment.String(), data); err != nil {
		e.t.Fatal(err)
	}
}

// Money in past int64 with a small balance (each entry credits and debits
// the account) is 422 limit_exceeded, not a wrapped total.
func TestStatementTotalsPastInt64AreLimitExceeded(t *testing.T) {
	e := newEnv(t)
	f := soSetup(e)
	now := time.Now().UTC()
	for range 2 {
		soAppendRaw(e, f.c, now, f.vaLine(ledger.Credit, soHuge), f.vaLine(ledger.Debit, soHuge))
	}
	e.sync()
	v, err := queries.Statement(e.ctx, e.pool, queries.Scope{PlatformID: f.c.PlatformID, Environment: f.c.Environment}, f.va, now)
	var de *domain.Error
	if !errors.As(err, &de) || de.Code != domain.CodeLimitExceeded || de.ResourceID != f.va {
		t.Fatalf("statement: err %v (in %d, out %d), want limit_exceeded naming %s", err, v.TotalIn, v.TotalOut, f.va)
	}
}

// The statement CSV's balance after each transaction is exact even where
// it passes int64 between an opening and a closing that fit.
func TestStatementCSVBalancePastInt64(t *testing.T) {
	e := newEnv(t)
	f := soSetup(e)
	now := time.Now().UTC()
	const half = 5_000_000_000_000_000_000
	soAppendRaw(e, f.c, now.AddDate(0, -1, 0), f.vaLine(ledger.Credit, half), soLine(f.ops, ledger.Debit, half))
	soAppendRaw(e, f.c, now, f.vaLine(ledger.Credit, half), soLine(f.ops, ledger.Debit, half))
	soAppendRaw(e, f.c, now, f.vaLine(ledger.Debit, half), soLine(f.ops, ledger.Credit, half))
	e.sync()
	v, err := queries.Statement(e.ctx, e.pool, queries.Scope{PlatformID: f.c.PlatformID, Environment: f.c.Environment}, f.va, now)
	if err != nil {
		t.Fatal(err)
	}
	// In: the chart-opening credit of 1 cent, then half.
	if v.OpeningBalance != half || v.TotalIn != half+1 || v.TotalOut != half || v.ClosingBalance != half+1 {
		t.Fatalf("statement opening %d in %d out %d closing %d", v.OpeningBalance, v.TotalIn, v.TotalOut, v.ClosingBalance)
	}
	var buf bytes.Buffer
	if err := queries.WriteStatementCSV(&buf, v); err != nil {
		t.Fatal(err)
	}
	rows := soCSV(t, buf.Bytes())
	got := []string{rows[len(rows)-2][5], rows[len(rows)-1][5]}
	if got[0] != "10000000000000000001" || got[1] != "5000000000000000001" {
		t.Fatalf("balances after the month's last transactions %v", got)
	}
}

// The ledger export's running balance is the exact sum, written even
// past int64.
func TestLedgerExportRunningBalancePastInt64(t *testing.T) {
	e := newEnv(t)
	f := soSetup(e)
	for range 2 {
		soAppendRaw(e, f.c, time.Now().UTC(), soLine(f.fees, ledger.Credit, soHuge), soLine(f.ops, ledger.Debit, soHuge))
	}
	e.sync()
	var buf bytes.Buffer
	if err := queries.WriteLedgerExport(e.ctx, e.pool, queries.Scope{PlatformID: f.c.PlatformID, Environment: f.c.Environment},
		queries.TimeRange{}, &buf); err != nil {
		t.Fatalf("export: %v", err)
	}
	last := map[string]string{}
	for _, r := range soCSV(t, buf.Bytes())[1:] {
		last[r[2]] = r[14]
	}
	if last[f.fees] != "18000000000000000000" || last[f.ops] != "-18000000000000000001" {
		t.Fatalf("running balances: platform_fees %s, platform_operating %s", last[f.fees], last[f.ops])
	}
}

func soCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(b))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
