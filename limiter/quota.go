package limiter

import (
	"math"
	"time"

	"github.com/sluicehq/sluice/call"
)

// quotaLogSpan is how long the Core keeps its record of grants for the
// in-flight part of a budget; a hint for a request sent before it is
// used for its limit only.
const quotaLogSpan = time.Minute

// quotaDoubt is the least time a throttle that contradicted the hints
// holds back their raise: the target does not choose it with its window.
const quotaDoubt = time.Minute

// quotaLogMax caps the number of grants kept (about 1 MiB).
const quotaLogMax = 1 << 16

// quotaState is what the Core keeps of the quota hints.
type quotaState struct {
	on      bool          // a hint was seen: grants are recorded
	budget  float64       // units this instance may still be granted before until
	until   time.Duration // end of the budget; it holds while the Core's time is before it
	ceiling float64       // the announced limit per minute, whole budget; 0 for none
	window  time.Duration // the longest reset seen: the window when none is announced
	doubted time.Duration // the last throttle that contradicted the hints
	doubt   bool          // doubted is set

	spent   float64       // units granted since the first hint
	log     []spentRec    // grants since logFrom, in time order; log[lh:] are live
	lh      int           // head of log
	logFrom time.Duration // every grant since logFrom is in the log
}

type spentRec struct {
	at     time.Duration
	before float64 // spent before this grant
}

// hint applies the quota hint of outcome o, received at t in the response
// to a request of units sent at sent (docs/limiter.md, "Quota hint"). A
// throttle whose hint does not show the quota used up (remaining below
// units) contradicts the hints: they raise the rate again only one window
// later.
func (c *Core) hint(t, sent time.Duration, units float64, o call.Outcome) {
	q := o.Quota.Sanitized()
	qs := &c.quota
	if o.Kind == call.Throttle && units > 0 && !(q.HasRemaining && q.Remaining < units) {
		qs.doubt, qs.doubted = true, t
	}
	if !q.Present() {
		return
	}
	if !qs.on {
		qs.on, qs.logFrom = true, t
	}
	c.pruneSpent(t)
	if q.Reset >= time.Second && q.Reset > qs.window {
		qs.window = q.Reset
	}
	if q.HasRemaining && q.Reset > 0 && c.cfg.MaxPause > 0 && sent >= qs.logFrom {
		// Units in flight are not in R yet: this instance's, and as many
		// of every other instance's, at least its rate over the round trip.
		inflight := math.Max(c.spentSince(sent)-units, c.adapt.Rate/60*(t-sent).Seconds())
		b := c.rules.Part().Of(q.Remaining) - inflight
		qs.budget = b
		qs.until = t + min(q.Reset, c.cfg.MaxPause)
		c.tokens = math.Min(c.tokens, math.Max(b, 0))
	}
	w := q.Window
	if w == 0 {
		w = qs.window
	}
	if c.law != nil && w >= time.Second {
		c.law.Announce(w)
	}
	// A limit beyond what this limiter may ever send (more than
	// max_units_per_minute), or over a window under a second, is not a
	// quota but an absurd or hostile header: ignored, like a malformed one.
	if q.Limit > 0 && w >= time.Second && q.Limit*float64(time.Minute)/float64(w) <= c.cfg.MaxUnitsPerMinute {
		qs.ceiling = q.Limit * float64(time.Minute) / float64(w)
		c.rules.SetQuotaCeiling(qs.ceiling)
		a, p := &c.adapt, c.rules.Max()
		raise := !c.following && (!a.Throttled || c.at(t).Sub(a.LastCut) >= c.cfg.DecreaseCooldown) &&
			(!qs.doubt || t-qs.doubted >= max(w, quotaDoubt))
		if c.law != nil && !c.following {
			c.law.Limits(c.rules.Min(), p)
			if raise {
				c.law.Quota(t, p)
			}
			c.takeLaw()
		} else if a.Rate > p || (a.Rate < p && raise) {
			a.IncClock = c.at(t)
			c.setRate(p)
			c.waited = false
		}
	}
}

// budgetShort reports whether a budget is running and holds less than u.
func (c *Core) budgetShort(u float64) bool {
	return c.quota.until > c.last && c.quota.budget < u-unitEps
}

// budgetCap returns the level the bucket may fill to while a budget runs:
// the budget or the head's units, whichever is larger, within the
// capacity.
func (c *Core) budgetCap() float64 {
	head := 0.0
	if c.qh < len(c.q) {
		head = c.q[c.qh].units
	}
	return math.Min(c.cap, math.Max(c.quota.budget, head))
}

// accrueBudget fills the bucket up to t (after c.last) while a budget
// runs: only up to budgetCap, and normally again from the budget's end.
func (c *Core) accrueBudget(t time.Duration) {
	if u := c.quota.until; u < t {
		c.accrueBudget(u)
		c.accrue(t)
		return
	}
	if lim := c.budgetCap(); !c.paused && c.tokens < lim {
		c.fill(t, lim)
	}
	c.last = t
}

// spend records a grant of u units at t against the budget and in the log.
func (c *Core) spend(t time.Duration, u float64) {
	qs := &c.quota
	qs.budget -= u
	if len(qs.log)-qs.lh >= quotaLogMax {
		qs.lh += quotaLogMax / 2
		qs.logFrom = qs.log[qs.lh-1].at + 1
		qs.log, qs.lh = compact(qs.log, qs.lh)
	}
	qs.log = append(qs.log, spentRec{at: t, before: qs.spent})
	qs.spent += u
}

// pruneSpent drops the grants older than quotaLogSpan before t.
func (c *Core) pruneSpent(t time.Duration) {
	qs := &c.quota
	cut := t - quotaLogSpan
	for qs.lh < len(qs.log) && qs.log[qs.lh].at < cut {
		qs.lh++
	}
	qs.logFrom = max(qs.logFrom, cut)
	qs.log, qs.lh = compact(qs.log, qs.lh)
}

// spentSince returns the units granted at or after s (s ≥ logFrom).
func (c *Core) spentSince(s time.Duration) float64 {
	qs := &c.quota
	lo, hi := qs.lh, len(qs.log)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if qs.log[m].at < s {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == len(qs.log) {
		return 0
	}
	return qs.spent - qs.log[lo].before
}

// QuotaBudget returns the running budget (units this instance may still be
// granted) and its end, or false when no budget runs at the latest time
// seen.
func (c *Core) QuotaBudget() (float64, time.Time, bool) {
	if c.quota.until <= c.last {
		return 0, time.Time{}, false
	}
	return c.quota.budget, c.at(c.quota.until), true
}

// QuotaCeiling returns this instance's rate ceiling (units per minute):
// its part of the announced limit within its minimum and maximum rates
// (and a fleet's ceiling while it follows one), or false when no limit
// was announced.
func (c *Core) QuotaCeiling() (float64, bool) {
	return c.rules.Max(), c.quota.ceiling > 0
}

// QuotaSeen reports whether the Core has applied a quota hint.
func (c *Core) QuotaSeen() bool { return c.quota.on }
