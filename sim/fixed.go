package sim

import (
	"math"
	"time"
)

// Fixed is the model of a fixed window that resets, as GitHub's REST API
// counts its primary rate limit: the first call after a window has ended
// opens a new one of length Span, which accepts at most Quota units and
// then resets, all at once, at its start plus Span. A refused call's wait is
// the time until that reset.
//
// With CountRefused a refused call's units count against the window too.
// Time is an argument, as for Window. A Fixed is not safe for concurrent
// use.
type Fixed struct {
	Span         time.Duration // default 60s when zero
	Quota        float64       // units per window; may change between calls
	CountRefused bool          // refused calls count against the window

	start time.Time // start of the current window; zero before the first call
	used  float64   // units counted in the current window
}

func (f *Fixed) span() time.Duration {
	if f.Span <= 0 {
		return DefaultWindowSpan
	}
	return f.Span
}

// open starts a new window at now when none is open there.
func (f *Fixed) open(now time.Time) {
	if f.start.IsZero() || !now.Before(f.start.Add(f.span())) {
		f.start, f.used = now, 0
	}
}

// Take asks for units at now. It accepts them (ok) when they fit in the
// quota with what the current window holds; a call after the window has
// ended opens a new one first. Otherwise wait is the time until the window
// resets, or −1 when units exceed Quota and can never fit. Zero units
// always fit and open no window.
func (f *Fixed) Take(now time.Time, units float64) (ok bool, wait time.Duration) {
	if !(units > 0) {
		return true, 0
	}
	f.open(now)
	switch ok, never := takeCounted(&f.used, f.used, units, f.Quota, f.CountRefused); {
	case ok:
		return true, 0
	case never:
		return false, -1
	}
	return false, f.start.Add(f.span()).Sub(now)
}

// takeCounted decides a call of units against a model that keeps its
// count in *n and reads reading now (*n and what it carries over). Units
// that fit quota with reading are accepted and counted (ok); units above
// quota never fit (never); a refused call's units are counted when
// countRefused. (Fixed and Weighted; Window counts by entries.)
func takeCounted(n *float64, reading, units, quota float64, countRefused bool) (ok, never bool) {
	switch {
	case reading+units <= quota+windowEps:
		*n += units
		return true, false
	case units > quota+windowEps:
		return false, true
	case countRefused:
		*n += units
	}
	return false, false
}

// Used returns the units counted in the window open at now (0 when none
// is).
func (f *Fixed) Used(now time.Time) float64 {
	if f.start.IsZero() || !now.Before(f.start.Add(f.span())) {
		return 0
	}
	return f.used
}

// State returns the window's QuotaState at now: the units left in the
// open window and the time until it resets (the whole quota and 0 when no
// window is open).
func (f *Fixed) State(now time.Time) QuotaState {
	s := QuotaState{Limit: f.Quota, Window: f.span(), Remaining: math.Max(0, f.Quota-f.Used(now))}
	if !f.start.IsZero() && now.Before(f.start.Add(f.span())) {
		s.Reset = f.start.Add(f.span()).Sub(now)
	}
	return s
}

func (f *Fixed) setQuota(_ time.Time, q float64) { f.Quota = q }
