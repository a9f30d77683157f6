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
	// Partition is the part of a split reader replayed, "i/P" (its
	// checkpoint is subscription#i/P, as serve names it with
	// TREASURY_READER_PARTITIONS=P); "" for the whole reader.
	Partition string `json:"partition,omitempty"`
	Source    string `json:"source"` // "events" (the log) or "public_events" (the fan-out's feed)
	Events    int64  `json:"events"` // the events it passed over (every one up to the head)
	// Handled are the events given to its handler: fewer than Events for
	// a subscriber that reads only some types (the KYB decider, the
	// sandbox scheduler) or one part of the log, which skips the others
	// in SQL.
	Handled int64   `json:"handled"`
	Seconds float64 `json:"seconds"`
	// EventsPerSecond is Events ÷ Seconds: how fast it passes over the
	// log (or public_events); HandledPerSecond is Handled ÷ Seconds. Both
	// 0 when there was nothing to time (a part of the fan-out that holds
	// no public event: its feed has nothing to emit).
	EventsPerSecond  float64  `json:"events_per_second"`
	HandledPerSecond float64  `json:"handled_per_second"`
	ResetSeconds     float64  `json:"reset_seconds"`
	Emptied          []string `json:"tables_emptied"`
}

// replayer is one subscriber as the service constructs it, and what it
// writes (emptied before the replay).
type replayer struct {
	tables []string
	// sub builds the subscription the service runs (nil for the fan-out,
	// which is no eventstore.Subscription).
	sub func(pool *pgxpool.Pool, log *slog.Logger) *eventstore.Subscription
	// split: serve runs it in TREASURY_READER_PARTITIONS parts (its order
	// across streams, or platforms for the fan-out, does not matter).
	split bool
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
		}, split: true},
		// The decider writes nothing of its own: it issues DecideKYB,
		// which records nothing for a verification already decided.
		app.KYBDeciderName: {sub: func(pool *pgxpool.Pool, log *slog.Logger) *eventstore.Subscription {
			return app.New(pool, nil, log).KYBDecider(nil)
		}, split: true},
		webhooks.FanoutName: {tables: []string{"webhook_deliveries", "webhook_attempts"}, split: true},
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

// splitNames are the subscribers serve splits into parts.
func splitNames() []string {
	var names []string
	for n, r := range replayers() {
		if r.split {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

func subscriptionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "subscriptions", Short: "Operate the log's subscribers"}
	var (
		dbURL      string
		asJSON     bool
		force      bool
		partitions int
		part       int
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

With --partitions P, it replays the parts of a reader that serve splits
(TREASURY_READER_PARTITIONS=P: ` + strings.Join(splitNames(), ", ") + `) one
after another, each alone and from the start of the log, as serve runs it:
the same subscription (or feed) with its Partition set, under its own
checkpoint NAME#i/P. What the reader writes is emptied once, before the
first part. Each part prints a line (a JSON object with --json): the events
it passed over (the whole log, or public_events for the fan-out, whose
parts are split by platform) and those of its part it handled, each per
second. --part I replays part I alone.

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
			_, err := replayParts(cmd.Context(), dbURL, args[0], partitions, part, force, func(res *replayResult) error {
				return printReplay(cmd.OutOrStdout(), res, asJSON)
			})
			return err
		},
	}
	replay.Flags().StringVar(&dbURL, "database-url", "", "the (scratch) database to replay in (default $DATABASE_URL)")
	replay.Flags().BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	replay.Flags().BoolVar(&force, "force", false, "replay even though a treasury process is connected to the database")
	replay.Flags().IntVar(&partitions, "partitions", 1, "replay each part i/P of a reader that serve splits (TREASURY_READER_PARTITIONS=P), one after another; 1: the whole reader")
	replay.Flags().IntVar(&part, "part", -1, "with --partitions, replay only this part (0 to P-1); default: each in turn")
	cmd.AddCommand(replay)
	return cmd
}

func printReplay(w io.Writer, r *replayResult, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(r)
	}
	name := r.Subscription
	if r.Partition != "" {
		name += " part " + r.Partition
	}
	emptied := "emptied " + strings.Join(r.Emptied, ", ")
	if len(r.Emptied) == 0 {
		emptied = "emptied nothing"
	}
	_, err := fmt.Fprintf(w, "replayed %s: %d %s (%d handled) in %.3f s (%.0f events/s, %.0f handled/s); %s and reset its checkpoint in %.3f s first\n",
		name, r.Events, r.Source, r.Handled, r.Seconds, r.EventsPerSecond, r.HandledPerSecond, emptied, r.ResetSeconds)
	return err
}

// replayAppName tells the replay's connections from the service's.
const replayAppName = "treasury subscriptions replay"

// replaySubscription replays the whole of subscriber name.
func replaySubscription(ctx context.Context, dbURL, name string, force bool) (*replayResult, error) {
	res, err := replayParts(ctx, dbURL, name, 1, -1, force, nil)
	if err != nil {
		return nil, err
	}
	return res[0], nil
}

// replayParts replays subscriber name split in count parts (1: the whole
// subscriber): each part (only part `only`, if ≥ 0) in turn, alone, from
// the start of the log. What the subscriber writes is emptied before the
// first; each part's checkpoint is reset before it runs. emit, if set,
// hears each part's result as soon as it is done.
func replayParts(ctx context.Context, dbURL, name string, count, only int, force bool, emit func(*replayResult) error) ([]*replayResult, error) {
	r, ok := replayers()[name]
	if !ok {
		return nil, fmt.Errorf("unknown subscription %q (known: %s)", name, strings.Join(subscriptionNames(), ", "))
	}
	if count < 1 || count > 64 {
		return nil, fmt.Errorf("--partitions %d: must be from 1 to 64", count)
	}
	if count > 1 && !r.split {
		return nil, fmt.Errorf("serve does not split %s: --partitions applies to %s only", name, strings.Join(splitNames(), ", "))
	}
	parts := eventstore.Partitions(count)
	if only >= 0 {
		if only >= count {
			return nil, fmt.Errorf("--part %d: there are parts 0 to %d", only, count-1)
		}
		parts = parts[only : only+1]
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
	var out []*replayResult
	for i, part := range parts {
		tables := r.tables
		if i > 0 {
			tables = nil // emptied before the first part: the parts write beside each other, as in serve
		}
		res, err := replayPart(ctx, pool, log, name, r, part, tables)
		if err != nil {
			return out, err
		}
		out = append(out, res)
		if emit != nil {
			if err := emit(res); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// replayPart resets part's checkpoint of subscriber name (emptying
// tables first) and runs it, as serve constructs it, to the head.
func replayPart(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, name string, r replayer, part eventstore.Partition, tables []string) (*replayResult, error) {
	cp := part.Name(name) // the checkpoint serve gives this part
	res := &replayResult{Subscription: name, Source: "events", Emptied: tables}
	if !part.Whole() {
		res.Partition = fmt.Sprintf("%d/%d", part.Index, part.Count)
	}
	if res.Emptied == nil {
		res.Emptied = []string{}
	}

	// Reset: the checkpoint back to the start, what the subscriber wrote gone.
	t := time.Now()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// The subscription's lock, as its steps hold it: a step under way
		// finishes first, and none moves the checkpoint from where it read
		// it to a position the reset has taken back.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, eventstore.SubscriptionLock(cp)); err != nil {
			return err
		}
		if len(tables) > 0 {
			if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(tables, ", ")); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO subscription_checkpoints (name) VALUES ($1)
            ON CONFLICT (name) DO UPDATE SET transaction_id = '0', global_position = 0, updated_at = clock_timestamp()`, cp)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reset %s: %w", cp, err)
	}
	res.ResetSeconds = time.Since(t).Seconds()

	if r.sub == nil {
		res.Source = "public_events"
		res.Events, res.Handled, res.Seconds, err = replayFanout(ctx, pool, log, part)
	} else {
		sub := r.sub(pool, log)
		if !part.Whole() {
			// As serve (and the sandbox's connector) makes each part.
			sub.Name, sub.Partition = part.Name(sub.Name), part
		}
		res.Events, res.Handled, res.Seconds, err = replayLog(ctx, pool, sub)
	}
	if err != nil {
		return nil, fmt.Errorf("replay %s: %w", cp, err)
	}
	if res.Seconds > 0 {
		res.EventsPerSecond = float64(res.Events) / res.Seconds
		res.HandledPerSecond = float64(res.Handled) / res.Seconds
	}
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

// replayFanout runs the webhook fan-out as serve does (its feed, of part
// of public_events, and handler in a watermill router) until its
// checkpoint reaches the last public event of its part, and returns how
// many public events there are (all of which it passed over: a part's
// feed skips the others in SQL), how many of its part it read, and the
// time it took. A part that holds no public event has nothing to emit:
// 0 s.
func replayFanout(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger, part eventstore.Partition) (passed, handled int64, seconds float64, err error) {
	var last int64
	cond := "true"
	if c := part.SQL("platform_id"); c != "" {
		cond = c
	}
	if err := pool.QueryRow(ctx, `SELECT coalesce(max(seq) FILTER (WHERE `+cond+`), 0), count(*) FILTER (WHERE `+cond+`), count(*)
        FROM public_events`).Scan(&last, &handled, &passed); err != nil {
		return 0, 0, 0, err
	}
	if handled == 0 {
		return passed, 0, 0, nil
	}
	feed := &webhooks.FeedSubscriber{Pool: pool, Log: log, Partition: part}
	router, err := webhooks.NewRouter([]*webhooks.FeedSubscriber{feed}, &webhooks.Fanout{Pool: pool}, log)
	if err != nil {
		return 0, 0, 0, err
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
			feed.Name()).Scan(&cp); err != nil {
			stop()
			<-ran
			return 0, 0, 0, err
		}
		if cp >= last {
			elapsed = time.Since(start)
			break
		}
		select {
		case err := <-ran:
			return 0, 0, 0, fmt.Errorf("the fan-out's router stopped at public event %d of %d: %v", cp, last, err)
		case <-ctx.Done():
			stop()
			<-ran
			return 0, 0, 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	stop()
	select {
	case <-ran:
	case <-time.After(30 * time.Second):
		return passed, handled, elapsed.Seconds(), errors.New("the fan-out's router did not stop within 30 s")
	}
	return passed, handled, elapsed.Seconds(), nil
}
