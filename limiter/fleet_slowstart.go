package limiter

import (
	"math"
	"time"
)

// A fleet's slow start (docs/limiter.md, "Fleet"): before the fleet's
// first throttle its rate grows by slowStartGrowth at most once per
// slowStartInterval while requests wait; at the first throttle it falls
// back to the rate the API was seen to accept, which each Core counts here
// (a Core that runs the adaptive law keeps its own record, law.go).
const (
	slowStartGrowth   = 2.0
	slowStartInterval = 2 * time.Second
	// acceptWindow is the span, in whole seconds, of the accepted units
	// the fallback reads.
	acceptWindow = 60
)

// acceptLog counts the units of successful responses per whole second
// since the Core's start, over the last acceptWindow seconds: a fixed ring,
// so recording allocates nothing.
type acceptLog struct {
	sec   [acceptWindow + 1]int64 // the second each slot holds, +1 (0: empty)
	units [acceptWindow + 1]float64
}

func (a *acceptLog) add(t time.Duration, u float64) {
	s := int64(t / time.Second)
	i := s % int64(len(a.sec))
	if a.sec[i] != s+1 {
		a.sec[i], a.units[i] = s+1, 0
	}
	a.units[i] += u
}

// sum returns the units recorded in the w whole seconds up to and
// including the one of t.
func (a *acceptLog) sum(t time.Duration, w int64) float64 {
	s := int64(t / time.Second)
	var total float64
	for i := range a.sec {
		if k := a.sec[i] - 1; a.sec[i] != 0 && k <= s && k > s-w {
			total += a.units[i]
		}
	}
	return total
}

// accepted is the larger of two rates the API accepted: the units of the
// successes observed in the last w whole seconds (w = 60, or fewer since
// the start), spread over those w seconds and the wait (the Retry-After
// capped at max_pause, the longest pause the limiter takes: an absurd
// Retry-After must not read as an API that accepts nothing, nor hold cuts
// back for a day); and, when the
// throttled request left within one slow-start interval of the last raise
// (that raise overshot), the rate before that raise, which the API took
// for a whole interval — only for a Core that holds the whole budget or
// follows a fleet: an instance with a part of it cannot tell the API's
// room from the room the others left.
func (c *Core) accepted(t, sent, retryAfter time.Duration) (float64, time.Duration) {
	if !c.adapt.SlowStart {
		return 0, 0
	}
	w := min(int64(t/time.Second)+1, acceptWindow)
	span := time.Duration(w)*time.Second + min(retryAfter, c.cfg.MaxPause)
	a := c.acc.sum(t, w) * 60 / span.Seconds()
	if u := c.up; u.set && sent >= u.at && sent-u.at < slowStartInterval && (c.following || c.rules.part.Share >= 1) {
		a = math.Max(a, u.from)
	}
	return a, span
}

// raiseLog is the last raise of slow start: when, and the rate before it.
type raiseLog struct {
	set  bool
	at   time.Duration
	from float64
}

// noteRaise records a raise at t from the rate from, in slow start.
func (c *Core) noteRaise(t time.Duration, from float64) {
	if c.adapt.SlowStart {
		c.up = raiseLog{set: true, at: t, from: from}
	}
}

// fallback returns the accepted rate and the hold for a report of a
// throttle at t: from the Core's own count while the fleet it follows is
// in slow start; else 0.
func (c *Core) fallback(t, sent, retryAfter time.Duration) (float64, time.Duration) {
	if c.adapt.SlowStart {
		return c.accepted(t, sent, retryAfter)
	}
	return 0, 0
}
