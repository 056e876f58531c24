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
	// Accepted is the units the API accepted from the whole fleet in the
	// minute before its last cut, when that cut came after a minute
	// without one: the quota the fleet measured. 0 before any such cut,
	// after any other cut, or when the workers' counts were not known.
	Accepted float64 `json:"accepted,omitzero"`
	// Plateau is how long the plateau after the last cut lasts when it is
	// longer than quotaPlateau: a cut that measured a quota within
	// fleetSameQuota of the one before doubles it (up to
	// fleetPlateauMax); any other cut sets it back to 0 (quotaPlateau).
	Plateau time.Duration `json:"plateau,omitzero"`
}

// The fleet's own rules on top of the limiter's (docs/limiter.md, "Fleet").
const (
	// fleetSlowStartReach: in slow start the fleet's rate stays at most
	// k = max(2, fleetSlowStartReach / the propagation delay) times the
	// larger of the initial rate and the units the fleet was accepted in
	// the last minute: what the fleet sends in one propagation delay stays
	// under 1/200 of that minute's units.
	fleetSlowStartReach = 300 * time.Millisecond
	// fleetSameQuota and fleetPlateauMax: a cut that measures a quota
	// within fleetSameQuota of the quota the cut before measured (the probe
	// found no more room) doubles the plateau, up to fleetPlateauMax.
	fleetSameQuota  = 0.05
	fleetPlateauMax = 8 * quotaPlateau
	// fleetMinute is the span of the accepted units the rules read.
	fleetMinute = quotaMinute
)

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

// Throttle applies a throttle that a worker observed (r), with accepted
// the units the API accepted from the whole fleet in the last minute (the
// sum of the workers' Core.AcceptedUnits; 0 when not known): the
// limiter's Throttle rule for the whole budget, at r.At or at the latest
// time the state has seen if that is later. The increase clock restarts;
// the rate is cut if this is the fleet's first throttle, or if
// decrease_cooldown has passed since the fleet's last cut and the request
// was sent after it, so a burst of 429s across the fleet is one cut. CUBIC's
// measured rate is the worker's divided by its share. In slow start the
// fallback is to accepted spread over the time it covers and the wait
// (docs/limiter.md, "Fleet"), or, with accepted unknown, to the worker's
// own accepted rate divided by its share. A cut outside slow start after a
// minute without one records accepted as the measured quota and leaves the
// rate at no less than quotaFloor of it (never above the rate before the
// cut); any other cut clears the measured quota. Slow start's end a
// minute or more after the fleet's start measures the quota too, and
// falls back to quotaPlateauShare of it. A cut sets the plateau's length
// (FleetRules.plateau). A Retry-After extends the fleet's pause. It returns the new state, whether
// it changed (a throttle that neither cuts, nor moves the increase clock,
// nor extends the pause changes nothing) and whether the rate was cut.
func (f *FleetRules) Throttle(s FleetState, r ThrottleReport, accepted float64) (ns FleetState, changed, cut bool) {
	now := latest(r.At, s.Seen)
	measured, fallback, hold := -1.0, 0.0, r.Hold
	if share := r.Part.Of(1); share > 0 {
		if r.Measured >= 0 {
			measured = r.Measured / share
		}
		fallback = r.Accepted / share
	}
	quiet := now.Sub(s.LastCut) >= fleetMinute // a minute without a cut (the start before any)
	if s.SlowStart && accepted > 0 {
		fallback, hold = f.slowStartFallback(s, now, r.RetryAfter, accepted)
		// The fallback measures the quota when it spreads the accepted
		// units over at least a minute: a minute since the start, or the
		// time since the start and the wait the API asked for (a sliding
		// window of a minute that slow start filled at w asks for the
		// rest of the minute).
		quiet = quiet || hold >= fleetMinute
		if quiet {
			fallback *= quotaPlateauShare // it measures the quota: the plateau's level
		}
	}
	ns = s
	cut = f.rules.Throttle(&ns.Adapt, now, r.Sent, measured, fallback, hold)
	if cut {
		ns.Accepted = f.rules.MeasureCut(&ns.Adapt, s.Adapt, now, accepted)
		if s.SlowStart && quiet && accepted > 0 {
			ns.Accepted = fallback / quotaPlateauShare
		}
		ns.Plateau = f.plateau(s, now, ns.Accepted)
	}
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

// plateau returns the plateau after a cut at now that measured the quota
// m (0: none) in state s: twice the last plateau (at least quotaPlateau),
// up to fleetPlateauMax, when the cut is the probe's (the last plateau had
// ended) and m and the quota the last cut measured are within
// fleetSameQuota of each other; else 0 (quotaPlateau).
func (f *FleetRules) plateau(s FleetState, now time.Time, m float64) time.Duration {
	probe := now.Sub(s.LastCut) >= max(s.Plateau, quotaPlateau)
	if !probe || !(m > 0) || !(s.Accepted > 0) || s.SlowStart || math.Abs(m-s.Accepted) > fleetSameQuota*s.Accepted {
		return 0
	}
	return min(2*max(s.Plateau, quotaPlateau), fleetPlateauMax)
}

// slowStartFallback is the rate slow start falls back to at a throttle at
// now: the fleet's accepted units of the last w seconds spread over w and
// the Retry-After, where w is the time since the fleet started (its last
// cut: slow start has had none) in whole seconds, at least 1 and at most
// 60; and the hold, w + Retry-After.
func (f *FleetRules) slowStartFallback(s FleetState, now time.Time, retryAfter time.Duration, accepted float64) (float64, time.Duration) {
	w := min(max(now.Sub(s.LastCut).Truncate(time.Second)+time.Second, time.Second), fleetMinute)
	span := w + max(retryAfter, 0)
	return accepted * 60 / span.Seconds(), span
}

// FleetView is what the workers tell a fleet's raise rule.
type FleetView struct {
	// LastWait is the latest time any worker's requests waited.
	LastWait time.Time
	// Accepted is the units the API accepted from the whole fleet in the
	// last minute (the sum of the workers' Core.AcceptedUnits); 0 when not
	// known.
	Accepted float64
	// Delay is how long a change of the state takes to reach the workers
	// (the propagation delay); 0 when it is not known.
	Delay time.Duration
}

// Raise applies the limiter's raise rule to the fleet at now, with what
// the workers report (v). It raises only outside the fleet's pause and the
// hold after slow start, and only if some worker's requests waited since
// the increase clock restarted. The rule itself spaces AIMD's raises by
// aimd.increase_interval; CUBIC, whose curve would rise at every success,
// is spaced the same way for the fleet, so the fleet's state changes at
// most once per interval. Two bounds apply to the raised rate: in slow
// start, k × max(initial rate, v.Accepted) with k = max(2,
// fleetSlowStartReach / v.Delay) (none with Delay unknown); within the
// plateau (s.Plateau, at least quotaPlateau) of a cut that measured the
// quota, quotaPlateauShare of it (Rules.PlateauBound).
// A raise that a bound stops short still raises up to the bound. It
// reports whether the rate rose.
func (f *FleetRules) Raise(s FleetState, now time.Time, v FleetView) (FleetState, bool) {
	now = latest(now, s.Seen)
	if now.Before(s.PausedUntil) || now.Before(s.HoldUntil) {
		return s, false
	}
	if f.cfg.Controller == ControllerCUBIC && now.Sub(s.IncClock) < f.cfg.AIMD.IncreaseInterval {
		return s, false
	}
	ns := s
	f.rules.PlateauStart(&ns.Adapt, now, s.Accepted, s.Plateau)
	if !f.rules.Raise(&ns.Adapt, now, v.LastWait.After(s.IncClock)) {
		return s, false
	}
	if bound, ok := f.raiseBound(s, now, v); ok && ns.Rate > bound {
		if bound <= s.Rate {
			return s, false
		}
		ns.Rate = bound
	}
	ns.Seen = now
	return ns, true
}

// raiseBound returns the highest rate a raise at now may reach, if one
// applies (see Raise).
func (f *FleetRules) raiseBound(s FleetState, now time.Time, v FleetView) (float64, bool) {
	switch {
	case s.SlowStart && v.Delay > 0:
		k := math.Max(2, fleetSlowStartReach.Seconds()/v.Delay.Seconds())
		return k * math.Max(f.cfg.InitialUnitsPerMinute, v.Accepted), true
	}
	return f.rules.PlateauBound(s.Adapt, now, s.Accepted, s.Plateau)
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
	return f.Stagger(s, p, phase, s.PausedUntil)
}

// Stagger returns from plus phase (in [0, 1)) times the time one unit
// takes at the instance's rate (the fleet's rate times part p). A worker
// that starts to follow a fleet at from begins to fill its bucket then (an
// empty bucket at the start, like the end of a pause): workers started
// together do not send in step.
func (f *FleetRules) Stagger(s FleetState, p Part, phase float64, from time.Time) time.Time {
	rate := f.rules.Clamp(p.Of(s.Rate))
	if !(rate > 0) || !(phase > 0) {
		return from
	}
	return from.Add(time.Duration(math.Min(phase, 1) * 60 / rate * float64(time.Second)))
}
