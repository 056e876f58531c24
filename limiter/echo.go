package limiter

import "time"

// The echo (docs/limiter.md, "Slow start", rule 7): during the hold after
// slow start, once the API refused a request sent after slow start ended,
// the units granted in each whole second k are at most the larger of the
// units the API accepted in second k − 60 (what a sliding window of a
// minute frees in second k) and those it accepted in second k − 1, spread
// evenly over the second; the first request of a second always passes.
type echoState struct {
	on      bool    // a request sent after slow start ended was throttled in the hold
	sec     int64   // the whole second the grants count for, +1 (0: none)
	granted float64 // units granted in that second
}

// echoCap returns the units the echo cap allows in whole second k.
func (c *Core) echoCap(k int64) float64 {
	return max(c.acc.at(k-acceptWindow), c.acc.at(k-1))
}

// echoHolds reports whether the echo cap holds back a request of u units
// at t: the second's cap, spread evenly over the second, does not cover
// the units granted in it plus u (the first request of a second passes).
func (c *Core) echoHolds(t time.Duration, u float64) bool {
	if end, ok := c.echoUntil(); !ok || t >= end {
		return false
	}
	k := int64(t / time.Second)
	if c.echo.sec != k+1 || c.echo.granted == 0 {
		return false
	}
	frac := float64(t-time.Duration(k)*time.Second) / float64(time.Second)
	return c.echo.granted+u > c.echoCap(k)*frac+unitEps
}

// echoNext returns when the echo cap lets a request of u units held at t
// through: when the second's spread cap covers it, or the next second.
func (c *Core) echoNext(t time.Duration, u float64) time.Duration {
	k := int64(t / time.Second)
	next := time.Duration(k+1) * time.Second
	if capk := c.echoCap(k); capk > 0 {
		if at := time.Duration(k)*time.Second + time.Duration((c.echo.granted+u)/capk*float64(time.Second)); at < next {
			return max(at, t)
		}
	}
	return next
}

// echoGrant counts a grant of u units at t.
func (c *Core) echoGrant(t time.Duration, u float64) {
	k := int64(t / time.Second)
	if c.echo.sec != k+1 {
		c.echo = echoState{on: c.echo.on, sec: k + 1}
	}
	c.echo.granted += u
}

// echoThrottle notes a throttle at t of a request sent at sent: one sent
// after slow start ended, in the hold, turns the echo cap on.
func (c *Core) echoThrottle(t, sent time.Duration) {
	if c.cfg.SlowStart && c.ended.set && sent > c.ended.at && c.at(t).Before(c.adapt.HoldUntil) {
		c.echo.on = true
	}
}

// echoUntil returns the end of the echo (the end of the hold), as an
// offset, while it is on.
func (c *Core) echoUntil() (time.Duration, bool) {
	if !c.echo.on || c.following {
		return 0, false
	}
	return c.adapt.HoldUntil.Sub(c.start), true
}

// echoCeiling returns the level the bucket may fill to while the echo is
// on, at the latest time seen: the units of the request at the head of the
// queue (none when nothing waits), so that no burst leaves when the echo
// lets requests through or ends.
func (c *Core) echoCeiling() (float64, bool) {
	if end, ok := c.echoUntil(); !ok || c.last >= end {
		return 0, false
	}
	if c.qh < len(c.q) {
		return c.q[c.qh].units, true
	}
	return 0, true
}
