package limiter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// ErrRejected is wrapped by every error Wait returns when the limiter turns
// a request away: its queue is full, the request waited max_wait, or its
// context ended while it waited. Get the reason with errors.As and
// *RejectedError.
var ErrRejected = errors.New("limiter: rejected")

// RejectedError is the error of a rejected Wait. It matches ErrRejected
// with errors.Is; for ReasonCanceled it also wraps the context's error.
type RejectedError struct {
	Reason Reason
	Err    error // the context's error for ReasonCanceled, else nil
}

func (e *RejectedError) Error() string {
	switch e.Reason {
	case ReasonQueueFull:
		return "limiter: queue full"
	case ReasonMaxWait:
		return "limiter: waited max_wait"
	case ReasonCanceled:
		if e.Err != nil {
			return "limiter: wait canceled: " + e.Err.Error()
		}
		return "limiter: wait canceled"
	}
	return "limiter: rejected: " + string(e.Reason)
}

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// Unwrap returns the context's error of a canceled wait.
func (e *RejectedError) Unwrap() error { return e.Err }

var (
	errQueueFull = &RejectedError{Reason: ReasonQueueFull}
	errMaxWait   = &RejectedError{Reason: ReasonMaxWait}
)

// Ticket is a granted request. Pass it to Observe with the outcome of the
// call it allowed.
type Ticket struct {
	// Granted is when the units were granted (the request's sent_at):
	// the Limiter's start plus the time since then on the monotonic
	// clock, so its wall-clock reading ignores any step of the wall clock
	// since New.
	Granted time.Time
	Units   float64
}

// Stats is a snapshot of a Limiter.
type Stats struct {
	Rate        float64   // this instance's rate, units per minute
	Tokens      float64   // bucket level; below zero after an oversized grant
	Capacity    float64   // bucket capacity at the current rate
	Queue       int       // waiting requests
	Paused      bool      // in a Retry-After pause
	PausedUntil time.Time // end of the pause; zero when not paused
	Instances   int       // instance count; 0 when the share was set with SetShare
	Share       float64   // this instance's fraction of the budget
	Disabled    bool
	SlowStart   bool // in slow start (docs/limiter.md): no throttle seen yet
	// Estimate is what the adaptive law estimates the API accepts from
	// this instance, units per minute (Core.Estimate); 0: no estimate.
	Estimate  float64
	Following bool // the rate is a fleet's (Core.Follow), not this instance's own

	// Counts since New, kept with or without Metrics (the values of
	// sluice_limiter_units_total, _throttles_total and _rejections_total).
	Units      float64          // units granted
	Throttles  map[int]int64    // throttled responses, by HTTP status
	Rejections map[Reason]int64 // rejected requests, by reason; every reason has a key
}

// Option configures a Limiter.
type Option func(*Limiter)

// WithMetrics makes the Limiter record its state in m. Give each Limiter its
// own Metrics.
func WithMetrics(m *Metrics) Option { return func(l *Limiter) { l.metrics = m } }

// WithLogger sets the logger for rate cuts, raises, pauses and share
// changes. The default discards.
func WithLogger(log *slog.Logger) Option { return func(l *Limiter) { l.log = log } }

// Limiter is the adaptive limiter for concurrent use: a Core driven by the
// real clock (the monotonic time since New), with one timer that wakes it
// when the next grant, max_wait rejection or pause end is due. All methods
// are safe for concurrent use.
type Limiter struct {
	// A Wait granted at once writes only mu's cache line (mu, units) here:
	// the fields New sets once come first, padded off it, and the
	// rejection counters, written outside mu, come last.
	core       *Core // the pointer is set once; the Core is under mu
	metrics    *Metrics
	log        *slog.Logger
	onThrottle func(fleet.Report)
	_          [cacheLine]byte

	mu        sync.Mutex
	units     float64 // granted since New; under mu
	waiters   map[uint64]*shellWaiter
	timer     *time.Timer
	timerAt   time.Time // when the timer is set to fire; zero when stopped
	decs      []Decision
	throttles map[int]int64 // by status; under mu
	_         [cacheLine]byte

	rejections [3]atomic.Int64 // by rejectionReasons
}

// cacheLine is the padding that keeps fields written by different
// goroutines, or read by one while another writes, off each other's cache
// lines.
const cacheLine = 64

// rejectionReasons are the keys of Stats.Rejections, in the order of
// Limiter.rejections.
var rejectionReasons = [...]Reason{ReasonQueueFull, ReasonMaxWait, ReasonCanceled}

// grantedLocked counts a grant after a wait of wait.
func (l *Limiter) grantedLocked(units float64, wait time.Duration) {
	l.units += units
	l.metrics.granted(units, wait)
}

// rejected counts a rejection.
func (l *Limiter) rejected(r Reason) {
	for i, rr := range rejectionReasons {
		if rr == r {
			l.rejections[i].Add(1)
		}
	}
	l.metrics.rejected(r)
}

type shellWaiter struct {
	ch       chan Decision // buffered: the decision is sent once, never blocks
	queuedAt time.Time
}

// New returns a Limiter with a full bucket. It rejects an invalid Config.
func New(cfg Config, opts ...Option) (*Limiter, error) {
	core, err := NewCore(cfg, time.Now())
	if err != nil {
		return nil, err
	}
	l := &Limiter{core: core, waiters: map[uint64]*shellWaiter{}}
	for _, o := range opts {
		o(l)
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.metrics.setState(l.core)
	return l, nil
}

// Wait blocks until units are granted and returns the ticket, or returns an
// error wrapping ErrRejected: at once if the queue is full
// (ReasonQueueFull), after max_wait (ReasonMaxWait), or when ctx ends first
// (ReasonCanceled, wrapping ctx.Err(); the request leaves the queue). A
// grant that happens before the cancellation is processed is returned.
// Like x/time/rate, Wait fails at once (ReasonCanceled wrapping
// context.DeadlineExceeded) when the context's deadline is not after the
// end of the current pause, since no grant can come earlier.
//
// Requests are granted in FIFO order. Zero units are granted at once, and
// so is everything in disabled mode. units must be finite and >= 0.
func (l *Limiter) Wait(ctx context.Context, units float64) (Ticket, error) {
	if !(units >= 0) || math.IsInf(units, 1) {
		return Ticket{}, fmt.Errorf("limiter: units must be finite and >= 0, got %v", units)
	}
	if done := ctx.Done(); done != nil {
		select {
		case <-done:
			l.rejected(ReasonCanceled)
			return Ticket{}, &RejectedError{Reason: ReasonCanceled, Err: ctx.Err()}
		default:
		}
	}
	// The time since the start on the monotonic clock, one clock read
	// (time.Now reads the wall clock too); the Core counts its time that
	// way anyway.
	el := time.Since(l.core.start)
	deadline, hasDeadline := ctx.Deadline()
	l.lockSpin()
	if hasDeadline && units > 0 && l.failFastLocked(el, deadline) {
		l.mu.Unlock()
		l.rejected(ReasonCanceled)
		return Ticket{}, &RejectedError{Reason: ReasonCanceled, Err: context.DeadlineExceeded}
	}
	t := max(el, l.core.last)
	id, st := l.core.acquire(t, units)
	if l.core.Pending() > 0 {
		l.dispatchLocked()
	}
	switch st {
	case Granted:
		// The gauges are set under mu, so that the last value set is the
		// latest state; the counter and the histogram add up in any order,
		// so they are counted after it, out of the critical section.
		l.units += units
		l.metrics.setBucket(l.core)
		l.mu.Unlock()
		l.metrics.granted(units, 0)
		return Ticket{Granted: l.core.at(t), Units: units}, nil
	case Rejected:
		l.metrics.setState(l.core)
		l.mu.Unlock()
		l.rejected(ReasonQueueFull)
		return Ticket{}, errQueueFull
	}
	now := l.core.at(el)
	w := &shellWaiter{ch: make(chan Decision, 1), queuedAt: now}
	l.waiters[id] = w
	l.armLocked(now)
	l.metrics.setState(l.core)
	l.mu.Unlock()

	select {
	case dec := <-w.ch:
		return l.decided(dec)
	case <-ctx.Done():
	}
	now = time.Now()
	l.mu.Lock()
	cd, ok := l.core.Cancel(now, id)
	if ok {
		delete(l.waiters, id)
	}
	if l.core.Pending() > 0 {
		l.dispatchLocked()
	}
	l.armLocked(now)
	l.metrics.setState(l.core)
	l.mu.Unlock()
	if !ok {
		// Decided before the cancellation got the lock: the decision is
		// already in the channel.
		return l.decided(<-w.ch)
	}
	l.rejected(cd.Reason)
	return Ticket{}, &RejectedError{Reason: ReasonCanceled, Err: ctx.Err()}
}

// lockSpin takes mu for Wait. Granting at once holds mu a few dozen
// nanoseconds, far less than parking a goroutine and waking it, but
// sync.Mutex spins only while no other goroutine is runnable on its P;
// with more waiting goroutines than Ps it parks at the first miss. So
// Wait tries a little longer first, then blocks in Lock as usual. TryLock
// fails on a starving mutex, which Lock then hands over in FIFO order.
func (l *Limiter) lockSpin() {
	for range lockSpins {
		if l.mu.TryLock() {
			return
		}
	}
	l.mu.Lock()
}

// lockSpins is how many times lockSpin tries mu before it blocks.
const lockSpins = 32

// failFastLocked reports whether a request at el since the start cannot
// be granted before deadline whatever happens meanwhile: nothing is
// granted before a pause ends, nor at its end (the bucket is empty then).
func (l *Limiter) failFastLocked(el time.Duration, deadline time.Time) bool {
	if l.core.Disabled() || !l.core.paused {
		// Bringing the Core up to now can end a pause, never start one:
		// not paused at the latest time seen, it is not paused at now.
		return false
	}
	l.core.Advance(l.core.at(el))
	if l.core.Pending() > 0 {
		l.dispatchLocked()
	}
	until, paused := l.core.PausedUntil()
	return paused && !deadline.After(until)
}

func (l *Limiter) decided(d Decision) (Ticket, error) {
	if d.Status == Granted {
		return Ticket{Granted: d.At, Units: d.Units}, nil
	}
	return Ticket{}, errMaxWait
}

// settleLocked hands the waiters what the Core granted or rejected up to
// now, and arms the timer for what is due next; nothing when no request
// waits.
func (l *Limiter) settleLocked(now time.Time) {
	if l.core.Pending() > 0 {
		l.dispatchLocked()
		l.armLocked(now)
	}
}

// dispatchLocked hands the Core's decisions to their waiters.
func (l *Limiter) dispatchLocked() {
	l.decs = l.core.Drain(l.decs[:0])
	for _, d := range l.decs {
		w := l.waiters[d.ID]
		if w == nil {
			continue
		}
		delete(l.waiters, d.ID)
		if d.Status == Granted {
			l.grantedLocked(d.Units, d.At.Sub(w.queuedAt))
		} else {
			l.rejected(d.Reason)
		}
		w.ch <- d
	}
	clear(l.decs)
}

// armLocked sets the timer to the Core's next due instant.
func (l *Limiter) armLocked(now time.Time) {
	next, ok := l.core.NextDue()
	if !ok {
		if !l.timerAt.IsZero() {
			l.timer.Stop()
			l.timerAt = time.Time{}
		}
		return
	}
	if next.Equal(l.timerAt) {
		return
	}
	l.timerAt = next
	d := max(next.Sub(now), 0)
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.fire)
	} else {
		l.timer.Reset(d)
	}
}

func (l *Limiter) fire() {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timerAt = time.Time{}
	l.core.Advance(now)
	l.dispatchLocked()
	l.armLocked(now)
	l.metrics.setState(l.core)
}

// Observe applies the outcome of the call that t allowed: a throttle may cut
// the rate and pause the limiter, a success may raise the rate, and other
// outcomes change nothing (see Core.Observe). Throttles are counted in the
// metrics even in disabled mode.
func (l *Limiter) Observe(t Ticket, o call.Outcome) {
	if o.Kind == call.Throttle {
		l.metrics.throttled(o.Status)
	}
	now := time.Now()
	l.mu.Lock()
	if o.Kind == call.Throttle {
		if l.throttles == nil {
			l.throttles = map[int]int64{}
		}
		l.throttles[o.Status]++
	}
	before := l.core.Rate()
	_, wasPaused := l.core.PausedUntil()
	l.core.Observe(now, t.Granted, t.Units, o)
	l.dispatchLocked()
	l.armLocked(now)
	after := l.core.Rate()
	until, paused := l.core.PausedUntil()
	var report fleet.Report
	if believed(o).Kind == call.Throttle && l.onThrottle != nil && !l.core.Disabled() && t.Units > 0 {
		report = l.core.Report(now, t.Granted, o.RetryAfter)
	}
	l.metrics.setState(l.core)
	l.mu.Unlock()
	if !report.At.IsZero() {
		l.onThrottle(report)
	}
	switch {
	case after < before:
		l.log.Info("limiter: rate cut", "status", o.Status, "from", before, "to", after)
	case after > before:
		l.log.Debug("limiter: rate raised", "from", before, "to", after)
	}
	// One info line when a pause starts; the throttles that extend it
	// (a burst of 429s) are debug lines, so a burst logs once.
	switch {
	case paused && !wasPaused && o.RetryAfter > 0:
		l.log.Info("limiter: paused", "status", o.Status, "retry_after", o.RetryAfter, "until", until)
	case paused && o.Kind == call.Throttle && o.RetryAfter > 0:
		l.log.Debug("limiter: pause extended", "status", o.Status, "retry_after", o.RetryAfter, "until", until)
	}
}

// SetInstanceCount makes this Limiter's share 1/n of the budget: the rate
// scales by old n / new n, the bucket keeps its tokens up to the new
// capacity, and waiting requests stay queued.
func (l *Limiter) SetInstanceCount(n int) error {
	return l.rescale(func(now time.Time) error { return l.core.SetInstanceCount(now, n) })
}

// SetShare sets this Limiter's fraction of the budget, 0 < share <= 1 (a
// capacity lease). SetInstanceCount(n) is SetShare(1/n).
func (l *Limiter) SetShare(share float64) error {
	return l.rescale(func(now time.Time) error { return l.core.SetShare(now, share) })
}

func (l *Limiter) rescale(set func(time.Time) error) error {
	now := time.Now()
	l.mu.Lock()
	before := l.core.Rate()
	err := set(now)
	l.dispatchLocked()
	l.armLocked(now)
	share, rate := l.core.Share(), l.core.Rate()
	l.metrics.setState(l.core)
	l.mu.Unlock()
	if err == nil {
		l.log.Info("limiter: share changed", "share", share, "from", before, "to", rate)
	}
	return err
}

// Rate returns this instance's current rate in units per minute.
func (l *Limiter) Rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Rate()
}

// CostBound returns the most units one request takes from this
// instance's bucket (Core.CostBound); control.MaxUnits when disabled. The
// worker dead-letters a job that costs more (bad_cost).
func (l *Limiter) CostBound() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.core.Disabled() {
		return control.MaxUnits
	}
	return l.core.CostBound()
}

// Stats returns a snapshot of the Limiter now.
func (l *Limiter) Stats() Stats {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	tokens := l.core.Tokens(now)
	l.settleLocked(now)
	until, paused := l.core.PausedUntil()
	return Stats{
		Rate:        l.core.Rate(),
		Tokens:      tokens,
		Capacity:    l.core.Capacity(),
		Queue:       l.core.QueueLen(),
		Paused:      paused,
		PausedUntil: until,
		Instances:   l.core.Instances(),
		Share:       l.core.Share(),
		Disabled:    l.core.Disabled(),
		Units:       l.units,
		Throttles:   maps.Collect(maps.All(l.throttles)),
		Rejections:  l.rejectionCounts(),
		SlowStart:   l.core.Adapt().SlowStart,
		Estimate:    l.core.Estimate(),
		Following:   l.core.Following(),
	}
}

func (l *Limiter) rejectionCounts() map[Reason]int64 {
	out := make(map[Reason]int64, len(rejectionReasons))
	for i, r := range rejectionReasons {
		out[r] = l.rejections[i].Load()
	}
	return out
}
