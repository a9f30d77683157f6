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
	Subscription string `json:"subscription"`
	// Partition is "i/P" for a part of a split reader (--partitions P).
	Partition        string  `json:"partition,omitempty"`
	Source           string  `json:"source"`
	Events           int64   `json:"events"`
	Handled          int64   `json:"handled"`
	Seconds          float64 `json:"seconds"`
	EventsPerSecond  float64 `json:"events_per_second"`
	HandledPerSecond float64 `json:"handled_per_second"`
	ResetSeconds     float64 `json:"reset_seconds"`
	WallSeconds      float64 `json:"wall_seconds_of_the_cli"`
	Error            string  `json:"error,omitempty"`
}

// replayPartitions is the split whose parts the replay times, as serve
// runs them with TREASURY_READER_PARTITIONS=2.
const replayPartitions = 2

// splitOrder are the readers serve splits, in the order they are replayed.
var splitOrder = []string{"sandbox", "kyb_decider", fanoutName}

type replaysResult struct {
	LogEvents    int64       `json:"log_events"`
	PublicEvents int64       `json:"public_events"`
	CopySeconds  float64     `json:"scratch_copy_seconds"`
	Runs         []replayRun `json:"runs"`
	// Parts are the parts of the split readers, each alone (Partitions).
	Partitions int         `json:"partitions"`
	Parts      []replayRun `json:"parts"`
	Note       string      `json:"note"`
}

// replays stops the server (if the rebuild has not), copies its database
// (CREATE DATABASE … TEMPLATE) and replays each subscriber alone in the
// copy with `treasury subscriptions replay`, one after the other.
func (b *bench) replays(bin string) (*replaysResult, error) {
	res := &replaysResult{Note: "each subscriber alone, in a scratch copy of the bench's database taken after the server stopped: its checkpoint " +
		"reset, what it writes emptied, then its own code run to the head (`treasury subscriptions replay NAME`); events/s = the events it " +
		"handled ÷ the time from the reset to the head (the fan-out reads public_events, not the log). The fan-out matches the endpoints " +
		"of today (the bench's receiver is deleted by then), so it writes no deliveries here; kyb_decider decides nothing new. parts: each part i/P of the readers serve splits (TREASURY_READER_PARTITIONS=P), alone, one " +
		"after the other, each from the start of the log (`treasury subscriptions replay NAME --partitions P`), with serve's own " +
		"subscription or feed for that part: events_per_second = the events of the log (public_events for the fan-out) it passed over ÷ " +
		"its time, handled_per_second = those of its part it handled ÷ the same time. The fan-out is split by platform: the bench's one " +
		"platform puts all its public events in one part, and the other has nothing to emit (0 s, no rate).", Partitions: replayPartitions}
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
	cli := func(name string, extra ...string) []replayRun {
		what := strings.TrimSpace("treasury subscriptions replay " + name + " " + strings.Join(extra, " "))
		logf("replay: %s (at most %s)", what, b.o.replayTimeout)
		rctx, cancel := context.WithTimeout(ctx, b.o.replayTimeout)
		defer cancel()
		cmd := exec.CommandContext(rctx, bin, append([]string{"subscriptions", "replay", name, "--json", "--database-url", url}, extra...)...)
		cmd.Env = append(os.Environ(), "TREASURY_LOG_LEVEL=warn")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		var runs []replayRun
		// One JSON object per line: the whole subscriber, or each part.
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for err == nil && dec.More() {
			var run replayRun
			if err = dec.Decode(&run); err == nil {
				runs = append(runs, run)
			}
		}
		wall := time.Since(start).Seconds()
		if err == nil && len(runs) == 0 {
			err = fmt.Errorf("no result: %q", out)
		}
		if err != nil {
			run := replayRun{Subscription: name}
			if rctx.Err() == context.DeadlineExceeded {
				run.Error = fmt.Sprintf("not done within %s", b.o.replayTimeout)
			} else {
				run.Error = fmt.Sprintf("%v: %s", err, strings.TrimSpace(stderr.String()))
			}
			failed = append(failed, what+": "+run.Error)
			logf("replay: %s: %s", what, run.Error)
			return append(runs, run)
		}
		for i := range runs {
			runs[i].WallSeconds = wall
			r := runs[i]
			part := ""
			if r.Partition != "" {
				part = " part " + r.Partition
			}
			logf("replay: %s%s: %d %s (%d handled) in %.1f s: %.0f events/s, %.0f handled/s",
				name, part, r.Events, r.Source, r.Handled, r.Seconds, r.EventsPerSecond, r.HandledPerSecond)
		}
		return runs
	}
	for _, name := range allSubscribers {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Runs = append(res.Runs, cli(name)...)
	}
	// Each part of the split readers alone, as serve runs it with
	// TREASURY_READER_PARTITIONS=2.
	for _, name := range splitOrder {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		res.Parts = append(res.Parts, cli(name, "--partitions", fmt.Sprint(replayPartitions))...)
	}
	if len(failed) > 0 {
		return res, fmt.Errorf("%s", strings.Join(failed, "; "))
	}
	return res, nil
}
