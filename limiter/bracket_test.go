package limiter

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// gatewayRun is a closed loop of a Core against a gateway's leaky bucket
// (nginx limit_req): quota(t) units per minute leak out, a call may go
// burst units ahead, and a refused call gets a 429 with Retry-After: the
// whole seconds until it would fit. Two requests of units each always wait
// in the limiter; every answer comes 100 ms after the grant. It returns
// the rate after every answer and the answers' times.
type gatewayRun struct {
	at        []float64 // seconds
	rate      []float64
	throttled []bool
}

func runGateway(t *testing.T, cfg Config, quota func(float64) float64, burst, units, until float64) (gatewayRun, *Core) {
	t.Helper()
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		at, sent float64
		ok       bool
		ra       time.Duration
	}
	var (
		run      gatewayRun
		pending  []answer
		excess   float64
		lastTake float64
	)
	take := func(s float64) (bool, time.Duration) {
		per := quota(s) / 60
		e := math.Max(0, excess-per*(s-lastTake)) + units
		if e <= burst+1e-9 {
			excess, lastTake = e, s
			return true, 0
		}
		return false, time.Duration(math.Max(1, math.Ceil((e-burst)/per))) * time.Second
	}
	grant := func(d Decision) {
		s := d.At.Sub(t0).Seconds()
		ok, ra := take(s)
		pending = append(pending, answer{at: s + 0.1, sent: s, ok: ok, ra: ra})
	}
	acquire := func(s float64) { // until one request waits
		for d := c.Acquire(at(s), units); d.Status == Granted; d = c.Acquire(at(s), units) {
			grant(d)
		}
	}
	acquire(0)
	acquire(0)
	for {
		next := math.Inf(1)
		for _, p := range pending {
			next = math.Min(next, p.at)
		}
		if due, ok := c.NextDue(); ok {
			next = math.Min(next, due.Sub(t0).Seconds())
		}
		if next > until {
			return run, c
		}
		c.Advance(at(next))
		drain := func() {
			for _, d := range c.Drain(nil) {
				if d.Status == Granted {
					grant(d)
					acquire(next)
				}
			}
		}
		drain()
		for i := 0; i < len(pending); i++ {
			p := pending[i]
			if p.at > next {
				continue
			}
			pending = append(pending[:i], pending[i+1:]...)
			i--
			o := call.Outcome{Kind: call.Success, Status: 200}
			if !p.ok {
				o = call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: p.ra}
			}
			c.Observe(at(p.at), at(p.sent), units, o)
			run.at, run.rate, run.throttled = append(run.at, p.at), append(run.rate, c.Rate()), append(run.throttled, !p.ok)
			drain()
		}
	}
}

// cuts returns the rate before and after each throttle of the run that
// changed the rate.
func (r gatewayRun) cuts() (at, before, after []float64) {
	for i := 1; i < len(r.at); i++ {
		if r.throttled[i] && r.rate[i] != r.rate[i-1] {
			at, before, after = append(at, r.at[i]), append(before, r.rate[i-1]), append(after, r.rate[i])
		}
	}
	return at, before, after
}

// maxRate returns the highest rate of the run in [from, to).
func (r gatewayRun) maxRate(from, to float64) float64 {
	m := 0.0
	for i, s := range r.at {
		if s >= from && s < to {
			m = math.Max(m, r.rate[i])
		}
	}
	return m
}

func steady(q float64) func(float64) float64 { return func(float64) float64 { return q } }

// The bracket (docs/limiter.md, "The bracket"): a gateway of 600
// units/min refuses the raise to 720 after the limiter held 600 for a
// whole increase_interval; the cut falls back to 600, not to 0.7 × 720,
// and no raise goes above 600 for the next 5 minutes; then AIMD probes
// again, and the next refusal brackets the same rate.
func TestCoreBracketHoldsTheRate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InitialUnitsPerMinute = 300
	r, _ := runGateway(t, cfg, steady(600), 10, 10, 700)
	at, before, after := r.cuts()
	if len(at) < 3 {
		t.Fatalf("cuts at %v, want slow start's fallback and two brackets", at)
	}
	// at[0] is slow start's fallback (to 600, the rate before its last raise)
	if before[1] != 720 || after[1] != 600 {
		t.Errorf("first cut after slow start at %.2f: %v -> %v, want 720 -> 600 (the rate held)", at[1], before[1], after[1])
	}
	if m := r.maxRate(at[1], at[1]+quotaPlateau.Seconds()); m != 600 {
		t.Errorf("highest rate in the plateau after %.2f: %v, want 600", at[1], m)
	}
	if at[2] < at[1]+quotaPlateau.Seconds() || before[2] != 720 || after[2] != 600 {
		t.Errorf("second cut at %.2f: %v -> %v, want 720 -> 600 after %.2f", at[2], before[2], after[2], at[1]+quotaPlateau.Seconds())
	}
}

// Without slow start (the documented rules before it), and for a limiter
// that holds only a part of the budget, a cut is the controller's: AIMD
// takes 0.7 × the rate.
func TestCoreBracketGated(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
	}{
		{"slow_start false", func(c *Config) { c.SlowStart, c.InitialFill = false, 1 }},
		{"instances 2", func(c *Config) { c.Instances = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.InitialUnitsPerMinute = 300
			tc.cfg(&cfg)
			q := 600 / float64(cfg.Instances)
			r, _ := runGateway(t, cfg, steady(q), 10, 10, 200)
			at, before, after := r.cuts()
			for i := range at {
				if i == 0 && cfg.SlowStart {
					continue // slow start's fallback
				}
				if want := 0.7 * before[i]; math.Abs(after[i]-want) > 1e-9 {
					t.Errorf("cut at %.2f: %v -> %v, want %v", at[i], before[i], after[i], want)
				}
			}
			if len(at) < 2 {
				t.Errorf("cuts at %v, want at least two", at)
			}
		})
	}
}

// A bracket that the API refuses (its rate went down to 590): the bound
// moves down to 0.97 × 600 = 582, which it takes. When that one is refused
// too (the rate went down to 400), the cut is the controller's (with the
// measured quota's floor: a minute passed since the last cut), and no
// bracket is set for 5 minutes.
func TestCoreBracketRefused(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InitialUnitsPerMinute = 300
	quota := func(s float64) float64 {
		switch {
		case s >= 100:
			return 400
		case s >= 30:
			return 590
		}
		return 600
	}
	r, c := runGateway(t, cfg, quota, 10, 10, 200)
	at, before, after := r.cuts()
	if len(at) < 4 {
		t.Fatalf("cuts at %v: want slow start's fallback and three more", at)
	}
	want := [][2]float64{{720, 600}, {600, 582}}
	for i, w := range want {
		if before[i+1] != w[0] || math.Abs(after[i+1]-w[1]) > 1e-9 {
			t.Errorf("cut %d at %.2f: %v -> %v, want %v", i+1, at[i+1], before[i+1], after[i+1], w)
		}
	}
	if at[2] < 30 || at[3] < 100 || before[3] != after[2] || after[3] >= quotaPlateauShare*before[3] {
		t.Errorf("cut 3 at %.2f: %v -> %v, want the controller's cut of the refused bracket after 100 s", at[3], before[3], after[3])
	}
	if c.brk.bound != 0 || c.brk.off != at2d(at[3])+quotaPlateau {
		t.Errorf("after a bracket refused twice: bound %v, off %v, want 0 and %v", c.brk.bound, c.brk.off, at2d(at[3])+quotaPlateau)
	}
}

func at2d(s float64) time.Duration { return at(s).Sub(t0) }

// The rate history: the rate in effect at the start of a whole second.
func TestRateLogAt(t *testing.T) {
	var l rateLog
	l.cur = 600
	l.set(5500*time.Millisecond, 1200)
	l.set(5700*time.Millisecond, 2400) // same second: the slot keeps 600
	l.set(15*time.Second, 1320)
	now := 20 * time.Second
	for _, tc := range []struct {
		k    int64
		want float64
	}{{0, 600}, {5, 600}, {6, 2400}, {15, 2400}, {16, 1320}, {20, 1320}} {
		if got, ok := l.at(now, tc.k); !ok || got != tc.want {
			t.Errorf("at(%d) = %v, %v, want %v", tc.k, got, ok, tc.want)
		}
	}
	if _, ok := l.at(200*time.Second, 20); ok {
		t.Error("a second older than the history: want false")
	}
}
