package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/opentreasury/treasury/bank/banksim"
	"github.com/opentreasury/treasury/bank/instant"
	"github.com/opentreasury/treasury/bank/nacha"
)

// bankSim runs `treasury bank-sim args...` in this process, without the
// service's environment.
func bankSim(t *testing.T, ctx context.Context, out *syncBuffer, args ...string) error {
	t.Helper()
	for _, name := range []string{"TREASURY_ACH_OUTBOX", "TREASURY_ACH_INBOX", "TREASURY_ROUTING_NUMBER",
		"TREASURY_INSTANT_AUTH", "TREASURY_SFTP_KEY_FILE", "TREASURY_SFTP_KNOWN_HOSTS"} {
		t.Setenv(name, "")
	}
	cmd := bankSimCmd()
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(&syncBuffer{})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(ctx)
}

func TestBankSimCreditCommand(t *testing.T) {
	dir := t.TempDir()
	var out syncBuffer
	if err := bankSim(t, context.Background(), &out, "credit", "--inbox", "file://"+dir,
		"--account-number", "110000000123", "--amount", "2500", "--name", "Initech", "--originator", "Globex"); err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSpace(out.String())
	if !regexp.MustCompile(`^credit-\d{8}-\d{6}-\d+\.ach$`).MatchString(name) {
		t.Fatalf("printed %q, not a file name", out.String())
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := nacha.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	e := f.Batches[0].Entries[0]
	if len(f.Batches[0].Entries) != 1 || e.AccountNumber != "110000000123" || e.Amount != 2500 || e.Name != "INITECH" ||
		e.RDFI+string(e.CheckDigit) != "110000000" || f.Batches[0].Header.CompanyName != "GLOBEX" {
		t.Errorf("the credit file:\n%s", data)
	}
}

func TestBankSimFlagErrors(t *testing.T) {
	dir := "file://" + t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"credit", "--account-number", "1", "--amount", "1"}, "--inbox is required"},
		{[]string{"credit", "--inbox", dir, "--amount", "1"}, "--account-number is required"},
		{[]string{"credit", "--inbox", dir, "--account-number", "1"}, "--amount 0"},
		{[]string{"credit", "--inbox", dir, "--account-number", "1", "--amount", "ten"}, `invalid argument "ten"`},
		{[]string{"credit", "--inbox", "ftp://x/y", "--account-number", "1", "--amount", "1"}, "the scheme must be file or sftp"},
		{[]string{"credit", "--inbox", dir, "--account-number", "1", "--amount", "1", "--routing-number", "110000001"}, "--routing-number"},
		{[]string{"credit", "--inbox", dir, "--account-number", "123456789012345678", "--amount", "1"}, "account number"},
		{[]string{"--outbox", dir}, "--outbox and --inbox go together"},
		{[]string{"--inbox", dir}, "--outbox and --inbox go together"},
		{[]string{"--listen", ""}, "nothing to serve"},
		{[]string{"--outbox", dir, "--inbox", dir, "--routing-number", "12345"}, "--routing-number"},
		{[]string{"--outbox", "file://relative", "--inbox", dir, "--listen", ""}, "--outbox"},
		{[]string{"--frobnicate"}, "unknown flag"},
		{[]string{"extra"}, "unknown command"},
	} {
		err := bankSim(t, context.Background(), &syncBuffer{}, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("bank-sim %v: %v; want an error saying %q", c.args, err, c.want)
		}
	}
}

// bank-sim serves until its context ends: it answers the outbox into the
// inbox and serves the instant API.
func TestBankSimServes(t *testing.T) {
	outDir, inDir := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	errc := make(chan error, 1)
	go func() {
		errc <- bankSim(t, ctx, &out, "--outbox", "file://"+outDir, "--inbox", "file://"+inDir, "--listen", "127.0.0.1:0",
			"--auth", "Bearer sim")
	}()
	api := regexp.MustCompile(`instant-payments API on (http://\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	for !api.MatchString(out.String()) || !strings.Contains(out.String(), "answering into the inbox") {
		if time.Now().After(deadline) {
			t.Fatalf("bank-sim printed %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "watching the outbox file://"+outDir) {
		t.Errorf("bank-sim printed %q", out.String())
	}
	url := api.FindStringSubmatch(out.String())[1]
	resp, err := http.Post(url+"/pacs.008", "application/xml", strings.NewReader("<Document/>"))
	if err != nil {
		t.Fatalf("the instant API: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without --auth's Authorization: %s", resp.Status)
	}
	client := &instant.Client{BaseURL: url, Auth: "Bearer sim", Attempts: 1}
	st, err := client.Send(ctx, instant.Payment{ID: "pay_banksim1", Rail: instant.RailRTP, Amount: 1234, CreatedAt: time.Now(),
		Debtor:   instant.Party{Name: "ACME", AccountNumber: "110000000123", RoutingNumber: "110000000"},
		Creditor: instant.Party{Name: "INITECH", AccountNumber: "4000000003", RoutingNumber: "021000021"}})
	if err != nil || st.TxSts != instant.StatusRejected || st.Reason != "AC03" {
		t.Errorf("a payment to 4000000003 on RTP: %+v, %v", st, err)
	}

	file := nacha.File{Header: nacha.FileHeader{ImmediateDestination: "110000000", ImmediateOrigin: "1234567890",
		CreatedAt: time.Now(), IDModifier: 'A'}, Batches: []nacha.Batch{{Header: nacha.BatchHeader{
		ServiceClass: nacha.CreditsOnly, CompanyName: "TREASURY", CompanyID: "1234567890", SEC: "CCD",
		EntryDescription: "PAYMENT", EffectiveDate: time.Now(), ODFI: "11000000", Number: 1},
		Entries: []nacha.Entry{{TransactionCode: nacha.CheckingCredit, RDFI: "02100002", CheckDigit: '1',
			AccountNumber: "4000000023", Amount: 100, Name: "ACME", TraceNumber: "110000000000001"}}}}}
	data, err := nacha.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	name := "ach-20261127-103000-A.ach"
	if err := os.WriteFile(filepath.Join(outDir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	answer := filepath.Join(inDir, banksim.AnswerName(name))
	for {
		if data, err := os.ReadFile(answer); err == nil {
			if !bytes.Contains(data, []byte("R23110000000000001")) {
				t.Errorf("the answer:\n%s", data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer in the inbox")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The answer is written first, then the file moved to accepted/: wait
	// for the move too.
	for {
		_, err := os.Stat(filepath.Join(outDir, banksim.Accepted, name))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the file taken: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("bank-sim ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bank-sim did not stop")
	}
}
