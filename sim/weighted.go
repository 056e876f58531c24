package sim

import (
	"math"
	"time"
)

// Weighted is the model of a counter that estimates a sliding window from
// two fixed periods, as HAProxy's stick-table rates (http_req_rate(10s)),
// Cloudflare's and Kong's sliding windows count. Periods of Span follow
// one another from the first call. At now, the counter reads
//
//	curr + prev × (1 − (now − start)/Span)
//
// where start is the current period's start, curr the units counted since
// then and prev those of the period just before (0 when the last call is
// two periods or more ago; the next period then starts at the call, as
// HAProxy's does). A call is accepted when that count plus its units fits
// Quota. A full counter frees room evenly as the previous period's weight
// runs out, not all at once one window after a burst, as a sliding window
// does.
//
// With CountRefused, as HAProxy's counters do (the request is tracked
// before the rule that refuses it), a refused call's units count too.
// Time is an argument, as for Window. A Weighted is not safe for
// concurrent use.
type Weighted struct {
	Span         time.Duration // default 60s when zero
	Quota        float64       // units per Span; may change between calls
	CountRefused bool          // refused calls count too

	start      time.Time // start of the current period; zero before the first call
	curr, prev float64   // units counted in the current period and the one before
}

func (w *Weighted) span() time.Duration {
	if w.Span <= 0 {
		return DefaultWindowSpan
	}
	return w.Span
}

// rotate moves the current period on to the one holding now.
func (w *Weighted) rotate(now time.Time) {
	span := w.span()
	switch {
	case w.start.IsZero():
		w.start = now
	case now.Sub(w.start) >= 2*span:
		w.start, w.prev, w.curr = now, 0, 0
	case now.Sub(w.start) >= span:
		w.start, w.prev, w.curr = w.start.Add(span), w.curr, 0
	}
}

// Count returns what the counter reads at now.
func (w *Weighted) Count(now time.Time) float64 {
	if w.start.IsZero() {
		return 0
	}
	w.rotate(now)
	return w.curr + w.prev*w.weight(now)
}

// weight is the share of the previous period still counted at now.
func (w *Weighted) weight(now time.Time) float64 {
	return math.Max(0, 1-now.Sub(w.start).Seconds()/w.span().Seconds())
}

// Take asks for units at now. It accepts them (ok) when they fit in the
// quota with what the counter reads. Otherwise wait is the exact time
// until they would fit if nothing else were counted meanwhile (with
// CountRefused, this refused call's own units count), or −1 when units
// exceed Quota and never fit. Zero units always fit.
func (w *Weighted) Take(now time.Time, units float64) (ok bool, wait time.Duration) {
	if !(units > 0) {
		return true, 0
	}
	w.rotate(now)
	switch ok, never := takeCounted(&w.curr, w.curr+w.prev*w.weight(now), units, w.Quota, w.CountRefused); {
	case ok:
		return true, 0
	case never:
		return false, -1
	}
	return false, w.until(units).Sub(now)
}

// until returns the first instant at which units fit, the current period's
// counts standing: within this period once enough of prev's weight has run
// out, else in the next one, where curr becomes the weighed period.
func (w *Weighted) until(units float64) time.Time {
	span := w.span()
	if room := w.Quota - units - w.curr; room >= 0 && w.prev > 0 {
		// curr + prev × (1 − x/span) ≤ Quota − units from x on.
		return w.start.Add(scaleDuration(span, 1-room/w.prev))
	}
	next := w.start.Add(span)
	if w.curr <= 0 {
		return next
	}
	room := math.Max(0, w.Quota-units)
	return next.Add(scaleDuration(span, math.Max(0, 1-room/w.curr)))
}

// scaleDuration returns d × f, rounded up to the nanosecond so that a
// caller that waits that long finds the room.
func scaleDuration(d time.Duration, f float64) time.Duration {
	return time.Duration(math.Ceil(float64(d) * f))
}

func (w *Weighted) setQuota(_ time.Time, q float64) { w.Quota = q }
