package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opentreasury/treasury/eventstore/pglocal"
)

// replayRun is one subscriber replayed alone: the output of `treasury
// subscriptions replay NAME --json`.
type replayRun struct {
	Subscription    string  `json:"subscription"`
	Source          string  `json:"source"`
	Events          int64   `json:"events"`
	Seconds         float64 `json:"seconds"`
	EventsPerSecond float64 `json:"events_per_second"`
	ResetSeconds    float64 `json:"reset_seconds"`
	WallSeconds     float64 `json:"wall_seconds_of_the_cli"`
	Error           string  `json:"error,omitempty"`
}

type replaysResult struct {
	LogEvents    int64       `json:"log_events"`
	PublicEvents int64       `json:"public_events"`
	CopySeconds  float64     `json:"scratch_copy_seconds"`
	Runs         []replayRun `json:"runs"`
	Note         string      `json:"note"`
}

// replays stops the server (if the rebuild has not), copies its database
// (CREATE DATABASE … TEMPLATE) and replays each subscriber alone in the
// copy with `treasury subscriptions replay`, one after the other.
func (b *bench) replays(bin string) (*replaysResult, error) {
	res := &replaysResult{Note: "each subscriber alone, in a scratch copy of the bench's database taken after the server stopped: its checkpoint " +
		"reset, what it writes emptied, then its own code run to the head (`treasury subscriptions replay NAME`); events/s = the events it " +
		"handled ÷ the time from the reset to the head (the fan-out reads public_events, not the log). The fan-out matches the endpoints " +
		"of today (the bench's receiver is deleted by then), so it writes no deliveries here; kyb_decider decides nothing new."}
	if b.svc.alive() {
		b.svc.settle("the replays")
		logf("replay: stopping treasury serve")
		b.svc.stop()
	}
	ctx := b.svc.parent
	if err := b.svc.db.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM public_events)`).Scan(&res.LogEvents, &res.PublicEvents); err != nil {
		return res, err
	}
	b.svc.db.Reset() // no connection to the template may stay open
	scratch := b.svc.dbName + "_replay"
	admin, err := pgx.Connect(ctx, b.adminURL)
	if err != nil {
		return res, err
	}
	t := time.Now()
	for attempt := 0; ; attempt++ {
		_, err = admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, scratch, b.svc.dbName))
		if err == nil || attempt == 50 || !strings.Contains(err.Error(), "being accessed by other users") {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	admin.Close(ctx)
	if err != nil {
		return res, fmt.Errorf("scratch copy: %w", err)
	}
	res.CopySeconds = time.Since(t).Seconds()
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if c, err := pgx.Connect(dctx, b.adminURL); err == nil {
			if _, err := c.Exec(dctx, `DROP DATABASE IF EXISTS `+scratch+` WITH (FORCE)`); err != nil {
				logf("replay: could not drop %s: %v (drop it by hand)", scratch, err)
			}
			c.Close(dctx)
		}
	}()
	url, err := pglocal.WithDatabase(b.adminURL, scratch)
	if err != nil {
		return res, err
	}
	logf("replay: scratch copy %s of %d events (%d public events) in %.1f s", scratch, res.LogEvents, res.PublicEvents, res.CopySeconds)
	var failed []string
	for _, name := range allSubscribers {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		logf("replay: treasury subscriptions replay %s (at most %s)", name, b.o.replayTimeout)
		rctx, cancel := context.WithTimeout(ctx, b.o.replayTimeout)
		cmd := exec.CommandContext(rctx, bin, "subscriptions", "replay", name, "--json", "--database-url", url)
		cmd.Env = append(os.Environ(), "TREASURY_LOG_LEVEL=warn")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		cancel()
		run := replayRun{Subscription: name, WallSeconds: time.Since(start).Seconds()}
		if err == nil {
			err = json.Unmarshal(out, &run)
			run.WallSeconds = time.Since(start).Seconds()
		}
		if err != nil {
			if rctx.Err() == context.DeadlineExceeded {
				run.Error = fmt.Sprintf("not at the head within %s", b.o.replayTimeout)
			} else {
				run.Error = fmt.Sprintf("%v: %s", err, strings.TrimSpace(stderr.String()))
			}
			failed = append(failed, name+": "+run.Error)
			logf("replay: %s: %s", name, run.Error)
		} else {
			logf("replay: %s: %d %s in %.1f s: %.0f events/s", name, run.Events, run.Source, run.Seconds, run.EventsPerSecond)
		}
		res.Runs = append(res.Runs, run)
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return res, nil
}
