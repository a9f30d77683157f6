package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/opentreasury/treasury/app"
	"github.com/opentreasury/treasury/bank/banksim"
	"github.com/opentreasury/treasury/bank/instant"
	"github.com/opentreasury/treasury/bank/transport"
	"github.com/opentreasury/treasury/domain/rails"
)

// bankSimOptions are `treasury bank-sim`'s flags. Their defaults are the
// service's own settings, so one environment runs both sides.
type bankSimOptions struct {
	outbox, inbox string
	routing       string
	listen        string
	auth          string
	sftp          transport.SFTPConfig
}

func bankSimCmd() *cobra.Command {
	var o bankSimOptions
	cmd := &cobra.Command{
		Use:   "bank-sim",
		Short: "Play the sponsor bank for local live trials and tests",
		Long: `Play the sponsor bank for local live trials and tests (API.md §10).

It reads the NACHA files the service writes to its outbox and answers them in
the service's inbox by the sandbox's magic destination account numbers:
4000000002/03/04/16/23 are returned R02/R03/R04/R16/R23, 4000000098 gets a
notification of change C01 to 4000000099, and every other entry settles
(the bank says nothing). Files taken move to the outbox's accepted/, files
that do not read to rejected/. It serves the instant-payments API
(TREASURY_INSTANT_URL) with the same magic numbers (and ` + instant.PendingAccount + `:
accepted, settled at the first status request), and 'treasury bank-sim
credit' drops credit files for virtual accounts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.check(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log := slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelInfo}))
			return runBankSim(ctx, cmd.OutOrStdout(), o, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.outbox, "outbox", os.Getenv("TREASURY_ACH_OUTBOX"), "the service's outbox, read by the bank (file:///path or sftp://user@host:port/path; default $TREASURY_ACH_OUTBOX)")
	f.StringVar(&o.inbox, "inbox", os.Getenv("TREASURY_ACH_INBOX"), "the service's inbox, where the bank answers (default $TREASURY_ACH_INBOX)")
	f.StringVar(&o.routing, "routing-number", envOr("TREASURY_ROUTING_NUMBER", app.DefaultRoutingNumber), "the bank's routing number (the service's TREASURY_ROUTING_NUMBER)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:8090", `address of the instant-payments API ("" for none)`)
	f.StringVar(&o.auth, "auth", os.Getenv("TREASURY_INSTANT_AUTH"), "the Authorization header the instant API requires (empty: none; default $TREASURY_INSTANT_AUTH)")
	sftpFlags(cmd, &o.sftp)
	cmd.AddCommand(bankSimCreditCmd())
	return cmd
}

// sftpFlags are how an sftp:// folder authenticates, as the service's.
func sftpFlags(cmd *cobra.Command, c *transport.SFTPConfig) {
	cmd.Flags().StringVar(&c.KeyFile, "sftp-key-file", os.Getenv("TREASURY_SFTP_KEY_FILE"), "private key for sftp:// folders (default $TREASURY_SFTP_KEY_FILE)")
	cmd.Flags().StringVar(&c.KnownHostsFile, "sftp-known-hosts", os.Getenv("TREASURY_SFTP_KNOWN_HOSTS"), "known_hosts pinning the SFTP server's key (default $TREASURY_SFTP_KNOWN_HOSTS)")
}

func (o bankSimOptions) check() error {
	switch {
	case (o.outbox == "") != (o.inbox == ""):
		return errors.New("bank-sim: --outbox and --inbox go together: the bank reads the service's outbox and answers into its inbox")
	case o.outbox == "" && o.listen == "":
		return errors.New("bank-sim: nothing to serve: give --outbox and --inbox, or --listen")
	case !rails.ValidABA(o.routing):
		return fmt.Errorf("bank-sim: --routing-number %q is not a 9-digit ABA routing number with a valid checksum", o.routing)
	}
	return nil
}

// runBankSim serves until ctx ends, first printing a line for each thing
// it serves.
func runBankSim(ctx context.Context, out io.Writer, o bankSimOptions, log *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx) // the API failing stops the ACH side too
	defer cancel()
	var sim *banksim.ACH
	if o.outbox != "" {
		outbox, err := transport.Open(o.outbox, o.sftp)
		if err != nil {
			return fmt.Errorf("bank-sim: --outbox: %w", err)
		}
		defer outbox.Close()
		inbox, err := transport.Open(o.inbox, o.sftp)
		if err != nil {
			return fmt.Errorf("bank-sim: --inbox: %w", err)
		}
		defer inbox.Close()
		accepted, err := acceptedFolder(o.outbox, o.sftp)
		if err != nil {
			return fmt.Errorf("bank-sim: --outbox: %w", err)
		}
		if accepted != nil {
			defer accepted.Close()
		}
		sim = &banksim.ACH{Outbox: outbox, Inbox: inbox, Accepted: accepted, Routing: o.routing, Log: log}
	}
	var srv *http.Server
	errc := make(chan error, 1)
	if o.listen != "" {
		ln, err := net.Listen("tcp", o.listen)
		if err != nil {
			return fmt.Errorf("bank-sim: --listen %s: %w", o.listen, err)
		}
		srv = &http.Server{Handler: instant.NewSimulatedBank(o.auth), ReadHeaderTimeout: 10 * time.Second}
		go func() { errc <- srv.Serve(ln) }()
		auth := "no Authorization required"
		if o.auth != "" {
			auth = "Authorization required (TREASURY_INSTANT_AUTH)"
		}
		fmt.Fprintf(out, "bank-sim: instant-payments API on http://%s (TREASURY_INSTANT_URL; %s)\n", ln.Addr(), auth)
	}
	done := make(chan struct{})
	if sim != nil {
		fmt.Fprintf(out, "bank-sim: watching the outbox %s (taken files go to %s/, unreadable ones to %s/)\n",
			sim.Outbox, banksim.Accepted, banksim.Rejected)
		fmt.Fprintf(out, "bank-sim: answering into the inbox %s (routing number %s)\n", sim.Inbox, o.routing)
		go func() { sim.Run(ctx); close(done) }()
	} else {
		close(done)
	}
	var err error
	select {
	case err = <-errc:
		err = fmt.Errorf("bank-sim: the instant API: %w", err)
	case <-ctx.Done():
	}
	cancel()
	if srv != nil {
		shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		srv.Shutdown(shutdown)
	}
	<-done
	return err
}

// acceptedFolder is the outbox's accepted/ subfolder, opened on its own so
// that a restarted bank-sim knows which files it answered. None for an
// sftp:// outbox in the login directory (no path to join).
func acceptedFolder(outbox string, cfg transport.SFTPConfig) (transport.Folder, error) {
	u, err := url.Parse(outbox)
	if err != nil {
		return nil, err
	}
	if strings.Trim(u.Path, "/") == "" && u.Scheme == "sftp" {
		return nil, nil
	}
	u.Path = path.Join(u.Path, banksim.Accepted)
	return transport.Open(u.String(), cfg)
}

func bankSimCreditCmd() *cobra.Command {
	var (
		inbox, routing, origin string
		req                    banksim.CreditRequest
		sftp                   transport.SFTPConfig
	)
	cmd := &cobra.Command{
		Use:   "credit --inbox ADDRESS --account-number N --amount CENTS",
		Short: "Drop a NACHA credit file for an account into the service's inbox and print its name",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case inbox == "":
				return errors.New("bank-sim credit: --inbox is required (the service's TREASURY_ACH_INBOX)")
			case req.AccountNumber == "":
				return errors.New("bank-sim credit: --account-number is required (the virtual account's number)")
			case req.Amount <= 0:
				return fmt.Errorf("bank-sim credit: --amount %d: the amount in cents, more than 0", req.Amount)
			case !rails.ValidABA(routing):
				return fmt.Errorf("bank-sim credit: --routing-number %q is not a 9-digit ABA routing number with a valid checksum", routing)
			case !rails.ValidABA(origin):
				return fmt.Errorf("bank-sim credit: --originator-routing-number %q is not a 9-digit ABA routing number with a valid checksum", origin)
			}
			folder, err := transport.Open(inbox, sftp)
			if err != nil {
				return fmt.Errorf("bank-sim credit: --inbox: %w", err)
			}
			defer folder.Close()
			sim := &banksim.ACH{Inbox: folder, Routing: routing, OriginatorRouting: origin}
			name, err := sim.Credit(cmd.Context(), req)
			if err != nil {
				return fmt.Errorf("bank-sim credit: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), name)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&inbox, "inbox", os.Getenv("TREASURY_ACH_INBOX"), "the service's inbox (file:///path or sftp://user@host:port/path; default $TREASURY_ACH_INBOX)")
	f.StringVar(&req.AccountNumber, "account-number", "", "the receiving account number: a virtual account's, or any other to see it returned")
	f.Int64Var(&req.Amount, "amount", 0, "the amount in cents")
	f.StringVar(&req.Name, "name", "", "the receiver's name (default "+banksim.DefaultReceiverName+")")
	f.StringVar(&req.OriginatorName, "originator", "", "the sender's company name (default "+banksim.DefaultOriginatorName+")")
	f.StringVar(&req.CompanyID, "company-id", "", "the sender's company id (default "+banksim.DefaultCompanyID+")")
	f.StringVar(&req.Description, "description", "", "the entry description (default "+banksim.DefaultDescription+")")
	f.StringVar(&routing, "routing-number", envOr("TREASURY_ROUTING_NUMBER", app.DefaultRoutingNumber), "the bank's routing number (the service's TREASURY_ROUTING_NUMBER)")
	f.StringVar(&origin, "originator-routing-number", banksim.DefaultOriginatorRouting, "the sending bank's routing number")
	sftpFlags(cmd, &sftp)
	return cmd
}
