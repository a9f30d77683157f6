package console

import "testing"

func TestCents(t *testing.T) {
	for in, want := range map[string]int64{"12": 1200, "1,250.50": 125_050, "$0.01": 1, " 3.5 ": 350, "7.": 700, ".25": 25} {
		if got, err := cents(in); err != nil || got != want {
			t.Errorf("cents(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-5", "1.005", "abc", "1e3x", "1000000000001", "NaN"} {
		if got, err := cents(in); err == nil {
			t.Errorf("cents(%q) = %d, want an error", in, got)
		}
	}
}

func TestMoney(t *testing.T) {
	for in, want := range map[int64]string{0: "$0.00", 5: "$0.05", 123456: "$1,234.56", -100_000_00: "-$100,000.00", 1_000_000_000_00: "$1,000,000,000.00"} {
		if got := money(in); got != want {
			t.Errorf("money(%d) = %s, want %s", in, got, want)
		}
	}
}
