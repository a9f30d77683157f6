package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pgtest"
)

// TestAuditVerifyCommand: `treasury audit verify` exits 0 on a service's
// database once its subscribers caught up, and 1 with a report naming the
// problem after an event was edited behind the log's back; `treasury events
// export` writes one linked event a line.
func TestAuditVerifyCommand(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + addr
	p := startTreasury(t, "", serveEnv(url, addr), "serve")
	waitStatus(t, p, 30*time.Second, base+"/readyz", "", http.StatusOK)
	r := mustCall(t, http.MethodPost, base+"/v1/platforms", testOperatorKey, map[string]any{"name": "Audited", "contact_email": "ops@example.com"})
	if r.Status != http.StatusCreated {
		t.Fatalf("create platform: %s", r)
	}
	id := decodeJSON[map[string]any](t, r)["id"].(string)
	if r := mustCall(t, http.MethodPost, base+"/v1/operator/platforms/"+id+"/approve", testOperatorKey, nil); r.Status != http.StatusOK {
		t.Fatalf("approve: %s", r)
	}

	command := func(args ...string) *exec.Cmd {
		c := exec.Command(treasuryBin, args...)
		c.Env = treasuryEnv("DATABASE_URL=" + url)
		return c
	}
	verify := func() (string, int) {
		out, err := command("audit", "verify").CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("audit verify: %v", err)
		}
		return string(out), code
	}
	// The serving process links the events in the background: poll until clean.
	var out string
	eventually(t, 20*time.Second, "audit verify to be clean", func() error {
		o, code := verify()
		out = o
		if code != 0 || !strings.Contains(o, "hash chain:   ok, 3 links") {
			return fmt.Errorf("exit %d: %s", code, o)
		}
		return nil
	})
	if !strings.Contains(out, "audit:        clean") {
		t.Fatalf("report: %s", out)
	}
	export, err := command("events", "export", "--platform", id).Output()
	if err != nil {
		t.Fatalf("events export: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(export)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"seq":1`) {
		t.Fatalf("export: %s", export)
	}
	// Each line verifies alone: event_hash = SHA-256 of its canonical bytes.
	for i, l := range lines {
		var line struct {
			Canonical string `json:"canonical"`
			EventHash string `json:"event_hash"`
			Prev      string `json:"prev_chain_hash"`
			Chain     string `json:"chain_hash"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if sum := sha256.Sum256([]byte(line.Canonical)); hex.EncodeToString(sum[:]) != line.EventHash {
			t.Errorf("line %d: event_hash %q is not the SHA-256 of its canonical bytes", i, line.EventHash)
		}
		prev, _ := hex.DecodeString(line.Prev)
		own, _ := hex.DecodeString(line.EventHash)
		if sum := sha256.Sum256(append(prev, own...)); hex.EncodeToString(sum[:]) != line.Chain {
			t.Errorf("line %d: chain_hash %q is not SHA-256(prev_chain_hash ‖ event_hash)", i, line.Chain)
		}
	}
	// Another platform's id, or a window before everything: nothing.
	for _, args := range [][]string{{"--platform", "plt_00000000000000000000000000"}, {"--to", "2000-01-01"}} {
		out, err := command(append([]string{"events", "export"}, args...)...).Output()
		if err != nil || len(out) != 0 {
			t.Errorf("events export %v: %v, %d bytes; want nothing", args, err, len(out))
		}
	}
	// Bad filters are refused, not answered with an empty file.
	for _, args := range [][]string{{"--platform", "acme"}, {"--from", "2030-01-02", "--to", "2030-01-01"}, {"--from", "yesterday"}} {
		if out, err := command(append([]string{"events", "export"}, args...)...).CombinedOutput(); err == nil {
			t.Errorf("events export %v exited 0: %s", args, out)
		}
	}

	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`ALTER TABLE events DISABLE TRIGGER events_no_update_or_delete`,
		`UPDATE events SET data = jsonb_set(data, '{name}', '"Edited"') WHERE event_type = 'platform.registered'`,
		`ALTER TABLE events ENABLE TRIGGER events_no_update_or_delete`,
	} {
		if _, err := conn.Exec(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	out, code := verify()
	if code != 1 || !strings.Contains(out, "BROKEN at seq 1") || !strings.Contains(out, "edited") || !strings.Contains(out, "platforms DIFFERS") {
		t.Fatalf("after an edit: exit %d:\n%s", code, out)
	}
}
