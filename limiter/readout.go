package limiter

import "math"

// What a display reads of a Limiter beside its rate (docs/ui.md): the
// burst it can send now and whether it measures what the API accepts.

// Burst returns the units the Limiter in the state s would grant at once to
// requests that arrive together: the bucket's level, or none while it is
// paused, while requests already wait (they go first) or while the bucket
// is below zero (an oversized grant's debt). In disabled mode there is no
// bound: +Inf. It is at most Capacity, which is only the most the bucket
// can hold.
func (s Stats) Burst() float64 {
	switch {
	case s.Disabled:
		return math.Inf(1)
	case s.Paused || s.Queue > 0:
		return 0
	}
	return max(s.Tokens, 0)
}

// Adaptive reports whether the Limiter runs the adaptive law
// (slow_start, not disabled), which keeps an estimate.
func (l *Limiter) Adaptive() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.law != nil
}

// AcceptedKnown reports whether AcceptedUnits counts what the API accepts
// now (Core.AcceptedUnits): with slow_start on, or while the Limiter
// follows a fleet; never in disabled mode. Otherwise a display shows the
// accepted rate as not measured, not as 0.
func (l *Limiter) AcceptedKnown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.core.cfg.Disabled && (l.core.cfg.SlowStart || l.core.following)
}
