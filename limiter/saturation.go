package limiter

import (
	"context"
	"sync"
	"time"
)

// DefaultSaturationWindow is the window NewSaturation uses when given none.
const DefaultSaturationWindow = time.Minute

// saturationSteps is the number of whole steps a window is divided into: a
// one-minute window has a resolution of one second.
const saturationSteps = 60

// Saturation measures how much of the recent past requests spent waiting for
// units: the fraction of a sliding window during which at least one request
// was queued in a limiter. A value near 1 says the budget is the bottleneck
// (more workers would only split the same budget); a value near 0 says
// requests found units at once, so any backlog is limited by the workers.
//
// It is fed with the waiting state, either exactly on every change (SetAt) or
// by polling a queue length (Poll), and read with FractionAt. Time is an
// argument: the same instants always give the same result. Instants earlier
// than one already seen are taken as that one.
//
// The window is divided into 60 steps. FractionAt(t) covers the step that
// holds t, up to t, plus the 60 whole steps before it (or everything since
// the first instant seen, when that is shorter): with the default window,
// between 60 and 61 seconds. Memory is constant whatever the rate of change.
//
// A Saturation is safe for concurrent use.
type Saturation struct {
	mu      sync.Mutex
	step    time.Duration
	busy    []time.Duration // waiting time per step, a ring indexed by step number
	started bool
	origin  time.Time // first instant seen; step k is [origin+k·step, origin+(k+1)·step)
	last    time.Time // latest instant seen
	cur     int64     // step number that holds last
	waiting bool      // state since last
}

// NewSaturation returns a Saturation over the given window (at least 60 ns);
// a window of 0 or less means DefaultSaturationWindow. The state starts as
// not waiting, and the clock starts at the first instant given to a method.
func NewSaturation(window time.Duration) *Saturation {
	if window <= 0 {
		window = DefaultSaturationWindow
	}
	step := max(window/saturationSteps, 1)
	return &Saturation{
		step: step,
		busy: make([]time.Duration, saturationSteps+1),
	}
}

// SetAt records that from t on, requests are waiting (or not).
func (s *Saturation) SetAt(t time.Time, waiting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(t)
	s.waiting = waiting
}

// FractionAt returns the fraction of the window ending at t during which
// requests were waiting, in [0, 1]. It is 0 before any time has passed.
func (s *Saturation) FractionAt(t time.Time) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance(t)
	first := max(s.cur-saturationSteps, 0)
	var busy time.Duration
	for k := first; k <= s.cur; k++ {
		busy += s.busy[s.slot(k)]
	}
	span := s.last.Sub(s.origin.Add(time.Duration(first) * s.step))
	if span <= 0 {
		return 0
	}
	return min(float64(busy)/float64(span), 1)
}

// Poll samples queueLen every interval, with the real clock, and records
// that requests are waiting while it returns more than zero, until ctx is
// done. The waiting state is taken to hold from one sample to the next, so
// the interval is the resolution; a quarter of a second suits the default
// window. Poll takes a first sample at once.
func (s *Saturation) Poll(ctx context.Context, interval time.Duration, queueLen func() int) {
	if interval <= 0 {
		interval = s.step / 4
	}
	s.SetAt(time.Now(), queueLen() > 0)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			s.SetAt(time.Now(), queueLen() > 0)
		}
	}
}

func (s *Saturation) slot(k int64) int { return int(k % int64(len(s.busy))) }

// advance accounts the time from last to t to the current state.
func (s *Saturation) advance(t time.Time) {
	if !s.started {
		s.started = true
		s.origin, s.last, s.cur = t, t, 0
		return
	}
	if !t.After(s.last) {
		return
	}
	target := int64(t.Sub(s.origin) / s.step)
	// Steps that end more than a window before t no longer matter: skip
	// them, so a long quiet gap costs no more than one window's steps.
	if skipTo := target - int64(len(s.busy)); skipTo > s.cur {
		for i := range s.busy {
			s.busy[i] = 0
		}
		s.cur = skipTo
		s.last = s.origin.Add(time.Duration(skipTo) * s.step)
	}
	for s.last.Before(t) {
		stepEnd := s.origin.Add(time.Duration(s.cur+1) * s.step)
		end := stepEnd
		if t.Before(end) {
			end = t
		}
		if s.waiting {
			s.busy[s.slot(s.cur)] += end.Sub(s.last)
		}
		s.last = end
		if end.Equal(stepEnd) {
			s.cur++
			s.busy[s.slot(s.cur)] = 0
		}
	}
}
