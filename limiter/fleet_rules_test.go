package limiter

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// In slow start the fleet doubles its rate, but never above k times the
// larger of the initial rate and the units the fleet was accepted in the
// last minute, k = max(2, 0.3 s / the propagation delay): a sliding window
// accepts a whole minute's quota at any rate, so the rate at the first
// throttle stays within k times the quota. With the delay unknown there is
// no bound.
func TestFleetSlowStartBound(t *testing.T) {
	f := testRules(t, nil) // initial 600, slow start on
	view := func(at, accepted float64, delay time.Duration) FleetView {
		return FleetView{LastWait: fat(at - 0.5), Accepted: accepted, Delay: delay}
	}
	const d = 100 * time.Millisecond // k = 3
	s := f.Start(fat(0))
	steps := []struct {
		at, accepted float64
		delay        time.Duration
		raised       bool
		rate         float64
	}{
		{2, 0, d, true, 1200},                     // 2 × 600, under 3 × 600
		{4, 100, d, true, 1800},                   // 2400 is above 3 × max(600, 100): up to the bound
		{6, 500, d, false, 1800},                  // the bound is not above the rate
		{8, 1000, d, true, 3000},                  // 3600 is above 3 × 1000
		{10, 5000, d, true, 6000},                 // a doubling under the bound
		{12, 2000, time.Second, false, 6000},      // k = 2: 4000 is below the rate
		{14, 2000, time.Millisecond, true, 12000}, // k = 300
		{16, 0, 0, true, 24000},                   // no delay known: no bound
	}
	for i, st := range steps {
		ns, raised := f.Raise(s, fat(st.at), view(st.at, st.accepted, st.delay))
		if raised != st.raised || math.Abs(ns.Rate-st.rate) > 1e-9 {
			t.Fatalf("step %d: raised %v rate %v, want %v %v", i, raised, ns.Rate, st.raised, st.rate)
		}
		if !ns.SlowStart {
			t.Fatalf("step %d: slow start ended by a raise", i)
		}
		s = ns
	}
}

// Slow start's end in a fleet falls back to the units the whole fleet was
// accepted, spread over the time since the fleet started (at most a
// minute) and the Retry-After; that span is the hold. When the span is
// shorter than a minute it measures no quota; from a minute on (a minute
// since the start, or w and the wait together) it measures the quota, and
// the rate goes to the plateau's level, 97% of it.
func TestFleetSlowStartFallback(t *testing.T) {
	f := testRules(t, nil)
	s := f.Start(fat(0))
	s.Rate = 10000
	ns, changed, cut := f.Throttle(s, report(20.5, 20.4, 10*time.Second), 2000)
	want := 2000 * 60 / 31.0 // w = 21 s (⌊20.5⌋ + 1), RA = 10 s
	if !changed || !cut || ns.SlowStart || math.Abs(ns.Rate-want) > 1e-9 {
		t.Fatalf("changed %v cut %v slow start %v rate %v, want the fallback to %v", changed, cut, ns.SlowStart, ns.Rate, want)
	}
	if !ns.HoldUntil.Equal(fat(51.5)) || ns.Accepted != 0 {
		t.Fatalf("hold until %v, measured quota %v; want 51.5 and none", ns.HoldUntil.Sub(ft0).Seconds(), ns.Accepted)
	}
	// Within the first minute, a fallback that spreads the units over a
	// minute or more (w + RA: a sliding window that slow start filled at
	// w asks for the rest of the minute) measures the quota too.
	ns, _, _ = f.Throttle(s, report(36.5, 36.4, 24*time.Second), 3000)
	if want := 3000 * 60 / 61.0; math.Abs(ns.Rate-0.97*want) > 1e-9 || math.Abs(ns.Accepted-want) > 1e-9 {
		t.Fatalf("fallback at 36.5 s with RA 24 s: rate %v, quota %v; want 0.97 × %v, and %v measured", ns.Rate, ns.Accepted, want, want)
	}
	// Later than a minute after the start, w is a minute.
	s.LastCut, s.IncClock = fat(0), fat(0)
	ns, _, _ = f.Throttle(s, report(100, 99.9, 0), 3000)
	if math.Abs(ns.Rate-2910) > 1e-9 || math.Abs(ns.Accepted-3000) > 1e-9 {
		t.Fatalf("fallback at 100 s: rate %v, quota %v; want 0.97 × 3000 a minute, and 3000 measured", ns.Rate, ns.Accepted)
	}
	ns, _, _ = f.Throttle(s, report(100, 99.9, 20*time.Second), 3000)
	if want := 3000 * 60 / 80.0; math.Abs(ns.Rate-0.97*want) > 1e-9 || math.Abs(ns.Accepted-want) > 1e-9 {
		t.Fatalf("fallback at 100 s with RA 20 s: rate %v, quota %v; want 0.97 × %v, and %v measured", ns.Rate, ns.Accepted, want, want)
	}
	// With the fleet's count unknown, the worker's own, for its share.
	r := report(20.5, 20.4, 10*time.Second)
	r.Accepted = 150 // 1/20 of the budget
	if ns, _, _ = f.Throttle(s, r, 0); ns.Rate != 3000 || ns.Accepted != 0 {
		t.Fatalf("fallback from the worker's count: rate %v accepted %v, want 3000 and none", ns.Rate, ns.Accepted)
	}
}

// A cut after a minute without one measures the quota (the units the
// fleet was accepted in that minute) and leaves the rate at no less than
// 90% of it, never above the rate before the cut. A cut within a minute of
// another (the quota went down) is the limiter's cut, and measures nothing.
func TestFleetCutFloor(t *testing.T) {
	f := testRules(t, func(c *Config) { c.SlowStart = false; c.InitialUnitsPerMinute = 3000 })
	s := f.Start(fat(0))
	steps := []struct {
		at, accepted float64
		rate, quota  float64
	}{
		{100, 2800, 2520, 2800}, // 0.7 × 3000 = 2100 is below 0.9 × 2800
		{110, 2700, 1764, 0},    // 10 s after the last cut: 0.7 × 2520
		{200, 2500, 1764, 2500}, // the floor (2250) is above the rate: no higher
		{300, 0, 1234.8, 0},     // the fleet's count unknown: the limiter's cut
		{400, 1000, 900, 1000},  // the floor above 0.7 × 1234.8
		{401, 1000, 900, 1000},  // within the cooldown: no cut, nothing measured
		{406.5, 1000, 630, 0},   // 6.5 s on, sent after the cut: cut as usual
	}
	for i, st := range steps {
		ns, _, _ := f.Throttle(s, report(st.at, st.at-0.1, 0), st.accepted)
		if math.Abs(ns.Rate-st.rate) > 1e-9 || ns.Accepted != st.quota {
			t.Fatalf("step %d at %v: rate %v quota %v, want %v %v", i, st.at, ns.Rate, ns.Accepted, st.rate, st.quota)
		}
		s = ns
	}
}

// For five minutes after a cut that measured the quota, a raise takes the
// rate to at most 97% of it; then the limiter's raises go on. Nor does
// the fleet raise during the hold after slow start.
func TestFleetPlateau(t *testing.T) {
	f := testRules(t, func(c *Config) { c.SlowStart = false; c.InitialUnitsPerMinute = 3000 })
	s := f.Start(fat(0))
	s, _, _ = f.Throttle(s, report(100, 99.9, 0), 2800) // rate 2520, plateau at 2716
	steps := []struct {
		at     float64
		raised bool
		rate   float64
	}{
		{110, true, 2640},
		{120, true, 2716},  // 2760 is above the plateau
		{130, false, 2716}, // at the plateau
		{399, false, 2716},
		{400, true, 2836}, // five minutes after the cut
	}
	for i, st := range steps {
		ns, raised := f.Raise(s, fat(st.at), FleetView{LastWait: fat(st.at - 1), Accepted: 5000})
		if raised != st.raised || math.Abs(ns.Rate-st.rate) > 1e-9 {
			t.Fatalf("step %d at %v: raised %v rate %v, want %v %v", i, st.at, raised, ns.Rate, st.raised, st.rate)
		}
		s = ns
	}
	s.HoldUntil = fat(500)
	if _, raised := f.Raise(s, fat(450), FleetView{LastWait: fat(449), Accepted: 5000}); raised {
		t.Fatal("raised during the hold")
	}
	if _, raised := f.Raise(s, fat(500), FleetView{LastWait: fat(499), Accepted: 5000}); !raised {
		t.Fatal("no raise at the end of the hold")
	}
}

// A worker that starts to follow a fleet begins to fill its bucket at its
// own phase of one unit's time at its rate.
func TestFleetStagger(t *testing.T) {
	f := testRules(t, nil)
	s := f.Start(fat(0)) // 600 a minute
	p := Part{Share: 0.1, Instances: 10}
	for _, c := range []struct{ phase, want float64 }{{0, 5}, {0.5, 5.5}, {0.25, 5.25}} {
		if got := f.Stagger(s, p, c.phase, fat(5)); !got.Equal(fat(c.want)) {
			t.Errorf("phase %v: %v, want %v", c.phase, got.Sub(ft0).Seconds(), c.want)
		}
	}
}

// A fleet cut empties a following Core's bucket down to the units of the
// head of its queue: saved tokens are not a burst at the new rate. The
// Core counts the units accepted while it follows.
func TestCoreFollowCutDropsSurplus(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.InitialFill = 1; c.Instances = 2 })
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	fleet := Adapt{Rate: 1200, LastCut: t0, IncClock: t0, WMax: 1200, CutTime: t0}
	c.Follow(at(0), fleet, time.Time{})
	if got := c.Tokens(at(20)); got != 100 {
		t.Fatalf("tokens %v, want a full bucket of 10 s at 600", got)
	}
	fleet.Rate, fleet.Throttled, fleet.LastCut = 840, true, at(20)
	c.Follow(at(21), fleet, time.Time{})
	if got := c.Tokens(at(21)); got != 0 {
		t.Fatalf("tokens after a fleet cut with nothing waiting %v, want 0", got)
	}
	// 3.5 tokens at 21.5 (420 a minute): a following Core grants a request
	// when its bucket is not below zero, and the request takes its units.
	if d := c.Acquire(at(21.5), 9); d.Status != Granted {
		t.Fatalf("status %v, want granted", d.Status)
	}
	if d := c.Acquire(at(21.5), 1); d.Status != Waiting {
		t.Fatalf("status %v, want waiting: the bucket is at -5.5", d.Status)
	}
	c.Follow(at(21.6), fleet, time.Time{}) // the same cut again: tokens kept
	if got := c.Tokens(at(21.6)); math.Abs(got+4.8) > 1e-6 {
		t.Fatalf("tokens %v, want -4.8", got)
	}
	fleet.LastCut = at(21.6)
	c.Follow(at(21.6), fleet, time.Time{})
	if got := c.Tokens(at(21.6)); math.Abs(got+4.8) > 1e-6 {
		t.Fatalf("tokens after a cut %v, want the debt of 4.8 kept", got)
	}
	if next, ok := c.NextDue(); !ok || !next.Equal(at(21.6+4.8/7)) {
		t.Fatalf("next due %v, want the head's grant when the debt is repaid", next.Sub(t0).Seconds())
	}
	c.Observe(at(22), at(21.5), 4, call.Outcome{Kind: call.Success, Status: 200})
	c.Observe(at(23), at(22.5), 2, call.Outcome{Kind: call.Success, Status: 200})
	if got := c.AcceptedUnits(at(23)); got != 6 {
		t.Fatalf("accepted units %v, want 6", got)
	}
	if got := c.AcceptedUnits(at(82.9)); got != 2 {
		t.Fatalf("accepted units at 82.9 %v, want the 2 of second 23", got)
	}
	if got := c.AcceptedUnits(at(83)); got != 0 {
		t.Fatalf("accepted units at 83 %v, want none: second 23 left the minute", got)
	}
}

// CUBIC's curve keeps rising through the plateau; at the plateau's end it
// starts again from the rate, so that the first probe above the measured
// quota is one small step, not the whole curve at once.
func TestFleetPlateauCUBIC(t *testing.T) {
	f := testRules(t, func(c *Config) {
		c.SlowStart, c.InitialUnitsPerMinute, c.Controller = false, 3000, ControllerCUBIC
	})
	s := f.Start(fat(0))
	s, _, _ = f.Throttle(s, report(100, 99.9, 0), 2800) // rate 2520, plateau at 2716 until 400
	s, raised := f.Raise(s, fat(200), FleetView{LastWait: fat(199)})
	if !raised || math.Abs(s.Rate-2716) > 1e-9 {
		t.Fatalf("raise within the plateau: %v, rate %v; want up to 2716", raised, s.Rate)
	}
	ns, raised := f.Raise(s, fat(410), FleetView{LastWait: fat(409)})
	want := 2716 + 0.003*10*10*10 // C·(t − 400)³ + the rate at the plateau's end
	if !raised || math.Abs(ns.Rate-want) > 1e-6 || !ns.CutTime.Equal(fat(400)) {
		t.Fatalf("first raise after the plateau: %v, rate %v, epoch %v; want %v from 400", raised, ns.Rate, ns.CutTime.Sub(ft0).Seconds(), want)
	}
}
