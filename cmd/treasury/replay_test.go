package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// TestReplaySubscriptions: on a service's database, once its subscribers
// have caught up and it has stopped, `treasury subscriptions replay NAME`
// rebuilds what each subscriber wrote, row for row, from the start of the
// log, and reports every event it handled. It refuses while the service is
// connected.
func TestReplaySubscriptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.URL(t)
	r := ftStart(t, url)
	r.openAccounts(2, 1_000_000)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer hook.Close()
	r.must(http.MethodPost, "/v1/webhooks", map[string]any{"url": hook.URL + "/hook", "events": []string{"*"}}, http.StatusCreated)
	var paymentIDs []string
	for i := 0; i < 12; i++ {
		res := r.must(http.MethodPost, "/v1/payments", map[string]any{
			"virtual_account_id": r.accounts[i%len(r.accounts)], "amount": 100 + i, "rail": []string{"rtp", "ach_same_day"}[i%2],
			"destination":     map[string]any{"account_number": "123456789", "routing_number": "021000021", "name": "Initech LLC"},
			"idempotency_key": fmt.Sprintf("replay-%d", i)}, http.StatusCreated)
		paymentIDs = append(paymentIDs, decodeJSON[ftPayment](t, res).ID)
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// Every subscriber at the head of the log, the fan-out at the last
	// public event, every payment completed (nothing left to append).
	eventually(t, 60*time.Second, "the subscribers to catch up", func() error {
		var behind []string
		rows, err := conn.Query(ctx, `SELECT n FROM unnest(array['ledger','public_events','hash_chain','sandbox','kyb_decider']) n
            WHERE NOT EXISTS (SELECT 1 FROM subscription_checkpoints c WHERE c.name = n
                AND NOT EXISTS (SELECT 1 FROM events e WHERE (e.transaction_id, e.global_position) > (c.transaction_id, c.global_position)))
            UNION ALL SELECT 'webhook_fanout' WHERE coalesce((SELECT max(seq) FROM public_events), 0)
                > coalesce((SELECT global_position FROM subscription_checkpoints WHERE name = 'webhook_fanout'), -1)
            UNION ALL SELECT 'payment ' || id FROM payments WHERE status <> 'completed'`)
		if err != nil {
			return err
		}
		if behind, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		if len(behind) > 0 {
			return fmt.Errorf("behind: %v", behind)
		}
		return nil
	})

	replay := func(name string, extra ...string) (replayResult, string, error) {
		cmd := exec.Command(treasuryBin, append([]string{"subscriptions", "replay", name, "--json", "--database-url", url}, extra...)...)
		cmd.Env = treasuryEnv()
		out, err := cmd.Output()
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		var res replayResult
		if err == nil {
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("replay %s: %v: %s", name, err, out)
			}
		}
		return res, stderr, err
	}
	if _, stderr, err := replay("ledger"); err == nil || !strings.Contains(stderr, "scratch copy") {
		t.Fatalf("replay beside the running service: want a refusal, got %v: %s", err, stderr)
	}
	r.proc.stop()

	snapshot := func(query string) []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT x FROM (`+query+`) q (x) ORDER BY x`)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		return got
	}
	// What each subscriber wrote; the fan-out's delivery ids are random
	// and its status is the sender's, so those columns are left out.
	written := map[string][]string{
		"ledger": {`SELECT t::text FROM journal_entries t`, `SELECT t::text FROM ledger_entries t`,
			`SELECT t::text FROM account_transactions t`},
		"public_events": {`SELECT t::text FROM public_events t`},
		"hash_chain":    {`SELECT t::text FROM event_chain t`},
		// The fan-out matches today's endpoints: a replay also gives the
		// endpoint the events older than it, which it never had.
		"webhook_fanout": {`SELECT concat_ws('|', d.endpoint_id, d.event_id, d.event_type, d.payload::text, d.committed_at::text)
            FROM webhook_deliveries d JOIN public_events p ON p.id = d.event_id
            WHERE p.seq > (SELECT max(seq) FROM public_events p JOIN webhook_endpoints e ON p.created_at < e.created_at)`},
	}
	before := map[string][][]string{}
	for name, queries := range written {
		for _, q := range queries {
			rows := snapshot(q)
			if len(rows) == 0 {
				t.Fatalf("%s wrote nothing before the replay (%s): the test proves nothing", name, q)
			}
			before[name] = append(before[name], rows)
		}
	}
	var events, publicEvents int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM public_events)`).Scan(&events, &publicEvents); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"ledger", "public_events", "hash_chain", "webhook_fanout", "sandbox", "kyb_decider"} {
		res, stderr, err := replay(name)
		if err != nil {
			t.Fatalf("replay %s: %v: %s", name, err, stderr)
		}
		want := events
		if name == "webhook_fanout" {
			want = publicEvents
		}
		if res.Subscription != name || res.Events != want || res.Handled <= 0 || res.Handled > want || res.Seconds <= 0 || res.EventsPerSecond <= 0 {
			t.Fatalf("replay %s: %+v, want %d events", name, res, want)
		}
		for i, q := range written[name] {
			if got := snapshot(q); !slices.Equal(got, before[name][i]) {
				t.Errorf("replay %s rebuilt other rows (%s):\n got %d rows, %d not before: %.600q\nwant %d rows, %d not rebuilt: %.600q",
					name, q, len(got), len(minus(got, before[name][i])), minus(got, before[name][i]),
					len(before[name][i]), len(minus(before[name][i], got)), minus(before[name][i], got))
			}
		}
	}
	// Each part of a split reader alone (--partitions 2), as serve runs it
	// with TREASURY_READER_PARTITIONS=2: every part passes over the whole
	// log, and together they hand their handlers what the whole reader's
	// got, and rebuild what it wrote.
	for _, name := range []string{"sandbox", "kyb_decider", "webhook_fanout"} {
		whole, stderr, err := replay(name)
		if err != nil {
			t.Fatalf("replay %s: %v: %s", name, err, stderr)
		}
		cmd := exec.Command(treasuryBin, "subscriptions", "replay", name, "--json", "--partitions", "2", "--database-url", url)
		cmd.Env = treasuryEnv()
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("replay %s --partitions 2: %v", name, err)
		}
		var parts []replayResult
		for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
			var p replayResult
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("replay %s --partitions 2: %v: %s", name, err, out)
			}
			parts = append(parts, p)
		}
		var handled int64
		for i, p := range parts {
			if p.Subscription != name || p.Partition != fmt.Sprintf("%d/2", i) || p.Events != whole.Events || p.Handled > whole.Handled ||
				(p.Handled > 0 && (p.Seconds <= 0 || p.EventsPerSecond <= 0 || p.HandledPerSecond <= 0)) {
				t.Errorf("replay %s part %d/2: %+v; the whole: %+v", name, i, p, whole)
			}
			handled += p.Handled
		}
		if len(parts) != 2 || handled != whole.Handled {
			t.Errorf("replay %s --partitions 2: %d parts handled %d events, the whole %d: %s", name, len(parts), handled, whole.Handled, out)
		}
		for i, q := range written[name] {
			if got := snapshot(q); !slices.Equal(got, before[name][i]) {
				t.Errorf("replay %s --partitions 2 rebuilt other rows (%s): got %d rows, want %d", name, q, len(got), len(before[name][i]))
			}
		}
		var checkpoints []string
		rows, _ := conn.Query(ctx, `SELECT name FROM subscription_checkpoints WHERE name LIKE $1 || '#%' ORDER BY name`, name)
		if checkpoints, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || !slices.Equal(checkpoints, []string{name + "#0/2", name + "#1/2"}) {
			t.Errorf("checkpoints of %s's parts: %v (%v), want %s#0/2 and %s#1/2", name, checkpoints, err, name, name)
		}
	}
	if _, stderr, err := replay("ledger", "--partitions", "2"); err == nil || !strings.Contains(stderr, "does not split") {
		t.Errorf("replay ledger --partitions 2: want a refusal, got %v: %s", err, stderr)
	}
	// The schedule's performed actions are deleted: a replay plans every
	// sandbox payment's actions again (and performs none).
	var planned []string
	for _, id := range paymentIDs {
		planned = append(planned, "settle_payment:"+id)
	}
	slices.Sort(planned)
	if got := snapshot(`SELECT id FROM sandbox_schedule WHERE action = 'settle_payment'`); !slices.Equal(got, planned) {
		t.Errorf("sandbox schedule after the replay: %v, want %v", got, planned)
	}
	// The decider decided nothing new: the log did not grow.
	var after int64
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&after); err != nil || after != events {
		t.Errorf("the log holds %d events after the replays, %d before (%v)", after, events, err)
	}
}

// minus is a's rows not in b.
func minus(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
