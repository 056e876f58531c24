package fleet

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limiter/control"
)

var ft0 = time.Unix(1_800_000_000, 0)

// fat returns the instant s seconds after ft0.
func fat(s float64) time.Time { return ft0.Add(time.Duration(math.Round(s * 1e9))) }

func testRules(t *testing.T, mod func(*control.Config)) Rules {
	t.Helper()
	cfg := control.DefaultConfig()
	if mod != nil {
		mod(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return NewRules(cfg, time.Hour, 5*time.Second)
}

// classic selects the classic rules (slow_start false) for a fleet.
func classic(c *control.Config) { c.SlowStart = false }

func report(at, sent float64, ra time.Duration) Report {
	return Report{At: fat(at), Sent: fat(sent), RetryAfter: ra, Measured: -1, Part: control.Part{Share: 0.05, Instances: 20}}
}

// The fleet's throttle rule, step by step: a burst seen by many workers
// is one cut, the cooldown is fleet-wide, and a Retry-After pauses the
// fleet.
func TestFleetRulesThrottle(t *testing.T) {
	f := testRules(t, classic)
	s := f.Start(fat(0))
	steps := []struct {
		r       Report
		changed bool
		cut     bool
		rate    float64
		paused  float64 // the fleet's pause end, seconds; 0 for none
	}{
		{report(10, 9.9, 2*time.Second), true, true, 420, 12}, // the first throttle cuts
		{report(10, 9.9, 2*time.Second), false, false, 420, 12},
		{report(10, 9.95, 2*time.Second), false, false, 420, 12}, // same instant, same burst: nothing changes
		{report(11, 10.5, 0), true, false, 420, 12},              // within the cooldown: the clock restarts only
		{report(16, 9.99, 0), true, false, 420, 12},              // after the cooldown, but sent before the cut
		{report(16, 15, 40*time.Second), true, true, 294, 46},    // a new burst; the pause is capped at max_pause
		{report(17, 16.5, 0), true, false, 294, 46},
	}
	for i, st := range steps {
		ns, changed, cut := f.Throttle(s, st.r, 0)
		if changed != st.changed || cut != st.cut || math.Abs(ns.Rate-st.rate) > 1e-9 {
			t.Fatalf("step %d: changed %v cut %v rate %v, want %v %v %v", i, changed, cut, ns.Rate, st.changed, st.cut, st.rate)
		}
		if want := fat(st.paused); st.paused > 0 && !ns.PausedUntil.Equal(want) {
			t.Fatalf("step %d: paused until %v, want %v", i, ns.PausedUntil.Sub(ft0), st.paused)
		}
		if changed && !ns.IncClock.Equal(latest(st.r.At, s.Seen)) {
			t.Fatalf("step %d: increase clock %v, want the throttle's time", i, ns.IncClock.Sub(ft0))
		}
		s = ns
	}
}

// Twenty workers report the same burst, each decision taken on the
// latest state (as compare-and-set makes them): one cut.
func TestFleetRulesBurstOneCut(t *testing.T) {
	f := testRules(t, classic)
	s := f.Start(fat(0))
	cuts := 0
	for w := range 20 {
		ns, _, cut := f.Throttle(s, report(30+float64(w)*0.01, 29.9, time.Second), 0)
		if cut {
			cuts++
		}
		s = ns
	}
	if cuts != 1 || s.Rate != 420 {
		t.Fatalf("%d cuts, rate %v; want 1 cut to 420", cuts, s.Rate)
	}
}

// CUBIC's measured rate is the reporting worker's, for its share: the
// fleet cuts from the fleet's send rate.
func TestFleetRulesCUBICMeasured(t *testing.T) {
	f := testRules(t, func(c *control.Config) {
		c.Controller = control.ControllerCUBIC
		c.InitialUnitsPerMinute = 3000
		c.SlowStart = false
	})
	s := f.Start(fat(0))
	r := report(20, 19, 0)
	r.Measured = 100 // 1/20 of the budget: the fleet sent 2000
	ns, _, cut := f.Throttle(s, r, 0)
	if !cut || ns.WMax != 2000 || math.Abs(ns.Rate-1400) > 1e-9 {
		t.Fatalf("cut %v w_max %v rate %v; want w_max 2000, rate 1400", cut, ns.WMax, ns.Rate)
	}
}

// Raises: once per increase_interval for the fleet, only when some
// worker's requests waited since the increase clock restarted, never in
// the fleet's pause.
func TestFleetRulesRaise(t *testing.T) {
	f := testRules(t, classic)
	s := f.Start(fat(0))
	s, _, _ = f.Throttle(s, report(5, 4, 3*time.Second), 0) // clock at 5, paused to 8, rate 420
	steps := []struct {
		at, waited float64 // waited: the latest wait any worker reported
		raised     bool
		rate       float64
	}{
		{7, 6, false, 420},    // paused
		{14, 13, false, 420},  // 9 s since the clock restarted
		{15, 4.5, false, 420}, // the last wait was before the throttle
		{15, 15, true, 540},   // a wait since the throttle, 10 s on
		{15, 15, false, 540},  // once per interval: another worker at the same instant
		{24.9, 24, false, 540},
		{25, 24, true, 660},
		{40, 0, false, 660}, // nobody waited
	}
	for i, st := range steps {
		w := time.Time{}
		if st.waited > 0 {
			w = fat(st.waited)
		}
		ns, raised := f.Raise(s, fat(st.at), View{LastWait: w})
		if raised != st.raised || math.Abs(ns.Rate-st.rate) > 1e-9 {
			t.Fatalf("step %d at %v: raised %v rate %v, want %v %v", i, st.at, raised, ns.Rate, st.raised, st.rate)
		}
		s = ns
	}
}

// The remembered state: used while younger than remember, else the fleet
// starts again at the initial rate; touch keeps it young once per refresh.
func TestFleetRulesRemember(t *testing.T) {
	f := testRules(t, classic)
	if s, changed := f.Resume(State{}, fat(0)); !changed || s.Rate != 600 || !s.Seen.Equal(fat(0)) {
		t.Fatalf("no state: %+v %v, want a new one at 600", s, changed)
	}
	stored := State{Adapt: control.Adapt{Rate: 5000, Throttled: true}, Seen: fat(0)}
	for _, c := range []struct {
		age     time.Duration
		rate    float64
		changed bool
	}{
		{0, 5000, false},
		{59 * time.Minute, 5000, false},
		{time.Hour, 600, true},
		{48 * time.Hour, 600, true},
	} {
		s, changed := f.Resume(stored, fat(c.age.Seconds()))
		if s.Rate != c.rate || changed != c.changed {
			t.Errorf("age %v: rate %v changed %v, want %v %v", c.age, s.Rate, changed, c.rate, c.changed)
		}
	}
	s := f.Start(fat(0))
	if _, ok := f.Touch(s, fat(4.9)); ok {
		t.Error("touched before refresh")
	}
	if ns, ok := f.Touch(s, fat(5)); !ok || !ns.Seen.Equal(fat(5)) {
		t.Error("not touched after refresh")
	}
}

// Each instance ends the fleet's pause at its own phase of one unit's time
// at its rate, so that N instances do not all send at the same instant.
func TestFleetRulesPauseEnd(t *testing.T) {
	f := testRules(t, nil)
	s := f.Start(fat(0))
	if !f.PauseEnd(s, control.Part{Share: 0.1, Instances: 10}, 0.5).IsZero() {
		t.Fatal("a pause end without a fleet pause")
	}
	s.PausedUntil = fat(10)
	s.Rate = 600 // 60 per minute each at N = 10: one unit a second
	for _, c := range []struct{ phase, want float64 }{{0, 10}, {0.25, 10.25}, {0.5, 10.5}, {0.999, 10.999}} {
		if got := f.PauseEnd(s, control.Part{Share: 0.1, Instances: 10}, c.phase); !got.Equal(fat(c.want)) {
			t.Errorf("phase %v: pause ends at %v, want %v", c.phase, got.Sub(ft0).Seconds(), c.want)
		}
	}
}

// CUBIC's curve would rise at every success; the fleet raises it at most
// once per increase_interval, as AIMD's own rule does.
func TestFleetRulesRaiseCUBIC(t *testing.T) {
	f := testRules(t, func(c *control.Config) {
		c.Controller = control.ControllerCUBIC
		c.CUBIC.ScaleConstant = 1
		c.SlowStart = false
	})
	s := f.Start(fat(0))
	if _, raised := f.Raise(s, fat(5), View{LastWait: fat(4)}); raised {
		t.Fatal("raised 5 s after the increase clock started")
	}
	ns, raised := f.Raise(s, fat(10), View{LastWait: fat(9)})
	if !raised || math.Abs(ns.Rate-1600) > 1e-9 {
		t.Fatalf("raise at 10 s: %v, rate %v; want W = 10³ + 600", raised, ns.Rate)
	}
	if _, raised := f.Raise(ns, fat(15), View{LastWait: fat(14)}); raised {
		t.Fatal("raised twice within the interval")
	}
}
