package limiter

import (
	"time"

	"github.com/sluicehq/sluice/limiter/control"
)

// What an outcome does to the rate (docs/limiter.md, "Throttle",
// "Success", "Measured quota"); Core.Observe calls these.

func (c *Core) throttle(t, sent, retryAfter time.Duration) {
	c.waited = false
	if c.law != nil {
		retryAfter = control.RefusalWait(retryAfter)
	}
	until, paused := c.pauseEnd(t, c.restartBackoff(sent, retryAfter))
	switch {
	case c.law != nil:
		// The law's next span starts when sending does: at the end of
		// the pause this refusal leaves (its own, or one running longer).
		resume := t
		if paused {
			resume = max(resume, until)
		}
		if c.paused {
			resume = max(resume, c.pausedUntil)
		}
		// Following, the fleet decides (Report tells it what the record
		// measured).
		if !c.following && c.law.Refused(t, sent, retryAfter, resume) {
			c.takeLaw()
		}
	case c.following:
		c.adapt.IncClock = c.at(t)
	case c.rules.Throttle(&c.adapt, c.at(t), c.at(sent), c.measured(t)):
		c.setRate(c.adapt.Rate)
	}
	if paused {
		c.pause(until)
		c.fleetPause = false
	}
}

// takeLaw makes the law's rate the Core's.
func (c *Core) takeLaw() {
	c.adapt.SlowStart = c.law.Startup()
	c.setRate(c.law.Rate())
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
		if c.law.Raise(t) {
			c.takeLaw()
			c.waited = false
		}
		return
	}
	if c.rules.Raise(&c.adapt, c.at(t), c.waited) {
		c.setRate(c.adapt.Rate)
		c.waited = false
	}
}
