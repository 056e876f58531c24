package limiter

import "time"

// The measured send rate of CUBIC's cut: the units granted in the last
// measureWindow, kept only when the controller uses it.

func (c *Core) recordGrant(t time.Duration, u float64) {
	c.grants = append(c.grants, grantRec{at: t, units: u})
	c.pruneGrants(t)
}

func (c *Core) pruneGrants(t time.Duration) {
	for c.gh < len(c.grants) && c.grants[c.gh].at <= t-measureWindow {
		c.gh++
	}
	c.grants, c.gh = compact(c.grants, c.gh)
}

// measured returns the units granted in (t−10s, t] times 6, or −1 before
// 10 s from the start or when the controller does not use it; with
// slow_start, also −1 within 10 s of the end of the limiter's own pause,
// when the restart (restart.go) holds the sending back.
func (c *Core) measured(t time.Duration) float64 {
	if !c.measure || t < measureWindow || (c.restart.from > 0 && t-c.restart.from < measureWindow) {
		return -1
	}
	c.pruneGrants(t)
	var sum float64
	for _, g := range c.grants[c.gh:] {
		sum += g.units
	}
	return sum * 6
}
