package control

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// leakyAPI is a model of a gateway for the law's tests: a leaky bucket of
// rate units per second that holds burst units.
type leakyAPI struct {
	rate, burst, level float64
	last               time.Duration
}

func (g *leakyAPI) admit(t time.Duration, u float64) bool {
	g.level = math.Max(0, g.level-g.rate*(t-g.last).Seconds())
	g.last = t
	if g.level+u > g.burst+1e-9 {
		return false
	}
	g.level += u
	return true
}

// drive runs l against api for d: one unit at a time at the law's rate
// (a backlog: every request waited), each answered rtt later, with a
// Retry-After of ra on a refusal and no sending until it has passed. It
// returns the units accepted per second.
func drive(l *Law, admit func(time.Duration, float64) bool, d, rtt, ra time.Duration) []float64 {
	type answer struct {
		at, sent time.Duration
		ok       bool
	}
	var (
		inflight []answer
		per      = make([]float64, int(d/time.Second)+1)
		next     time.Duration
	)
	for t := time.Duration(0); t < d; {
		for len(inflight) > 0 && inflight[0].at <= t {
			a := inflight[0]
			inflight = inflight[1:]
			if a.ok {
				l.Accepted(a.sent, 1)
				per[a.sent/time.Second]++
				l.raise(t, l)
			} else if refuse(l, t, a.sent, ra); ra > 0 {
				next = max(next, t+ra)
			}
		}
		if t >= next {
			l.Sent(t, 1, false)
			inflight = append(inflight, answer{t + rtt, t, admit(t, 1)})
			next = t + time.Duration(60/l.rate*float64(time.Second))
		}
		t = next
		if len(inflight) > 0 {
			t = min(t, inflight[0].at)
		}
	}
	return per
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func testLaw(t *testing.T, controller string, rate float64) *Law {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Controller = controller
	return NewLaw(cfg, rate, cfg.MinUnitsPerMinute, cfg.MaxUnitsPerMinute)
}

// Startup doubles the rate every two seconds while requests wait, but
// never past twice what was sent in the last two seconds.
func TestLawStartupDoubles(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 600)
	for s := 1; s <= 6; s++ {
		at := time.Duration(s) * time.Second
		l.Sent(at-time.Millisecond, l.rate/60, false) // a second's worth at the rate
		l.raise(at, l)
	}
	if l.rate != 4800 {
		t.Fatalf("rate after 6 s of backlog = %v, want 600 doubled three times", l.rate)
	}
	l = testLaw(t, ControllerAIMD, 600)
	for s := 1; s <= 6; s++ {
		at := time.Duration(s) * time.Second
		l.Sent(at-time.Millisecond, 2, false) // 120 units a minute sent
		l.raise(at, l)
	}
	if l.rate != 600 {
		t.Fatalf("rate with a demand of 120/min = %v, want 600 (at most twice what was sent)", l.rate)
	}
}

// Against leaky gateways at rates far apart, with no Retry-After, the law
// finds at least 0.95 of the gateway's rate within a minute and holds it
// with few refusals, with either controller.
func TestLawFindsLeakyRate(t *testing.T) {
	for _, ctrl := range []string{ControllerAIMD, ControllerCUBIC} {
		for _, perSec := range []float64{5, 20, 75, 200, 750} {
			t.Run(fmt.Sprintf("%s/%v", ctrl, perSec), func(t *testing.T) {
				l := testLaw(t, ctrl, 600)
				l.max = 1e6
				g := &leakyAPI{rate: perSec, burst: math.Max(2, perSec/20)}
				per := drive(l, g.admit, 10*time.Minute, 50*time.Millisecond, 0)
				if got := mean(per[60:590]) / perSec; got < 0.95 || got > 1.0001 {
					t.Errorf("accepted %.3f of the gateway's rate from 1:00, want at least 0.95", got)
				}
			})
		}
	}
}

// A refusal whose Retry-After is a day reads the accepted units over the
// longest pause the limiter takes (max_pause), not over the day: the rate
// does not fall to the minimum (an absurd header is not a measure).
func TestLawRetryAfterOfADay(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 6000)
	fill(l, 0, 20*time.Second, 3000)
	refuse(l, 20*time.Second+50*time.Millisecond, 20*time.Second, 24*time.Hour)
	// The best span is the whole 20 s, stretched by the longest window the
	// law models less a second.
	want := lawMargin * 1000 * 60 / (20 + MaxWindow.Seconds() - 1)
	if math.Abs(l.rate-want) > 0.01*want {
		t.Fatalf("rate after a Retry-After of a day = %.1f, want %.1f", l.rate, want)
	}
}

// A window's echo: a refusal at the bound within a window of the cut
// changes nothing. A refusal while probing cuts back below the bound, and
// cuts that find the same bound double the probe interval, up to its cap.
func TestLawProbeInterval(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1000)
	l.startup, l.bound, l.ceil, l.rate, l.cut, l.from = false, 1000, 1000, lawMargin*1000, time.Second, 0
	fill(l, 0, 2*time.Second, 1000)
	if refuse(l, 2*time.Second, 2*time.Second, 0) {
		t.Fatal("a refusal at the bound within a window of the cut moved the rate")
	}
	hold := l.hold
	for i, at := 0, 30*time.Second; i < 12; i, at = i+1, at+time.Hour {
		l.rate = 1010 // probing above the bound
		fill(l, at-20*time.Second, at, 1000)
		if !refuse(l, at, at, 0) {
			t.Fatalf("refusal %d while probing: the rate did not move", i)
		}
		if l.rate != lawMargin*1000 {
			t.Fatalf("refusal %d while probing: rate %v, want back to %v", i, l.rate, lawMargin*1000)
		}
		if want := min(2*hold, probeMaxFactor*probeBase); l.hold != want {
			t.Fatalf("refusal %d finding the same bound: probe interval %v, want %v", i, l.hold, want)
		}
		hold = l.hold
	}
}

// A refusal at the bound within a window of a cut is the window's echo of
// an overshoot only while this part sent more than its pace over that
// window: one that had kept to its pace is refused by an API that is full
// for another reason (another instance that joined, a smaller quota), and
// it cuts like any second refusal at the bound within a probe interval.
func TestLawEchoIsOwnOvershoot(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overshoot bool
	}{
		{"sent twice the pace over the window", true},
		{"kept to its pace", false},
	} {
		l := testLaw(t, ControllerAIMD, 1000)
		l.startup, l.bound, l.ceil, l.rate, l.window, l.from = false, 1000, 1000, lawMargin*1000, 10*time.Second, 0
		l.cut, l.noise = 10*time.Second, 5*time.Second // a cut, and a refusal at the bound within the probe interval
		before := 12 * time.Second
		if tc.overshoot {
			fill(l, 0, l.cut, 2*l.rate)
			fill(l, l.cut, before, l.rate)
		} else {
			fill(l, 0, before, 0.995*l.rate) // a hair under the pace: the bins' rounding
		}
		if cut := refuse(l, before, before, 0); cut == tc.overshoot {
			t.Fatalf("%s: a refusal at the bound 2 s after a cut cut the rate: %v, want %v", tc.name, cut, !tc.overshoot)
		}
	}
}

// A refusal at the bound that the API was seen to accept, this part at
// its pace, is one burst or jitter when it comes at least jitterUnits'
// time at the rate after the last cut or such refusal, whatever the probe
// interval (docs/limiter.md, rule 3): 10 s at a rate of 60,000 a minute,
// 10 minutes at 1,000. A sooner one cuts.
func TestLawJitterSpacing(t *testing.T) {
	for _, tc := range []struct {
		rate  float64
		hold  time.Duration // the probe interval, which does not count
		after time.Duration // since the last cut
		cut   bool
	}{
		{60000, longestHold, 9 * time.Second, true},
		{60000, longestHold, 10 * time.Second, false},
		{1000, probeBase, 9 * time.Minute, true},
		{1000, probeBase, 10 * time.Minute, false},
	} {
		l := testLaw(t, ControllerAIMD, tc.rate)
		l.startup, l.bound, l.ceil, l.rate, l.from = false, tc.rate/lawMargin, tc.rate/lawMargin, tc.rate, 0
		l.cut, l.noise, l.hold = time.Second, time.Second, tc.hold
		at := l.cut + tc.after
		fill(l, 0, at, l.rate)
		if cut := refuse(l, at, at, 0); cut != tc.cut {
			t.Errorf("rate %v, probe interval %v: a refusal at the pace %v after the last cut cut the rate: %v, want %v", tc.rate, tc.hold, tc.after, cut, tc.cut)
		}
		if !tc.cut && l.noise != at {
			t.Errorf("rate %v: a refusal forgiven as jitter at %v left the last one at %v", tc.rate, at, l.noise)
		}
	}
}

// A cut that finds a new bound, at an API that shows no window, sets the
// probe interval to 16 s (docs/limiter.md, rule 3): the first probe at
// the ceiling comes no sooner, since a probe held for less cannot show
// more capacity and a refused one costs a pause.
func TestLawProbeBase(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1000)
	l.startup, l.bound, l.ceil, l.rate, l.from = false, 2000, 2000, lawMargin*2000, 0
	fill(l, 0, 20*time.Second, 1000)
	if !refuse(l, 20*time.Second, 20*time.Second, 0) {
		t.Fatal("a refusal at twice what the API accepted did not cut")
	}
	if l.hold != 16*time.Second {
		t.Fatalf("probe interval after a cut to a new bound: %v, want 16s", l.hold)
	}
	l.ceil = l.bound // at the ceiling: the next raise is a probe
	before := l.rate
	busy(l, l.cut+16*time.Second)
	if l.raise(l.cut+16*time.Second-time.Millisecond, l) || l.rate != before {
		t.Fatalf("probed %v after the cut, before the probe interval", 16*time.Second-time.Millisecond)
	}
	if !l.raise(l.cut+16*time.Second, l) || !(l.rate > before) {
		t.Fatalf("no probe 16 s after the cut (rate %v)", l.rate)
	}
}

// The probes above the ceil: AIMD steps linearly, CUBIC as x³/16, each
// after a probe interval without a refusal.
func TestLawProbeShape(t *testing.T) {
	for _, tc := range []struct {
		ctrl string
		want []float64 // the rate after each probe, as a fraction of the ceil
	}{
		{ControllerAIMD, []float64{1.00, 1.02, 1.04, 1.06}},
		{ControllerCUBIC, []float64{0.98 + 0.02/16, 0.98 + 0.02*8/16, 0.98 + 0.02*27/16, 0.98 + 0.02*64/16}},
	} {
		l := testLaw(t, tc.ctrl, 1000)
		l.startup, l.bound, l.ceil, l.rate, l.from = false, 1000, 1000, lawMargin*1000, -1
		for i, want := range tc.want {
			at := time.Duration(i+1) * l.hold
			busy(l, at)
			if l.raise(at-time.Millisecond, l); l.rate != lawMargin*1000 && i == 0 {
				t.Fatalf("%s: raised before the probe interval", tc.ctrl)
			}
			l.raise(at, l)
			if math.Abs(l.rate-want*1000) > 1e-9 {
				t.Fatalf("%s: probe %d: rate %v, want %v", tc.ctrl, i+1, l.rate, want*1000)
			}
		}
	}
}

// More capacity: when the API accepted more than the bound over the span
// that shows it, the bound takes that value.
func TestLawMoreCapacity(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1000)
	l.startup, l.bound, l.ceil, l.rate, l.from = false, 1000, 1000, lawMargin*1000, 0
	fill(l, 0, 20*time.Second, 3000)
	l.raise(20*time.Second, l)
	if math.Abs(l.bound-3000) > 30 {
		t.Fatalf("bound after 20 s accepted at 3000/min = %v, want about 3000", l.bound)
	}
}

// After more capacity shows, the probes start over from it, at the
// interval a cut sets, max(probe base, W): against a window of a minute a
// probe held for less than the window proves nothing, and probing sooner
// ratchets B past the quota before the window refuses. The ceiling it
// passed moves up with B, so that the first probe is from the new B, not
// at or below the rate.
func TestLawMoreCapacityProbeInterval(t *testing.T) {
	for _, w := range []time.Duration{0, time.Second, time.Minute} {
		l := testLaw(t, ControllerAIMD, 1000)
		l.startup, l.bound, l.ceil, l.rate, l.from, l.window = false, 1000, 1000, lawMargin*1000, 0, w
		l.hold = 4 * probeBase // longer than its base, and held before the raise
		fill(l, 0, 2*time.Minute, 3000)
		l.raise(2*time.Minute, l)
		if want := max(probeBase, w); l.hold != want || l.probes != 1 {
			t.Errorf("W %v: probe interval %v and %d probes after more capacity, want %v and 1", w, l.hold, l.probes, want)
		}
		if math.Abs(l.ceil-3000) > 30 || math.Abs(l.rate-l.ceil) > 1e-9 {
			t.Errorf("W %v: ceiling %.0f and rate %.0f after 2 min accepted at 3000/min, want the first probe at a ceiling of about 3000", w, l.ceil, l.rate)
		}
	}
}

// busy records sending at the law's rate over the startupInterval before
// at, as a backlog sends: the rate is in use.
func busy(l *Law, at time.Duration) {
	step := time.Duration(60 / l.rate * float64(time.Second))
	for t := at - startupInterval - time.Second; t < at; t += step {
		l.Sent(t, 1, false)
	}
}

// A raise needs the rate in use: while the demand sends less than
// usedRate of it, a higher rate would test nothing and the API has not
// been seen to accept this one, so the rate and the bound stay.
func TestLawRaiseNeedsUse(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1000)
	l.startup, l.bound, l.ceil, l.rate, l.from = false, 1000, 1000, lawMargin*1000, 0
	at := 2 * l.hold
	fill(l, at-startupInterval-time.Second, at, 0.85*l.rate)
	if l.raise(at, l) || l.rate != lawMargin*1000 || l.bound != 1000 {
		t.Fatalf("raised with 0.85 of the rate sent: rate %v, bound %v", l.rate, l.bound)
	}
	busy(l, at+time.Second)
	if !l.raise(at+time.Second, l) || !(l.rate > lawMargin*1000) {
		t.Fatalf("no raise with the rate in use (rate %v)", l.rate)
	}
}

// fill records units sent and accepted from from to to at perMin units a
// minute, one unit at a time.
func fill(l *Law, from, to time.Duration, perMin float64) {
	step := time.Duration(60 / perMin * float64(time.Second))
	for at := from; at < to; at += step {
		l.Sent(at, 1, false)
		l.Accepted(at, 1)
	}
}

// A startup refusal whose estimate is within 5% of half the rate found
// only that the API took what was sent before the last doubling: the
// climb goes back toward the refused rate. Clearly less than half is a
// measure, and the ceiling is the estimate.
func TestLawStartupMeasure(t *testing.T) {
	for _, tc := range []struct {
		perMin   float64 // what the API accepted in the 4 s before the refusal
		wantCeil float64
	}{
		{0.97 * 6000, 12000}, // about the rate before the doubling: no measure
		{0.80 * 6000, 0.80 * 6000},
	} {
		l := testLaw(t, ControllerAIMD, 12000)
		fill(l, 0, 4*time.Second, tc.perMin)
		if !refuse(l, 4*time.Second+50*time.Millisecond, 4*time.Second, 0) {
			t.Fatal("the startup refusal did not move the rate")
		}
		if math.Abs(l.ceil-tc.wantCeil) > 0.02*tc.wantCeil || l.startup {
			t.Fatalf("accepted %.0f/min: ceiling %.0f, startup %v; want ceiling %.0f after startup", tc.perMin, l.ceil, l.startup, tc.wantCeil)
		}
	}
}

// refuse tells l of a refusal as a Core with the default max_pause does.
func refuse(l *Law, t, sent, ra time.Duration) bool {
	return l.Refused(t, sent, ra, t+min(max(ra, 0), DefaultConfig().MaxPause))
}

// A refusal right after a cut's pause measures no span that holds the
// pause as sending time: the limiter sent nothing then, by its own
// choice. Against an API that refuses a few calls whatever the rate (a
// hostile target), the second refusal after the pause must not read the
// pause as an API that accepted almost nothing.
func TestLawPauseIsNoSpan(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 6000)
	ms := time.Millisecond
	// 0.9 s at 6,000 a minute (100/s), all accepted, then the first
	// refusal: startup ends at half the rate, W is 0.89 s, and the pause
	// runs to 1.9 s.
	for at := time.Duration(0); at < 900*ms; at += 10 * ms {
		l.Sent(at, 1, false)
		l.Accepted(at, 1)
	}
	if !refuse(l, 900*ms, 890*ms, time.Second) {
		t.Fatal("the first refusal did not cut")
	}
	rate := l.rate
	// The first call after the pause, sent at 2 s, is refused. The only
	// span long enough runs from the first refusal's send, 0.89 s, and
	// holds the pause: 0.1 s of sending.
	l.Sent(2*time.Second, 1, false)
	if refuse(l, 2050*ms, 2*time.Second, 0) || l.rate != rate {
		t.Fatalf("a refusal after the pause cut %v to %v, want no cut: the only span is the pause", rate, l.rate)
	}
}

// The climb back toward the ceil steps every climbHold across a wide
// bracket (startup's halving), and every max(climbHold, W) across a narrow
// one, or across any once the echo showed a window of W: a window API
// refuses a step only once its window has filled, so a faster climb runs
// several steps past the capacity before it hears. A step goes to 1.25 ×
// the rate, or halfway to the ceil; across a wide bracket of a window
// shown, to (1 + sameBound) × the rate: the ceil is an overshoot the
// window let through, and the bound its count.
func TestLawClimbStep(t *testing.T) {
	for _, tc := range []struct {
		name        string
		bound, ceil float64
		window      time.Duration
		from        windowSource
		step        time.Duration
		to          float64 // the step's top, as a multiple of the rate
	}{
		{"wide bracket", 1000, 2000, 10 * time.Second, fromRefusal, climbHold, 1.25},
		{"wide bracket, a window shown", 1000, 2000, 10 * time.Second, fromEcho, 10 * time.Second, 1 + sameBound},
		{"narrow bracket, W 10 s", 1000, 1200, 10 * time.Second, fromRefusal, 10 * time.Second, (980 + 1200) / 2 / 980.0},
		{"narrow bracket, a window shown", 1000, 1200, 10 * time.Second, fromEcho, 10 * time.Second, (980 + 1200) / 2 / 980.0},
		{"narrow bracket, W 1 s", 1000, 1200, time.Second, fromRefusal, climbHold, (980 + 1200) / 2 / 980.0},
	} {
		l := testLaw(t, ControllerAIMD, 1000)
		l.startup, l.bound, l.ceil, l.rate, l.window, l.from = false, tc.bound, tc.ceil, lawMargin*tc.bound, tc.window, -1
		l.wfrom = tc.from
		before := l.rate
		busy(l, tc.step)
		if l.raise(tc.step-time.Millisecond, l) || l.rate != before {
			t.Fatalf("%s: climbed before %v", tc.name, tc.step)
		}
		if !l.raise(tc.step, l) || !(l.rate > before) {
			t.Fatalf("%s: no climb at %v (rate %v)", tc.name, tc.step, l.rate)
		}
		if want := tc.to * before; math.Abs(l.rate-want) > 1e-9*want {
			t.Errorf("%s: climbed from %.0f to %.1f, want %.1f", tc.name, before, l.rate, want)
		}
	}
}

// A refusal on the climb back toward the ceil shows the capacity between
// the bound, which the API took, and the rate it refused: the ceil comes
// down to their middle, so that each refusal on the climb halves the
// bracket, and the next climb aims below the rate just refused.
func TestLawClimbRefusalBisects(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1000)
	l.startup, l.bound, l.ceil, l.rate, l.from = false, 1000, 2000, lawMargin*1000, 0
	fill(l, 0, 10*time.Second, 1000) // the API takes the bound
	l.rate = 1250                    // a climb step, refused before the API took more
	if !refuse(l, 10*time.Second+50*time.Millisecond, 10*time.Second, 0) {
		t.Fatal("the refusal on the climb did not cut")
	}
	if math.Abs(l.bound-1000) > 20 || math.Abs(l.ceil-(l.bound+1250)/2) > 1e-9 {
		t.Fatalf("after a refusal at 1250 on the climb from 1000: bound %.0f, ceiling %.0f; want about 1000 and their middle, %.0f", l.bound, l.ceil, (l.bound+1250)/2)
	}
	// The next step goes halfway from the rate to the new ceiling, about
	// 1067; toward the old ceiling, 1250, it would go to 1.25 × the rate.
	before := l.rate
	busy(l, 15*time.Second)
	if want := (before + l.ceil) / 2; !l.raise(15*time.Second, l) || math.Abs(l.rate-want) > 1e-9 || l.rate >= 1100 {
		t.Fatalf("the next climb step went to %.0f, want %.0f: halfway to the middle of the bracket", l.rate, want)
	}
}

// A refusal above the pace (the climb's top, or a probe) within sameBound
// of what the API accepted puts the capacity in that narrow bracket: the
// ceil comes down to its middle, so that the climb back ends below the
// rate refused by more than the margin. A refusal far above what the API
// accepted (the capacity fell), or one at the pace, keeps the rate
// refused as the ceil: the climb back may find more than the span read.
func TestLawTopRefusalBisects(t *testing.T) {
	for _, tc := range []struct {
		name         string
		rate, accept float64
		want         func(a, rate float64) float64 // the ceil
	}{
		{"the climb's top, 4% above", 1040, 1000, func(a, r float64) float64 { return (a + r) / 2 }},
		{"the climb's top, 50% above", 1040, 700, func(_, r float64) float64 { return r }},
		{"at the pace, 4% above", lawMargin * 1000, 940, func(_, r float64) float64 { return r }},
	} {
		l := testLaw(t, ControllerAIMD, 1000)
		// The ceil puts the rate at the climb's top (or above it, at the pace).
		l.startup, l.bound, l.ceil, l.rate, l.from = false, 1000, 1040/lawMargin, tc.rate, 0
		fill(l, 0, 10*time.Second, tc.accept)
		if !refuse(l, 10*time.Second+50*time.Millisecond, 10*time.Second, 0) {
			t.Fatalf("%s: the refusal did not cut", tc.name)
		}
		if math.Abs(l.bound-tc.accept) > 0.02*tc.accept {
			t.Fatalf("%s: bound %.0f, want about %.0f", tc.name, l.bound, tc.accept)
		}
		if want := tc.want(l.bound, tc.rate); math.Abs(l.ceil-want) > 1e-9 {
			t.Errorf("%s: ceiling %.1f after a refusal at %.0f with %.0f accepted, want %.1f", tc.name, l.ceil, tc.rate, l.bound, want)
		}
	}
}

// When the instance's part of the budget changes, the record is scaled
// with it: a span across the change measures the new part, not what the
// API accepted of the old one (which would read as capacity the new part
// does not have, and make refusals at the new bound look like noise).
func TestLawRescaleRecord(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1500)
	l.startup, l.bound, l.ceil, l.rate, l.from, l.window = false, 1500, 1500, lawMargin*1500, 0, time.Minute
	fill(l, 0, 120*time.Second, 1500)
	l.Rescale(2.0/3, 1, 1e9)
	fill(l, 120*time.Second, 130*time.Second, 1000)
	if got := l.view(130 * time.Second).got; math.Abs(got-1000) > 20 {
		t.Fatalf("accepted over the last minute, across a change to 2/3 of the part = %.0f/min, want about 1000", got)
	}
	if math.Abs(l.bound-1000) > 1e-9 || math.Abs(l.rate-lawMargin*1000) > 1e-9 {
		t.Fatalf("bound %v rate %v after the change, want 1000 and %v", l.bound, l.rate, lawMargin*1000)
	}
}

// The bound is what the API was seen to accept for a window: a climb step
// held a climbHold in a wide bracket shows nothing of a longer window,
// which refuses late, so it raises the rate and leaves the bound. A step
// held W does raise the bound. The bracket's width is read against the
// rate too, so that a climb past 1/wideBracket of the ceil waits W.
func TestLawClimbBoundNeedsWindow(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window time.Duration
		bound  float64 // want, after the step
	}{
		{"W 10 s, held 4 s", 10 * time.Second, 1000},
		{"W 4 s, held 4 s", climbHold, 1100},
		{"W not known, held 4 s", 0, 1100},
	} {
		l := testLaw(t, ControllerAIMD, 1000)
		l.startup, l.bound, l.ceil, l.rate, l.window, l.from = false, 1000, 2000, 1100, tc.window, -1
		busy(l, climbHold)
		if !l.raise(climbHold, l) {
			t.Fatalf("%s: no climb step", tc.name)
		}
		if l.bound != tc.bound {
			t.Errorf("%s: bound %v after a step from 1100, want %v", tc.name, l.bound, tc.bound)
		}
	}
	// At 1,400 the ceil, 2,000, is within 1.5 × the rate: the next step
	// waits W, though the bound, 1,000, is still far below it.
	l := testLaw(t, ControllerAIMD, 1000)
	l.startup, l.bound, l.ceil, l.rate, l.window, l.from = false, 1000, 2000, 1400, 10*time.Second, -1
	busy(l, climbHold)
	if l.raise(climbHold, l) {
		t.Fatalf("climbed from 1400 toward 2000 after %v, want a wait of W", climbHold)
	}
}
