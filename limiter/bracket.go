package limiter

import (
	"math"
	"time"
)

// The bracket (docs/limiter.md, "The bracket"): with slow_start, in a
// limiter that holds the whole budget, a cut that follows a raise the API
// refused falls back to the rate the limiter had held, with requests
// waiting, for a whole increase_interval before the throttled request
// left (at most 0.97 of the refused rate), and for quotaPlateau raises go
// no higher. A gateway's per-second bucket refuses as soon as the rate
// passes its own, so its rate lies between the rate it took and the rate
// it refused: there is no need to cut deeper, nor to probe above it again
// at once. A bound the API refuses in turn moves down once by the same
// factor; refused again, the cuts are the controller's for quotaPlateau.

// rateLogSize is the span, in whole seconds, of the rate history the
// bracket reads.
const rateLogSize = 128

// rateLog holds the rate at the start of each of the last rateLogSize
// whole seconds in which the rate changed: a fixed ring, so recording
// allocates nothing.
type rateLog struct {
	sec  [rateLogSize]int64 // the second each slot holds, +1 (0: empty)
	rate [rateLogSize]float64
	cur  float64 // the rate in effect now
}

// set records that the rate becomes r at t.
func (l *rateLog) set(t time.Duration, r float64) {
	if r == l.cur {
		return
	}
	s := int64(t / time.Second)
	if i := s % rateLogSize; l.sec[i] != s+1 {
		l.sec[i], l.rate[i] = s+1, l.cur
	}
	l.cur = r
}

// at returns the rate in effect at the instant k (whole seconds since the
// start), and false when second k is older than the ring covers at t.
func (l *rateLog) at(t time.Duration, k int64) (float64, bool) {
	now := int64(t / time.Second)
	if k < 0 || now-k >= rateLogSize {
		return 0, false
	}
	r, first := l.cur, int64(math.MaxInt64)
	for i := range l.sec {
		if s := l.sec[i] - 1; l.sec[i] != 0 && s >= k && s <= now && s < first {
			r, first = l.rate[i], s
		}
	}
	return r, true
}

// bracketState is the bracket of the last cut.
type bracketState struct {
	bound float64       // the highest rate a raise may reach in the plateau; 0 for none
	off   time.Duration // no bracket before this (a bracket was refused twice)
	again bool          // the bound is the one a refusal set
	// measured: the bound is the measured quota's (quotaPlateauShare × M)
	measured bool
	thrAt    time.Duration // the last throttle observed, or -1
	// busy is when the queue last went from empty to holding a request
	// (MaxInt64 before any), emptied when it last became empty (or a
	// request was granted at once).
	busy, emptied time.Duration
}

// bracketCut applies the bracket to a cut at t of a request sent at sent,
// which took the state from before to c.adapt (docs/limiter.md, "The
// bracket"): a cut that follows a raise falls back to the rate held before
// it; a cut in the plateau of a bracket (the API refused its bound) moves
// the bound down once, and then turns brackets off for quotaPlateau.
func (c *Core) bracketCut(t, sent time.Duration, before Adapt) {
	last := before.LastCut.Sub(c.start)
	refused := c.brk.bound > 0 && t-last < quotaPlateau
	prev, again, measured := c.brk.bound, c.brk.again, c.brk.measured
	c.brk.bound, c.brk.again, c.brk.measured = 0, false, false
	if before.SlowStart || t < c.brk.off || c.rules.part.Share < 1 || sent < c.cfg.AIMD.IncreaseInterval {
		return
	}
	k := (sent - c.cfg.AIMD.IncreaseInterval).Truncate(time.Second)
	busy := c.waitedSince(k, sent)
	switch {
	case refused && busy && !again && !measured:
		c.brk.again = true
		c.setBracket(before, quotaPlateauShare*prev)
		return
	case refused:
		c.brk.off = t + quotaPlateau
		return
	}
	held, ok := c.heldSince(t, k, last)
	if !ok || !busy {
		return
	}
	b := math.Min(held, quotaPlateauShare*before.Rate)
	if m := quotaPlateauShare * c.mq; m > 0 && m < b {
		minute, ok := 0.0, false
		if sent >= quotaMinute {
			minute, ok = c.heldSince(t, (sent - quotaMinute).Truncate(time.Second), last)
		}
		if !ok || minute != held { // held for less than a minute: a window may not have seen it
			b, c.brk.measured = m, true
		}
	}
	c.setBracket(before, b)
}

// setBracket leaves the rate, cut from before's, at the bracket's bound b
// (clamped to the bounds) if that is higher, never above the rate before
// the cut, and keeps b for the plateau.
func (c *Core) setBracket(before Adapt, b float64) {
	b = c.rules.Clamp(b)
	c.adapt.Rate = math.Min(before.Rate, math.Max(c.adapt.Rate, b))
	c.brk.bound = b
}

// heldSince returns the rate in effect at the whole second k, when the
// rate was not cut after k (last, the last cut, is at or before it) and no
// throttle was observed at or after k before this one: the limiter sent at
// that rate or above from k on, and the API took it. False when it was
// not, or k is older than the rate history.
func (c *Core) heldSince(t, k, last time.Duration) (float64, bool) {
	if last > k || c.brk.thrAt >= k {
		return 0, false
	}
	return c.rlog.at(t, int64(k/time.Second))
}

// waitedSince reports whether requests waited in the queue without a
// break from from until sent: the limiter sent at its rate all along (a
// rate that a short demand left unused proves nothing of the API).
func (c *Core) waitedSince(from, sent time.Duration) bool {
	return c.brk.busy <= from && (c.brk.emptied <= c.brk.busy || c.brk.emptied > sent)
}

// plateauBound returns the highest rate a raise at now may reach: within
// quotaPlateau of the last cut, the measured quota's bound or the
// bracket's, whichever is higher; false when neither applies.
func (c *Core) plateauBound(now time.Time) (float64, bool) {
	bound, ok := c.rules.PlateauBound(c.adapt, now, c.mq, 0)
	if b := c.brk.bound; b > 0 && !c.adapt.SlowStart && now.Sub(c.adapt.LastCut) < quotaPlateau {
		if !ok || b > bound {
			bound = b
		}
		ok = true
	}
	return bound, ok
}
