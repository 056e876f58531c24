package run

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
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

// TestPaceEstimate: beside the two rates, the limiter's estimate of what
// the API accepts: none in startup (and why), the law's figure after a
// 429, scraped as sluice_limiter_estimate_units_per_minute only while
// there is one; none of its own while following a fleet, with the classic
// rules or disabled, each saying why.
func TestPaceEstimate(t *testing.T) {
	const name = "sluice_limiter_estimate_units_per_minute"
	synctest.Test(t, func(t *testing.T) {
		lim, err := limiter.New(limiter.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		reg := prometheus.NewRegistry()
		reg.MustRegister(newPaceCollector(lim))
		p := limiterPace(lim, lim.Stats())
		if !math.IsNaN(p.Estimate) || p.NoEstimate != EstimateNotYet ||
			p.EstimateText() != "estimate: none yet (no 429 or quota header so far)" {
			t.Errorf("startup: %+v %q, want no estimate yet", p, p.EstimateText())
		}
		if n, err := testutil.GatherAndCount(reg, name); err != nil || n != 0 {
			t.Errorf("startup: %d estimate samples (%v), want none", n, err)
		}
		tk, err := lim.Wait(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		lim.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
		st := lim.Stats()
		p = limiterPace(lim, st)
		if p.Estimate != st.Estimate || !(p.Estimate > 0) || p.NoEstimate != "" {
			t.Fatalf("after a 429: %+v, want the limiter's estimate %v", p, st.Estimate)
		}
		if got, want := p.EstimateText(), fmt.Sprintf("estimate: the API accepts %.0f units/min", st.Estimate); got != want {
			t.Errorf("EstimateText() = %q, want %q", got, want)
		}
		if got, ok := backends.Gauge(t, reg, name); !ok || got != st.Estimate {
			t.Errorf("%s = %v (scraped %v), want %v", name, got, ok, st.Estimate)
		}
		// The /state answer carries it, and status reads it back.
		ws := WorkerState{Rate: p.Sending, Estimate: finite(p.Estimate), NoEstimate: p.NoEstimate}
		if back := ws.Pace(); back.Estimate != p.Estimate || back.EstimateText() != p.EstimateText() {
			t.Errorf("through /state: %+v, want %+v", back, p)
		}
		// Following a fleet, its share (the whole budget here) of the
		// fleet's estimate.
		lim.Follow(fleet.State{Adapt: control.Adapt{Rate: 900}, Law: &control.LawState{Rate: 900, Bound: 920, Ceil: 950, From: "refusal"}}, time.Time{})
		if p := limiterPace(lim, lim.Stats()); p.Estimate != 920 || p.NoEstimate != "" {
			t.Errorf("following: %+v, want the fleet's estimate 920", p)
		}
		if got, ok := backends.Gauge(t, reg, name); !ok || got != 920 {
			t.Errorf("following: %s = %v (scraped %v), want 920", name, got, ok)
		}
	})
	for why, f := range map[NoEstimate]func(*limiter.Config){
		EstimateClassic:  func(c *limiter.Config) { c.SlowStart = false },
		EstimateDisabled: func(c *limiter.Config) { c.Disabled = true },
	} {
		cfg := limiter.DefaultConfig()
		f(&cfg)
		lim, err := limiter.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p := limiterPace(lim, lim.Stats()); !math.IsNaN(p.Estimate) || p.NoEstimate != why || p.EstimateText() == "" {
			t.Errorf("%s: %+v %q", why, p, p.EstimateText())
		}
	}
	// A fleet's pace, or a worker that reports no estimate: nothing said.
	if e := FleetPace(nil, "", nil).EstimateText(); e != "" {
		t.Errorf("a fleet's estimate: %q, want none shown", e)
	}
	if e := (WorkerState{Rate: 600}).Pace().EstimateText(); e != "" {
		t.Errorf("a worker that reports no estimate: %q, want none shown", e)
	}
}
