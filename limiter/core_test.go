package limiter

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

var t0 = time.Unix(1_700_000_000, 0)

// at returns the instant s seconds after t0.
func at(s float64) time.Time { return t0.Add(time.Duration(math.Round(s * 1e9))) }

func secs(t time.Time) float64 { return t.Sub(t0).Seconds() }

// step is one event on a Core at a fixed instant, and the state expected
// right after it.
type step struct {
	at float64
	// op: "acquire U" (the request gets the next name r1, r2 …),
	// "throttle rN RA [SENT]", "success rN", "error rN", "cancel rN",
	// "instances N", "share F", "tick".
	op     string
	rate   float64 // want; NaN to skip
	tokens float64 // want; NaN to skip
	queue  int     // want; -1 to skip
	// want: decisions since the previous step, as "rN@T" (granted) or
	// "rN@T:reason"; nil to skip, "" for none.
	decided *string
}

func s(v string) *string { return &v }

var skip = math.NaN()

// stepReq is a request made by a step: its name is rN, its place in
// stepRun.reqs.
type stepReq struct {
	id      uint64
	units   float64
	granted time.Time
}

// stepRun is the state of runSteps: the Core, its requests in the order
// they were made, and the decisions noted during the current step.
type stepRun struct {
	t    *testing.T
	c    *Core
	reqs []*stepReq
	byID map[uint64]*stepReq
	got  []string
}

// name returns the request name rN of id.
func (r *stepRun) name(id uint64) string {
	for i, q := range r.reqs {
		if q.id == id {
			return fmt.Sprintf("r%d", i+1)
		}
	}
	return fmt.Sprintf("?%d", id)
}

// get returns the request named n.
func (r *stepRun) get(n string) *stepReq {
	r.t.Helper()
	var i int
	if _, err := fmt.Sscanf(n, "r%d", &i); err != nil || i < 1 || i > len(r.reqs) {
		r.t.Fatalf("bad request name %q", n)
	}
	return r.reqs[i-1]
}

// note records d as "rN@T" or "rN@T:reason" and the grant instant of a
// granted request.
func (r *stepRun) note(d Decision) {
	if d.Status == Granted {
		r.byID[d.ID].granted = d.At
	}
	e := fmt.Sprintf("%s@%g", r.name(d.ID), secs(d.At))
	if d.Status == Rejected {
		e += ":" + string(d.Reason)
	}
	r.got = append(r.got, e)
}

// drain notes the Core's pending decisions.
func (r *stepRun) drain() {
	for _, d := range r.c.Drain(nil) {
		r.note(d)
	}
}

// do performs the op of step i at now.
func (r *stepRun) do(i int, st step, now time.Time) {
	t, c := r.t, r.c
	t.Helper()
	f := strings.Fields(st.op)
	arg := func(k int) float64 {
		var v float64
		if _, err := fmt.Sscan(f[k], &v); err != nil {
			t.Fatalf("step %d: bad number %q", i, f[k])
		}
		return v
	}
	switch f[0] {
	case "acquire":
		d := c.Acquire(now, arg(1))
		q := &stepReq{id: d.ID, units: d.Units}
		r.reqs = append(r.reqs, q)
		r.byID[d.ID] = q
		if d.Status != Waiting {
			r.note(d)
		}
	case "throttle":
		q := r.get(f[1])
		sent := q.granted
		if len(f) > 3 {
			sent = at(arg(3))
		}
		c.Observe(now, sent, q.units, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Duration(arg(2) * 1e9)})
	case "success":
		q := r.get(f[1])
		c.Observe(now, q.granted, q.units, call.Outcome{Kind: call.Success, Status: 200})
	case "error":
		q := r.get(f[1])
		c.Observe(now, q.granted, q.units, call.Outcome{Kind: call.ServerError, Status: 500})
	case "cancel":
		if d, ok := c.Cancel(now, r.get(f[1]).id); ok {
			r.note(d)
		}
	case "instances":
		if err := c.SetInstanceCount(now, int(arg(1))); err != nil {
			t.Fatal(err)
		}
	case "share":
		if err := c.SetShare(now, arg(1)); err != nil {
			t.Fatal(err)
		}
	case "tick":
	default:
		t.Fatalf("step %d: unknown op %q", i, st.op)
	}
}

// check compares the Core's state after step i with what the step wants.
func (r *stepRun) check(i int, st step, now time.Time) {
	t, c := r.t, r.c
	t.Helper()
	where := fmt.Sprintf("step %d (t=%g %s)", i, st.at, st.op)
	if !math.IsNaN(st.rate) && math.Abs(c.Rate()-st.rate) > 1e-9 {
		t.Errorf("%s: rate = %v, want %v", where, c.Rate(), st.rate)
	}
	if tok := c.Tokens(now); !math.IsNaN(st.tokens) && math.Abs(tok-st.tokens) > 1e-6 {
		t.Errorf("%s: tokens = %v, want %v", where, tok, st.tokens)
	}
	if st.queue >= 0 && c.QueueLen() != st.queue {
		t.Errorf("%s: queue = %d, want %d", where, c.QueueLen(), st.queue)
	}
	if st.decided != nil && strings.Join(r.got, " ") != *st.decided {
		t.Errorf("%s: decided %q, want %q", where, strings.Join(r.got, " "), *st.decided)
	}
}

// runSteps runs steps on a Core of cfg created at t0 and checks the state
// each step wants.
func runSteps(t *testing.T, cfg Config, steps []step) *Core {
	t.Helper()
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := &stepRun{t: t, c: c, byID: map[uint64]*stepReq{}}
	for i, st := range steps {
		now := at(st.at)
		r.got = nil
		c.Advance(now)
		r.drain()
		r.do(i, st, now)
		r.drain()
		r.check(i, st, now)
	}
	return c
}

// rulesConfig is DefaultConfig with a full bucket at start and no slow
// start: the tests of the other rules start from it.
func rulesConfig() Config {
	c := DefaultConfig()
	c.InitialFill, c.SlowStart = 1, false
	return c
}

func cfgWith(f func(*Config)) Config {
	c := rulesConfig()
	if f != nil {
		f(&c)
	}
	return c
}

func TestCoreBucket(t *testing.T) {
	// 600/min = 10 units/s; burst 10 s → capacity 100.
	runSteps(t, rulesConfig(), []step{
		{0, "acquire 60", 600, 40, 0, s("r1@0")},
		{0, "acquire 40", 600, 0, 0, s("r2@0")},
		{0, "acquire 1", 600, 0, 1, s("")},
		{0, "acquire 2", 600, 0, 2, s("")},
		{0.25, "tick", 600, 1.5, 1, s("r3@0.1")},
		{0.3, "tick", 600, 0, 0, s("r4@0.3")},
		{20, "tick", 600, 100, 0, s("")}, // capped at capacity
	})
}

func TestCoreOversizedAndFIFO(t *testing.T) {
	// burst 1 s → capacity 10 at 600/min.
	cfg := cfgWith(func(c *Config) { c.Burst = time.Second })
	runSteps(t, cfg, []step{
		{0, "acquire 25", 600, -15, 0, s("r1@0")}, // full bucket lets it through
		{0, "acquire 25", 600, -15, 1, s("")},     // waits for a full bucket: 2.5 s
		{0, "acquire 1", 600, -15, 2, s("")},      // strict FIFO behind it
		{2.4, "tick", 600, 9, 2, s("")},
		{2.5, "tick", 600, -15, 1, s("r2@2.5")},
		{2.6, "tick", 600, -14, 1, s("")},
		{4.1, "tick", 600, 0, 0, s("r3@4.1")},
	})
}

func TestCoreZeroUnitsAndQueueFull(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.QueueLimit = 1; c.Burst = 0 }) // capacity 1
	runSteps(t, cfg, []step{
		{0, "acquire 1", 600, 0, 0, s("r1@0")},
		{0, "acquire 1", 600, 0, 1, s("")},
		{0, "acquire 1", 600, 0, 1, s("r3@0:queue_full")},
		{0, "acquire 0", 600, 0, 1, s("r4@0")},
		{0, "throttle r4 5", 600, 0, 1, s("")}, // zero-unit outcome changes nothing
		{0.1, "tick", 600, 0, 0, s("r2@0.1")},
	})
}

func TestCoreCuts(t *testing.T) {
	runSteps(t, rulesConfig(), []step{
		{0, "acquire 1", 600, 99, 0, s("r1@0")},
		{1, "acquire 1", 600, 99, 0, s("r2@1")},
		{2, "throttle r1 0", 420, 70, 0, s("")}, // first throttle cuts by 30%, capacity 70
		{3, "throttle r2 0", 420, 70, 0, s("")}, // inside the cooldown: no cut
		{7, "throttle r2 0", 420, 70, 0, s("")}, // sent before the last cut: no cut
		{7, "acquire 1", 420, 69, 0, s("r3@7")}, //
		{7.5, "throttle r3 0", 294, 49, 0, nil}, // cooldown passed, sent after the cut
		{8, "throttle r3 0", 294, skip, 0, nil}, // cooldown not passed again
	})
}

func TestCoreMinimum(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.DecreaseCooldown = 0 })
	steps := []step{{0, "acquire 1", 600, skip, 0, nil}}
	want := []float64{420, 294, 205.8, 144.06, 100.842, 70.5894, 60, 60}
	for i, w := range want {
		steps = append(steps,
			step{float64(i + 1), "acquire 1", skip, skip, 0, nil},
			step{float64(i + 1), fmt.Sprintf("throttle r%d 0", i+2), w, skip, 0, nil})
	}
	runSteps(t, cfg, steps)
}

func TestCorePause(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.MaxPause = 3 * time.Second })
	runSteps(t, cfg, []step{
		{0, "acquire 95", 600, 5, 0, s("r1@0")},
		{1, "throttle r1 10", 420, 15, 0, s("")}, // paused until 1+min(10,3) = 4
		{1, "acquire 1", 420, 15, 1, s("")},      // no grant while paused, though tokens suffice
		{2, "success r1", 420, 15, 1, s("")},     // frozen tokens; no raise while paused
		{4, "tick", 420, 0, 1, s("")},            // pause over: bucket empty
		{4 + 1.0/7, "tick", 420, 0, 0, nil},      // 7 units/s
	})
}

func TestCoreTies(t *testing.T) {
	// A grant due at the same instant as the head's max_wait goes first.
	cfg := cfgWith(func(c *Config) { c.MaxWait = time.Second; c.Burst = 2 * time.Second })
	runSteps(t, cfg, []step{
		{0, "acquire 20", 600, 0, 0, s("r1@0")},
		{0, "acquire 10", 600, 0, 1, s("")}, // due at 1 s, its deadline
		{0.99, "tick", 600, 9.9, 1, s("")},
		{1, "tick", 600, 0, 0, s("r2@1")},
	})
	// Rejection, then the next waiter granted at the same instant.
	cfg = cfgWith(func(c *Config) { c.MaxWait = time.Second; c.Burst = 2 * time.Second })
	runSteps(t, cfg, []step{
		{0, "acquire 20", 600, 0, 0, s("r1@0")},
		{0, "acquire 20", 600, 0, 1, s("")}, // due at 2 s > deadline 1 s
		{0.5, "acquire 1", 600, 5, 2, s("")},
		{1, "tick", 600, 9, 0, s("r2@1:max_wait r3@1")},
	})
}

func TestCoreRaiseAIMD(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Burst = time.Second }) // capacity 10
	runSteps(t, cfg, []step{
		{0, "acquire 10", 600, 0, 0, s("r1@0")},
		{11, "success r1", 600, 10, 0, s("")}, // nobody waited: no raise
		{11, "acquire 10", 600, 0, 0, s("r2@11")},
		{11, "acquire 1", 600, 0, 1, s("")}, // waits
		{12, "success r2", 720, 9, 0, s("r3@11.1")},
		{15, "acquire 12", 720, 0, 0, s("r4@15")},
		{15, "acquire 1", 720, 0, 1, s("")},
		{21, "success r4", 720, skip, 0, nil}, // 9 s since the raise
		{22, "success r4", 840, skip, 0, nil},
	})
}

func TestCoreInstancesAndShare(t *testing.T) {
	for _, viaShare := range []bool{false, true} {
		c := runSteps(t, rulesConfig(), []step{
			{0, "acquire 10", 600, 90, 0, nil},
		})
		var err error
		if viaShare {
			err = c.SetShare(at(1), 1.0/3)
		} else {
			err = c.SetInstanceCount(at(1), 3)
		}
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(c.Rate()-200) > 1e-9 || math.Abs(c.Tokens(at(1))-200.0/6) > 1e-9 {
			t.Errorf("share %v: rate %v tokens %v, want 200, 33.33", viaShare, c.Rate(), c.Tokens(at(1)))
		}
	}
	cfg := cfgWith(func(c *Config) { c.MinUnitsPerMinute = 300 })
	c, _ := NewCore(cfg, t0)
	_ = c.SetInstanceCount(at(0), 4)
	if c.Rate() != 150 {
		t.Errorf("rate %v, want 150", c.Rate())
	}
	if err := c.SetInstanceCount(at(0), 0); err == nil {
		t.Error("SetInstanceCount(0) succeeded")
	}
	if err := c.SetShare(at(0), 1.5); err == nil {
		t.Error("SetShare(1.5) succeeded")
	}
}

func TestCoreCUBIC(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Controller = ControllerCUBIC; c.CUBIC.ScaleConstant = 1; c.Burst = time.Second })
	c := runSteps(t, cfg, []step{
		{0, "acquire 10", 600, 0, 0, s("r1@0")},
		{0, "acquire 1", 600, 0, 1, s("")},
		// Before the first cut: W = C·t³ + initial = 8+600 at t=2.
		{2, "success r1", 608, skip, 0, s("r2@0.1")},
		{3, "success r1", 608, skip, 0, nil}, // nobody waited since the raise
		// At t=20 granted units in (10, 20] are 0 → measured 0 < rate: w=0.
		{20, "acquire 5", 608, skip, 0, nil},
		{20, "throttle r3 0", 60, skip, 0, nil}, // w = 5·6 = 30, β·w = 21 → clamped to min 60
	})
	cu := c.Adapt()
	if cu.WMax != 30 {
		t.Errorf("w_max = %v, want 30 (measured)", cu.WMax)
	}
	_ = c.SetInstanceCount(at(21), 2)
	if cu = c.Adapt(); cu.WMax != 15 || c.Rate() != 30 {
		t.Errorf("after N=2: w_max %v rate %v, want 15, 30", cu.WMax, c.Rate())
	}
}

func TestCoreDisabled(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Disabled = true; c.QueueLimit = 0 })
	runSteps(t, cfg, []step{
		{0, "acquire 1000", 600, 100, 0, s("r1@0")},
		{0, "acquire 1000", 600, 100, 0, s("r2@0")},
		{1, "throttle r1 10", 600, 100, 0, s("")},
		{2, "acquire 1", 600, 100, 0, s("r3@2")},
	})
}

func TestCoreCancel(t *testing.T) {
	cfg := cfgWith(func(c *Config) { c.Burst = time.Second })
	runSteps(t, cfg, []step{
		{0, "acquire 10", 600, 0, 0, s("r1@0")},
		{0, "acquire 10", 600, 0, 1, s("")},
		{0, "acquire 1", 600, 0, 2, s("")},
		{0.5, "cancel r2", 600, 4, 0, s("r2@0.5:canceled r3@0.5")},
		{0.6, "cancel r3", 600, 5, 0, s("")}, // no longer waiting
	})
}

func TestCoreNextDue(t *testing.T) {
	c, _ := NewCore(cfgWith(func(c *Config) { c.Burst = 0 }), t0)
	if _, ok := c.NextDue(); ok {
		t.Fatal("NextDue on an idle core")
	}
	c.Acquire(at(0), 1)
	c.Acquire(at(0), 1)
	if d, ok := c.NextDue(); !ok || !d.Equal(at(0.1)) {
		t.Fatalf("NextDue = %v %v, want 0.1", secs(d), ok)
	}
	c.Observe(at(0.05), at(0), 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 2 * time.Second})
	if d, _ := c.NextDue(); !d.Equal(at(2.05)) {
		t.Fatalf("NextDue in a pause = %v, want 2.05", secs(d))
	}
	if p, ok := c.PausedUntil(); !ok || !p.Equal(at(2.05)) {
		t.Fatalf("PausedUntil = %v %v", secs(p), ok)
	}
}
