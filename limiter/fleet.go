package limiter

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/limiter/control"
)

// DefaultRemember is how long a fleet's rate is remembered after an
// instance last wrote it (limiter.share.remember).
const DefaultRemember = time.Hour

// FleetState is the state of a fleet controller: the rate rules of the
// whole budget that many instances follow (Core.Follow), the fleet-wide
// pause, and when an instance last wrote it. Package cluster keeps it in
// NATS KV; the simulator keeps one in memory.
type FleetState struct {
	// Adapt is the classic rules' state; with the adaptive law it mirrors
	// the law's rate, startup and last cut, for readers of the rate.
	control.Adapt
	// Law is the adaptive law's state for the whole budget (slow_start
	// true); nil with the classic rules.
	Law *control.LawState `json:"law,omitempty"`
	// PausedUntil is the end of the fleet's Retry-After pause: every
	// worker pauses until then.
	PausedUntil time.Time `json:"paused_until"`
	// Seen is when a worker last wrote the state: the age of the
	// remembered rate, and the latest time the rules have seen (a
	// decision never goes back before it).
	Seen time.Time `json:"seen"`
}

// law returns the law's part of s: Law, or, when s has none (a state a
// worker on its own remembered: only its rate), a law out of startup at
// that rate, which the API was seen to accept.
func (s FleetState) law() control.LawState {
	if s.Law != nil {
		return *s.Law
	}
	return control.LawState{Rate: s.Rate, Moved: s.IncClock, Bound: s.Rate, Ceil: s.Rate, Cut: s.LastCut, Open: s.LastCut,
		From: control.WindowFromRefusal}
}

// FleetRules decides a fleet's state, as docs/limiter.md ("Fleet") states
// it: the adaptive law (or the classic rules) for the whole budget. It is
// pure: every method takes the time and the facts, and returns the new
// state and whether it changed (and must be written).
type FleetRules struct {
	cfg      Config        // the budget's limiter options
	rules    control.Rules // the classic rules for the whole budget
	remember time.Duration // how long a state is remembered
	refresh  time.Duration // how often a live worker confirms the state
}

// NewFleetRules returns the FleetRules of a validated cfg: a state is
// remembered for remember after it was last written (never if remember
// is not positive), and confirmed once per refresh.
func NewFleetRules(cfg Config, remember, refresh time.Duration) FleetRules {
	return FleetRules{cfg: cfg, rules: control.NewRules(cfg, control.Whole), remember: remember, refresh: refresh}
}

func (f *FleetRules) adaptive() bool { return f.cfg.SlowStart && !f.cfg.Disabled }

// law returns the whole budget's law in state s (FleetState.law), with
// offsets from base: the time of the decision.
func (f *FleetRules) law(s FleetState, base time.Time) *control.Law {
	l := control.NewLaw(f.cfg, f.rules.Clamp(s.Rate), f.rules.Min(), f.rules.Max())
	l.Load(s.law(), base, 1)
	return l
}

// put writes l, with offsets from base, into ns, with the last cut's send
// full, and mirrors its rate, startup and cut in ns.Adapt.
func (f *FleetRules) put(ns *FleetState, l *control.Law, base, full time.Time) {
	ls := l.Export(base, 1)
	ls.Full = full
	ns.Law = &ls
	ns.Rate, ns.SlowStart, ns.Throttled = ls.Rate, ls.Startup, !ls.Startup
	ns.LastCut, ns.IncClock = ls.Cut, ls.Moved
}

// Start is a new fleet's state at now: the initial rate, as a Core starts.
func (f *FleetRules) Start(now time.Time) FleetState {
	s := FleetState{Adapt: f.rules.Start(now), Seen: now}
	if f.adaptive() {
		f.put(&s, control.NewLaw(f.cfg, s.Rate, f.rules.Min(), f.rules.Max()), now, time.Time{})
	}
	return s
}

// Resume returns the state a worker starting at now runs on: the stored
// one if a worker wrote it less than remember ago, else (none stored: the
// zero state) a new state at the initial rate, which must be written
// (changed). With the adaptive law the remembered rate is the estimate:
// out of startup, the rate resumes at lawMargin of what the API was seen
// to accept (a probe above it, or a climb below it, starts over), and the
// state is written when that changed it. A state that a worker on its own
// remembered (no law, only its rate) starts the law at that rate.
func (f *FleetRules) Resume(s FleetState, now time.Time) (FleetState, bool) {
	if s.Seen.IsZero() || now.Sub(s.Seen) >= f.remember {
		return f.Start(now), true
	}
	if !f.adaptive() {
		s.Law = nil
		s.Rate = f.rules.Clamp(s.Rate)
		return s, false
	}
	l := f.law(s, now)
	if s.Law != nil {
		l.PaceAtBound()
	}
	was := s
	f.put(&s, l, now, s.law().Full)
	return s, was.Law == nil || *s.Law != *was.Law
}

// Throttle applies a throttle that a worker observed (r) at r.At, or at
// the latest time the state has seen if that is later, with accepted the
// units the API accepted from the whole fleet in the last minute (the sum
// of the workers' Core.AcceptedUnits; 0 when not known). With the adaptive
// law it is the law's refusal, with what the worker's record measured
// (r.Accepted, r.Window) or, if more, what the fleet was accepted in the
// last minute (a span the record of a worker at a small share is too thin
// to measure, and one a slow startup outlasts W in); the window the
// worker saw counts only at the fleet's first refusal, when every worker
// began sending together. With the classic rules it is their throttle,
// cutting CUBIC from the worker's send rate divided by its share. A
// Retry-After extends the fleet's pause (a refusal that names none, with
// the law: control.LawRetryAfter). It returns the new state, whether it changed
// and whether the rate was cut.
func (f *FleetRules) Throttle(s FleetState, r ThrottleReport, accepted float64) (ns FleetState, changed, cut bool) {
	now := latest(r.At, s.Seen)
	ns = s
	ra := r.RetryAfter
	if f.adaptive() {
		if ra <= 0 {
			ra = control.LawRetryAfter
		}
		l, was := f.law(s, now), s.law()
		full := was.Full
		m := control.Refusal{Sent: control.Offset(now, r.Sent), RetryAfter: ra, Accepted: r.Accepted, OK: r.Accepted > 0}
		if was.Startup {
			m.Window = r.Window
		}
		if accepted > 0 && accepted > m.Accepted {
			m.Accepted, m.OK = accepted, true
		}
		if cut = l.Decide(0, m); cut {
			full = r.Sent
		}
		f.put(&ns, l, now, full)
		changed = s.Law == nil || *ns.Law != was
	} else {
		measured := -1.0
		if share := r.Part.Of(1); share > 0 && r.Measured >= 0 {
			measured = r.Measured / share
		}
		cut = f.rules.Throttle(&ns.Adapt, now, r.Sent, measured)
		changed = ns.Adapt != s.Adapt
	}
	if end, ok := f.cfg.PauseEnd(now, ra); ok && end.After(ns.PausedUntil) {
		ns.PausedUntil, changed = end, true
	}
	if !changed {
		return s, false, false
	}
	ns.Seen = now
	return ns, true, cut
}

// FleetView is what the workers tell a fleet's raise rule.
type FleetView struct {
	// LastWait is the latest time any worker's requests waited.
	LastWait time.Time
	// Sent is what the deciding worker sent over the last 2 s, for the
	// whole budget (see Core.Sent); -1 when not known.
	Sent float64
	// Accepted is the units the API accepted from the whole fleet in the
	// last minute (the sum of the workers' Core.AcceptedUnits); 0 when not
	// known.
	Accepted float64
	// Delay is how long a change of the state takes to reach the workers
	// (the propagation delay); 0 when it is not known.
	Delay time.Duration
}

// fleetReach bounds a fleet's startup: its rate stays at most
// k = max(2, fleetReach / the propagation delay) times the larger of the
// initial rate and the units the fleet was accepted in the last minute,
// so that what the fleet sends in one propagation delay, before a refusal
// reaches every worker, stays under 1/200 of that minute's units. A
// single limiter stops at its first refusal and has no such delay.
const fleetReach = 300 * time.Millisecond

// Raise applies the raise rule to the fleet at now, with what the workers
// report (v): outside the fleet's pause, and only if some worker's
// requests waited since the rate last moved. The adaptive law reads what
// the fleet was accepted in the last minute, when all of it came after the
// last cut, and what the deciding worker sent; its startup stays within
// fleetReach; CUBIC's classic curve, which would rise at
// every success, is spaced by aimd.increase_interval for the fleet, so the
// state changes at most once per interval. It reports whether the state
// changed.
func (f *FleetRules) Raise(s FleetState, now time.Time, v FleetView) (FleetState, bool) {
	now = latest(now, s.Seen)
	if now.Before(s.PausedUntil) {
		return s, false
	}
	ns := s
	if f.adaptive() {
		was := s.law()
		if !v.LastWait.After(was.Moved) {
			return s, false
		}
		l := f.law(s, now)
		before := l.Rate()
		got := -1.0
		if now.Sub(was.Cut) >= time.Minute {
			got = v.Accepted // the fleet's minute, all of it after the last cut
		}
		l.RaiseOn(0, got, v.Sent)
		if l.Startup() && v.Delay > 0 {
			k := math.Max(2, fleetReach.Seconds()/v.Delay.Seconds())
			l.SetRate(math.Max(before, math.Min(l.Rate(), k*math.Max(f.cfg.InitialUnitsPerMinute, v.Accepted))))
		}
		if f.put(&ns, l, now, was.Full); s.Law != nil && *ns.Law == was {
			return s, false
		}
	} else {
		if f.cfg.Controller == ControllerCUBIC && now.Sub(s.IncClock) < f.cfg.AIMD.IncreaseInterval {
			return s, false
		}
		if !f.rules.Raise(&ns.Adapt, now, v.LastWait.After(s.IncClock)) {
			return s, false
		}
	}
	ns.Seen = now
	return ns, true
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
func (f *FleetRules) PauseEnd(s FleetState, p control.Part, phase float64) time.Time {
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
func (f *FleetRules) Stagger(s FleetState, p control.Part, phase float64, from time.Time) time.Time {
	rate := f.rules.Clamp(p.Of(s.Rate))
	if !(rate > 0) || !(phase > 0) {
		return from
	}
	return from.Add(time.Duration(math.Min(phase, 1) * 60 / rate * float64(time.Second)))
}
