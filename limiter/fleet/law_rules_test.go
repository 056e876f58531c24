package fleet

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limiter/control"
)

// The adaptive law's margin, as docs/limiter.md's table of the law's
// constants gives it.
const lawMargin = 0.98

// In startup the fleet doubles its rate, but never above k times the
// larger of the initial rate and the units the fleet was accepted in the
// last minute, k = max(2, fleetReach / the propagation delay), and never
// below the rate it had: what the fleet sends before a refusal reaches
// every worker stays a small part of a minute's quota. With the delay
// unknown there is no bound.
func TestFleetReach(t *testing.T) {
	f := testRules(t, nil) // initial 600, the adaptive law
	view := func(at, accepted float64, delay time.Duration) View {
		return View{LastWait: fat(at - 0.5), Sent: -1, Accepted: accepted, Delay: delay}
	}
	const d = 100 * time.Millisecond // k = 3
	s := f.Start(fat(0))
	steps := []struct {
		at, accepted float64
		delay        time.Duration
		rate         float64
	}{
		{2, 0, d, 1200},                     // 2 × 600, under 3 × 600
		{4, 100, d, 1800},                   // 2400 is above 3 × max(600, 100): up to the bound
		{6, 500, d, 1800},                   // the bound is not above the rate
		{8, 1000, d, 3000},                  // 3600 is above 3 × 1000
		{10, 5000, d, 6000},                 // a doubling under the bound
		{12, 2000, time.Second, 6000},       // k = 2: 4000 is below the rate, which stays
		{14, 5000, time.Second, 10000},      // k = 2: 10000, under the doubling
		{16, 2000, time.Millisecond, 20000}, // k = 300
		{18, 0, 0, 40000},                   // no delay known: no bound
	}
	for i, st := range steps {
		ns, raised := f.Raise(s, fat(st.at), view(st.at, st.accepted, st.delay))
		// A capped doubling moves the law's clock (the state changes)
		// without raising the rate: only a changed rate must be raised.
		if math.Abs(ns.Rate-st.rate) > 1e-9 || ns.Law.Rate != ns.Rate || !raised && st.rate != s.Rate {
			t.Fatalf("step %d: raised %v rate %v (law %v), want %v", i, raised, ns.Rate, ns.Law.Rate, st.rate)
		}
		if !ns.SlowStart || !ns.Law.Startup {
			t.Fatalf("step %d: startup ended by a raise", i)
		}
		s = ns
	}
}

// lawFleet returns the law's whole-budget state after a first refusal at
// 10 s of a request sent at 9.9 s with a Retry-After of 2 s, whose worker
// measured 200 a minute: out of startup at lawMargin × 200.
func lawFleet(t *testing.T, f Rules) State {
	t.Helper()
	r := report(10, 9.9, 2*time.Second)
	r.Accepted = 200
	s, changed, cut := f.Throttle(f.Start(fat(0)), r, 0)
	if !changed || !cut {
		t.Fatalf("first refusal: changed %v cut %v, want a cut", changed, cut)
	}
	return s
}

// A law fleet's first refusal, with what the worker's record measured
// clearly under half the rate, cuts to lawMargin of it and pauses the fleet
// for the Retry-After; the refusals of requests sent before that
// Retry-After ran out belong to the same cut: they may extend the pause,
// never cut.
func TestFleetLawThrottle(t *testing.T) {
	f := testRules(t, nil)
	s := lawFleet(t, f)
	l := s.Law
	if s.Rate != lawMargin*200 || l.Rate != s.Rate || l.Bound != 200 || l.Ceil != 200 || l.Startup || s.SlowStart || !s.Throttled {
		t.Fatalf("after the cut: rate %v, law %+v; want %v out of startup, bound and ceil 200", s.Rate, *l, lawMargin*200)
	}
	if !l.Cut.Equal(fat(10)) || !l.Moved.Equal(fat(10)) || !s.LastCut.Equal(fat(10)) || !l.Open.Equal(fat(12)) ||
		!l.Full.Equal(fat(9.9)) || !s.PausedUntil.Equal(fat(12)) || !s.Seen.Equal(fat(10)) {
		t.Fatalf("after the cut: %+v, want cut at 10, open and paused to 12, full at 9.9", s)
	}
	r := report(11, 11.5, 0) // sent before 12: the same overshoot; no Retry-After: 1 s
	r.Accepted = 50
	if ns, changed, cut := f.Throttle(s, r, 0); changed || cut || ns.Law != s.Law {
		t.Fatalf("a refusal of a request sent before open: changed %v cut %v, want nothing", changed, cut)
	}
	r.RetryAfter = 5 * time.Second
	ns, changed, cut := f.Throttle(s, r, 0)
	if !changed || cut || ns.Rate != s.Rate || *ns.Law != *s.Law || !ns.PausedUntil.Equal(fat(16)) {
		t.Fatalf("with a Retry-After of 5 s: changed %v cut %v rate %v paused to %v; want only the pause to 16",
			changed, cut, ns.Rate, ns.PausedUntil.Sub(ft0).Seconds())
	}
	// Sent after open, the worker's measure cuts; the fleet's minute counts
	// when it is more.
	for _, c := range []struct {
		at, accepted, rate float64
	}{
		{60, 180, lawMargin * 180}, // the fleet's 180, more than the worker's 150
		{70, 180, lawMargin * 180},
		{70, 100, lawMargin * 150}, // the fleet's count is less: the worker's
	} {
		r := report(c.at, c.at-0.1, 0)
		r.Accepted = 150
		ns, _, cut := f.Throttle(s, r, c.accepted)
		if !cut || math.Abs(ns.Rate-c.rate) > 1e-9 || ns.Law.Bound != c.rate/lawMargin {
			t.Errorf("at %v with the fleet's %v: cut %v rate %v bound %v, want %v", c.at, c.accepted, cut, ns.Rate, ns.Law.Bound, c.rate)
		}
		if !ns.PausedUntil.Equal(fat(c.at + 0.25)) { // no Retry-After: control.LawRetryAfter
			t.Errorf("at %v: paused until %v, want a quarter of a second", c.at, ns.PausedUntil.Sub(ft0).Seconds())
		}
	}
}

// The window a worker's refusal showed is the fleet's only at its first
// refusal, in startup, when every worker began sending together.
func TestFleetLawWindow(t *testing.T) {
	f := testRules(t, nil)
	r := report(10, 9.9, 2*time.Second)
	r.Accepted, r.Window = 200, 20*time.Second
	s, _, _ := f.Throttle(f.Start(fat(0)), r, 0)
	if s.Law.Window != 20*time.Second || s.Law.From != "refusal" || s.Law.Hold != 20*time.Second {
		t.Fatalf("after the first refusal: window %v from %q hold %v, want 20s from the refusal, hold 20s", s.Law.Window, s.Law.From, s.Law.Hold)
	}
	r = report(40, 39.9, 0)
	r.Accepted, r.Window = 150, 9*time.Second
	ns, _, cut := f.Throttle(s, r, 0)
	if !cut || ns.Law.Window != 20*time.Second {
		t.Fatalf("a later refusal: cut %v window %v, want a cut and the window 20s kept", cut, ns.Law.Window)
	}
}

// A law fleet raises only when some worker's requests waited after the
// rate last moved, and reads what the fleet was accepted only when that
// minute came all after the last cut.
func TestFleetLawRaise(t *testing.T) {
	f := testRules(t, nil)
	s := lawFleet(t, f) // 196, bound and ceil 200, moved at 10
	if _, raised := f.Raise(s, fat(20), View{LastWait: fat(10), Sent: -1}); raised {
		t.Fatal("raised with no wait after the cut")
	}
	if ns, raised := f.Raise(s, fat(13), View{LastWait: fat(12.5), Sent: -1}); raised || ns.Law != s.Law {
		t.Fatal("a raise within the probe interval changed the state")
	}
	ns, raised := f.Raise(s, fat(26), View{LastWait: fat(10.5), Sent: -1, Accepted: 300})
	if !raised || ns.Rate != 200 || ns.Law.Bound != 200 || ns.Law.Probes != 1 || !ns.Law.Moved.Equal(fat(26)) || !ns.IncClock.Equal(fat(26)) {
		t.Fatalf("a probe 16 s after the cut: raised %v rate %v law %+v; want the first probe to 200, the fleet's 300 not read", raised, ns.Rate, *ns.Law)
	}
	if _, raised := f.Raise(ns, fat(50), View{LastWait: fat(25.9), Sent: -1}); raised {
		t.Fatal("raised with the last wait before the last raise")
	}
	ns, _ = f.Raise(s, fat(69.9), View{LastWait: fat(69), Sent: -1, Accepted: 300})
	if ns.Law.Bound != 200 {
		t.Fatalf("bound %v 59.9 s after the cut, want 200: the fleet's minute reaches before the cut", ns.Law.Bound)
	}
	ns, _ = f.Raise(s, fat(70), View{LastWait: fat(69), Sent: -1, Accepted: 300})
	if ns.Law.Bound != 300 || ns.Law.Ceil != 300 || ns.Law.Probes != 1 || ns.Rate != 300 {
		t.Fatalf("a minute after the cut: bound %v ceil %v probes %v rate %v; want the fleet's 300 as bound and ceil, and one probe from it, 300", ns.Law.Bound, ns.Law.Ceil, ns.Law.Probes, ns.Rate)
	}
	s.PausedUntil = fat(80)
	if _, raised := f.Raise(s, fat(79), View{LastWait: fat(78), Sent: -1}); raised {
		t.Fatal("raised in the fleet's pause")
	}
}

// A remembered law state resumes at lawMargin of what the API was seen to
// accept, and is written when that changed it; a state a worker on its own
// remembered (its rate, no law) starts the law at that rate, which the API
// was seen to accept, out of startup, and is written with the law.
func TestFleetLawResume(t *testing.T) {
	f := testRules(t, nil)
	s := lawFleet(t, f)
	s, _ = f.Raise(s, fat(26), View{LastWait: fat(25), Sent: -1}) // probing at 200
	ns, changed := f.Resume(s, fat(100))
	if !changed || ns.Rate != lawMargin*200 || ns.Law.Rate != ns.Rate || ns.Law.Bound != 200 || ns.Law.Startup || ns.SlowStart || !ns.Law.Full.Equal(fat(9.9)) {
		t.Fatalf("resumed: changed %v rate %v law %+v; want %v, bound 200, out of startup", changed, ns.Rate, *ns.Law, lawMargin*200)
	}
	lone := State{Adapt: control.Adapt{Rate: 5000, Throttled: true}, Seen: fat(0)}
	ns, changed = f.Resume(lone, fat(60))
	if !changed || ns.Law == nil || ns.Rate != 5000 || ns.Law.Rate != 5000 || ns.Law.Bound != 5000 || ns.Law.Ceil != 5000 || ns.Law.Startup || ns.SlowStart {
		t.Fatalf("resumed from a rate: changed %v %+v; want the law at 5000, bound and ceil 5000, out of startup", changed, ns)
	}
	if ns, changed = f.Resume(lone, fat(3600)); !changed || ns.Rate != 600 || !ns.Law.Startup {
		t.Fatalf("forgotten: changed %v rate %v, want a new state at 600 in startup", changed, ns.Rate)
	}
}

// A worker that starts to follow a fleet begins to fill its bucket at its
// own phase of one unit's time at its rate.
func TestFleetStagger(t *testing.T) {
	f := testRules(t, nil)
	s := f.Start(fat(0)) // 600 a minute
	p := control.Part{Share: 0.1, Instances: 10}
	for _, c := range []struct{ phase, want float64 }{{0, 5}, {0.5, 5.5}, {0.25, 5.25}} {
		if got := f.Stagger(s, p, c.phase, fat(5)); !got.Equal(fat(c.want)) {
			t.Errorf("phase %v: %v, want %v", c.phase, got.Sub(ft0).Seconds(), c.want)
		}
	}
}

// A refusal that measured nothing (the worker's record too short, the
// fleet's count unknown: 0) is no measure of an API that accepts nothing:
// startup falls back to half its rate, not to the minimum.
func TestFleetLawNoMeasure(t *testing.T) {
	f := testRules(t, nil) // initial 600, the law
	for _, worker := range []float64{-1, 0} {
		r := report(10, 9.9, time.Second)
		r.Accepted = worker
		s, _, cut := f.Throttle(f.Start(fat(0)), r, 0)
		if !cut || s.Rate != lawMargin*300 || s.Law.Bound != 300 {
			t.Errorf("worker's measure %v, fleet's 0: cut %v rate %v bound %v; want 0.98 × 300, bound 300", worker, cut, s.Rate, s.Law.Bound)
		}
	}
}
