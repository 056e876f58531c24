package cluster

import (
	"time"

	"github.com/sluicehq/sluice/limiter"
)

// DefaultRemember is how long a fleet's rate is remembered after the last
// worker that ran on it (limiter.share.remember).
const DefaultRemember = time.Hour

// FleetState is the fleet controller's state, the value of the fleet key:
// the limiter's rate rules (limiter.Adapt) for the whole budget, the
// fleet-wide pause, and when a live worker last wrote it.
type FleetState struct {
	limiter.Adapt
	// PausedUntil is the end of the fleet's Retry-After pause: every
	// worker pauses until then.
	PausedUntil time.Time `json:"paused_until"`
	// Seen is when a worker last wrote the state: the age of the
	// remembered rate, and the latest time the rules have seen (a
	// decision never goes back before it).
	Seen time.Time `json:"seen"`
}

// fleetRules decides the fleet's state. It is pure: every method takes the
// time and the facts, and returns the new state and whether it changed
// (and must be written).
type fleetRules struct {
	cfg      limiter.Config // the budget's limiter options
	rules    limiter.Rules  // the limiter's rules for the whole budget
	remember time.Duration  // how long a state is remembered
	refresh  time.Duration  // how often a live worker confirms the state
}

func newFleetRules(cfg limiter.Config, remember, refresh time.Duration) fleetRules {
	return fleetRules{cfg: cfg, rules: limiter.NewRules(cfg, limiter.Whole), remember: remember, refresh: refresh}
}

// start is a new fleet's state at now: the initial rate, as a Core starts.
func (f *fleetRules) start(now time.Time) FleetState {
	return FleetState{Adapt: f.rules.Start(now), Seen: now}
}

// resume returns the state a worker starting at now runs on: the stored
// one if a worker wrote it less than remember ago, else (none stored: the
// zero state) a new state at the initial rate, which must be written
// (changed).
func (f *fleetRules) resume(s FleetState, now time.Time) (FleetState, bool) {
	if !s.Seen.IsZero() && now.Sub(s.Seen) < f.remember {
		s.Rate = f.rules.Clamp(s.Rate)
		return s, false
	}
	return f.start(now), true
}

// throttle applies a throttle that a worker observed (r): the limiter's
// throttle rule for the whole budget, at r.At or at the latest time the
// state has seen if that is later. The increase clock restarts; the rate is
// cut if this is the fleet's first throttle, or if decrease_cooldown has
// passed since the fleet's last cut and the request was sent after it, so
// a burst of 429s across the fleet is one cut. CUBIC's measured rate is the
// worker's, divided by its share. A Retry-After extends the fleet's pause.
// It returns the new state, whether it changed (a throttle that neither
// cuts, nor moves the increase clock, nor extends the pause changes
// nothing) and whether the rate was cut.
func (f *fleetRules) throttle(s FleetState, r limiter.ThrottleReport) (ns FleetState, changed, cut bool) {
	now := latest(r.At, s.Seen)
	measured := -1.0
	if share := r.Part.Of(1); r.Measured >= 0 && share > 0 {
		measured = r.Measured / share
	}
	ns = s
	cut = f.rules.Throttle(&ns.Adapt, now, r.Sent, measured)
	if end, ok := f.cfg.PauseEnd(now, r.RetryAfter); ok && end.After(ns.PausedUntil) {
		ns.PausedUntil = end
	}
	if !cut && ns.IncClock.Equal(s.IncClock) && ns.PausedUntil.Equal(s.PausedUntil) && ns.Throttled == s.Throttled {
		return s, false, false
	}
	ns.Seen = now
	return ns, true, cut
}

// raise applies the limiter's raise rule to the fleet at now, at most once
// per aimd.increase_interval on the fleet's increase clock (for CUBIC as
// well), outside the fleet's pause, and only if some worker's requests
// waited (lastWait, the latest wait any worker reported) since the clock
// restarted. It reports whether the rate rose.
func (f *fleetRules) raise(s FleetState, now, lastWait time.Time) (FleetState, bool) {
	now = latest(now, s.Seen)
	if now.Before(s.PausedUntil) || now.Sub(s.IncClock) < f.cfg.AIMD.IncreaseInterval {
		return s, false
	}
	if !f.rules.Raise(&s.Adapt, now, lastWait.After(s.IncClock)) {
		return s, false
	}
	s.Seen = now
	return s, true
}

// touch confirms the state at now, once per refresh, so that it stays
// remembered while the fleet runs on it.
func (f *fleetRules) touch(s FleetState, now time.Time) (FleetState, bool) {
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
