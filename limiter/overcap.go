package limiter

import "time"

// pauseEnd returns the end of the pause that a throttle at t with a
// Retry-After of retryAfter orders, or false for none. A Retry-After beyond
// max_pause (which the limiter cannot honour, and a hostile or broken
// target sends on every throttle) pauses for max_pause at most once per
// 2 × max_pause: until max_pause after the end of the pause the last one
// ordered, another neither pauses nor extends a pause.
func (c *Core) pauseEnd(t, retryAfter time.Duration) (time.Duration, bool) {
	until, ok := c.cfg.PauseEnd(c.at(t), retryAfter)
	if !ok {
		return 0, false
	}
	if retryAfter > c.cfg.MaxPause {
		if c.overcapSeen && t < c.overcapNext {
			return 0, false
		}
		c.overcapSeen, c.overcapNext = true, t+2*c.cfg.MaxPause
	}
	return until.Sub(c.start), true
}
