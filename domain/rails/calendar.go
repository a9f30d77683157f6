package rails

import (
	"time"
	_ "time/tzdata" // the calendar needs America/New_York on any machine
)

// Eastern is the time zone the Federal Reserve's schedules are set in.
var Eastern = mustLoad("America/New_York")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// IsHoliday reports whether the Federal Reserve is closed for a holiday on
// the date of d (its year, month and day). Holidays are computed by rule,
// so every year works. A holiday on a Sunday is observed the Monday after;
// one on a Saturday is not moved (the Fed stays open the Friday before).
func IsHoliday(d time.Time) bool {
	y, m, day := d.Date()
	date := time.Date(y, m, day, 0, 0, 0, 0, time.UTC)
	for _, h := range holidays(y) {
		observed := h
		if h.Weekday() == time.Sunday {
			observed = h.AddDate(0, 0, 1)
		}
		if observed.Equal(date) {
			return true
		}
	}
	return false
}

// holidays lists the dates of the Federal Reserve holidays of year.
func holidays(y int) []time.Time {
	fixed := func(m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	return []time.Time{
		fixed(time.January, 1),                         // New Year's Day
		nthWeekday(y, time.January, time.Monday, 3),    // Martin Luther King Jr. Day
		nthWeekday(y, time.February, time.Monday, 3),   // Washington's Birthday
		lastWeekday(y, time.May, time.Monday),          // Memorial Day
		fixed(time.June, 19),                           // Juneteenth
		fixed(time.July, 4),                            // Independence Day
		nthWeekday(y, time.September, time.Monday, 1),  // Labor Day
		nthWeekday(y, time.October, time.Monday, 2),    // Columbus Day
		fixed(time.November, 11),                       // Veterans Day
		nthWeekday(y, time.November, time.Thursday, 4), // Thanksgiving Day
		fixed(time.December, 25),                       // Christmas Day
	}
}

func nthWeekday(y int, m time.Month, wd time.Weekday, n int) time.Time {
	d := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	for d.Weekday() != wd {
		d = d.AddDate(0, 0, 1)
	}
	return d.AddDate(0, 0, 7*(n-1))
}

func lastWeekday(y int, m time.Month, wd time.Weekday) time.Time {
	d := time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
	for d.Weekday() != wd {
		d = d.AddDate(0, 0, -1)
	}
	return d
}

// IsBusinessDay reports whether the Fed's services run on d's date in
// New York.
func IsBusinessDay(d time.Time) bool {
	d = d.In(Eastern)
	wd := d.Weekday()
	return wd != time.Saturday && wd != time.Sunday && !IsHoliday(d)
}

// Same-day ACH settlement windows, Eastern (hour, minute).
var sameDayWindows = [][2]int{{10, 30}, {14, 45}, {16, 45}}

// SameDayWindows are the same-day ACH settlement windows on d's date in
// New York, business day or not.
func SameDayWindows(d time.Time) []time.Time {
	et := d.In(Eastern)
	out := make([]time.Time, len(sameDayWindows))
	for i, w := range sameDayWindows {
		out[i] = atTime(et, w)
	}
	return out
}

// nextDayACHSettlement is when next-day ACH settles, Eastern.
var nextDayACHSettlement = [2]int{8, 30}

// ExpectedSettlement returns when a payment on rail created at t is
// expected to settle: RTP and FedNow at once; same-day ACH at the next
// window (10:30, 14:45, 16:45 ET) of a business day; next-day ACH at 08:30
// ET on the business day after the one it was created on.
func ExpectedSettlement(r Rail, t time.Time) time.Time {
	et := t.In(Eastern)
	switch r {
	case RTP, FedNow:
		return t.UTC()
	case ACHSameDay:
		for day := et; ; day = nextDay(day) {
			if !IsBusinessDay(day) {
				continue
			}
			for _, w := range sameDayWindows {
				at := atTime(day, w)
				if !at.Before(et) {
					return at.UTC()
				}
			}
		}
	default: // ACHStandard
		day := nextDay(et)
		for !IsBusinessDay(day) {
			day = nextDay(day)
		}
		return atTime(day, nextDayACHSettlement).UTC()
	}
}

// nextDay is midnight of the following calendar day, Eastern.
func nextDay(d time.Time) time.Time {
	y, m, day := d.Date()
	return time.Date(y, m, day+1, 0, 0, 0, 0, Eastern)
}

func atTime(d time.Time, hm [2]int) time.Time {
	y, m, day := d.Date()
	return time.Date(y, m, day, hm[0], hm[1], 0, 0, Eastern)
}
