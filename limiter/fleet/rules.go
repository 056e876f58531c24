package fleet

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/limiter/control"
)

// Rules decides a fleet's state, as docs/limiter.md ("Fleet") states
// it: the adaptive law (or the classic rules) for the whole budget. It is
// pure: every method takes the time and the facts, and returns the new
// state and whether it changed (and must be written).
type Rules struct {
	cfg      control.Config // the budget's limiter options
	rules    control.Rules  // the classic rules for the whole budget
	remember time.Duration  // how long a state is remembered
	refresh  time.Duration  // how often a live worker confirms the state
}

// NewRules returns the Rules of a validated cfg: a state is remembered
// for remember after it was last written (never if remember is not
// positive), and confirmed once per refresh.
func NewRules(cfg control.Config, remember, refresh time.Duration) Rules {
	return Rules{cfg: cfg, rules: control.NewRules(cfg, control.Whole), remember: remember, refresh: refresh}
}

func (f *Rules) adaptive() bool { return f.cfg.SlowStart && !f.cfg.Disabled }

// law returns the whole budget's law in state s (State.LawState), with
// offsets from base: the time of the decision.
func (f *Rules) law(s State, base time.Time) *control.Law {
	l := control.NewLaw(f.cfg, f.rules.Clamp(s.Rate), f.rules.Min(), f.rules.Max())
	l.Load(s.LawState(), base, 1)
	return l
}

// put writes l, with offsets from base, into ns, with the last cut's send
// full, and mirrors its rate, startup and cut in ns.Adapt.
func (f *Rules) put(ns *State, l *control.Law, base, full time.Time) {
	ls := l.Export(base, 1)
	ls.Full = full
	ns.Law = &ls
	ns.Rate, ns.SlowStart, ns.Throttled = ls.Rate, ls.Startup, !ls.Startup
	ns.LastCut, ns.IncClock = ls.Cut, ls.Moved
}

// Start is a new fleet's state at now: the initial rate, as a Core starts.
func (f *Rules) Start(now time.Time) State {
	s := State{Adapt: f.rules.Start(now), Seen: now}
	if f.adaptive() {
		f.put(&s, control.NewLaw(f.cfg, s.Rate, f.rules.Min(), f.rules.Max()), now, time.Time{})
	}
	return s
}

// Resume returns the state a worker starting at now runs on: the stored
// one if a worker wrote it less than remember ago, else (none stored: the
// zero state) a new state at the initial rate, which must be written
// (changed). With the adaptive law the remembered rate is the estimate:
// out of startup, the rate resumes at 0.98 of what the API was seen to
// accept (control.Law.Resume: a probe above it, or a climb below it,
// starts over), and the state is written when that changed it. A state
// that a worker on its own remembered (no law, only its rate) starts the
// law at that rate.
func (f *Rules) Resume(s State, now time.Time) (State, bool) {
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
		l.Resume()
	}
	was := s
	f.put(&s, l, now, s.LawState().Full)
	return s, was.Law == nil || *s.Law != *was.Law
}

// Throttle applies a throttle that a worker observed (r) at r.At, or at
// the latest time the state has seen if that is later, with accepted the
// units the API accepted from the whole fleet in the last minute (the sum
// of the workers' limiter.Core.AcceptedUnits; 0 when not known). With the
// adaptive law it is the law's refusal, with what the worker's record measured
// (r.Accepted, r.Window) or, if more, what the fleet was accepted in the
// last minute (a span the record of a worker at a small share is too thin
// to measure, and one a slow startup outlasts W in); the window the
// worker saw counts only at the fleet's first refusal, when every worker
// began sending together. With the classic rules it is their throttle,
// cutting CUBIC from the worker's send rate divided by its share. A
// Retry-After extends the fleet's pause (a refusal that names none, with
// the law: control.RefusalWait). It returns the new state, whether it
// changed and whether the rate was cut.
func (f *Rules) Throttle(s State, r Report, accepted float64) (ns State, changed, cut bool) {
	now := latest(r.At, s.Seen)
	ns = s
	ra := r.RetryAfter
	if f.adaptive() {
		ra = control.RefusalWait(ra)
		l, was := f.law(s, now), s.LawState()
		full := was.Full
		a := r.Accepted // the worker's measure, or the fleet's if more
		if accepted > 0 && accepted > a {
			a = accepted
		}
		if cut = l.ReportedRefusal(now, r.Sent, ra, a, r.Window); cut {
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
func (f *Rules) Raise(s State, now time.Time, v View) (State, bool) {
	now = latest(now, s.Seen)
	if now.Before(s.PausedUntil) {
		return s, false
	}
	ns := s
	if f.adaptive() {
		was := s.LawState()
		if !v.LastWait.After(was.Moved) {
			return s, false
		}
		l := f.law(s, now)
		got := -1.0
		if now.Sub(was.Cut) >= time.Minute {
			got = v.Accepted // the fleet's minute, all of it after the last cut
		}
		limit := math.Inf(1) // startup's reach
		if v.Delay > 0 {
			limit = math.Max(2, fleetReach.Seconds()/v.Delay.Seconds()) * math.Max(f.cfg.InitialUnitsPerMinute, v.Accepted)
		}
		l.RaiseOn(0, got, v.Sent, limit)
		if f.put(&ns, l, now, was.Full); s.Law != nil && *ns.Law == was {
			return s, false
		}
	} else {
		if f.cfg.Controller == control.ControllerCUBIC && now.Sub(s.IncClock) < f.cfg.AIMD.IncreaseInterval {
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
func (f *Rules) Touch(s State, now time.Time) (State, bool) {
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
func (f *Rules) PauseEnd(s State, p control.Part, phase float64) time.Time {
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
func (f *Rules) Stagger(s State, p control.Part, phase float64, from time.Time) time.Time {
	rate := f.rules.Clamp(p.Of(s.Rate))
	if !(rate > 0) || !(phase > 0) {
		return from
	}
	return from.Add(time.Duration(math.Min(phase, 1) * 60 / rate * float64(time.Second)))
}
