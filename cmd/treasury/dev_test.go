package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/eventstore/pglocal"
)

// welcome is what `treasury dev` prints.
type welcome struct {
	OperatorKey string
	PlatformID  string
	SandboxKey  string
	Curls       []string // the curl commands, as printed
}

var (
	operatorKeyRe = regexp.MustCompile(`(?m)^\s*Operator key:\s+(\S+)\s*$`)
	platformRe    = regexp.MustCompile(`(?m)^\s*Platform:\s+(\S+)\s*$`)
	sandboxKeyRe  = regexp.MustCompile(`(?m)^\s*Sandbox key:\s+(\S+)\s*$`)
	curlRe        = regexp.MustCompile(`(?m)^\s*(curl .*?)\s*$`)
)

// parseWelcome reads the welcome text once it is complete.
func parseWelcome(out string) (welcome, error) {
	var w welcome
	for re, dst := range map[*regexp.Regexp]*string{operatorKeyRe: &w.OperatorKey, platformRe: &w.PlatformID, sandboxKeyRe: &w.SandboxKey} {
		m := re.FindStringSubmatch(out)
		if m == nil {
			return w, fmt.Errorf("no %q line yet in %q", re, out)
		}
		*dst = m[1]
	}
	for _, m := range curlRe.FindAllStringSubmatch(out, -1) {
		w.Curls = append(w.Curls, m[1])
	}
	if len(w.Curls) == 0 || !strings.Contains(out, "Stop: Ctrl-C") {
		return w, fmt.Errorf("welcome not complete yet: %q", out)
	}
	return w, nil
}

// runDev starts `treasury dev` in dir and waits for its welcome text.
func runDev(t *testing.T, dir string, env []string) (*proc, welcome) {
	t.Helper()
	p := startTreasury(t, dir, env, "dev")
	var w welcome
	eventually(t, 60*time.Second, "treasury dev prints its welcome", func() error {
		if done, err := p.exited(); done {
			t.Fatalf("treasury dev exited: %v\nstdout: %s\nstderr: %s", err, p.stdout.String(), p.stderr.String())
		}
		var err error
		w, err = parseWelcome(p.stdout.String())
		return err
	})
	return p, w
}

// runCurl runs a printed curl command through bash, exactly as printed.
func runCurl(t *testing.T, command string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, stderr.String())
	}
	return out
}

// TestDev: `treasury dev` on DATABASE_URL migrates an empty database,
// creates an approved demo platform, prints keys and curl commands that
// work as printed, and on a second run reuses the same platform and keys.
func TestDev(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl")
	}
	dbURL := emptyDatabase(t)
	// dev keeps its keys in <repo root>/.data; a folder with its own go.mod
	// stands in for the repository, so the developer's .data is untouched.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	repoCreds := filepath.Join(pglocal.RepoRoot(), ".data", "dev-credentials.json")
	repoBefore, repoErr := os.ReadFile(repoCreds)

	port := freePort(t)
	env := []string{"DATABASE_URL=" + dbURL, fmt.Sprintf("TREASURY_ADDR=127.0.0.1:%d", port)}
	p, first := runDev(t, dir, env)
	if !strings.HasPrefix(first.OperatorKey, "op_") || !strings.HasPrefix(first.SandboxKey, "sk_sandbox_") || !strings.HasPrefix(first.PlatformID, "plt_") {
		t.Fatalf("unexpected keys printed: %+v\n%s", first, p.stdout.String())
	}
	if !strings.Contains(p.stdout.String(), "(PostgreSQL: DATABASE_URL)") {
		t.Errorf("dev does not say it uses DATABASE_URL:\n%s", p.stdout.String())
	}
	if len(first.Curls) < 2 {
		t.Fatalf("want two curl commands, got %q", first.Curls)
	}

	// The first curl command, exactly as printed.
	var got platformJSON
	if err := json.Unmarshal(runCurl(t, first.Curls[0]), &got); err != nil {
		t.Fatalf("%s: not the platform JSON: %v", first.Curls[0], err)
	}
	if got.ID != first.PlatformID || got.Object != "platform" || got.Status != "approved" || got.Environment != "sandbox" {
		t.Errorf("%s returned %+v, want the approved platform %s in sandbox", first.Curls[0], got, first.PlatformID)
	}
	// The second one lists the sandbox key.
	var keys struct {
		Object string `json:"object"`
		Data   []struct {
			Environment string `json:"environment"`
		} `json:"data"`
	}
	if err := json.Unmarshal(runCurl(t, first.Curls[1]), &keys); err != nil || keys.Object != "list" || len(keys.Data) != 1 || keys.Data[0].Environment != "sandbox" {
		t.Errorf("%s: want a list with the one sandbox key, got %+v (%v)", first.Curls[1], keys, err)
	}
	// The printed operator key works on operator routes.
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	r := mustCall(t, http.MethodGet, base+"/v1/operator/platforms", first.OperatorKey, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("operator key: %s", r)
	}
	if ids := decodeJSON[platformList](t, r).ids(); len(ids) != 1 || ids[0] != first.PlatformID {
		t.Errorf("platforms after the first run: %v, want just %s", ids, first.PlatformID)
	}
	if r := mustCall(t, http.MethodGet, base+"/readyz", "", nil); r.Status != http.StatusOK {
		t.Errorf("/readyz: %s", r)
	}
	p.stop()
	if _, err := p.exited(); err != nil {
		t.Errorf("treasury dev did not exit cleanly on SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".data", "dev-credentials.json")); err != nil {
		t.Errorf("credentials not saved under the working directory's root: %v", err)
	}

	// A second run: the same platform and keys, nothing created again.
	p2, second := runDev(t, dir, env)
	if second.PlatformID != first.PlatformID || second.SandboxKey != first.SandboxKey || second.OperatorKey != first.OperatorKey {
		t.Errorf("second run printed other credentials:\nfirst  %+v\nsecond %+v", first, second)
	}
	if err := json.Unmarshal(runCurl(t, second.Curls[0]), &got); err != nil || got.ID != first.PlatformID || got.Status != "approved" {
		t.Errorf("second run, %s: got %+v (%v)", second.Curls[0], got, err)
	}
	r = mustCall(t, http.MethodGet, base+"/v1/operator/platforms", second.OperatorKey, nil)
	if ids := decodeJSON[platformList](t, r).ids(); len(ids) != 1 {
		t.Errorf("platforms after the second run: %v, want just %s", ids, first.PlatformID)
	}
	p2.stop()

	repoAfter, repoErrAfter := os.ReadFile(repoCreds)
	if (repoErr == nil) != (repoErrAfter == nil) || !bytes.Equal(repoBefore, repoAfter) {
		t.Errorf("the test changed the repository's %s", repoCreds)
	}
}
