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

// clientSuites are the client libraries' own test suites (API.md §11),
// each run from its folder with TREASURY_BASE_URL and TREASURY_OPERATOR_KEY
// naming a real server. make test installs their toolchains (test-tools).
var clientSuites = []struct {
	name, dir string
	command   []string
}{
	{"node", "clients/node", []string{"bash", "-c", "npm ci --no-audit --no-fund --loglevel=error && npm test"}},
	{"python", "clients/python", []string{"python3", "-m", "unittest", "discover", "-s", "tests"}},
	{"ruby", "clients/ruby", []string{"ruby", "test/run.rb"}},
	{"go", "clients/go", []string{"go", "test", "-race", "-count=1", "./..."}},
}

// TestClientLibraries runs each client library's suite against its own
// `treasury serve` (sandbox, webhooks allowed to this machine's receivers):
// the journey of issue #17 — every resource, every error class from a real
// answer, a real 429 and its Retry-After, the idempotency key across a
// retry, webhooks verified — as each language's users would run it. A
// missing toolchain fails the test: make test installs them.
func TestClientLibraries(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, suite := range clientSuites {
		t.Run(suite.name, func(t *testing.T) {
			if _, err := exec.LookPath(suite.command[0]); err != nil {
				t.Fatalf("%s is not installed (make test installs it: make test-tools): %v", suite.command[0], err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			srv := startTreasury(t, "", serveEnv(emptyDatabase(t), addr, "TREASURY_WEBHOOK_ALLOW_PRIVATE=true"), "serve")
			waitStatus(t, srv, 30*time.Second, "http://"+addr+"/readyz", "", http.StatusOK)

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, suite.command[0], suite.command[1:]...)
			cmd.Dir = filepath.Join(root, suite.dir)
			cmd.Env = treasuryEnv("TREASURY_BASE_URL=http://"+addr+"/v1", "TREASURY_OPERATOR_KEY="+testOperatorKey)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s (in %s): %v after %s\n%s", strings.Join(suite.command, " "), suite.dir, err,
					time.Since(start).Round(time.Second), tail(string(out), 12000))
			}
			t.Logf("%s: passed in %s\n%s", suite.name, time.Since(start).Round(time.Second), tail(string(out), 600))
		})
	}
}
