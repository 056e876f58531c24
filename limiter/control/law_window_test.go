package control

import (
	"math"
	"strings"
	"testing"
	"time"
)

// The law's W: where it comes from, and when the API shows it is no
// window.

// W comes from the config (never changed), the quota headers (until the
// config says otherwise), or the first refusal after an idle start.
func TestLawWindowSources(t *testing.T) {
	learned := testLaw(t, ControllerAIMD, 600)
	fill(learned, 0, 10*time.Second, 600)
	refuse(learned, 10*time.Second, 10*time.Second, 3*time.Second)
	if learned.window != 12*time.Second {
		t.Fatalf("learned W = %v, want the span (10 s) and the Retry-After beyond a second (2 s)", learned.window)
	}
	learned.Announce(time.Minute)
	if learned.window != time.Minute {
		t.Fatalf("W after a header's window = %v, want 1m", learned.window)
	}
	cfg := DefaultConfig()
	cfg.Window = 30 * time.Second
	fixed := NewLaw(cfg, 600, cfg.MinUnitsPerMinute, cfg.MaxUnitsPerMinute)
	fill(fixed, 0, 10*time.Second, 600)
	refuse(fixed, 10*time.Second, 10*time.Second, 3*time.Second)
	fixed.Announce(time.Minute)
	if fixed.window != 30*time.Second {
		t.Fatalf("W with limiter.window 30s = %v, want it unchanged", fixed.window)
	}
	cfg.Window = MaxWindow + time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "window") {
		t.Fatalf("window beyond %v: %v, want an error naming window", MaxWindow, err)
	}
}

// With W known (limiter.window or the quota headers), the first refusal
// after an idle start reads the span of one window when startup sent for
// longer than W: a window API is full then, and a longer span holds the
// slow start of the ramp. A span of W that reaches back before sending
// began holds idle time and is not read.
func TestLawKnownWindowAtFirstRefusal(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Window = 10 * time.Second
	known := func() *Law { return NewLaw(cfg, 30000, cfg.MinUnitsPerMinute, cfg.MaxUnitsPerMinute) }

	l := known()
	fill(l, 0, 10*time.Second, 600)               // the ramp's slow start: 100 units
	fill(l, 10*time.Second, 20*time.Second, 9000) // the window's quota: 1,500 units in 10 s
	refuse(l, 20*time.Second+50*time.Millisecond, 20*time.Second, 0)
	if math.Abs(l.ceil-9000) > 0.02*9000 || math.Abs(l.bound-9000) > 0.02*9000 {
		t.Fatalf("startup of 20 s against a 10 s window: bound %.0f, ceiling %.0f; want both 9000 (the span of the window, not a longer one that holds the slow start)", l.bound, l.ceil)
	}

	l = known()
	fill(l, 5*time.Second, 10*time.Second, 9000) // sending began 5 s into the window
	refuse(l, 10*time.Second+50*time.Millisecond, 10*time.Second, 0)
	if l.ceil != 30000 || l.bound != 15000 {
		t.Fatalf("startup of 5 s against a 10 s window: bound %.0f, ceiling %.0f; want startup's halving (15000, 30000): no span is a window of sending", l.bound, l.ceil)
	}
}

// A W that a refusal taught is forgotten when the API has since taken
// more than any window of W could: more, over the span since the last
// cutting refusal's send, than ceil(span/W) times what was sent over the
// W before it. A window's W is kept, and so is a W from the config.
func TestLawForgetsFalsifiedWindow(t *testing.T) {
	for _, c := range []struct {
		name  string
		after float64 // per minute, accepted from the refusal on
		from  windowSource
		want  time.Duration
	}{
		{"a leaky bucket: three times the window's take", 1800, fromRefusal, 0},
		{"the same, W shown by an echo", 1800, fromEcho, 0},
		{"a window: what it held", 600, fromRefusal, 10 * time.Second},
		{"the config's W", 1800, fromConfig, 10 * time.Second},
	} {
		l := testLaw(t, ControllerAIMD, 600)
		l.startup, l.bound, l.ceil, l.rate = false, 600, 600, 588
		l.window, l.wfrom, l.from = 10*time.Second, c.from, 0
		fill(l, 10*time.Second, 20*time.Second, 600)
		l.afterCut(20*time.Second, 20*time.Second)
		fill(l, 20*time.Second, 35*time.Second, c.after)
		l.measure(35*time.Second, time.Second)
		if l.window != c.want {
			t.Errorf("%s: W %v after the refusal at 35 s, want %v", c.name, l.window, c.want)
		}
	}
}

// A raise weighs the evidence against W as a refusal does: a leaky bucket
// that has taken more since the last cut than a window of W could loses
// its W at the next raise, so the climbs stop waiting it. A window keeps
// its W, also when the window before the last cut has left the record
// (no evidence either way). A success that finds the rate unused is no
// raise and weighs nothing (it stays as cheap as the view).
func TestLawRaiseFalsifiesWindow(t *testing.T) {
	for _, c := range []struct {
		name  string
		after float64       // per minute, accepted from the cut on
		at    time.Duration // the raise, after the cut at 20 s
		rate  float64
		want  time.Duration
	}{
		{"a leaky bucket", 1800, 15 * time.Second, 588, 0},
		{"a leaky bucket, the rate unused", 1800, 15 * time.Second, 2100, 10 * time.Second},
		{"a window", 600, 15 * time.Second, 588, 10 * time.Second},
		{"a window, its take before the cut forgotten", 600, 250 * time.Second, 588, 10 * time.Second},
	} {
		l := testLaw(t, ControllerAIMD, 600)
		l.startup, l.bound, l.ceil, l.rate = false, 600, 600, c.rate
		l.window, l.wfrom, l.from = 10*time.Second, fromRefusal, 0
		fill(l, 10*time.Second, 20*time.Second, 600)
		l.afterCut(20*time.Second, 20*time.Second)
		at := 20*time.Second + c.at
		fill(l, 20*time.Second, at, c.after)
		l.raise(at, l)
		if l.window != c.want {
			t.Errorf("%s: W %v after a raise %v after the cut, want %v", c.name, l.window, c.at, c.want)
		}
	}
}

// The refusal after the first one since an idle start checks the W it
// taught by the API's echo. A startup that sent 80 units over 8 s and
// 920 over the next 2 s fills a sliding window of 10 s holding 1,000
// units: the first refusal, at 10 s, teaches W = 10 s. Between it and the
// next, at 12 s, the window frees what it took 10 s before (20 units): the
// API shows a window of W. A leaky bucket takes its rate (100 units) and a
// fixed window before its reset nothing: neither shows one, and a W from
// the config stays the config's.
func TestLawEchoShowsWindow(t *testing.T) {
	for _, c := range []struct {
		name    string
		between float64 // per minute, accepted from 11 s to 12 s
		config  time.Duration
		want    windowSource
	}{
		{"a sliding window", 1200, 0, fromEcho},
		{"a leaky bucket", 6000, 0, fromRefusal},
		{"a fixed window before its reset", 0, 0, fromRefusal},
		{"the config's W", 1200, 10 * time.Second, fromConfig},
	} {
		cfg := DefaultConfig()
		cfg.Window = c.config
		l := NewLaw(cfg, 55200, cfg.MinUnitsPerMinute, cfg.MaxUnitsPerMinute)
		fill(l, 0, 8*time.Second, 600)
		fill(l, 8*time.Second, 10*time.Second, 27600)
		refuse(l, 10*time.Second+50*time.Millisecond, 10*time.Second, time.Second)
		if l.window != 10*time.Second {
			t.Fatalf("%s: W %v after the first refusal, want 10s", c.name, l.window)
		}
		if c.between > 0 {
			fill(l, 11*time.Second, 12*time.Second, c.between)
		}
		l.Sent(12*time.Second, 1, false)
		refuse(l, 12*time.Second+50*time.Millisecond, 12*time.Second, time.Second)
		if l.wfrom != c.want || l.window != 10*time.Second {
			t.Errorf("%s: W %v from %s after the second refusal, want 10s from %s", c.name, l.window, windowSources[l.wfrom], windowSources[c.want])
		}
	}
}

// A W that the echo showed is learned again at the next idle start's
// first refusal, as one the first refusal taught.
func TestLawEchoWindowLearnedAgain(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 1200)
	l.startup, l.bound, l.ceil, l.rate = false, 1200, 1200, 1176
	l.window, l.wfrom = 10*time.Second, fromEcho
	l.Sent(100*time.Second, 1, true) // after an idle time: a new span
	fill(l, 100*time.Second, 112*time.Second, 1200)
	refuse(l, 112*time.Second+50*time.Millisecond, 112*time.Second, time.Second)
	if l.wfrom != fromRefusal || l.window != 12*time.Second {
		t.Fatalf("W %v from %s after an idle start's first refusal 12 s in, want 12s from refusal", l.window, windowSources[l.wfrom])
	}
}

// A startup that fills a window slowly is refused first some time after
// the window: the W it teaches is too long, and the echo finds the
// window's own. One unit at the start and 1,200 a minute from 4 s fill a
// sliding window of 10 s holding 200 units only at 14 s: the first
// refusal teaches W = 14 s. Between it and the next, at 18 s, the window
// frees what it took from 4 s to 8 s: W becomes 10 s, within a bin (the
// units of the first refusal's bin are not counted after it). With the
// same units from 0 s (a window of 14 s, filled at once) the echo shows
// that W. When the first refusal named a wait of 3 s, W holds it (16 s),
// and the echo only confirms a W within 5% below it: none here.
func TestLawEchoFindsShorterWindow(t *testing.T) {
	for _, c := range []struct {
		name   string
		ramp   time.Duration // when 1,200 a minute begins
		ra     time.Duration // the first refusal's Retry-After
		first  time.Duration // the W it teaches
		lo, hi time.Duration // the W after the echo
		want   windowSource
	}{
		{"filled late", 4 * time.Second, time.Second, 14 * time.Second, 10 * time.Second, 10*time.Second + binWidth, fromEcho},
		{"filled at once", 0, time.Second, 14 * time.Second, 14 * time.Second, 14 * time.Second, fromEcho},
		{"a wait named", 4 * time.Second, 3 * time.Second, 16 * time.Second, 16 * time.Second, 16 * time.Second, fromRefusal},
	} {
		l := testLaw(t, ControllerAIMD, 55200)
		l.Sent(0, 1, false)
		l.Accepted(0, 1)
		fill(l, c.ramp, 14*time.Second, 1200)
		l.Refused(14*time.Second+50*time.Millisecond, 14*time.Second, c.ra, 14*time.Second+50*time.Millisecond+time.Second)
		if l.window != c.first {
			t.Fatalf("%s: W %v after the first refusal, want %v", c.name, l.window, c.first)
		}
		fill(l, 14*time.Second+binWidth, 18*time.Second, 1200)
		l.Sent(18*time.Second, 1, false)
		refuse(l, 18*time.Second+50*time.Millisecond, 18*time.Second, time.Second)
		if l.wfrom != c.want || l.window < c.lo || l.window > c.hi {
			t.Errorf("%s: W %v from %s after the second refusal, want %v to %v from %s", c.name, l.window, windowSources[l.wfrom], c.lo, c.hi, windowSources[c.want])
		}
	}
}

// The echo's lag leaves out no more than a few of a startup's first
// units. A startup that sent 300 a minute for 12 s and 3,000 a minute for
// 2 s is refused at 14 s by a leaky bucket of 3,000 a minute, which takes
// that rate up to the next refusal: only the last 2 s of the startup
// match it, and a window of 2 s would leave out 60 of the 160 units
// accepted. No window is shown.
func TestLawEchoLeavesOutFewUnits(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 55200)
	fill(l, 0, 12*time.Second, 300)
	fill(l, 12*time.Second, 14*time.Second, 3000)
	refuse(l, 14*time.Second+50*time.Millisecond, 14*time.Second, time.Second)
	fill(l, 14*time.Second+binWidth, 16*time.Second, 3000)
	l.Sent(16*time.Second, 1, false)
	refuse(l, 16*time.Second+50*time.Millisecond, 16*time.Second, time.Second)
	if l.wfrom != fromRefusal || l.window != 14*time.Second {
		t.Errorf("W %v from %s after the second refusal, want 14s from refusal", l.window, windowSources[l.wfrom])
	}
}

// Whether this part kept to its pace is read over the W the refusal leaves,
// after its echo: a startup that sent 5 units over 5 s, then 10 a second
// and 80 in its last 2 s, is refused at 20 s by a window of about 15.5 s,
// and learns W = 20 s. At the next refusal, at 23 s, the echo shows the
// window of 15.5 s, over which this part sent 812 a minute, above its pace
// (745): the refusal is the window's echo of its overshoot, and the pause
// is all. Over the 20 s it learned first, the slow start's first seconds
// would read as a part that kept to its pace, and it would cut.
func TestLawEchoPacedOverShownWindow(t *testing.T) {
	l := testLaw(t, ControllerAIMD, 745)
	fill(l, 0, 5*time.Second, 60)
	fill(l, 5*time.Second, 18*time.Second, 600)
	fill(l, 18*time.Second, 20*time.Second, 2400)
	s1 := 20 * time.Second
	l.startup, l.bound, l.ceil, l.rate = false, 760, 760, 745
	l.window, l.wfrom, l.learn = s1, fromRefusal, learnEcho
	l.cut, l.moved, l.open, l.noise = s1, s1, s1, s1 // no wait named
	l.afterCut(s1, s1+time.Second)
	fill(l, s1+time.Second, s1+3*time.Second, 745)
	if refuse(l, s1+3*time.Second+50*time.Millisecond, s1+3*time.Second, time.Second) {
		t.Errorf("the echo of its own overshoot cut the rate to %.0f (W %v from %s)", l.rate, l.window, windowSources[l.wfrom])
	}
	if l.wfrom != fromEcho || l.window < 15*time.Second || l.window > 16*time.Second {
		t.Errorf("W %v from %s after the second refusal, want about 15.5 s from echo", l.window, windowSources[l.wfrom])
	}
}
