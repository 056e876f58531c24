package control

import (
	"math"
	"testing"
	"time"
)

// A Retry-After of W or more leaves the span one window back from when
// the API has room again no sending time: it must not read as an API that
// accepted nothing, and the refusal, with no other span long enough, is a
// pause at the bound.
func TestLawLongRetryAfterIsNoMeasure(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 10 * time.Second
	l := NewLaw(cfg, 600, cfg.MinUnitsPerMinute, cfg.MaxUnitsPerMinute)
	fill(l, 0, 10*time.Second, 600)
	refuse(l, 10050*time.Millisecond, 10*time.Second, time.Second)
	rate, bound := l.rate, l.bound
	l.Sent(11100*time.Millisecond, 1, false)
	refuse(l, 11200*time.Millisecond, 11100*time.Millisecond, 30*time.Second)
	if l.bound < bound || l.rate < rate*lawMargin {
		t.Errorf("after a refusal with Retry-After 30 s: rate %.0f, bound %.0f; want no cut below rate %.0f, bound %.0f",
			l.rate, l.bound, rate, bound)
	}
}

// The record drops what falls outside it: an answer to a request sent
// before the record's first bin (a clock that went back, a hand-made
// ticket) or a grant older than the record.
func TestLawRecordOutsideIsDropped(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 600)
	l.Sent(time.Second, 1, false)
	l.Accepted(-time.Second, 1) // must not index before the ring
	l.Sent(300*time.Second, 1, false)
	l.Sent(10*time.Second, 5, false) // older than the record's 256 s
	l.Accepted(10*time.Second, 5)
	if got := l.past.sum(&l.past.sent, 0, 301*time.Second); got != 1 {
		t.Errorf("units sent in the record: %v, want 1 (only the grant at 300 s)", got)
	}
	if got := l.past.sum(&l.past.acc, 0, 301*time.Second); got != 0 {
		t.Errorf("units accepted in the record: %v, want 0", got)
	}
}

// A fleet's view that is not finite (a sum of absurd reports) is no
// measure: the state stays finite and the rate where it was.
func TestLawRaiseOnNotFinite(t *testing.T) {
	for _, v := range []float64{math.Inf(1), math.NaN()} {
		l := testLaw(t, ControllerAIMD, 600)
		l.startup, l.bound, l.ceil, l.rate, l.moved = false, 1000, 1200, 980, 0
		l.RaiseOn(time.Minute, v, v, v)
		for name, x := range map[string]float64{"rate": l.rate, "bound": l.bound, "ceil": l.ceil} {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				t.Fatalf("view %v: %s is %v", v, name, x)
			}
		}
		if l.bound != 1000 || l.ceil != 1200 {
			t.Errorf("view %v: bound %.0f, ceil %.0f; want 1000, 1200 (no measure)", v, l.bound, l.ceil)
		}
	}
}

// At a tiny rate four units take longer than a Duration holds: the idle
// gap is no new span until it is that long.
func TestLawIdleGapAtTinyRate(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 600)
	l.rate = 1e-9
	l.Sent(0, 1, false)
	l.Sent(2*time.Second, 1, true)
	if l.from != 0 {
		t.Errorf("a 2 s gap at %v units/min started a span at %v, want none", l.rate, l.from)
	}
}

// A fleet state loaded from shared storage keeps this instance's
// configured W, and a window or probe interval longer than the law sets
// is cut to its longest.
func TestLawLoadBounds(t *testing.T) {
	base := time.Unix(1e9, 0)
	cfg := DefaultConfig()
	cfg.Window = 10 * time.Second
	l := NewLaw(cfg, 600, cfg.MinUnitsPerMinute, cfg.MaxUnitsPerMinute)
	l.Load(LawState{Rate: 600, Window: 30 * time.Second, From: "refusal", Hold: 24 * time.Hour}, base, 1)
	if l.window != 10*time.Second || l.wfrom != fromConfig {
		t.Errorf("configured W after a load: %v from %v, want 10s from the config", l.window, l.wfrom)
	}
	if l.hold != longestHold {
		t.Errorf("probe interval after loading 24h: %v, want %v", l.hold, longestHold)
	}
	l = testLaw(t, ControllerAIMD, 600)
	l.Load(LawState{Rate: 600, Window: 24 * time.Hour, From: "refusal"}, base, 1)
	if l.window != MaxWindow {
		t.Errorf("W after loading 24h: %v, want %v", l.window, MaxWindow)
	}
}

// Refused reads a Retry-After of 0 or less as LawRetryAfter itself, as
// Core does before it calls: a refusal that names no wait still says the
// API is full for a second, so refusals of requests sent in that second
// belong to the cut.
func TestLawRefusedNamesNoWait(t *testing.T) {
	for _, ra := range []time.Duration{0, -time.Second} {
		l := testLaw(t, ControllerAIMD, 6000)
		fill(l, 0, 20*time.Second, 3000)
		at := 20 * time.Second
		if !l.Refused(at, at-50*time.Millisecond, ra, at+LawRetryAfter) {
			t.Fatalf("Retry-After %v: the first refusal did not cut", ra)
		}
		if want := at + LawRetryAfter; l.open != want {
			t.Errorf("Retry-After %v: the API takes more from %v, want %v", ra, l.open, want)
		}
	}
}
