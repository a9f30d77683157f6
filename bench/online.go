package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// onlineRebuild is `treasury projections rebuild` run beside the serving
// service while clients keep sending payments: what the API's users see
// of a rebuild.
type onlineRebuild struct {
	Clients   int            `json:"clients"`
	Rate      int            `json:"payments_per_second_offered"`
	Seconds   float64        `json:"seconds"`
	CLIOutput string         `json:"cli_output"`
	Payments  int            `json:"payments_ok"`
	P50ms     float64        `json:"payments_p50_ms"`
	P99ms     float64        `json:"payments_p99_ms"`
	MaxMs     float64        `json:"payments_max_ms"`
	Failed    map[string]int `json:"payments_failed_by_status,omitempty"`
	Note      string         `json:"note"`
}

const (
	onlineClients = 8
	onlineRate    = 100 // payments/s, about 500 events/s
	onlineMax     = 10 * time.Minute
)

// rebuildOnline runs the rebuild CLI while onlineClients send payments,
// and reports the payments' latency (its maximum is about the rebuild's
// pause) and failures beside the CLI's own account of the pause.
func (b *bench) rebuildOnline(bin, dbURL string) (*onlineRebuild, error) {
	res := &onlineRebuild{Clients: onlineClients,
		Rate: onlineRate,
		Note: "payments offered at a steady rate by 8 clients for the whole rebuild (a rebuild replays a few thousand events/s here, so a load that writes the log faster than that would never let it catch up); the CLI output says how long commands were paused"}
	ctx, stop := context.WithCancel(b.svc.ctx)
	defer stop()
	fn := b.paymentFn(b.svc.accounts, "bench-"+b.runID+"-online")
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		lat    []time.Duration
		failed = map[string]int{}
	)
	seed := uint64(time.Now().UnixNano())
	tick := time.NewTicker(time.Second / onlineRate)
	defer tick.Stop()
	for c := range onlineClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &worker{id: c, rng: rand.New(rand.NewPCG(seed, uint64(c)))}
			for ctx.Err() == nil {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				t := time.Now()
				o := fn(ctx, w)
				d := time.Since(t)
				mu.Lock()
				if o.ok {
					lat = append(lat, d)
				} else if ctx.Err() == nil {
					failed[o.class]++
				}
				mu.Unlock()
			}
		}()
	}
	logf("rebuild: treasury projections rebuild beside the serving service, %s sending %d payments/s", nClients(onlineClients), onlineRate)
	// Bounded: a rebuild slower than the payments sent beside it would
	// never catch up.
	rctx, cancel := context.WithTimeout(b.svc.ctx, onlineMax)
	defer cancel()
	cmd := exec.CommandContext(rctx, bin, "projections", "rebuild")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL, "TREASURY_LOG_LEVEL=warn")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	res.Seconds = time.Since(start).Seconds()
	stop()
	wg.Wait()
	res.CLIOutput = strings.TrimSpace(string(out))
	res.Payments = len(lat)
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	if len(failed) > 0 {
		res.Failed = failed
	}
	if rctx.Err() == context.DeadlineExceeded {
		return res, fmt.Errorf("treasury projections rebuild beside the service: not done within %s", onlineMax)
	}
	if err != nil {
		return res, fmt.Errorf("treasury projections rebuild beside the service: %v: %s", err, res.CLIOutput)
	}
	logf("rebuild: online in %.1f s; %d payments meanwhile, p99 %.0f ms, max %.0f ms, non-2xx %s; the CLI says: %s",
		res.Seconds, res.Payments, res.P99ms, res.MaxMs, classesString(failed), res.CLIOutput)
	return res, nil
}

// analyzeEvery keeps the planner's statistics current while the bench
// runs, as autovacuum would: this machine's PostgreSQL runs with
// autovacuum off, and plans made for empty tables (a sequential scan of
// payments, every account of the platform walked for one) would be
// measured instead of the service. It stops with ctx.
func analyzeEvery(ctx context.Context, db *pgxpool.Pool, every time.Duration) {
	var on string
	if err := db.QueryRow(ctx, `SHOW autovacuum`).Scan(&on); err != nil || on == "on" {
		return
	}
	logf("autovacuum is off on this server: the bench runs ANALYZE every %s, as autovacuum would", every)
	for {
		if _, err := db.Exec(ctx, `ANALYZE`); err != nil && ctx.Err() == nil {
			logf("ANALYZE: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
