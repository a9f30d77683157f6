package main

import (
	"errors"
	"fmt"

	"github.com/opentreasury/treasury/projections/rebuild"
	"github.com/spf13/cobra"
)

func projectionsCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "projections", Short: "Manage the read models built from the event log"}
	cmd.AddCommand(&cobra.Command{
		Use:   "rebuild",
		Short: "Rebuild every projection from the event log while the API keeps serving",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			if cfg.DatabaseURL == "" {
				return errors.New("DATABASE_URL is not set")
			}
			pool, err := openPool(cmd.Context(), cfg.DatabaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			stats, err := rebuild.Run(cmd.Context(), pool)
			if err != nil {
				return err
			}
			rate := float64(stats.Events) / max(stats.Duration.Seconds(), 1e-9)
			fmt.Printf("rebuilt every projection from %d events in %s (%.0f events/s: replay %s, statistics %s, comparison %s); "+
				"%d rows differed before the pause; commands paused %s while %d rows were compared and %d events replayed; "+
				"%d live rows corrected\n",
				stats.Events, stats.Duration.Round(1e6), rate, stats.Replay.Round(1e7), stats.Analyze.Round(1e7),
				stats.Compare.Round(1e7), stats.Suspects, stats.Paused.Round(1e5), stats.Compared, stats.SwapEvents, stats.Changed)
			return nil
		},
	})
	return cmd
}
