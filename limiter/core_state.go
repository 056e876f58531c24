package limiter

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
)

// What a Core reports of its state, and how it reads an outcome.

// Rate returns this instance's current rate in units per minute.
func (c *Core) Rate() float64 { return c.adapt.Rate }

// Estimate returns what the adaptive law estimates the API accepts from
// this instance, in units per minute of its part of the budget: the law's
// bound, what the API was seen to accept (docs/limiter.md, "The adaptive
// law"). It is 0 when there is no estimate: before the first 429 or quota
// header (startup measures nothing), and with the classic rules
// (slow_start false) or in disabled mode. Following a fleet, it is the
// fleet's estimate times this instance's share. It only reads: the rate
// is the law's, paced a little under this.
func (c *Core) Estimate() float64 {
	if c.law == nil {
		return 0
	}
	return c.law.Bound()
}

// CostBound returns the most units one request takes from the bucket:
// this instance's max_units_per_minute over max_wait (what the bucket can
// accrue, at the highest rate, in the longest a request may wait), and
// never more than control.MaxUnits. A larger request is granted like any
// oversized one but pays only CostBound, so one absurd cost cannot hold
// every later request back for longer than max_wait.
func (c *Core) CostBound() float64 {
	return math.Min(control.MaxUnits, c.rules.Part().Of(c.cfg.MaxUnitsPerMinute)/60*c.cfg.MaxWait.Seconds())
}

// Capacity returns the bucket's capacity in units at the current rate.
func (c *Core) Capacity() float64 { return c.cap }

// Tokens brings the Core up to now (as Advance does) and returns the
// bucket's level. It is below zero after an oversized grant.
func (c *Core) Tokens(now time.Time) float64 {
	c.advance(c.offset(now))
	return c.tokens
}

// QueueLen returns the number of waiting requests.
func (c *Core) QueueLen() int { return len(c.q) - c.qh }

// PausedUntil returns the end of the current pause and true, or false if
// the Core is not paused at the latest time seen.
func (c *Core) PausedUntil() (time.Time, bool) {
	if !c.paused {
		return time.Time{}, false
	}
	return c.at(c.pausedUntil), true
}

// Share returns this instance's fraction of the budget.
func (c *Core) Share() float64 { return c.rules.Part().Share }

// Instances returns the instance count behind the share, or 0 when the
// share was set with SetShare.
func (c *Core) Instances() int { return c.rules.Part().Instances }

// Disabled reports whether the Core runs in disabled mode.
func (c *Core) Disabled() bool { return c.cfg.Disabled }

// believed is an outcome as the rules take it: a throttle that asked for a
// wait beyond the classifier's cap (call.Outcome.WaitBeyondCap: a
// Retry-After of years, a reset date in year 9999) is an answer the
// limiter does not believe, and changes nothing, like a 5xx. Honoured, a
// target that sends one on every throttle would hold the limiter paused
// and its rate at the minimum; a genuine wait that long (a quota for the
// day) is not one that a pause of max_pause could serve anyway.
func believed(o call.Outcome) call.Outcome {
	if o.Kind == call.Throttle && o.WaitBeyondCap {
		o.Kind, o.RetryAfter = call.ServerError, 0
	}
	return o
}
