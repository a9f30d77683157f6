package main

import (
	"strings"
	"testing"
	"time"
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

// TestReadYourWritesWaitSetting: unset is the default bound; a duration
// from 0 (no waiting) to a minute is taken; anything else is refused.
func TestReadYourWritesWaitSetting(t *testing.T) {
	t.Setenv("TREASURY_MIGRATE", "")
	t.Setenv("TREASURY_OPERATOR_KEY", "")
	for _, tc := range []struct {
		value   string
		want    time.Duration
		refused bool
	}{{"", 5 * time.Second, false}, {"0s", 0, false}, {"250ms", 250 * time.Millisecond, false}, {"1m", time.Minute, false},
		{"61s", 0, true}, {"-1s", 0, true}, {"5", 0, true}, {"soon", 0, true}} {
		t.Setenv("TREASURY_READ_YOUR_WRITES_WAIT", tc.value)
		c, err := loadConfig()
		if (err != nil) != tc.refused {
			t.Errorf("TREASURY_READ_YOUR_WRITES_WAIT=%q: error %v, want refused %v", tc.value, err, tc.refused)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), "TREASURY_READ_YOUR_WRITES_WAIT") {
			t.Errorf("the error does not name the variable: %v", err)
		}
		if !tc.refused && c.ReadYourWritesWait != tc.want {
			t.Errorf("TREASURY_READ_YOUR_WRITES_WAIT=%q: %v, want %v", tc.value, c.ReadYourWritesWait, tc.want)
		}
	}
}
