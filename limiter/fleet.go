package limiter

import (
	"math"
	"time"
)

// DefaultRemember is how long a fleet's rate is remembered after an
// instance last wrote it (limiter.share.remember).
const DefaultRemember = time.Hour

// FleetState is the state of a fleet controller: one Adapt for the whole
// budget that many instances follow (Core.Follow), the fleet-wide pause,
// and when an instance last wrote it. Package cluster keeps it in NATS KV;
// the simulator keeps one in memory.
type FleetState struct {
	Adapt
	// PausedUntil is the end of the fleet's Retry-After pause: every
	// worker pauses until then.
	PausedUntil time.Time `json:"paused_until"`
	// Seen is when a worker last wrote the state: the age of the
	// remembered rate, and the latest time the rules have seen (a
	// decision never goes back before it).
	Seen time.Time `json:"seen"`
}

// FleetRules decides a fleet's state with the Rules of the whole budget,
// as docs/limiter.md ("Fleet") states them. It is pure: every method takes
// the time and the facts, and returns the new state and whether it
// changed (and must be written).
type FleetRules struct {
	cfg      Config        // the budget's limiter options
	rules    Rules         // the limiter's rules for the whole budget
	remember time.Duration // how long a state is remembered
	refresh  time.Duration // how often a live worker confirms the state
}

// NewFleetRules returns the FleetRules of a validated cfg: a state is
// remembered for remember after it was last written (never if remember
// is not positive), and confirmed once per refresh.
func NewFleetRules(cfg Config, remember, refresh time.Duration) FleetRules {
	return FleetRules{cfg: cfg, rules: NewRules(cfg, Whole), remember: remember, refresh: refresh}
}

// Start is a new fleet's state at now: the initial rate, as a Core starts.
func (f *FleetRules) Start(now time.Time) FleetState {
	return FleetState{Adapt: f.rules.Start(now), Seen: now}
}

// Resume returns the state a worker starting at now runs on: the stored
// one if a worker wrote it less than remember ago, else (none stored: the
// zero state) a new state at the initial rate, which must be written
// (changed).
func (f *FleetRules) Resume(s FleetState, now time.Time) (FleetState, bool) {
	if !s.Seen.IsZero() && now.Sub(s.Seen) < f.remember {
		s.Rate = f.rules.Clamp(s.Rate)
		return s, false
	}
	return f.Start(now), true
}

// Throttle applies a throttle that a worker observed (r): the limiter's
// Throttle rule for the whole budget, at r.At or at the latest time the
// state has seen if that is later. The increase clock restarts; the rate is
// cut if this is the fleet's first throttle, or if decrease_cooldown has
// passed since the fleet's last cut and the request was sent after it, so
// a burst of 429s across the fleet is one cut. CUBIC's measured rate is the
// worker's, divided by its share, and so is the accepted rate that ends
// slow start (docs/limiter.md, "Slow start"). A Retry-After extends the fleet's pause.
// It returns the new state, whether it changed (a throttle that neither
// cuts, nor moves the increase clock, nor extends the pause changes
// nothing) and whether the rate was cut.
func (f *FleetRules) Throttle(s FleetState, r ThrottleReport) (ns FleetState, changed, cut bool) {
	now := latest(r.At, s.Seen)
	measured, accepted := -1.0, 0.0
	if share := r.Part.Of(1); share > 0 {
		if r.Measured >= 0 {
			measured = r.Measured / share
		}
		accepted = r.Accepted / share
	}
	ns = s
	cut = f.rules.Throttle(&ns.Adapt, now, r.Sent, measured, accepted, r.Hold)
	if end, ok := f.cfg.PauseEnd(now, r.RetryAfter); ok && end.After(ns.PausedUntil) {
		ns.PausedUntil = end
	}
	if !cut && ns.IncClock.Equal(s.IncClock) && ns.PausedUntil.Equal(s.PausedUntil) && ns.Throttled == s.Throttled &&
		ns.SlowStart == s.SlowStart && ns.HoldUntil.Equal(s.HoldUntil) {
		return s, false, false
	}
	ns.Seen = now
	return ns, true, cut
}

// Raise applies the limiter's raise rule to the fleet at now, outside the
// fleet's pause, and only if some worker's requests waited (lastWait, the
// latest wait any worker reported) since the increase clock restarted. The
// rule itself spaces AIMD's raises by aimd.increase_interval; CUBIC, whose
// curve would rise at every success, is spaced the same way for the
// fleet, so the fleet's state changes at most once per interval. It
// reports whether the rate rose.
func (f *FleetRules) Raise(s FleetState, now, lastWait time.Time) (FleetState, bool) {
	now = latest(now, s.Seen)
	if now.Before(s.PausedUntil) {
		return s, false
	}
	if f.cfg.Controller == ControllerCUBIC && now.Sub(s.IncClock) < f.cfg.AIMD.IncreaseInterval {
		return s, false
	}
	if !f.rules.Raise(&s.Adapt, now, lastWait.After(s.IncClock)) {
		return s, false
	}
	s.Seen = now
	return s, true
}

// Touch confirms the state at now, once per refresh, so that it stays
// remembered while the fleet runs on it.
func (f *FleetRules) Touch(s FleetState, now time.Time) (FleetState, bool) {
	if now.Sub(s.Seen) < f.refresh {
		return s, false
	}
	s.Seen = now
	return s, true
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// PauseEnd returns when an instance that runs on part of the budget ends
// the fleet's pause: PausedUntil, plus phase (in [0, 1), fixed for the
// instance, different between instances) times the time one unit takes at
// the instance's rate. Every instance's bucket is empty when a pause ends;
// without the stagger all of them would send their first requests at the
// same instant, a burst of up to N requests into an API that has just
// throttled. Zero when the fleet is not paused.
func (f *FleetRules) PauseEnd(s FleetState, p Part, phase float64) time.Time {
	if s.PausedUntil.IsZero() {
		return time.Time{}
	}
	rate := f.rules.Clamp(p.Of(s.Rate))
	if !(rate > 0) || !(phase > 0) {
		return s.PausedUntil
	}
	return s.PausedUntil.Add(time.Duration(math.Min(phase, 1) * 60 / rate * float64(time.Second)))
}
