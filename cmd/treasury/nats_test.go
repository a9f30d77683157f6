package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/opentreasury/treasury/webhooks/jetstream"
)

// startNATS runs a NATS server with JetStream of the test's own (Debian's
// nats-server, which make test installs), on a free port, its storage in a
// temporary folder; it returns the server's URL.
func startNATS(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("nats-server")
	if err != nil {
		t.Fatalf("nats-server is not installed (make test installs it: make test-tools): %v", err)
	}
	port := freePort(t)
	cmd := exec.Command(bin, "-js", "-a", "127.0.0.1", "-p", strconv.Itoa(port), "-sd", t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	eventually(t, 15*time.Second, "nats-server listening", func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err
	})
	return "nats://" + addr
}

// TestNATSForwarder: with TREASURY_NATS_URL set, every public event goes to
// NATS JetStream once, in the log's order, to
// treasury.<environment>.<platform_id>.<type>, with the event's id as its
// message id — across a kill -9 of serve in the middle of a payment load
// whose forwarder restarts from its checkpoint rewound to the start, so
// that it sends every event again (JetStream drops the copies by their id),
// with a second replica on the same database forwarding meanwhile.
func TestNATSForwarder(t *testing.T) {
	t.Parallel()
	natsURL := startNATS(t)
	dbURL := emptyDatabase(t)
	r := ftStartWith(t, dbURL, "TREASURY_NATS_URL="+natsURL)
	r.openAccounts(2, 1_000_000)

	base := r.base // where the load goes
	pay := func(i int) {
		body := map[string]any{"virtual_account_id": r.accounts[i%2], "amount": 100 + i, "rail": "rtp",
			"idempotency_key": fmt.Sprintf("nats-%d", i),
			"destination":     map[string]any{"account_number": "123456789", "routing_number": "021000021", "name": "Initech LLC"}}
		if res, err := callWith(r.client, http.MethodPost, base+"/v1/payments", r.key, body); err != nil || res.Status != http.StatusCreated {
			t.Errorf("payment %d: %v %v", i, res, err)
		}
	}
	load := func(from, to int) {
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := from + w; i < to; i += 4 {
					pay(i)
				}
			}()
		}
		wg.Wait()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// A second replica on the same database: one forwards at a time.
	addr2 := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	second := startTreasury(t, "", serveEnv(dbURL, addr2, "TREASURY_RATE_LIMIT=off", "TREASURY_WEBHOOK_ALLOW_PRIVATE=true",
		"TREASURY_NATS_URL="+natsURL), "serve")
	waitStatus(t, second, 30*time.Second, "http://"+addr2+"/readyz", "", http.StatusOK)

	load(0, 60)   // all answered before the kill
	r.proc.kill() // wherever the forwarder is: between a publish and its checkpoint, perhaps
	// The worst of those instants, for certain: everything published, no
	// checkpoint moved. The restarted forwarder sends every event again.
	if _, err := conn.Exec(ctx, `UPDATE subscription_checkpoints SET global_position = 0, updated_at = clock_timestamp()
        WHERE name = $1`, jetstream.CheckpointName); err != nil {
		t.Fatal(err)
	}
	base = "http://" + addr2
	load(60, 90) // the second replica alone serves and forwards meanwhile
	r.serve()
	base = r.base
	load(90, 120)
	// Every payment settled: no event comes after.
	eventually(t, 60*time.Second, "the payments completed", func() error {
		done := 0
		for _, raw := range r.listAll("/v1/payments") {
			var p struct{ Status string }
			if err := json.Unmarshal(raw, &p); err != nil {
				return err
			}
			if p.Status == "completed" {
				done++
			}
		}
		if done != 120 {
			return fmt.Errorf("%d of 120 completed", done)
		}
		return nil
	})
	r.waitProjected()
	type event struct{ id, typ, platform, env string }
	publicEvents := func() ([]event, error) {
		rows, err := conn.Query(ctx, `SELECT id, type, platform_id, environment FROM public_events ORDER BY seq`)
		if err != nil {
			return nil, err
		}
		var out []event
		var e event
		_, err = pgx.ForEachRow(rows, []any{&e.id, &e.typ, &e.platform, &e.env}, func() error {
			out = append(out, e)
			return nil
		})
		return out, err
	}
	js := jetStreamAt(t, natsURL)
	// The payments settle after the load: wait until the log is quiet and
	// the stream holds as many messages as there are public events.
	var want []event
	awaitStreamHolds(t, js, func() (n int, err error) {
		want, err = publicEvents()
		return len(want), err
	})
	if len(want) < 240 {
		t.Fatalf("only %d public events", len(want))
	}
	for i, msg := range streamMessages(t, js, len(want)) {
		w := want[i]
		var body struct {
			ID, Type, Object string
			PlatformID       string `json:"platform_id"`
			Data             json.RawMessage
		}
		if err := json.Unmarshal(msg.Data, &body); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if subject := jetstream.Subject(w.env, w.platform, w.typ); msg.Subject != subject || body.ID != w.id ||
			msg.Header.Get(nats.MsgIdHdr) != w.id || body.Object != "event" || body.Type != w.typ || body.PlatformID != w.platform ||
			len(body.Data) == 0 {
			t.Fatalf("message %d: subject %s, id %s (msg id %s), want %+v as %s", i, msg.Subject, body.ID,
				msg.Header.Get(nats.MsgIdHdr), w, subject)
		}
	}
}

// awaitStreamHolds waits until the JetStream stream holds as many messages
// as there are public events, counted by count (again at each look: the
// log may still grow while payments settle).
func awaitStreamHolds(t *testing.T, js nats.JetStreamContext, count func() (int, error)) {
	t.Helper()
	eventually(t, 60*time.Second, "every public event in the stream", func() error {
		n, err := count()
		if err != nil {
			return err
		}
		info, err := js.StreamInfo(jetstream.StreamName)
		if err != nil {
			return err
		}
		if info.State.Msgs != uint64(n) {
			return fmt.Errorf("%d messages, %d public events", info.State.Msgs, n)
		}
		return nil
	})
}

// jetStreamAt connects to the NATS server at url for the rest of the test.
func jetStreamAt(t *testing.T, url string) nats.JetStreamContext {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// streamMessages reads the stream's messages from the first, in the
// stream's order: n of them, and fails if one more follows.
func streamMessages(t *testing.T, js nats.JetStreamContext, n int) []*nats.Msg {
	t.Helper()
	sub, err := js.SubscribeSync("treasury.>", nats.OrderedConsumer(), nats.DeliverAll())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	msgs := make([]*nats.Msg, 0, n)
	for i := range n {
		msg, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("message %d of %d: %v", i, n, err)
		}
		msgs = append(msgs, msg)
	}
	if extra, err := sub.NextMsg(500 * time.Millisecond); err == nil {
		t.Errorf("a message more than the %d public events: %s %s", n, extra.Subject, extra.Data)
	}
	return msgs
}
