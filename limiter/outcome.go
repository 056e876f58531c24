package limiter

import (
	"math"
	"time"
)

// What an outcome does to the rate (docs/limiter.md, "Throttle",
// "Success", "Measured quota"); Core.Observe calls these.

func (c *Core) throttle(t, sent, retryAfter time.Duration) {
	c.waited = false
	if c.law != nil && !c.following {
		if c.law.refused(t, sent, retryAfter) {
			c.setRate(c.law.rate)
		}
		if until, ok := c.pauseEnd(t, c.restartBackoff(sent, retryAfter)); ok {
			c.pause(until)
			c.fleetPause = false
		}
		return
	}
	c.echoThrottle(t, sent)
	if c.following {
		c.adapt.IncClock = c.at(t)
	} else {
		before := c.adapt
		a, hold := c.endSlowStart(t, sent, retryAfter)
		if c.rules.Throttle(&c.adapt, c.at(t), c.at(sent), c.measured(t), a, hold) {
			if c.cfg.SlowStart {
				c.mq = c.rules.MeasureCut(&c.adapt, before, c.at(t), c.acc.sum(t, acceptWindow))
				c.bracketCut(t, sent, before)
			}
			c.setRate(c.adapt.Rate)
		}
		c.brk.thrAt = t
	}
	if until, ok := c.pauseEnd(t, c.restartBackoff(sent, retryAfter)); ok {
		c.pause(until)
		c.fleetPause = false
	}
}

// pause pauses until the offset until, extending a pause already running.
func (c *Core) pause(until time.Duration) {
	if !c.paused || until > c.pausedUntil {
		c.paused = true
		c.pausedUntil = until
	}
}

func (c *Core) success(t time.Duration, units float64) {
	if c.cfg.SlowStart || c.following {
		c.acc.add(t, units) // following: the fleet's accepted units (fleet_core.go)
	}
	if c.paused || c.following || !c.waited { // a raise needs a request that waited
		return
	}
	if c.law != nil {
		if c.law.raise(t) {
			c.setRate(c.law.rate)
			c.waited = false
		}
		return
	}
	now, next := c.at(t), c.adapt
	c.rules.PlateauStart(&next, now, math.Max(c.mq, c.brk.bound), 0)
	if !c.rules.Raise(&next, now, c.waited) {
		return
	}
	if bound, ok := c.plateauBound(now); ok && next.Rate > bound {
		if bound <= c.adapt.Rate {
			return
		}
		next.Rate = bound
	}
	from := c.adapt.Rate
	c.adapt = next
	c.noteRaise(t, from)
	c.setRate(c.adapt.Rate)
	c.waited = false
}
