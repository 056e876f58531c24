package sim

import (
	"math"
	"time"
)

// Window is the model API's hidden quota: at most Quota units are accepted
// in any span of length Span. A request is accepted when the units already
// accepted in (now−Span, now] plus its own fit in Quota; its units then
// enter the window at now and leave it at now+Span.
//
// With CountRefused, as HAProxy's stick-table counters do, a refused
// request's units enter the window too: a client that keeps calling while
// refused keeps the window full.
//
// Time is an argument: the simulator passes virtual instants, the test
// server the real clock. Calls must not go back in time. A Window is not
// safe for concurrent use; Server wraps one in a mutex.
type Window struct {
	Span  time.Duration // default 60s when zero
	Quota float64       // units per Span; may change between calls
	// CountRefused counts the units of a refused request in the window too
	// (but not those of one above Quota, which never fits).
	CountRefused bool

	entries []windowEntry // accepted units in time order; entries[head:] are live
	head    int
	sum     float64 // units in entries[head:]
}

type windowEntry struct {
	at    time.Time
	units float64
}

// DefaultWindowSpan is the span of the model API's sliding window.
const DefaultWindowSpan = 60 * time.Second

// windowEps absorbs floating-point noise when units are compared with the
// quota: the units are whole numbers in every built-in use.
const windowEps = 1e-9

func (w *Window) span() time.Duration {
	if w.Span <= 0 {
		return DefaultWindowSpan
	}
	return w.Span
}

// expire drops the entries that left the window by now.
func (w *Window) expire(now time.Time) {
	cut := now.Add(-w.span())
	for w.head < len(w.entries) && !w.entries[w.head].at.After(cut) {
		w.sum -= w.entries[w.head].units
		w.entries[w.head] = windowEntry{}
		w.head++
	}
	switch {
	case w.head == len(w.entries):
		w.entries, w.head, w.sum = w.entries[:0], 0, 0
	case w.head > 1024 && w.head*2 > len(w.entries):
		n := copy(w.entries, w.entries[w.head:])
		clear(w.entries[n:])
		w.entries, w.head = w.entries[:n], 0
	}
}

// Used returns the units the window counts in (now−Span, now]: the
// accepted ones, and with CountRefused the refused ones too.
func (w *Window) Used(now time.Time) float64 {
	w.expire(now)
	return math.Max(0, w.sum)
}

// Take asks for units at now. It accepts them (ok) when they fit in the
// quota with what the window holds. Otherwise wait is the exact time until
// enough units leave the window for these to fit, if nothing else is
// counted meanwhile (with CountRefused, this refused call's own units
// count); it is −1 when units exceed Quota and can never fit. Zero units
// always fit.
func (w *Window) Take(now time.Time, units float64) (ok bool, wait time.Duration) {
	w.expire(now)
	if !(units > 0) {
		return true, 0
	}
	if w.sum+units <= w.Quota+windowEps {
		w.entries = append(w.entries, windowEntry{at: now, units: units})
		w.sum += units
		return true, 0
	}
	if units > w.Quota+windowEps {
		return false, -1
	}
	if w.CountRefused {
		w.entries = append(w.entries, windowEntry{at: now, units: units})
		w.sum += units
	}
	excess := w.sum + units - w.Quota
	var freed float64
	for _, e := range w.entries[w.head:] {
		freed += e.units
		if freed >= excess-windowEps {
			return false, e.at.Add(w.span()).Sub(now)
		}
	}
	// Unreachable with a consistent sum; the whole window leaves by then.
	return false, w.entries[len(w.entries)-1].at.Add(w.span()).Sub(now)
}

// RetryAfterSeconds turns an exact wait into the delta-seconds of a
// Retry-After header: rounded up, so that a client that waits that long
// finds room unless someone else took it first, and at least 1.
func RetryAfterSeconds(wait time.Duration) int {
	s := int(math.Ceil(wait.Seconds()))
	return max(s, 1)
}

func (w *Window) setQuota(_ time.Time, q float64) { w.Quota = q }
