package limiter

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
)

// A Core that follows a fleet runs at the fleet rate times its part, never
// cuts or raises by itself, pauses for the fleet's pause, and rescales to
// the fleet rate when its share changes.
func TestCoreFollow(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Instances = 4; c.Burst = time.Second })
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	fleet := FleetState{Adapt: control.Adapt{Rate: 2400, Throttled: true, LastCut: at(1), IncClock: at(1), WMax: 3000, CutTime: at(1), K: 2}}
	c.Follow(at(2), fleet, time.Time{})
	if got := c.Rate(); got != 600 {
		t.Fatalf("rate = %v, want 2400/4", got)
	}
	if a := c.Adapt(); a.WMax != 750 || a.K != 2 || !a.LastCut.Equal(at(1)) {
		t.Fatalf("adapt = %+v, want the fleet's scaled to 1/4", a)
	}
	// Its own throttles pause but do not cut; its successes never raise.
	d := c.Acquire(at(3), 1)
	c.Observe(at(10), d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
	if got := c.Rate(); got != 600 {
		t.Fatalf("rate after a throttle while following = %v, want 600", got)
	}
	if until, ok := c.PausedUntil(); !ok || !until.Equal(at(11)) {
		t.Fatalf("paused until %v %v, want 11", secs(until), ok)
	}
	c.Acquire(at(12), 1000) // oversized: takes the bucket below zero
	if w := c.Acquire(at(12), 1); w.Status != Waiting {
		t.Fatalf("second request %v, want it to wait", w.Status)
	}
	c.Observe(at(30), at(12), 1, call.Outcome{Kind: call.Success, Status: 200})
	if got := c.Rate(); got != 600 {
		t.Fatalf("rate after a success while following = %v, want 600", got)
	}
	if w := c.LastWait(); !w.Equal(at(30)) {
		t.Fatalf("LastWait with a queued request = %v, want now (30)", secs(w))
	}
	// The fleet's pause reaches it.
	c.Follow(at(31), fleet, at(40))
	if until, ok := c.PausedUntil(); !ok || !until.Equal(at(40)) {
		t.Fatalf("paused until %v %v, want the fleet's 40", secs(until), ok)
	}
	// N = 4 → 2: the fleet rate times the new share, not rate·N/M of a
	// stale rate.
	fleet.Rate = 2000
	c.Follow(at(41), fleet, time.Time{})
	_ = c.SetInstanceCount(at(42), 2)
	if got := c.Rate(); got != 1000 {
		t.Fatalf("rate after N=2 = %v, want 2000/2", got)
	}
}

// A Core that leads again runs its own rules from the fleet's state, and
// never raises above the last fleet rate times its share.
func TestCoreLeadCeiling(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Instances = 2; c.Burst = time.Second; c.AIMD.IncreaseInterval = 0 })
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Follow(at(0), FleetState{Adapt: control.Adapt{Rate: 1000, LastCut: at(0), IncClock: at(0), WMax: 1000, CutTime: at(0)}}, time.Time{})
	c.Lead(at(1))
	if c.Following() {
		t.Fatal("still following after Lead")
	}
	for i := range 20 {
		now := at(2 + float64(i))
		d := c.Acquire(now, 100) // more than the bucket: waits
		if d.Status == Waiting {
			c.Advance(now.Add(30 * time.Second))
		}
		c.Observe(now, now, 1, call.Outcome{Kind: call.Success, Status: 200})
		if r := c.Rate(); r > 500+1e-9 {
			t.Fatalf("raise %d: rate %v above the fleet's 1000 × 1/2", i, r)
		}
	}
	if r := c.Rate(); r != 500 {
		t.Fatalf("rate = %v, want it raised up to the ceiling 500", r)
	}
	d := c.Acquire(at(100), 1)
	c.Observe(at(101), d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429})
	if r := c.Rate(); math.Abs(r-350) > 1e-9 {
		t.Fatalf("rate after a local cut = %v, want 500·0.7", r)
	}
}

// A pause that only the fleet ordered keeps the bucket's tokens at its
// end (the instance did not overrun anything); a pause for the instance's
// own Retry-After empties it, as always.
func TestCoreFleetPauseKeepsTokens(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Burst = 10 * time.Second })
	fleet := FleetState{Adapt: control.Adapt{Rate: 600, LastCut: at(0), IncClock: at(0), WMax: 600, CutTime: at(0)}}
	c, _ := NewCore(cfg, t0)
	c.Follow(at(0), fleet, at(2))
	if got := c.Tokens(at(3)); got != 100 {
		t.Fatalf("tokens after the fleet's pause = %v, want the full bucket kept", got)
	}
	c, _ = NewCore(cfg, t0)
	c.Follow(at(0), fleet, time.Time{})
	d := c.Acquire(at(0), 1)
	c.Observe(at(0.1), d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
	c.Follow(at(0.2), fleet, at(2))
	if got := c.Tokens(at(2)); got != 0 {
		t.Fatalf("tokens after its own pause, extended by the fleet = %v, want 0", got)
	}
}

// A following Core grants the head of its queue as soon as its bucket is
// not below zero, and the request takes its units: it saves no tokens
// toward an expensive request, and sends at its rate all the same.
func TestCoreFollowGrantsWhenNotInDebt(t *testing.T) {
	c, err := NewCore(cfgWith(func(c *Config) { c.InitialFill = 0 }), t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Follow(at(0), FleetState{Adapt: control.Adapt{Rate: 60, Throttled: true, LastCut: t0, IncClock: t0, WMax: 60, CutTime: t0}}, time.Time{})
	if d := c.Acquire(at(0), 5); d.Status != Granted {
		t.Fatalf("first request: %v, want granted from an empty bucket", d.Status)
	}
	c.Acquire(at(0), 5)
	c.Acquire(at(0), 1)
	c.Advance(at(20))
	var got []float64
	for _, d := range c.Drain(nil) {
		got = append(got, d.At.Sub(t0).Seconds())
	}
	if len(got) != 2 || math.Abs(got[0]-5) > 1e-6 || math.Abs(got[1]-10) > 1e-6 {
		t.Fatalf("grants at %v, want 5 and 10 (one unit a second)", got)
	}
	// A Core on its own rules saves up: the first 5 units at 5 s.
	own, err := NewCore(cfgWith(func(c *Config) { c.InitialUnitsPerMinute, c.InitialFill = 60, 0 }), t0)
	if err != nil {
		t.Fatal(err)
	}
	if d := own.Acquire(at(0), 5); d.Status != Waiting {
		t.Fatalf("own rules: %v, want waiting", d.Status)
	}
}
