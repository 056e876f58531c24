package limiter

import (
	"math"
	"time"
)

// What a fleet controller reads of, and does to, the Core of a worker that
// follows it (docs/limiter.md, "Fleet").

// acceptWindow is the span, in whole seconds, of AcceptedUnits.
const acceptWindow = 60

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

// AcceptedUnits returns the units of the successes (and client errors)
// this instance observed in the last 60 whole seconds up to now (the
// second of now included), counted always with slow_start on, else while
// the Core follows a fleet; 0 before any. The fleet adds up its workers'
// counts (their heartbeats): the units the API accepted from the whole
// fleet in the last minute, against which a reader checks a stored rate.
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

// Sent returns what this instance sent over the last 2 s (startup's
// interval), for the whole budget (divided by its share), in units per
// minute; -1 before the first 2 s and with the classic rules. A fleet's
// startup reads it (fleet.View): the rate doubles to at most twice it.
func (c *Core) Sent(now time.Time) float64 {
	t := c.offset(now)
	c.advance(t)
	if c.law == nil {
		return -1
	}
	sent := c.law.SentRate(t)
	if sent < 0 {
		return -1
	}
	return sent / c.rules.Part().Of(1)
}

// Sent returns what this instance sent lately (see Core.Sent). It is safe
// for concurrent use.
func (l *Limiter) Sent() float64 { return read(l, l.core.Sent) }

// AcceptedUnits returns the units this instance saw the API accept in the
// last minute (see Core.AcceptedUnits). It is safe for concurrent use.
func (l *Limiter) AcceptedUnits() float64 { return read(l, l.core.AcceptedUnits) }

// read returns f(now) of the Core under the Limiter's lock, then settles
// what came due meanwhile.
func read[T any](l *Limiter, f func(now time.Time) T) T {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	v := f(now)
	l.settleLocked(now)
	return v
}
