// Command treasury runs the Treasury service and its operator tools.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "treasury",
		Short:         "Treasury: embedded treasury accounts, payments and ledger over an event log",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(serveCmd(), migrateCmd(), devCmd(), projectionsCmd(), auditCmd(), eventsCmd(), subscriptionsCmd(), bankSimCmd())
	if err := root.Execute(); err != nil {
		if err != errAuditFailed { // the report says it all
			fmt.Fprintln(os.Stderr, "treasury:", err)
		}
		os.Exit(1)
	}
}
