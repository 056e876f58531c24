package control

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// at returns the instant s seconds after t0.
func at(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }

// rulesConfig is DefaultConfig without slow start: the classic rules.
func rulesConfig() Config {
	c := DefaultConfig()
	c.InitialFill, c.SlowStart = 1, false
	return c
}

// The Rules of a whole budget cut once per burst and raise once per
// interval: the rules a fleet shares.
func TestRulesThrottleAndRaise(t *testing.T) {
	cfg := rulesConfig()
	r := NewRules(cfg, Whole)
	a := r.Start(at(0))
	if a.Rate != 600 || a.WMax != 600 {
		t.Fatalf("start = %+v", a)
	}
	if !r.Throttle(&a, at(1), at(0.9), -1) || a.Rate != 420 {
		t.Fatalf("first throttle: rate %v, want 420", a.Rate)
	}
	// Same burst: within the cooldown, or sent before the cut.
	if r.Throttle(&a, at(2), at(1.5), -1) || r.Throttle(&a, at(7), at(0.95), -1) {
		t.Fatal("a throttle of the same burst cut again")
	}
	if !r.Throttle(&a, at(7), at(6), -1) || math.Abs(a.Rate-294) > 1e-9 {
		t.Fatalf("throttle after the cooldown: rate %v, want 294", a.Rate)
	}
	if r.Raise(&a, at(20), false) {
		t.Fatal("raised though nobody waited")
	}
	if r.Raise(&a, at(16), true) {
		t.Fatal("raised before increase_interval on the increase clock (7)")
	}
	if !r.Raise(&a, at(17), true) || math.Abs(a.Rate-414) > 1e-9 || !a.IncClock.Equal(at(17)) {
		t.Fatalf("raise: %+v, want 294+120 at 17", a)
	}
	if r.Raise(&a, at(18), true) {
		t.Fatal("second raise within the interval")
	}
}
