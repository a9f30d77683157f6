package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections"
	"github.com/opentreasury/treasury/sandbox"
	"github.com/opentreasury/treasury/webhooks"
)

// replayResult is what `treasury subscriptions replay` prints (--json).
type replayResult struct {
	Subscription string `json:"subscription"`
	Source       string `json:"source"` // "events" (the log) or "public_events" (the fan-out's feed)
	Events       int64  `json:"events"` // the events it passed over (every one up to the head)
	// Handled are the events given to its handler: fewer than Events for
	// a subscriber that reads only some types (the KYB decider, the
	// sandbox scheduler), which skips the others in SQL.
	Handled         int64    `json:"handled"`
	Seconds         float64  `json:"seconds"`
	EventsPerSecond float64  `json:"events_per_second"`
	ResetSeconds    float64  `json:"reset_seconds"`
	Emptied         []string `json:"tables_emptied"`
}

// replayer is one subscriber as the service constructs it, and what it
// writes (emptied before the replay).
type replayer struct {
	tables []string
	// sub builds the subscription the service runs (nil for the fan-out,
	// which is no eventstore.Subscription).
	sub func(pool *pgxpool.Pool, log *slog.Logger) *eventstore.Subscription
}

// replayers are the log's subscribers, constructed as serve constructs
// them (without wake-ups: the replay steps them itself).
func replayers() map[string]replayer {
	rs := map[string]replayer{
		eventstore.ChainName: {tables: []string{"event_chain"}, sub: func(pool *pgxpool.Pool, _ *slog.Logger) *eventstore.Subscription {
			return eventstore.ChainSubscription(pool, nil)
		}},
		sandbox.SubscriptionName: {tables: []string{"sandbox_schedule"}, sub: func(pool *pgxpool.Pool, log *slog.Logger) *eventstore.Subscription {
			sim := &sandbox.Simulator{App: app.New(pool, nil, log), Pool: pool, Log: log}
			return sim.Subscription(nil)
		}},
		// The decider writes nothing of its own: it issues DecideKYB,
		// which records nothing for a verification already decided.
		app.KYBDeciderName: {sub: func(pool *pgxpool.Pool, log *slog.Logger) *eventstore.Subscription {
			return app.New(pool, nil, log).KYBDecider(nil)
		}},
		webhooks.FanoutName: {tables: []string{"webhook_deliveries", "webhook_attempts"}},
	}
	for _, s := range projections.AsyncSubscribers() {
		var tables []string
		for _, p := range s.Projectors {
			tables = append(tables, p.Tables()...)
		}
		rs[s.Name] = replayer{tables: tables, sub: func(pool *pgxpool.Pool, log *slog.Logger) *eventstore.Subscription {
			return projections.NewSubscription(s, pool, nil, log)
		}}
	}
	return rs
}

func subscriptionNames() []string {
	var names []string
	for n := range replayers() {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func subscriptionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "subscriptions", Short: "Operate the log's subscribers"}
	var (
		dbURL  string
		asJSON bool
		force  bool
	)
	replay := &cobra.Command{
		Use:   "replay NAME",
		Short: "Replay one subscriber from the start of the log, on a scratch copy of a database, and time it",
		Long: `Replay resets subscriber NAME's checkpoint, empties what it writes and runs
the service's own code for it (its Step loop; for the webhook fan-out, its
watermill feed and handler) until it reaches the head of the log (of
public_events for the fan-out), then prints events, seconds and events/s.

It is meant for a scratch copy of a database (CREATE DATABASE x TEMPLATE y):
on a serving database it would empty a read model the API reads. It refuses
to run while a treasury process is connected to the database, unless --force.

Subscribers: ` + strings.Join(subscriptionNames(), ", ") + `.
kyb_decider writes nothing of its own: it issues its decisions again,
which record nothing for verifications already decided. The webhook fan-out
matches today's endpoints: an endpoint also gets the events older than it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dbURL == "" {
				dbURL = os.Getenv("DATABASE_URL")
			}
			if dbURL == "" {
				return errors.New("no database: pass --database-url or set DATABASE_URL")
			}
			res, err := replaySubscription(cmd.Context(), dbURL, args[0], force)
			if err != nil {
				return err
			}
			return printReplay(cmd.OutOrStdout(), res, asJSON)
		},
	}
	replay.Flags().StringVar(&dbURL, "database-url", "", "the (scratch) database to replay in (default $DATABASE_URL)")
	replay.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	replay.Flags().BoolVar(&force, "force", false, "replay even though a treasury process is connected to the database")
	cmd.AddCommand(replay)
	return cmd
}

func printReplay(w io.Writer, r *replayResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	_, err := fmt.Fprintf(w, "replayed %s: %d %s (%d handled) in %.3f s (%.0f events/s); emptied %s in %.3f s first\n",
		r.Subscription, r.Events, r.Source, r.Handled, r.Seconds, r.EventsPerSecond, strings.Join(append([]string{}, r.Emptied...), ", "), r.ResetSeconds)
	return err
}

// replayAppName tells the replay's connections from the service's.
const replayAppName = "treasury subscriptions replay"

func replaySubscription(ctx context.Context, dbURL, name string, force bool) (*replayResult, error) {
	r, ok := replayers()[name]
	if !ok {
		return nil, fmt.Errorf("unknown subscription %q (known: %s)", name, strings.Join(subscriptionNames(), ", "))
	}
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("database URL: %w", err)
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 3 * time.Second
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = replayAppName
	cfg.MaxConns = max(cfg.MaxConns, 16)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	if !force {
		var others int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
            WHERE datname = current_database() AND application_name = 'treasury' AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			return nil, err
		}
		if others > 0 {
			return nil, fmt.Errorf("%d treasury connection(s) to this database: replay on a scratch copy (CREATE DATABASE x TEMPLATE y), or pass --force", others)
		}
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	res := &replayResult{Subscription: name, Source: "events", Emptied: r.tables}
	if res.Emptied == nil {
		res.Emptied = []string{}
	}

	// Reset: the checkpoint back to the start, what the subscriber wrote gone.
	t := time.Now()
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The subscription's lock, as its steps hold it: a step under way
		// finishes first, and none moves the checkpoint from where it read
		// it to a position the reset has taken back.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.SubscriptionLock(name)); err != nil {
			return err
		}
		if len(r.tables) > 0 {
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(r.tables, ", ")); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO subscription_checkpoints (name) VALUES ($1)
            ON CONFLICT (name) DO UPDATE SET transaction_id = '0', global_position = 0, updated_at = clock_timestamp()`, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reset %s: %w", name, err)
	}
	res.ResetSeconds = time.Since(t).Seconds()

	if r.sub == nil {
		res.Source = "public_events"
		res.Events, res.Seconds, err = replayFanout(ctx, pool, log)
		res.Handled = res.Events
	} else {
		res.Events, res.Handled, res.Seconds, err = replayLog(ctx, pool, r.sub(pool, log))
	}
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", name, err)
	}
	res.EventsPerSecond = float64(res.Events) / max(res.Seconds, 1e-9)
	return res, nil
}

// replayLog steps sub until its checkpoint reaches the log's head, and
// returns the events up to the head (all of which it passed over) and
// those its handler was given.
func replayLog(ctx context.Context, pool *pgxpool.Pool, sub *eventstore.Subscription) (passed, handled int64, seconds float64, err error) {
	var n atomic.Int64
	handle := sub.Handle
	sub.Handle = func(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
		err := handle(ctx, tx, events)
		if err == nil {
			n.Add(int64(len(events)))
		}
		return err
	}
	head, err := eventstore.Head(ctx, pool)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM events WHERE (transaction_id, global_position) <= ($1::text::xid8, $2)`,
		strconv.FormatUint(head.TransactionID, 10), head.GlobalPosition).Scan(&passed); err != nil {
		return 0, 0, 0, err
	}
	start := time.Now()
	err = sub.CatchUpTo(ctx, head)
	return passed, n.Load(), time.Since(start).Seconds(), err
}

// replayFanout runs the webhook fan-out as serve does (its feed and
// handler in a watermill router) until its checkpoint reaches the last
// public event, and returns how many public events it read.
func replayFanout(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) (int64, float64, error) {
	var last, count int64
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0), count(*) FROM public_events`).Scan(&last, &count); err != nil {
		return 0, 0, err
	}
	router, err := webhooks.NewRouter([]*webhooks.FeedSubscriber{{Pool: pool, Log: log}}, &webhooks.Fanout{Pool: pool}, log)
	if err != nil {
		return 0, 0, err
	}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	ran := make(chan error, 1)
	go func() { ran <- router.Run(rctx) }()
	var elapsed time.Duration
	for {
		var cp int64
		if err := pool.QueryRow(ctx, `SELECT global_position FROM subscription_checkpoints WHERE name = $1`,
			webhooks.FanoutName).Scan(&cp); err != nil {
			stop()
			<-ran
			return 0, 0, err
		}
		if cp >= last {
			elapsed = time.Since(start)
			break
		}
		select {
		case err := <-ran:
			return 0, 0, fmt.Errorf("the fan-out's router stopped at public event %d of %d: %v", cp, last, err)
		case <-ctx.Done():
			stop()
			<-ran
			return 0, 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	stop()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		return count, elapsed.Seconds(), errors.New("the fan-out's router did not stop within 30 s")
	}
	return count, elapsed.Seconds(), nil
}
