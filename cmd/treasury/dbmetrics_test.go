package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var roundTripsLine = regexp.MustCompile(`(?m)^treasury_db_round_trips_total\{origin="([a-z]+)"\} ([0-9.e+]+)$`)

// scrapeRoundTrips reads treasury_db_round_trips_total by origin from /metrics.
func scrapeRoundTrips(t *testing.T, base string) map[string]float64 {
	t.Helper()
	r := mustCall(t, http.MethodGet, base+"/metrics", "", nil)
	if r.Status != http.StatusOK {
		t.Fatalf("GET /metrics: %s", r)
	}
	m := map[string]float64{}
	for _, l := range roundTripsLine.FindAllStringSubmatch(string(r.Body), -1) {
		v, err := strconv.ParseFloat(l[2], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", l[0], err)
		}
		m[l[1]] = v
	}
	return m
}

// TestServeCountsRoundTripsByOrigin: `treasury serve` exposes its database
// round trips on /metrics by origin; an API request's count as api (and
// scraping /metrics costs none), the log's readers' as their own.
func TestServeCountsRoundTripsByOrigin(t *testing.T) {
	t.Parallel()
	url := emptyDatabase(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + addr
	p := startTreasury(t, "", serveEnv(url, addr), "serve")
	waitStatus(t, p, 30*time.Second, base+"/readyz", "", http.StatusOK)

	before := scrapeRoundTrips(t, base)
	// The pacer's state is there too (pacing is on by default).
	metrics := string(mustCall(t, http.MethodGet, base+"/metrics", "", nil).Body)
	for _, name := range []string{"treasury_readers_behind_seconds", "treasury_paced_commands_total", "treasury_paced_seconds_total"} {
		if !regexp.MustCompile(`(?m)^` + name + ` [0-9.e+-]+$`).MatchString(metrics) {
			t.Errorf("/metrics has no %s", name)
		}
	}
	for _, o := range []string{"api", "projections", "chain", "kyb", "sandbox", "webhooks", "notify", "progress", "other"} {
		if _, ok := before[o]; !ok {
			t.Errorf("/metrics has no treasury_db_round_trips_total{origin=%q}", o)
		}
	}
	if again := scrapeRoundTrips(t, base); again["api"] != before["api"] {
		t.Errorf("scraping /metrics made %v api round trips, want none", again["api"]-before["api"])
	}
	r := mustCall(t, http.MethodPost, base+"/v1/platforms", testOperatorKey, map[string]any{"name": "Acme", "contact_email": "ops@acme.test"})
	if r.Status != http.StatusCreated {
		t.Fatalf("POST /v1/platforms: %s", r)
	}
	// BEGIN, at least one statement, COMMIT.
	if after := scrapeRoundTrips(t, base); after["api"]-before["api"] < 3 {
		t.Errorf("creating a platform counted %v api round trips, want at least 3", after["api"]-before["api"])
	}
	// The readers (polling, then handling the platform's events) count as themselves.
	eventually(t, 15*time.Second, "the readers' round trips grow", func() error {
		now := scrapeRoundTrips(t, base)
		for _, o := range []string{"projections", "chain", "webhooks"} {
			if now[o] <= before[o] {
				return fmt.Errorf("origin %s: %v round trips, as many as before the request", o, now[o])
			}
		}
		return nil
	})
}
