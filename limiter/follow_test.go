package limiter

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// The adaptive law's margin and probe base, as docs/limiter.md's table of
// the law's constants gives them (margin, probe base).
const (
	lawMargin = 0.98
	probeBase = 4 * time.Second
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
	fleet := fleet.State{Adapt: control.Adapt{Rate: 2400, Throttled: true, LastCut: at(1), IncClock: at(1), WMax: 3000, CutTime: at(1), K: 2}}
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
	c.Follow(at(0), fleet.State{Adapt: control.Adapt{Rate: 1000, LastCut: at(0), IncClock: at(0), WMax: 1000, CutTime: at(0)}}, time.Time{})
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
	fleet := fleet.State{Adapt: control.Adapt{Rate: 600, LastCut: at(0), IncClock: at(0), WMax: 600, CutTime: at(0)}}
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
	c.Follow(at(0), fleet.State{Adapt: control.Adapt{Rate: 60, Throttled: true, LastCut: t0, IncClock: t0, WMax: 60, CutTime: t0}}, time.Time{})
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

// A Core that follows a law fleet runs at its share of the fleet's rate,
// estimates its share of the fleet's bound, drops its saved tokens at a
// new fleet cut, and reports what its own record measured for the whole
// budget (its estimate divided by its share), for refusals of requests
// sent once the fleet's Retry-After ran out.
func TestCoreFollowLaw(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Instances, cfg.InitialFill = 4, 1
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	law := control.LawState{Rate: 1960, Bound: 2000, Ceil: 2000, Moved: at(5), Cut: at(5), Open: at(6), Hold: probeBase, Full: at(4.9)}
	fleet := fleet.State{Adapt: control.Adapt{Rate: 1960, Throttled: true, LastCut: at(5), IncClock: at(5)}, Law: &law}
	c.Follow(at(10), fleet, time.Time{})
	if c.Rate() != 490 || c.Estimate() != 500 || c.Adapt().SlowStart {
		t.Fatalf("following: rate %v estimate %v, want 1960/4 and 2000/4", c.Rate(), c.Estimate())
	}
	if got := c.Tokens(at(20)); got <= 0 {
		t.Fatalf("tokens %v, want some saved", got)
	}
	cut := control.LawState{Rate: 1470, Bound: 1500, Ceil: 1500, Moved: at(20), Cut: at(20), Open: at(21), Hold: probeBase, Full: at(19.9)}
	fleet.Law, fleet.Rate, fleet.LastCut, fleet.IncClock = &cut, 1470, at(20), at(20)
	c.Follow(at(20.5), fleet, at(21))
	if c.Rate() != 367.5 || c.Estimate() != 375 || c.Tokens(at(20.5)) != 0 {
		t.Fatalf("after a fleet cut: rate %v estimate %v tokens %v; want 367.5, 375, none", c.Rate(), c.Estimate(), c.Tokens(at(20.5)))
	}
	if until, ok := c.PausedUntil(); !ok || !until.Equal(at(21)) {
		t.Fatalf("paused until %v %v, want the fleet's 21", secs(until), ok)
	}
	// One unit every 250 ms, each accepted: 240 a minute.
	for k := 1; k < 80; k++ {
		now := at(21 + float64(k)/4)
		d := c.Acquire(now, 1)
		if d.Status != Granted {
			t.Fatalf("request at %v: %v, want granted", secs(now), d.Status)
		}
		c.Observe(now.Add(50*time.Millisecond), d.At, 1, call.Outcome{Kind: call.Success, Status: 200})
	}
	if r := c.Report(at(41.1), at(41), 0); r.Accepted != 240*4 {
		t.Fatalf("report: accepted %v, want 240 a minute / (1/4)", r.Accepted)
	}
	// Its own refusal pauses it but does not cut: the fleet decides.
	d := c.Acquire(at(41.2), 1)
	c.Observe(at(41.3), d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
	if c.Rate() != 367.5 || c.Estimate() != 375 {
		t.Fatalf("after its own refusal: rate %v estimate %v, want the fleet's 367.5 and 375", c.Rate(), c.Estimate())
	}
	// The fleet cuts for it, with a Retry-After of 3.5 s: a refusal of a
	// request sent before then belongs to that cut and measures nothing.
	again := control.LawState{Rate: 1176, Bound: 1200, Ceil: 1200, Moved: at(41.5), Cut: at(41.5), Open: at(45), Hold: probeBase, Full: at(41.2)}
	fleet.Law, fleet.Rate, fleet.LastCut, fleet.IncClock = &again, 1176, at(41.5), at(41.5)
	c.Follow(at(41.5), fleet, at(45))
	if c.Rate() != 294 || c.Estimate() != 300 {
		t.Fatalf("after the second cut: rate %v estimate %v, want 294 and 300", c.Rate(), c.Estimate())
	}
	if r := c.Report(at(44), at(43), 0); r.Accepted != -1 {
		t.Fatalf("report of a request sent before open: accepted %v, want none (-1)", r.Accepted)
	}
	// The cut's send starts a span (the API was full then), but the pause
	// after the cut is no time the API was offered anything: 0.3 s of
	// sending from 41.2 to 45 is too short to measure.
	if r := c.Report(at(45.1), at(45), 0); r.Accepted != -1 {
		t.Fatalf("report of a request sent at open: accepted %v, want none (-1): the span is the pause", r.Accepted)
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
	fleet := fleet.State{Adapt: control.Adapt{Rate: 1200, LastCut: t0, IncClock: t0, WMax: 1200, CutTime: t0}}
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
