package http_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/opentreasury/treasury/migrations"
)

// Payments, inbound transfers and book transfers name their journal entry;
// every ledger entry names its entry's source; the journal entry leads
// back to them (API.md §12).
func TestLinksBetweenPaymentsTransfersAndTheLedger(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	other := vaOpenID(t, api, key, platformID, "other")
	pay := payCreated(t, api, key, payBody(acc, 1_000, "rtp", "123456789"))
	bt := vaRequire(t, api.do("POST", "/v1/book-transfers", key, btBody(acc, other, 500)), http.StatusCreated)
	itx := vaCredit(t, api, key, other, 700)
	manual := vaRequire(t, vaEntry(api, key, map[string]any{"type": "fee", "description": "monthly",
		"virtual_account_id": acc, "direction": "debit", "amount": 100}), http.StatusCreated)
	api.sync()

	for _, c := range []struct {
		what, typ, id, je string
	}{
		{"payment", "payment", pay["id"].(string), str(pay["journal_entry_id"])},
		{"book transfer", "book_transfer", bt["id"].(string), str(bt["journal_entry_id"])},
		{"inbound transfer", "inbound_transfer", itx["id"].(string), str(itx["journal_entry_id"])},
		{"manual entry", "journal_entry", manual["id"].(string), manual["id"].(string)},
	} {
		if c.je == "" {
			t.Errorf("the %s has no journal_entry_id", c.what)
			continue
		}
		entry := vaGet(t, api, key, "/v1/ledger/journal-entries/"+c.je)
		if src, _ := entry["source"].(map[string]any); src["type"] != c.typ || src["id"] != c.id {
			t.Errorf("the %s's journal entry has source %v", c.what, entry["source"])
		}
		entries, _ := entry["entries"].([]any)
		for _, e := range entries {
			if src, _ := e.(map[string]any)["source"].(map[string]any); src["type"] != c.typ || src["id"] != c.id {
				t.Errorf("a line of the %s's journal entry has source %v", c.what, src)
			}
		}
		listed := vaData(t, vaGet(t, api, key, "/v1/ledger/entries?limit=100"))
		n := 0
		for _, le := range listed {
			if le["journal_entry_id"] == c.je {
				n++
				if src, _ := le["source"].(map[string]any); src["type"] != c.typ || src["id"] != c.id {
					t.Errorf("ledger entry %v of the %s has source %v", le["id"], c.what, src)
				}
			}
		}
		if n < 2 {
			t.Errorf("%d listed ledger entries of the %s's journal entry", n, c.what)
		}
	}
	if got := payGet(t, api, key, pay["id"].(string))["journal_entry_id"]; got != pay["journal_entry_id"] {
		t.Errorf("GET shows journal_entry_id %v, the creation %v", got, pay["journal_entry_id"])
	}
	// The events show the same links.
	for _, ev := range vaData(t, vaGet(t, api, key, "/v1/events?type=payment.created")) {
		if obj := ev["data"].(map[string]any)["object"].(map[string]any); obj["journal_entry_id"] != pay["journal_entry_id"] {
			t.Errorf("payment.created shows journal_entry_id %v", obj["journal_entry_id"])
		}
	}
	for _, ev := range vaData(t, vaGet(t, api, key, "/v1/events?type=ledger.entry.created&limit=100")) {
		if src, _ := ev["data"].(map[string]any)["object"].(map[string]any)["source"].(map[string]any); src["type"] == nil || src["id"] == nil {
			t.Errorf("ledger.entry.created without a source: %v", ev)
		}
	}
	apAudit(t, api)
}

func str(v any) string { s, _ := v.(string); return s }

// Migration 00029 gives the rows written before it what the code writes
// now: taken down (the rows as the previous version left them) and up
// again, every public event and ledger entry is as before, and the log
// rebuilds to the same tables.
func TestLinksMigrationRewritesPastRows(t *testing.T) {
	api, platformID, key := vaAPI(t)
	acc := payAccount(t, api, key, platformID, "biz", 100_000, true)
	other := vaOpenID(t, api, key, platformID, "other")
	paySettings(t, api, key, map[string]any{"payment_approval_threshold": 5_000})
	p := payCreated(t, api, key, payBody(acc, 1_000, "rtp", "123456789"))
	payCreated(t, api, key, payBody(acc, 6_000, "ach_standard", "123456789"))
	vaRequire(t, api.do("POST", "/v1/payments/"+p["id"].(string)+"/cancel", key, nil), http.StatusOK)
	vaRequire(t, api.do("POST", "/v1/book-transfers", key, btBody(acc, other, 500)), http.StatusCreated)
	api.sync()
	read := func() map[string]string {
		out := map[string]string{}
		rows, err := api.Pool.Query(context.Background(), `SELECT id, data FROM public_events
            UNION ALL SELECT id, source_type || '/' || source_id FROM ledger_entries`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, v string
			if err := rows.Scan(&id, &v); err != nil {
				t.Fatal(err)
			}
			out[id] = v
		}
		return out
	}
	before := read()
	db := stdlib.OpenDBFromPool(api.Pool)
	defer db.Close()
	pr, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pr.ApplyVersion(context.Background(), 29, false); err != nil {
		t.Fatalf("down: %v", err)
	}
	var stripped int
	if err := api.Pool.QueryRow(context.Background(), `SELECT count(*) FROM public_events
        WHERE data LIKE '%"journal_entry_id"%' AND type LIKE 'payment.%'`).Scan(&stripped); err != nil || stripped != 0 {
		t.Fatalf("after down, %d payment events still show journal_entry_id (%v)", stripped, err)
	}
	if _, err := pr.ApplyVersion(context.Background(), 29, true); err != nil {
		t.Fatalf("up: %v", err)
	}
	if after := read(); !reflect.DeepEqual(after, before) {
		for id, v := range before {
			if after[id] != v {
				t.Errorf("%s: %s\nafter the migration: %s", id, v, after[id])
			}
		}
		t.FailNow()
	}
	apAudit(t, api)
}
