package run

import (
	"context"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/limiter"
)

// TestFleetPace: a fleet sends at the sum of its members' rates and the
// API accepted the sum of their counts; this worker's own figures, read
// now, stand in for its heartbeat's.
func TestFleetPace(t *testing.T) {
	up := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	ms := []cluster.Member{
		{Key: "m.a", Rate: 2000, Accepted: 1900, Started: up, Refreshed: up.Add(5 * time.Minute)},
		{Key: "m.b", Rate: 2000, Accepted: 1950, Started: up, Refreshed: up.Add(30 * time.Second)},
		{Key: "m.c", Rate: 1500, Accepted: 100, Started: up, Refreshed: up.Add(time.Hour)},
	}
	f := FleetPace(ms, "", nil)
	if f.Sending != 5500 || f.Accepted != 3950 || !math.IsNaN(f.Burst) {
		t.Errorf("fleet %+v, want sending 5500, accepted 3950, no burst", f)
	}
	self := Pace{Sending: 2100, Accepted: 2000, Burst: 50}
	if f := FleetPace(ms, "m.c", &self); f.Sending != 6100 || f.Accepted != 5850 {
		t.Errorf("fleet with this worker read now %+v, want sending 6100, accepted 5850", f)
	}
	if got, want := f.String(), "sending at 5500 units/min · API accepted 3950 units/min (last minute)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if f.BurstText() != "" {
		t.Errorf("a fleet's burst: %q, want none shown", f.BurstText())
	}
}

// TestPaceMetrics: the accepted rate and the burst are scraped beside the
// limiter's rate, and read at the scrape: the accepted units of the last
// minute, the units that would go at once.
func TestPaceMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := limiter.DefaultConfig()
		cfg.InitialFill = 1 // 600/min, paced: a bucket of one unit
		lim, err := limiter.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(newPaceCollector(lim))
		for range 3 {
			tk, err := lim.Wait(context.Background(), 10)
			if err != nil {
				t.Fatal(err)
			}
			lim.Observe(tk, call.Outcome{Kind: call.Success, Status: 200})
		}
		want := `
# HELP sluice_limiter_accepted_units_per_minute Units the API accepted from this instance in the last minute (successes and client errors), beside sluice_limiter_rate_units_per_minute, the rate it sends at; absent while not measured (limiter.slow_start off).
# TYPE sluice_limiter_accepted_units_per_minute gauge
sluice_limiter_accepted_units_per_minute 30
# HELP sluice_limiter_burst_units Units the limiter would send at once now: the bucket's level, 0 while paused or while requests wait; absent when the limiter is disabled.
# TYPE sluice_limiter_burst_units gauge
sluice_limiter_burst_units 0
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
		// 30 units at the start: the count of the last minute, as it is,
		// for a minute, then nothing; the bucket is full again.
		time.Sleep(20 * time.Second)
		want = strings.Replace(want, "units 0", "units 1", 1)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
		time.Sleep(41 * time.Second)
		want = strings.Replace(want, "minute 30", "minute 0", 1)
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
			t.Error(err)
		}
	})

	// Not measured: no sample, not a 0.
	cfg := limiter.DefaultConfig()
	cfg.SlowStart = false
	lim, err := limiter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newPaceCollector(lim))
	if n, err := testutil.GatherAndCount(reg, "sluice_limiter_accepted_units_per_minute"); err != nil || n != 0 {
		t.Errorf("slow_start off: %d accepted samples (%v), want none", n, err)
	}
}
