package rails_test

import (
	"testing"
	"time"

	"github.com/opentreasury/treasury/domain/rails"
)

// day is a calendar date at noon Eastern (noon keeps clear of any DST edge).
func day(y int, m time.Month, d int) time.Time {
	return time.Date(y, m, d, 12, 0, 0, 0, rails.Eastern)
}

// et is a wall-clock instant in New York.
func et(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, rails.Eastern)
}

// utc is an expected instant, written in UTC.
func utc(y int, m time.Month, d, hh, mm int) time.Time {
	return time.Date(y, m, d, hh, mm, 0, 0, time.UTC)
}

type ymd struct {
	m time.Month
	d int
}

// Federal Reserve closures worked out by hand from a calendar, one year at a
// time. A holiday on a Sunday is listed on the Monday it is observed; one on
// a Saturday is not listed at all (the Fed does not close the Friday before).
var fedClosures = map[int][]ymd{
	2025: {
		{time.January, 1},   // New Year's Day (Wed)
		{time.January, 20},  // MLK: 3rd Monday (6, 13, 20)
		{time.February, 17}, // Presidents: 3rd Monday (3, 10, 17)
		{time.May, 26},      // Memorial: last Monday (May 31 is a Saturday)
		{time.June, 19},     // Juneteenth (Thu)
		{time.July, 4},      // Independence Day (Fri)
		{time.September, 1}, // Labor: 1st Monday
		{time.October, 13},  // Columbus: 2nd Monday (6, 13)
		{time.November, 11}, // Veterans (Tue)
		{time.November, 27}, // Thanksgiving: 4th Thursday (6, 13, 20, 27)
		{time.December, 25}, // Christmas (Thu)
	},
	2026: {
		{time.January, 1},   // Thu
		{time.January, 19},  // MLK (5, 12, 19)
		{time.February, 16}, // Presidents (2, 9, 16)
		{time.May, 25},      // Memorial (May 31 is a Sunday)
		{time.June, 19},     // Juneteenth (Fri)
		// July 4 is a Saturday: no closure, July 3 stays open.
		{time.September, 7}, // Labor (Sep 1 is a Tuesday)
		{time.October, 12},  // Columbus (5, 12)
		{time.November, 11}, // Veterans (Wed)
		{time.November, 26}, // Thanksgiving (5, 12, 19, 26)
		{time.December, 25}, // Christmas (Fri)
	},
	2027: {
		{time.January, 1},   // Fri
		{time.January, 18},  // MLK (4, 11, 18)
		{time.February, 15}, // Presidents (1, 8, 15)
		{time.May, 31},      // Memorial (May 31 is a Monday)
		// Juneteenth is a Saturday: no closure.
		{time.July, 5},      // July 4 is a Sunday → observed Monday July 5
		{time.September, 6}, // Labor (Sep 1 is a Wednesday)
		{time.October, 11},  // Columbus (4, 11)
		{time.November, 11}, // Veterans (Thu)
		{time.November, 25}, // Thanksgiving (4, 11, 18, 25)
		// Christmas is a Saturday: no closure, Dec 24 stays open.
	},
	2028: {
		// New Year's Day is a Saturday: no closure (and Dec 31 2027 is open).
		{time.January, 17},  // MLK (3, 10, 17)
		{time.February, 21}, // Presidents (7, 14, 21)
		{time.May, 29},      // Memorial (May 31 is a Wednesday)
		{time.June, 19},     // Juneteenth (Mon)
		{time.July, 4},      // Tue
		{time.September, 4}, // Labor (Sep 1 is a Friday)
		{time.October, 9},   // Columbus (2, 9)
		// Veterans Day is a Saturday: no closure, Nov 10 stays open.
		{time.November, 23}, // Thanksgiving (2, 9, 16, 23)
		{time.December, 25}, // Mon
	},
	2023: {
		{time.January, 2},   // Jan 1 is a Sunday → observed Monday Jan 2
		{time.January, 16},  // MLK
		{time.February, 20}, // Presidents
		{time.May, 29},      // Memorial
		{time.June, 19},     // Juneteenth (Mon)
		{time.July, 4},      // Tue
		{time.September, 4}, // Labor
		{time.October, 9},   // Columbus
		// Veterans Day is a Saturday: no closure.
		{time.November, 23}, // Thanksgiving
		{time.December, 25}, // Mon
	},
	2022: {
		// Jan 1 is a Saturday: no closure.
		{time.January, 17},  // MLK
		{time.February, 21}, // Presidents
		{time.May, 30},      // Memorial
		{time.June, 20},     // Juneteenth is a Sunday → Monday June 20
		{time.July, 4},      // Mon
		{time.September, 5}, // Labor
		{time.October, 10},  // Columbus
		{time.November, 11}, // Veterans (Fri)
		{time.November, 24}, // Thanksgiving
		{time.December, 26}, // Christmas is a Sunday → Monday Dec 26
	},
}

// Every day of each year is checked, so a closure the code invents is
// caught as surely as one it misses. Weekend dates are only checked to be
// non-business days.
func TestIsHolidayWholeYears(t *testing.T) {
	for year, closures := range fedClosures {
		want := map[ymd]bool{}
		for _, c := range closures {
			want[c] = true
			if wd := day(year, c.m, c.d).Weekday(); wd == time.Saturday || wd == time.Sunday {
				t.Fatalf("test table: %d-%02d-%02d is a %s", year, c.m, c.d, wd)
			}
		}
		n := 0
		for d := day(year, time.January, 1); d.Year() == year; d = d.AddDate(0, 0, 1) {
			key := ymd{d.Month(), d.Day()}
			weekend := d.Weekday() == time.Saturday || d.Weekday() == time.Sunday
			if got, w := rails.IsBusinessDay(d), !weekend && !want[key]; got != w {
				t.Errorf("IsBusinessDay(%s %s) = %v, want %v", d.Format("2006-01-02"), d.Weekday(), got, w)
			}
			if weekend {
				continue // closed anyway; whether IsHoliday names a weekend date does not matter
			}
			if got := rails.IsHoliday(d); got != want[key] {
				t.Errorf("IsHoliday(%s %s) = %v, want %v", d.Format("2006-01-02"), d.Weekday(), got, want[key])
			}
			if rails.IsHoliday(d) {
				n++
			}
		}
		if n != len(closures) {
			t.Errorf("%d: %d holidays, want %d", year, n, len(closures))
		}
	}
}

func TestHolidayObservance(t *testing.T) {
	cases := []struct {
		name     string
		d        time.Time
		business bool
	}{
		// A Sunday holiday closes the Monday after.
		{"July 4 2027 (Sunday)", day(2027, time.July, 4), false},
		{"Monday July 5 2027 (observed)", day(2027, time.July, 5), false},
		{"Tuesday July 6 2027", day(2027, time.July, 6), true},
		{"Friday July 2 2027", day(2027, time.July, 2), true},
		{"Monday Jan 2 2023 (New Year observed)", day(2023, time.January, 2), false},
		{"Tuesday Jan 3 2023", day(2023, time.January, 3), true},
		{"Friday Dec 30 2022", day(2022, time.December, 30), true},
		{"Monday Dec 26 2022 (Christmas observed)", day(2022, time.December, 26), false},
		{"Monday June 20 2022 (Juneteenth observed)", day(2022, time.June, 20), false},
		{"Monday Jan 2 2034 (New Year on a Sunday)", day(2034, time.January, 2), false},
		// A Saturday holiday is not moved to the Friday before.
		{"Friday July 3 2026", day(2026, time.July, 3), true},
		{"Saturday July 4 2026", day(2026, time.July, 4), false},
		{"Monday July 6 2026", day(2026, time.July, 6), true},
		{"Friday Nov 10 2028", day(2028, time.November, 10), true},
		{"Monday Nov 13 2028", day(2028, time.November, 13), true},
		{"Friday Dec 24 2027", day(2027, time.December, 24), true},
		{"Monday Dec 27 2027", day(2027, time.December, 27), true},
		{"Friday Dec 31 2027", day(2027, time.December, 31), true},
		{"Friday June 18 2027", day(2027, time.June, 18), true},
		// Rules, not a list: far years work too.
		{"Thanksgiving 2100 (Nov 25)", day(2100, time.November, 25), false},
		{"Nov 18 2100", day(2100, time.November, 18), true},
		{"Memorial Day 2099 (May 25)", day(2099, time.May, 25), false},
		{"MLK 2040 (Jan 16)", day(2040, time.January, 16), false},
	}
	for _, c := range cases {
		if got := rails.IsBusinessDay(c.d); got != c.business {
			t.Errorf("%s: IsBusinessDay = %v, want %v", c.name, got, c.business)
		}
	}
	// The observed Monday is a holiday; a Saturday holiday leaves the Friday open.
	if !rails.IsHoliday(day(2027, time.July, 5)) {
		t.Error("IsHoliday(2027-07-05) = false, want true (July 4 observed)")
	}
	if rails.IsHoliday(day(2026, time.July, 3)) {
		t.Error("IsHoliday(2026-07-03) = true, want false (Saturday holidays are not moved)")
	}
	if rails.IsHoliday(day(2028, time.November, 10)) {
		t.Error("IsHoliday(2028-11-10) = true, want false (Saturday holidays are not moved)")
	}
}

func TestEastern(t *testing.T) {
	if rails.Eastern == nil || rails.Eastern.String() != "America/New_York" {
		t.Fatalf("Eastern = %v", rails.Eastern)
	}
	// Winter UTC-5, summer UTC-4.
	if _, off := et(2026, time.January, 15, 12, 0).Zone(); off != -5*3600 {
		t.Errorf("January offset = %d", off)
	}
	if _, off := et(2026, time.July, 15, 12, 0).Zone(); off != -4*3600 {
		t.Errorf("July offset = %d", off)
	}
}

func TestExpectedSettlement(t *testing.T) {
	cases := []struct {
		name string
		rail rails.Rail
		at   time.Time
		want time.Time
	}{
		// ---- RTP and FedNow: immediate, whatever the day.
		{"rtp weekday", rails.RTP, et(2026, time.January, 13, 9, 0), utc(2026, time.January, 13, 14, 0)},
		{"rtp Sunday", rails.RTP, et(2026, time.January, 11, 3, 7), utc(2026, time.January, 11, 8, 7)},
		{"rtp Christmas", rails.RTP, et(2026, time.December, 25, 23, 59), utc(2026, time.December, 26, 4, 59)},
		{"fednow Thanksgiving", rails.FedNow, et(2026, time.November, 26, 12, 0), utc(2026, time.November, 26, 17, 0)},
		{"fednow Saturday night", rails.FedNow, et(2026, time.March, 7, 22, 0), utc(2026, time.March, 8, 3, 0)},

		// ---- Same-day ACH: windows 10:30, 14:45, 16:45 ET.
		{"same-day before first window", rails.ACHSameDay, et(2026, time.January, 13, 9, 0), utc(2026, time.January, 13, 15, 30)},
		{"same-day just before 10:30", rails.ACHSameDay, time.Date(2026, time.January, 13, 10, 29, 59, 0, rails.Eastern), utc(2026, time.January, 13, 15, 30)},
		{"same-day just after 10:30", rails.ACHSameDay, time.Date(2026, time.January, 13, 10, 30, 1, 0, rails.Eastern), utc(2026, time.January, 13, 19, 45)},
		{"same-day midday", rails.ACHSameDay, et(2026, time.January, 13, 12, 0), utc(2026, time.January, 13, 19, 45)},
		{"same-day after 14:45", rails.ACHSameDay, et(2026, time.January, 13, 15, 0), utc(2026, time.January, 13, 21, 45)},
		{"same-day after 16:45", rails.ACHSameDay, et(2026, time.January, 13, 17, 0), utc(2026, time.January, 14, 15, 30)},
		{"same-day just after midnight", rails.ACHSameDay, et(2026, time.January, 14, 0, 1), utc(2026, time.January, 14, 15, 30)},
		{"same-day summer (EDT)", rails.ACHSameDay, et(2026, time.June, 9, 15, 0), utc(2026, time.June, 9, 20, 45)},
		{"same-day Friday evening", rails.ACHSameDay, et(2026, time.January, 9, 18, 0), utc(2026, time.January, 12, 15, 30)},
		{"same-day Saturday", rails.ACHSameDay, et(2026, time.January, 10, 12, 0), utc(2026, time.January, 12, 15, 30)},
		{"same-day Friday evening before MLK", rails.ACHSameDay, et(2026, time.January, 16, 18, 0), utc(2026, time.January, 20, 15, 30)},
		{"same-day on MLK Day", rails.ACHSameDay, et(2026, time.January, 19, 9, 0), utc(2026, time.January, 20, 15, 30)},
		{"same-day July 3 2025 morning", rails.ACHSameDay, et(2025, time.July, 3, 11, 0), utc(2025, time.July, 3, 18, 45)},
		{"same-day July 3 2025 evening", rails.ACHSameDay, et(2025, time.July, 3, 17, 0), utc(2025, time.July, 7, 14, 30)},
		{"same-day July 3 2026 (July 4 a Saturday)", rails.ACHSameDay, et(2026, time.July, 3, 9, 0), utc(2026, time.July, 3, 14, 30)},
		{"same-day July 2 2026 evening", rails.ACHSameDay, et(2026, time.July, 2, 17, 0), utc(2026, time.July, 3, 14, 30)},
		{"same-day July 3 2026 evening", rails.ACHSameDay, et(2026, time.July, 3, 17, 0), utc(2026, time.July, 6, 14, 30)},
		{"same-day July 2 2027 evening (July 4 a Sunday)", rails.ACHSameDay, et(2027, time.July, 2, 17, 0), utc(2027, time.July, 6, 14, 30)},
		{"same-day Wednesday before Thanksgiving", rails.ACHSameDay, et(2026, time.November, 25, 17, 0), utc(2026, time.November, 27, 15, 30)},
		{"same-day on Thanksgiving", rails.ACHSameDay, et(2026, time.November, 26, 9, 0), utc(2026, time.November, 27, 15, 30)},
		{"same-day Christmas Eve evening", rails.ACHSameDay, et(2026, time.December, 24, 17, 0), utc(2026, time.December, 28, 15, 30)},
		{"same-day Dec 30 2022 evening (New Year on a Sunday)", rails.ACHSameDay, et(2022, time.December, 30, 17, 0), utc(2023, time.January, 3, 15, 30)},
		{"same-day Juneteenth 2027 on a Saturday", rails.ACHSameDay, et(2027, time.June, 18, 9, 0), utc(2027, time.June, 18, 14, 30)},
		{"same-day Veterans 2028 on a Saturday", rails.ACHSameDay, et(2028, time.November, 10, 9, 0), utc(2028, time.November, 10, 15, 30)},
		{"same-day spring forward weekend", rails.ACHSameDay, et(2026, time.March, 6, 17, 0), utc(2026, time.March, 9, 14, 30)},
		{"same-day fall back weekend", rails.ACHSameDay, et(2026, time.October, 30, 17, 0), utc(2026, time.November, 2, 15, 30)},
		// Given in UTC, judged by the Eastern date and clock.
		{"same-day UTC input, previous Eastern evening", rails.ACHSameDay, utc(2026, time.January, 14, 3, 0), utc(2026, time.January, 14, 15, 30)},
		{"same-day UTC input, Eastern morning", rails.ACHSameDay, utc(2026, time.January, 13, 16, 0), utc(2026, time.January, 13, 19, 45)},
		{"same-day UTC input, Eastern MLK evening", rails.ACHSameDay, utc(2026, time.January, 20, 2, 0), utc(2026, time.January, 20, 15, 30)},

		// ---- Standard (next-day) ACH: 08:30 ET the next business day.
		{"standard weekday", rails.ACHStandard, et(2026, time.January, 13, 9, 0), utc(2026, time.January, 14, 13, 30)},
		{"standard before 08:30", rails.ACHStandard, et(2026, time.January, 13, 7, 0), utc(2026, time.January, 14, 13, 30)},
		{"standard late evening", rails.ACHStandard, et(2026, time.January, 13, 23, 59), utc(2026, time.January, 14, 13, 30)},
		{"standard Friday evening", rails.ACHStandard, et(2026, time.January, 9, 18, 0), utc(2026, time.January, 12, 13, 30)},
		{"standard Friday morning", rails.ACHStandard, et(2026, time.January, 9, 7, 0), utc(2026, time.January, 12, 13, 30)},
		{"standard Sunday", rails.ACHStandard, et(2026, time.January, 11, 12, 0), utc(2026, time.January, 12, 13, 30)},
		{"standard Friday before MLK", rails.ACHStandard, et(2026, time.January, 16, 18, 0), utc(2026, time.January, 20, 13, 30)},
		{"standard on MLK Day", rails.ACHStandard, et(2026, time.January, 19, 9, 0), utc(2026, time.January, 20, 13, 30)},
		{"standard Wednesday before Thanksgiving", rails.ACHStandard, et(2026, time.November, 25, 12, 0), utc(2026, time.November, 27, 13, 30)},
		{"standard Wednesday before Thanksgiving 2027", rails.ACHStandard, et(2027, time.November, 24, 12, 0), utc(2027, time.November, 26, 13, 30)},
		{"standard Dec 24 2025 (Wed)", rails.ACHStandard, et(2025, time.December, 24, 12, 0), utc(2025, time.December, 26, 13, 30)},
		{"standard Dec 24 2026 (Thu)", rails.ACHStandard, et(2026, time.December, 24, 12, 0), utc(2026, time.December, 28, 13, 30)},
		{"standard Dec 23 2027 (Christmas a Saturday)", rails.ACHStandard, et(2027, time.December, 23, 12, 0), utc(2027, time.December, 24, 13, 30)},
		{"standard July 3 2025", rails.ACHStandard, et(2025, time.July, 3, 12, 0), utc(2025, time.July, 7, 12, 30)},
		{"standard July 2 2026 (July 4 a Saturday)", rails.ACHStandard, et(2026, time.July, 2, 12, 0), utc(2026, time.July, 3, 12, 30)},
		{"standard July 2 2027 (July 4 a Sunday)", rails.ACHStandard, et(2027, time.July, 2, 12, 0), utc(2027, time.July, 6, 12, 30)},
		{"standard Dec 30 2022 (New Year on a Sunday)", rails.ACHStandard, et(2022, time.December, 30, 12, 0), utc(2023, time.January, 3, 13, 30)},
		{"standard Monday before Veterans Day 2025", rails.ACHStandard, et(2025, time.November, 10, 12, 0), utc(2025, time.November, 12, 13, 30)},
		{"standard Friday before Columbus Day 2026", rails.ACHStandard, et(2026, time.October, 9, 12, 0), utc(2026, time.October, 13, 12, 30)},
		// EST → EDT (2026-03-08) and EDT → EST (2026-11-01, 2025-11-02).
		{"standard Saturday Mar 7 2026 → EDT Monday", rails.ACHStandard, et(2026, time.March, 7, 12, 0), utc(2026, time.March, 9, 12, 30)},
		{"standard Friday Mar 6 2026 → EDT Monday", rails.ACHStandard, et(2026, time.March, 6, 12, 0), utc(2026, time.March, 9, 12, 30)},
		{"standard during the spring-forward night", rails.ACHStandard, utc(2026, time.March, 8, 6, 30), utc(2026, time.March, 9, 12, 30)},
		{"standard Friday Oct 30 2026 → EST Monday", rails.ACHStandard, et(2026, time.October, 30, 12, 0), utc(2026, time.November, 2, 13, 30)},
		{"standard Friday Oct 31 2025 → EST Monday", rails.ACHStandard, et(2025, time.October, 31, 12, 0), utc(2025, time.November, 3, 13, 30)},
		{"standard first 01:30 of Nov 1 2026 (EDT)", rails.ACHStandard, utc(2026, time.November, 1, 5, 30), utc(2026, time.November, 2, 13, 30)},
		{"standard second 01:30 of Nov 1 2026 (EST)", rails.ACHStandard, utc(2026, time.November, 1, 6, 30), utc(2026, time.November, 2, 13, 30)},
		// Given in UTC, judged by the Eastern date.
		{"standard UTC input, Tuesday evening Eastern", rails.ACHStandard, utc(2026, time.January, 14, 2, 0), utc(2026, time.January, 14, 13, 30)},
		{"standard UTC input, Friday evening Eastern", rails.ACHStandard, utc(2026, time.January, 10, 3, 0), utc(2026, time.January, 12, 13, 30)},
	}
	for _, c := range cases {
		got := rails.ExpectedSettlement(c.rail, c.at)
		if !got.Equal(c.want) {
			t.Errorf("%s: ExpectedSettlement(%s, %s) = %s, want %s",
				c.name, c.rail, c.at.UTC().Format(time.RFC3339), got.UTC().Format(time.RFC3339), c.want.Format(time.RFC3339))
		}
		if !rails.IsInstant(c.rail) && got.Location() != time.UTC {
			t.Errorf("%s: result in %v, want UTC", c.name, got.Location())
		}
	}
}

// A sweep over four years, every 20 minutes: the settlement is the first
// allowed instant (a window on a business day) at or after creation, for
// same-day ACH; the first business day after the creation date at 08:30,
// for standard ACH.
func TestExpectedSettlementSweep(t *testing.T) {
	windows := [][2]int{{10, 30}, {14, 45}, {16, 45}}
	start := utc(2025, time.January, 1, 0, 0)
	end := utc(2029, time.January, 1, 0, 0)
	for at := start; at.Before(end); at = at.Add(20 * time.Minute) {
		e := at.In(rails.Eastern)

		// Standard: the next business day after e's date.
		d := time.Date(e.Year(), e.Month(), e.Day()+1, 12, 0, 0, 0, rails.Eastern)
		for !rails.IsBusinessDay(d) {
			d = d.AddDate(0, 0, 1)
		}
		want := time.Date(d.Year(), d.Month(), d.Day(), 8, 30, 0, 0, rails.Eastern)
		if got := rails.ExpectedSettlement(rails.ACHStandard, at); !got.Equal(want) {
			t.Fatalf("standard from %s: got %s, want %s", e, got.In(rails.Eastern), want)
		}

		// Same day: the first window at or after e on a business day.
		var wantSD time.Time
		for d := time.Date(e.Year(), e.Month(), e.Day(), 12, 0, 0, 0, rails.Eastern); wantSD.IsZero(); d = d.AddDate(0, 0, 1) {
			if !rails.IsBusinessDay(d) {
				continue
			}
			for _, w := range windows {
				c := time.Date(d.Year(), d.Month(), d.Day(), w[0], w[1], 0, 0, rails.Eastern)
				if !c.Before(e) {
					wantSD = c
					break
				}
			}
		}
		got := rails.ExpectedSettlement(rails.ACHSameDay, at)
		if !got.Equal(wantSD) {
			t.Fatalf("same-day from %s: got %s, want %s", e, got.In(rails.Eastern), wantSD)
		}
		if got.Sub(at) > 6*24*time.Hour {
			t.Fatalf("same-day from %s: %s is too far", e, got.In(rails.Eastern))
		}
	}
}

func TestIsBusinessDayWeekends(t *testing.T) {
	// An ordinary week: Mon..Fri open, Sat and Sun closed.
	for i, want := range []bool{true, true, true, true, true, false, false} {
		d := day(2026, time.March, 16+i) // Monday March 16 2026
		if got := rails.IsBusinessDay(d); got != want {
			t.Errorf("IsBusinessDay(%s %s) = %v, want %v", d.Format("2006-01-02"), d.Weekday(), got, want)
		}
	}
}
