package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/opentreasury/treasury/migrations"
)

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply pending database migrations (safe to run from several replicas at once)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			if cfg.DatabaseURL == "" {
				return fmt.Errorf("DATABASE_URL is not set")
			}
			pool, err := openPool(cmd.Context(), cfg.DatabaseURL)
			if err != nil {
				return err
			}
			defer pool.Close()
			n, err := migrations.Up(cmd.Context(), pool)
			if err != nil {
				return err
			}
			fmt.Printf("applied %d migration(s); the database is current\n", n)
			return nil
		},
	}
}
