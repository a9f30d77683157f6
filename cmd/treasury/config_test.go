package main

import "testing"

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
