package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/spf13/cobra"

	"github.com/opentreasury/treasury/domain"
	"github.com/opentreasury/treasury/eventstore"
	"github.com/opentreasury/treasury/projections/rebuild"
)

func poolFromEnv(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" {
		return nil, errors.New("DATABASE_URL is not set")
	}
	return openPool(ctx, cfg.DatabaseURL)
}

// errAuditFailed makes `audit verify` exit 1 after printing its report.
var errAuditFailed = errors.New("audit found differences")

func auditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit", Short: "Check the event log and everything built from it"}
	cmd.AddCommand(&cobra.Command{
		Use:   "verify",
		Short: "Recompute the hash chain, rebuild every projection into a scratch schema and compare, check the ledger balances; exit 1 on any difference",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pool, err := poolFromEnv(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			ok := true
			brk, links, err := eventstore.VerifyChain(ctx, pool)
			if err != nil {
				return err
			}
			if brk != nil {
				ok = false
				fmt.Printf("hash chain:   BROKEN at %s (after %d links checked)\n", brk, links)
			} else {
				fmt.Printf("hash chain:   ok, %d links\n", links)
			}
			diffs, events, err := rebuild.CompareWithLog(ctx, pool)
			if err != nil {
				return err
			}
			if len(diffs) == 0 {
				fmt.Printf("projections:  ok, every table equals its rebuild from %d events\n", events)
			}
			for _, d := range diffs {
				ok = false
				fmt.Printf("projections:  %s DIFFERS: %d live rows the log does not produce, %d rebuilt rows missing from it\n",
					d.Table, d.OnlyLive, d.OnlyRebuilt)
			}
			bad, total, err := rebuild.LedgerImbalance(ctx, pool)
			if err != nil {
				return err
			}
			if len(bad) == 0 && total == 0 {
				fmt.Println("ledger:       ok, Σ debits = Σ credits in every journal entry and overall")
			} else {
				ok = false
				fmt.Printf("ledger:       UNBALANCED: overall debits − credits = %d; entries: %v\n", total, bad)
			}
			if !ok {
				return errAuditFailed
			}
			fmt.Println("audit:        clean")
			return nil
		},
	})
	return cmd
}

// exportLine is one event of an export, with what proves it.
type exportLine struct {
	Seq           int64           `json:"seq"`
	Event         json.RawMessage `json:"event"`
	Canonical     string          `json:"canonical"`
	EventHash     string          `json:"event_hash"`
	PrevChainHash string          `json:"prev_chain_hash"`
	ChainHash     string          `json:"chain_hash"`
}

func eventsCmd() *cobra.Command {
	var platform, from, to string
	cmd := &cobra.Command{Use: "events", Short: "The event log for auditors"}
	export := &cobra.Command{
		Use:   "export",
		Short: "Write linked events as NDJSON (seq, event, canonical bytes, event hash, previous and own chain hash)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			pool, err := poolFromEnv(ctx)
			if err != nil {
				return err
			}
			defer pool.Close()
			var after, before *time.Time
			for _, x := range []struct {
				s string
				t **time.Time
			}{{from, &after}, {to, &before}} {
				if x.s == "" {
					continue
				}
				t, err := time.Parse(time.RFC3339, x.s)
				if err != nil {
					if t, err = time.Parse("2006-01-02", x.s); err != nil {
						return fmt.Errorf("--from and --to take RFC 3339 times or dates: %q", x.s)
					}
				}
				*x.t = &t
			}
			if after != nil && before != nil && !after.Before(*before) {
				return fmt.Errorf("--from (%s) must be before --to (%s)", from, to)
			}
			if platform != "" && !strings.HasPrefix(platform, domain.PrefixPlatform) {
				return fmt.Errorf("--platform takes a platform id (%s…), not %q", domain.PrefixPlatform, platform)
			}
			return exportEvents(ctx, pool, platform, after, before)
		},
	}
	export.Flags().StringVar(&platform, "platform", "", "only this platform's events")
	export.Flags().StringVar(&from, "from", "", "only events recorded at or after this time (RFC 3339 or YYYY-MM-DD)")
	export.Flags().StringVar(&to, "to", "", "only events recorded before this time (exclusive: a date means its midnight, UTC)")
	cmd.AddCommand(export)
	return cmd
}

func exportEvents(ctx context.Context, pool *pgxpool.Pool, platform string, after, before *time.Time) error {
	rows, err := pool.Query(ctx, `SELECT c.seq, c.event_hash, c.chain_hash,
            coalesce((SELECT p.chain_hash FROM event_chain p WHERE p.seq = c.seq - 1), ''::bytea),
            e.global_position, e.transaction_id::text::bigint, e.event_id, e.stream_id, e.stream_version, e.event_type,
            e.schema_version, coalesce(e.platform_id, ''), coalesce(e.environment, ''), e.data, e.metadata, e.recorded_at
        FROM event_chain c JOIN events e ON e.event_id = c.event_id
        WHERE ($1 = '' OR e.platform_id = $1) AND ($2::timestamptz IS NULL OR e.recorded_at >= $2)
          AND ($3::timestamptz IS NULL OR e.recorded_at < $3)
        ORDER BY c.seq`, platform, after, before)
	if err != nil {
		return err
	}
	defer rows.Close()
	w := bufio.NewWriter(os.Stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for rows.Next() {
		var l exportLine
		var eh, ch, prev []byte
		var e eventstore.RecordedEvent
		var txid int64
		if err := rows.Scan(&l.Seq, &eh, &ch, &prev, &e.GlobalPosition, &txid, &e.EventID, &e.StreamID, &e.StreamVersion,
			&e.Type, &e.SchemaVersion, &e.PlatformID, &e.Environment, &e.Data, &e.Metadata, &e.RecordedAt); err != nil {
			return err
		}
		canonical := eventstore.CanonicalBytes(e)
		l.Event, l.Canonical = canonical, string(canonical)
		l.EventHash, l.ChainHash, l.PrevChainHash = hex.EncodeToString(eh), hex.EncodeToString(ch), hex.EncodeToString(prev)
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	// A full disk or a closed pipe must not pass for a complete export.
	return w.Flush()
}
