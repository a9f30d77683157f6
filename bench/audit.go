package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"time"
)

// auditResult is `treasury audit verify` over the log the loads left,
// before any rebuild touches the projections: the hash chain, every
// projection compared with its replay of the log, the ledger's balance.
type auditResult struct {
	Clean   bool    `json:"clean"`
	Seconds float64 `json:"seconds"`
	Output  string  `json:"output"`
}

// audit runs `treasury audit verify` beside the (idle) service once the
// readers have caught up with the loads.
func (b *bench) audit(bin, dbURL string) (*auditResult, error) {
	b.svc.settle("the audit")
	logf("audit: treasury audit verify")
	ctx, cancel := context.WithTimeout(b.svc.parent, 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "audit", "verify")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "TREASURY_LOG_LEVEL=warn")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	res := &auditResult{Seconds: time.Since(start).Seconds(), Output: strings.TrimSpace(string(out))}
	var exit *exec.ExitError
	switch {
	case err == nil:
		res.Clean = true
	case errors.As(err, &exit) && exit.ExitCode() == 1: // the audit found a difference
	default:
		return res, err
	}
	logf("audit: clean %v in %.1f s:\n%s", res.Clean, res.Seconds, res.Output)
	return res, nil
}
