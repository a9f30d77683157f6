package main

import (
	"io"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opentreasury/treasury/app"
	apihttp "github.com/opentreasury/treasury/http"
)

// TestMigrateSetting: unset migrates; every spelling of false skips; a
// value that is neither true nor false is refused, not guessed.
func TestMigrateSetting(t *testing.T) {
	for _, tc := range []struct {
		value   string
		migrate bool
		refused bool
	}{{"", true, false}, {"true", true, false}, {"1", true, false}, {"false", false, false},
		{"FALSE", false, false}, {"0", false, false}, {"no", false, true}} {
		t.Setenv("TREASURY_MIGRATE", tc.value)
		t.Setenv("TREASURY_OPERATOR_KEY", "")
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("TREASURY_MIGRATE=%q: error %v, want refused %v", tc.value, err, tc.refused)
			continue
		}
		if !tc.refused && c.MigrateOnStart != tc.migrate {
			t.Errorf("TREASURY_MIGRATE=%q: migrate %v, want %v", tc.value, c.MigrateOnStart, tc.migrate)
		}
	}
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "too-short")
	if _, err := loadConfig(); err == nil {
		t.Error("an operator key of 9 characters was accepted, want at least 32")
	}
}

// TestPprofAddrSetting: unset means no profiler; HOST:PORT is taken as
// is; anything net.SplitHostPort refuses, a port that is not a number and
// the API's own port are refused with an error that names the variable.
func TestPprofAddrSetting(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	t.Setenv("TREASURY_ADDR", "127.0.0.1:8080")
	for _, tc := range []struct {
		value   string
		want    string
		refused bool
	}{
		{"", "", false},
		{"127.0.0.1:6060", "127.0.0.1:6060", false},
		{" localhost:6060 ", "localhost:6060", false},
		{":6060", ":6060", false},
		{"[::1]:6060", "[::1]:6060", false},
		{"127.0.0.1:0", "127.0.0.1:0", false},
		{"6060", "", true},
		{"127.0.0.1", "", true},
		{"::1:6060", "", true},
		{"127.0.0.1:pprof", "", true},
		{"127.0.0.1:70000", "", true},
		{"http://127.0.0.1:6060", "", true},
		{"127.0.0.1:8080", "", true}, // the API's port
		{":8080", "", true},
	} {
		t.Setenv("TREASURY_PPROF_ADDR", tc.value)
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("TREASURY_PPROF_ADDR=%q: error %v, want refused %v", tc.value, err, tc.refused)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "TREASURY_PPROF_ADDR") {
				t.Errorf("TREASURY_PPROF_ADDR=%q: the error does not name the variable: %v", tc.value, err)
			}
			continue
		}
		if c.PprofAddr != tc.want {
			t.Errorf("TREASURY_PPROF_ADDR=%q: PprofAddr %q, want %q", tc.value, c.PprofAddr, tc.want)
		}
	}
}

// durationCase is a value of a duration variable and what it gives.
type durationCase struct {
	value   string
	want    time.Duration
	refused bool
}

// checkDurationSetting sets the variable name to each case's value and
// checks what loadConfig makes of it (got reads the field).
func checkDurationSetting(t *testing.T, name string, got func(config) time.Duration, cases []durationCase) {
	t.Helper()
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	for _, tc := range cases {
		t.Setenv(name, tc.value)
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("%s=%q: error %v, want refused %v", name, tc.value, err, tc.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name the variable: %v", err)
		}
		if !tc.refused && got(c) != tc.want {
			t.Errorf("%s=%q: %v, want %v", name, tc.value, got(c), tc.want)
		}
	}
}

// TestReadYourWritesWaitSetting: unset is the default bound; a duration
// from 0 (no waiting) to a minute is taken; anything else is refused.
func TestReadYourWritesWaitSetting(t *testing.T) {
	checkDurationSetting(t, "TREASURY_READ_YOUR_WRITES_WAIT", func(c config) time.Duration { return c.ReadYourWritesWait },
		[]durationCase{{"", 5 * time.Second, false}, {"0s", 0, false}, {"250ms", 250 * time.Millisecond, false}, {"1m", time.Minute, false},
			{"61s", 0, true}, {"-1s", 0, true}, {"5", 0, true}, {"soon", 0, true}})
}

// TestPaceMaxLagSetting: unset is the default; a duration from 0 (no
// pacing) to 10 s is taken; anything else is refused, naming the variable.
func TestPaceMaxLagSetting(t *testing.T) {
	checkDurationSetting(t, "TREASURY_PACE_MAX_LAG", func(c config) time.Duration { return c.PaceMaxLag },
		[]durationCase{{"", 150 * time.Millisecond, false}, {"0s", 0, false}, {"0", 0, false}, {"1s", time.Second, false},
			{"10s", 10 * time.Second, false}, {"11s", 0, true}, {"-1ms", 0, true}, {"200", 0, true}, {"off", 0, true}})
}

// TestReaderPartitionsSetting: unset is one part (the whole log); 1 to 64
// are taken; anything else is refused, naming the variable.
func TestReaderPartitionsSetting(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	for _, tc := range []struct {
		value   string
		want    int
		refused bool
	}{{"", 1, false}, {"1", 1, false}, {"4", 4, false}, {" 64 ", 64, false},
		{"0", 0, true}, {"65", 0, true}, {"-2", 0, true}, {"four", 0, true}} {
		t.Setenv("TREASURY_READER_PARTITIONS", tc.value)
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("TREASURY_READER_PARTITIONS=%q: error %v, want refused %v", tc.value, err, tc.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "TREASURY_READER_PARTITIONS") {
			t.Errorf("the error does not name the variable: %v", err)
		}
		if !tc.refused && c.ReaderPartitions != tc.want {
			t.Errorf("TREASURY_READER_PARTITIONS=%q: %d, want %d", tc.value, c.ReaderPartitions, tc.want)
		}
	}
}

// TestConnLimitSettings: unset gives the defaults; positive numbers are
// taken; off lifts the per-address cap (behind a proxy); anything else is
// refused with an error that names the variable.
func TestConnLimitSettings(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	for _, tc := range []struct {
		total, perIP      string
		wantTotal, wantIP int
		refused           bool
	}{
		{"", "", apihttp.DefaultMaxConns, apihttp.DefaultMaxConnsPerIP, false},
		{"10000", "64", 10000, 64, false},
		{" 512 ", "off", 512, 0, false},
		{"0", "", 0, 0, true},
		{"-1", "", 0, 0, true},
		{"many", "", 0, 0, true},
		{"", "0", 0, 0, true},
		{"", "none", 0, 0, true},
	} {
		t.Setenv("TREASURY_MAX_CONNS", tc.total)
		t.Setenv("TREASURY_MAX_CONNS_PER_IP", tc.perIP)
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("TREASURY_MAX_CONNS=%q TREASURY_MAX_CONNS_PER_IP=%q: error %v, want refused %v", tc.total, tc.perIP, err, tc.refused)
			continue
		}
		if tc.refused {
			if !strings.Contains(err.Error(), "TREASURY_MAX_CONNS") {
				t.Errorf("the error does not name the variable: %v", err)
			}
			continue
		}
		if c.Conns.MaxConns != tc.wantTotal || c.Conns.MaxConnsPerIP != tc.wantIP {
			t.Errorf("TREASURY_MAX_CONNS=%q TREASURY_MAX_CONNS_PER_IP=%q: %+v, want %d and %d", tc.total, tc.perIP, c.Conns, tc.wantTotal, tc.wantIP)
		}
	}
}

// TestConnCapBelowFileLimit: the overall cap is lowered to leave
// fdReserve descriptors under the open-file limit; a cap below it stays.
func TestConnCapBelowFileLimit(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	got := withinFileLimit(apihttp.ConnLimits{MaxConns: int(rl.Cur) + 1000, MaxConnsPerIP: 7}, log)
	if want := int(rl.Cur) - fdReserve; got.MaxConns != want || got.MaxConnsPerIP != 7 {
		t.Errorf("a cap over the limit %d: %+v, want MaxConns %d", rl.Cur, got, want)
	}
	if got := withinFileLimit(apihttp.ConnLimits{MaxConns: 10}, log); got.MaxConns != 10 {
		t.Errorf("a cap of 10 became %d", got.MaxConns)
	}
}

// liveRailsOf is what /readyz says of the live rails under c.
func liveRailsOf(t *testing.T, c config) []app.RailStatus {
	t.Helper()
	conn, closeRails, err := liveConnector(c, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeRails()
	return conn.Rails()
}

// TestACHSettings: without an outbox there is no live ACH; with one, the
// originator's three settings are required and must fit their NACHA
// fields; a bad outbox address is refused when the server wires it.
func TestACHSettings(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	set := func(outbox, origin, id, name string) {
		t.Setenv("TREASURY_ACH_OUTBOX", outbox)
		t.Setenv("TREASURY_ACH_ORIGIN", origin)
		t.Setenv("TREASURY_ACH_COMPANY_ID", id)
		t.Setenv("TREASURY_ACH_COMPANY_NAME", name)
	}
	set("", "", "", "")
	t.Setenv("TREASURY_ACH_INBOX", "file:///tmp/in")
	if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "TREASURY_ACH_INBOX") {
		t.Errorf("an inbox without an outbox: %v", err)
	}
	t.Setenv("TREASURY_ACH_INBOX", "")
	c, err := loadConfig()
	if err != nil || c.ACH != nil {
		t.Fatalf("no outbox: %+v, %v", c.ACH, err)
	}
	if rails := liveRailsOf(t, c); rails[0].Connected || !strings.Contains(rails[0].Reason, "TREASURY_ACH_OUTBOX") {
		t.Errorf("/readyz without an outbox: %+v", rails)
	}
	dir := t.TempDir()
	set("file://"+dir, "1234567890", "9876543210", "TREASURY INC")
	if c, err = loadConfig(); err != nil || c.ACH == nil || c.ACH.CompanyName != "TREASURY INC" {
		t.Fatalf("a whole configuration: %+v, %v", c.ACH, err)
	}
	if rails := liveRailsOf(t, c); !rails[0].Connected || rails[1].Connected || rails[2].Connected ||
		!strings.Contains(rails[0].Reason, "TREASURY_ACH_INBOX") {
		t.Errorf("/readyz with an outbox and no inbox: %+v", rails)
	}
	t.Setenv("TREASURY_ACH_INBOX", "file://"+dir+"/in")
	if c, err = loadConfig(); err != nil {
		t.Fatal(err)
	}
	if rails := liveRailsOf(t, c); !rails[0].Connected || rails[0].Reason != "" {
		t.Errorf("/readyz with both: %+v", rails)
	}
	if in, err := achInbound(c, nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil || in.Inbox.String() != "file://"+dir+"/in" ||
		in.Every != time.Minute {
		t.Fatalf("the inbox: %+v, %v", in, err)
	}
	t.Setenv("TREASURY_ACH_INBOX_POLL", "2s")
	if c, err := loadConfig(); err != nil || c.ACH.InboxPoll != 2*time.Second {
		t.Errorf("TREASURY_ACH_INBOX_POLL=2s: %+v, %v", c, err)
	}
	for _, bad := range []string{"0s", "500ms", "2h", "often"} {
		t.Setenv("TREASURY_ACH_INBOX_POLL", bad)
		if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "TREASURY_ACH_INBOX_POLL") {
			t.Errorf("TREASURY_ACH_INBOX_POLL=%s: %v", bad, err)
		}
	}
	t.Setenv("TREASURY_ACH_INBOX_POLL", "")
	t.Setenv("TREASURY_ACH_INBOX", "")
	o, err := achOutbound(c, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil || o.Originator.RoutingNumber != c.RoutingNumber || o.Outbox.String() != "file://"+dir {
		t.Fatalf("the connector: %+v, %v", o, err)
	}
	for _, bad := range [][4]string{
		{"file://" + dir, "", "9876543210", "TREASURY"},            // no origin
		{"file://" + dir, "123456789", "9876543210", "TREASURY"},   // 9 characters
		{"file://" + dir, "1234567890", "98765432101", "TREASURY"}, // an 11-character company id
		{"file://" + dir, "1234567890", "9876543210", ""},          // no company name
		{"file://" + dir, "1234567890", "9876543210", "A NAME OF 17 CHAR"},
		{"file://" + dir, "1234567890", "9876543210", "TRÉSOR"},
	} {
		set(bad[0], bad[1], bad[2], bad[3])
		if _, err := loadConfig(); err == nil || !strings.Contains(err.Error(), "TREASURY_ACH_") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, outbox := range []string{"ftp://bank/out", "file://relative", "sftp://bank@host/out"} { // the last: no key
		set(outbox, "1234567890", "9876543210", "TREASURY")
		c, err := loadConfig()
		if err != nil {
			t.Fatalf("%s: %v", outbox, err)
		}
		if _, err := achOutbound(c, nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil || !strings.Contains(err.Error(), "TREASURY_ACH_OUTBOX") {
			t.Errorf("outbox %s: %v", outbox, err)
		}
	}
}

// TestInstantSettings: without TREASURY_INSTANT_URL live RTP and FedNow are
// not connected; with one it must be https, or http to this machine only
// (a local bank-sim): a payment never leaves in clear text.
func TestInstantSettings(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	t.Setenv("TREASURY_ACH_OUTBOX", "")
	t.Setenv("TREASURY_ACH_INBOX", "")
	cases := []struct {
		url, auth string
		want      string // the URL taken; "" refused
	}{
		{"https://bank.example.com/instant/", "Bearer s3cret", "https://bank.example.com/instant"},
		{"http://127.0.0.1:8090", "", "http://127.0.0.1:8090"},
		{"http://localhost:8090", "", "http://localhost:8090"},
		{"http://[::1]:8090", "", "http://[::1]:8090"},
		{"http://bank.example.com", "", ""}, // clear text over the network
		{"http://10.0.0.5:8090", "", ""},    // a private address is still the network
		{"ftp://bank.example.com", "", ""},  // not http
		{"https://user:pw@bank.example.com", "", ""},
		{"https://bank.example.com?x=1", "", ""},
		{"https://bank.example.com", "Bearer a\nX-Evil: 1", ""}, // a header injected
		{"", "Bearer s3cret", ""},                               // auth with nowhere to send it
	}
	for _, c := range cases {
		t.Setenv("TREASURY_INSTANT_URL", c.url)
		t.Setenv("TREASURY_INSTANT_AUTH", c.auth)
		got, err := loadConfig()
		if c.want == "" {
			if err == nil || !strings.Contains(err.Error(), "TREASURY_INSTANT_") {
				t.Errorf("%q %q: %v, want refused naming the variable", c.url, c.auth, err)
			}
			continue
		}
		if err != nil || got.Instant == nil || got.Instant.URL != c.want || got.Instant.Auth != c.auth {
			t.Errorf("%q: %+v, %v", c.url, got.Instant, err)
		}
	}
	t.Setenv("TREASURY_INSTANT_URL", "https://bank.example.com/instant")
	t.Setenv("TREASURY_INSTANT_AUTH", "")
	withInstant, err := loadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if rails := liveRailsOf(t, withInstant); rails[0].Connected || !rails[1].Connected || !rails[2].Connected || rails[1].Reason != "" {
		t.Errorf("/readyz with the instant API only: %+v", rails)
	}
	t.Setenv("TREASURY_INSTANT_URL", "")
	t.Setenv("TREASURY_INSTANT_AUTH", "")
	c, err := loadConfig()
	if err != nil || c.Instant != nil {
		t.Fatalf("unset: %+v, %v", c.Instant, err)
	}
	if rails := liveRailsOf(t, c); rails[1].Connected || !strings.Contains(rails[2].Reason, "TREASURY_INSTANT_URL") {
		t.Errorf("/readyz without the instant API: %+v", rails)
	}
}
