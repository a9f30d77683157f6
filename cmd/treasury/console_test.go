package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium is Debian's Chromium, which make test installs (test-tools).
const chromium = "/usr/bin/chromium"

// TestConsole runs the console's journeys (console/e2e, issue #19) in
// Debian's Chromium, driven by playwright-core, against a real `treasury
// serve`: sign-in and sign-out, accounts, payments, a refused CSRF
// attempt, one platform never seeing another's objects, the operator's
// approval, a phone's screen; no console error or failed request on any
// page. Its screenshots go to docs/console, which the README links.
func TestConsole(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"node", "npm", chromium} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed (make test installs it: make test-tools): %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	// Live ACH files go to an outbox of the test's, so that the operator's
	// journey can show one.
	srv := startTreasury(t, "", serveEnv(emptyDatabase(t), addr, "TREASURY_RATE_LIMIT=off", "TREASURY_WEBHOOK_ALLOW_PRIVATE=true",
		"TREASURY_ACH_OUTBOX=file://"+t.TempDir(), "TREASURY_ACH_ORIGIN=1234567890", "TREASURY_ACH_COMPANY_ID=1234567890",
		"TREASURY_ACH_COMPANY_NAME=CONSOLE E2E"), "serve")
	waitStatus(t, srv, 30*time.Second, "http://"+addr+"/readyz", "", http.StatusOK)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", "npm ci --no-audit --no-fund --loglevel=error && npm test")
	cmd.Dir = filepath.Join(root, "console", "e2e")
	cmd.Env = treasuryEnv("TREASURY_URL=http://"+addr, "TREASURY_OPERATOR_KEY="+testOperatorKey,
		"CHROMIUM="+chromium, "SCREENSHOTS="+filepath.Join(root, "docs", "console"))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the console's journeys: %v after %s\n%s", err, time.Since(start).Round(time.Second), tail(string(out), 12000))
	}
	if !strings.Contains(string(out), "# fail 0") {
		t.Fatalf("the console's journeys did not report their count:\n%s", tail(string(out), 4000))
	}
	t.Logf("passed in %s\n%s", time.Since(start).Round(time.Second), tail(string(out), 600))
}
