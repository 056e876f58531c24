package limiter

import (
	"time"

	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Follow makes the Core run on a fleet's state s, at now: the rules of
// the whole budget, kept by a fleet controller that all instances share
// (package cluster). With the adaptive law the Core's law takes the
// fleet's (its rates times the share) and keeps its own record; with the
// classic rules the Core's state becomes the fleet's in its part of the
// budget, and the whole fleet rate becomes its ceiling. A pause is
// extended to pausedUntil if that is later (a Retry-After another
// instance received). When the fleet's state shows a cut the Core had not
// seen, the bucket keeps no more than the units of the request at the
// head of the queue (none when nothing waits): tokens saved at the old
// rate are not sent as a burst into an API that has just throttled; and
// the law's next span starts when sending resumes.
// Until Lead, the Core neither cuts nor raises by itself: a throttle still
// pauses it, and a change of share rescales it.
func (c *Core) Follow(now time.Time, s fleet.State, pausedUntil time.Time) {
	t := c.offset(now)
	c.advance(t)
	until := pausedUntil.Sub(c.start)
	if pausedUntil.IsZero() {
		until = t
	}
	newCut := c.following && s.LastCut.After(c.fleet.LastCut)
	if newCut {
		c.dropSurplus() // fleet_core.go
	}
	c.following = true
	c.fleet = s.Adapt
	if c.law != nil {
		ls := s.LawState()
		c.law.Load(ls, c.start, c.rules.Part().Of(1))
		if newCut {
			c.law.FollowCut(c.start, ls.Full, max(t, until))
		}
		c.adapt.Rate, c.adapt.SlowStart = c.law.Rate(), c.law.Startup()
	} else {
		c.rules.SetCeiling(s.Rate)
		c.adapt = c.rules.Scale(s.Adapt)
	}
	c.setRate(c.adapt.Rate)
	if until > t {
		if !c.paused {
			c.fleetPause = true
		}
		c.pause(until)
	}
	c.advance(t)
}

// Lead makes a following Core run its own rules again, at now: the law
// from the fleet's state it followed last, or the classic rules never
// above that fleet rate times its share (the ceiling stays). A Core that
// does not follow is unchanged.
func (c *Core) Lead(now time.Time) {
	c.advance(c.offset(now))
	c.following = false
}

// Following reports whether the Core follows a fleet.
func (c *Core) Following() bool { return c.following }

// LastWait returns when a request last had to wait: now (the latest time
// seen) while requests are queued, else when the last one was queued; zero
// if none ever was. A fleet raises its rate only when some instance's
// requests waited since the fleet's increase clock restarted.
func (c *Core) LastWait() time.Time {
	switch {
	case c.qh < len(c.q):
		return c.at(c.last)
	case c.queuedOnce:
		return c.at(c.lastQueued)
	}
	return time.Time{}
}

// Measured returns this instance's send rate at now in units per minute
// (the units granted in the last 10 s, times 6), or -1 when it is not
// known: before 10 s from the start, and with AIMD, which does not use it.
func (c *Core) Measured(now time.Time) float64 {
	t := c.offset(now)
	c.advance(t)
	return c.measured(t)
}

// Report returns the fleet.Report of a throttle observed at now, of a
// request sent at sent with a Retry-After of retryAfter: what a fleet
// controller needs of this Core to apply its throttle rule. The Limiter's
// throttle hook and the simulator's fleet build their reports here.
func (c *Core) Report(now, sent time.Time, retryAfter time.Duration) fleet.Report {
	r := fleet.Report{At: now, Sent: sent, RetryAfter: retryAfter, Measured: c.Measured(now), Accepted: -1, Part: c.rules.Part()}
	if c.law != nil && c.following {
		a, w := c.law.MeasureRefusal(sent.Sub(c.start), retryAfter)
		if a >= 0 {
			r.Accepted = a / c.rules.Part().Of(1)
		}
		r.Window = w
	}
	return r
}

// WithThrottleHook makes the Limiter call fn after every throttle it
// observes, outside its lock. fn must not block.
func WithThrottleHook(fn func(fleet.Report)) Option {
	return func(l *Limiter) { l.onThrottle = fn }
}

// Follow makes the Limiter run on a fleet's state: see Core.Follow. It is
// safe for concurrent use, like every method of Limiter.
func (l *Limiter) Follow(s fleet.State, pausedUntil time.Time) {
	l.update(func(now time.Time) { l.core.Follow(now, s, pausedUntil) })
}

// Lead makes the Limiter run its own rules again: see Core.Lead.
func (l *Limiter) Lead() {
	l.update(func(now time.Time) { l.core.Lead(now) })
}

// LastWait returns when a request last had to wait (see Core.LastWait).
func (l *Limiter) LastWait() time.Time {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.core.Advance(now)
	l.settleLocked(now)
	return l.core.LastWait()
}

// Part returns this Limiter's part of the budget.
func (l *Limiter) Part() control.Part {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.rules.Part()
}

// update applies a change of the rate at now and logs it.
func (l *Limiter) update(set func(now time.Time)) {
	now := time.Now()
	l.mu.Lock()
	before := l.core.Rate()
	set(now)
	l.dispatchLocked()
	l.armLocked(now)
	after := l.core.Rate()
	l.metrics.setState(l.core)
	l.mu.Unlock()
	if after != before {
		l.log.Debug("limiter: rate set by the fleet", "from", before, "to", after)
	}
}

// Adapt returns the state of the rate rules (see Core.Adapt).
func (l *Limiter) Adapt() control.Adapt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Adapt()
}
