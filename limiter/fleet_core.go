package limiter

import (
	"math"
	"time"
)

// What a fleet controller reads of, and does to, the Core of a worker that
// follows it (docs/limiter.md, "Fleet").

// AcceptedUnits returns the units of the successes (and client errors)
// this instance observed in the last 60 whole seconds up to now (the
// second of now included), counted always with slow_start on, else while
// the Core follows a fleet; 0 before any. The fleet adds up its workers' counts:
// the units the API accepted from the whole fleet in the last minute.
func (c *Core) AcceptedUnits(now time.Time) float64 {
	t := c.offset(now)
	c.advance(t)
	return c.acc.sum(t, acceptWindow)
}

// grantLevel returns the level the bucket must hold for a request of u
// units to be granted: u, or, while the Core follows a fleet, 0 (the
// request takes its units and leaves the bucket below zero). A worker
// that saved up toward an expensive request holds tokens the fleet does
// not send; summed over many workers each at a small share, those savings
// come and go by whole seconds of the fleet's rate, and the fleet's
// sending swings around its rate by as much.
func (c *Core) grantLevel(u float64) float64 {
	if c.following {
		return 0
	}
	return u
}

// dropSurplus empties the bucket down to the units of the request at the
// head of the queue, or to none when nothing waits (a debt stays). A fleet
// cut does it: the head keeps what it has saved toward its own grant,
// nothing more goes out at once.
func (c *Core) dropSurplus() {
	keep := 0.0
	if c.qh < len(c.q) {
		keep = c.q[c.qh].units
	}
	c.tokens = math.Min(c.tokens, keep)
}

// AcceptedUnits returns the units this instance saw the API accept in the
// last minute (see Core.AcceptedUnits). It is safe for concurrent use.
func (l *Limiter) AcceptedUnits() float64 {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	a := l.core.AcceptedUnits(now)
	l.settleLocked(now)
	return a
}
