package limiter

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// TestCoreStepInvariance drives a Core through random events twice: once
// looked at only at the events, once also advanced every 7 ms in between.
// Time is an argument, so the decisions must not depend on how often the
// Core is looked at. Each run also checks invariants: grants in FIFO order,
// the rate within its bounds, the bucket within its capacity, decisions in
// time order, no grant during a pause.
func TestCoreStepInvariance(t *testing.T) {
	for seed := range uint64(80) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cfg := randomConfig(rand.New(rand.NewPCG(seed, 1)))
			a := runRandom(t, cfg, seed, 0)
			b := runRandom(t, cfg, seed, 7*time.Millisecond)
			if len(a.decisions) != len(b.decisions) || len(a.states) != len(b.states) {
				t.Fatalf("%d decisions, %d states vs %d, %d", len(a.decisions), len(a.states), len(b.decisions), len(b.states))
			}
			for i := range a.decisions {
				x, y := a.decisions[i], b.decisions[i]
				if x.ID != y.ID || x.Status != y.Status || x.Reason != y.Reason || x.At.Sub(y.At).Abs() > 2*time.Nanosecond {
					t.Fatalf("decision %d: %+v vs %+v", i, x, y)
				}
			}
			for i := range a.states {
				if a.states[i] != b.states[i] {
					t.Fatalf("after event %d: %s vs %s", i, a.states[i], b.states[i])
				}
			}
		})
	}
}

func randomConfig(rng *rand.Rand) Config {
	cfg := rulesConfig()
	cfg.Burst = time.Duration(rng.IntN(3000)) * time.Millisecond
	cfg.QueueLimit = rng.IntN(6)
	cfg.MaxWait = time.Duration(500+rng.IntN(5000)) * time.Millisecond
	cfg.DecreaseCooldown = time.Duration(rng.IntN(3000)) * time.Millisecond
	cfg.MaxPause = time.Duration(rng.IntN(3000)) * time.Millisecond
	cfg.AIMD.IncreaseInterval = time.Duration(rng.IntN(2000)) * time.Millisecond
	cfg.MaxUnitsPerMinute = 2000
	if rng.IntN(2) == 0 {
		cfg.Controller = ControllerCUBIC
		cfg.CUBIC.ScaleConstant = 5
	}
	return cfg
}

type randomRun struct {
	decisions []Decision // of queued requests, in order
	states    []string   // rate and pause after each event
}

// randomReq is a request of runRandom.
type randomReq struct {
	units   float64
	status  Status
	granted time.Time
}

// randomDriver is the state of runRandom: the Core, its requests, and
// what the invariants need of the past (the last grant and decision, the
// pauses).
type randomDriver struct {
	t         *testing.T
	c         *Core
	run       randomRun
	reqs      map[uint64]*randomReq
	granted   []uint64
	lastGrant uint64
	lastAt    time.Time
	pauses    [][2]time.Time
}

// take drains the Core's decisions and checks them: each for a waiting
// request, in time order, grants in FIFO order and never during a pause.
func (r *randomDriver) take() {
	t := r.t
	t.Helper()
	for _, d := range r.c.Drain(nil) {
		q := r.reqs[d.ID]
		if q.status != Waiting {
			t.Fatalf("decision for %d, which is %s", d.ID, q.status)
		}
		q.status, q.granted = d.Status, d.At
		if d.At.Before(r.lastAt) {
			t.Fatalf("decision at %v before %v", d.At.Sub(t0), r.lastAt.Sub(t0))
		}
		r.lastAt = d.At
		if d.Status == Granted {
			if d.ID < r.lastGrant {
				t.Fatalf("grant of %d after %d: not FIFO", d.ID, r.lastGrant)
			}
			r.lastGrant = d.ID
			r.granted = append(r.granted, d.ID)
			checkNotPaused(t, d.At, r.pauses)
		}
		r.run.decisions = append(r.run.decisions, d)
	}
}

// event performs one random event at at: an acquire, an outcome of a
// granted request, a cancel or a new instance count.
func (r *randomDriver) event(rng *rand.Rand, at time.Time) {
	t, c := r.t, r.c
	t.Helper()
	switch k := rng.IntN(10); {
	case k < 5:
		u := []float64{0, 1, 1, 2, 5, 40}[rng.IntN(6)]
		d := c.Acquire(at, u)
		r.reqs[d.ID] = &randomReq{units: u, status: d.Status, granted: d.At}
		if d.Status == Granted && u > 0 {
			if d.ID < r.lastGrant {
				t.Fatalf("grant of %d at once after %d", d.ID, r.lastGrant)
			}
			r.lastGrant = d.ID
			r.granted = append(r.granted, d.ID)
		}
	case k < 8:
		if len(r.granted) == 0 {
			break
		}
		q := r.reqs[r.granted[rng.IntN(len(r.granted))]]
		o := randomOutcome(rng)
		_, wasPaused := c.PausedUntil()
		c.Observe(at, q.granted, q.units, o)
		if until, ok := c.PausedUntil(); ok && !wasPaused {
			r.pauses = append(r.pauses, [2]time.Time{at, until})
		} else if ok {
			r.pauses[len(r.pauses)-1][1] = until
		}
	case k < 9:
		id := uint64(1 + rng.IntN(len(r.reqs)+1))
		if d, ok := c.Cancel(at, id); ok {
			r.reqs[id].status = d.Status
			r.run.decisions = append(r.run.decisions, d)
		}
	default:
		if err := c.SetInstanceCount(at, 1+rng.IntN(4)); err != nil {
			t.Fatal(err)
		}
	}
}

// runRandom drives a Core of cfg through 300 random events of seed,
// looking at it also every step in between when step > 0, and checks the
// invariants after each event.
func runRandom(t *testing.T, cfg Config, seed uint64, step time.Duration) randomRun {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 2))
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	r := &randomDriver{t: t, c: c, reqs: map[uint64]*randomReq{}}
	var now, stepped time.Duration
	for range 300 {
		now += time.Duration(rng.IntN(400)) * time.Millisecond
		at := t0.Add(now)
		if step > 0 {
			for stepped+step < now {
				stepped += step
				c.Advance(t0.Add(stepped))
				r.take()
			}
		}
		c.Advance(at)
		r.take()
		r.event(rng, at)
		r.take()
		checkInvariants(t, c, cfg, at)
		until, paused := c.PausedUntil()
		r.run.states = append(r.run.states, fmt.Sprintf("rate %.9g queue %d paused %v %v", c.Rate(), c.QueueLen(), paused, until.Sub(t0)))
	}
	if math.IsNaN(c.Tokens(t0.Add(now))) {
		t.Fatal("tokens NaN")
	}
	return r.run
}

// checkInvariants checks, at at: the rate within its bounds (and so within
// min and max_units_per_minute whatever the quota hints), the bucket within
// its capacity, and no pause or quota budget that holds requests back for
// longer than max_pause.
func checkInvariants(t *testing.T, c *Core, cfg Config, at time.Time) {
	t.Helper()
	r, part := c.Rate(), c.rules.Part()
	lo, hi := part.Of(cfg.MinUnitsPerMinute), math.Min(c.rules.Max(), part.Of(cfg.MaxUnitsPerMinute))
	if r < lo*(1-1e-12) || r > hi*(1+1e-12) {
		t.Fatalf("rate %v outside [%v, %v]", r, lo, hi)
	}
	if tok := c.Tokens(at); tok > c.Capacity()+1e-9 {
		t.Fatalf("tokens %v over capacity %v", tok, c.Capacity())
	}
	if until, ok := c.PausedUntil(); ok && until.Sub(at) > cfg.MaxPause {
		t.Fatalf("paused until %v, more than max_pause %v after %v", until.Sub(t0), cfg.MaxPause, at.Sub(t0))
	}
	if _, until, ok := c.QuotaBudget(); ok && until.Sub(at) > cfg.MaxPause {
		t.Fatalf("budget until %v, more than max_pause %v after %v", until.Sub(t0), cfg.MaxPause, at.Sub(t0))
	}
}

// randomQuota returns a quota hint with fields missing, sane, or hostile
// (negative, NaN, infinite, absurdly large).
func randomQuota(rng *rand.Rand) call.Quota {
	num := func() float64 {
		return []float64{0, 1, 3, 50, 600, 3000, -5, math.NaN(), math.Inf(1), 1e308, 5e-324}[rng.IntN(11)]
	}
	span := func() time.Duration {
		return []time.Duration{0, time.Second, 5 * time.Second, time.Minute, -time.Second, 30 * 24 * time.Hour, math.MaxInt64}[rng.IntN(7)]
	}
	return call.Quota{Limit: num(), Remaining: num(), HasRemaining: rng.IntN(3) > 0, Reset: span(), Window: span()}
}

// randomOutcome returns a success or a throttle with a Retry-After of 0
// to 3 s, a third of them with a random quota hint.
func randomOutcome(rng *rand.Rand) call.Outcome {
	o := call.Outcome{Kind: call.Success, Status: 200}
	if rng.IntN(2) == 0 {
		o = call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Duration(rng.IntN(4)) * time.Second}
	}
	if rng.IntN(3) == 0 {
		o.Quota = randomQuota(rng)
	}
	return o
}

// checkNotPaused fails if a grant at at falls inside one of pauses.
func checkNotPaused(t *testing.T, at time.Time, pauses [][2]time.Time) {
	t.Helper()
	for _, p := range pauses {
		if at.After(p[0]) && at.Before(p[1]) {
			t.Fatalf("grant at %v during the pause %v–%v", at.Sub(t0), p[0].Sub(t0), p[1].Sub(t0))
		}
	}
}
