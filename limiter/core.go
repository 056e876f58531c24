package limiter

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
)

// Reason says why a request was rejected.
type Reason string

// Rejection reasons, as they appear in metrics labels and trace output.
const (
	ReasonQueueFull Reason = "queue_full" // the queue held queue_limit requests
	ReasonMaxWait   Reason = "max_wait"   // the request waited max_wait
	ReasonCanceled  Reason = "canceled"   // the waiter gave up
)

// Status is where a request stands.
type Status uint8

// Request statuses.
const (
	Waiting  Status = iota // queued; its Decision comes later from Core.Drain
	Granted                // granted at Decision.At
	Rejected               // rejected at Decision.At for Decision.Reason
)

var statusNames = [...]string{"waiting", "granted", "rejected"}

func (s Status) String() string {
	if int(s) >= len(statusNames) {
		return fmt.Sprintf("Status(%d)", int(s))
	}
	return statusNames[s]
}

// Decision is what the Core decided about one request.
type Decision struct {
	ID     uint64    // the request's id, as returned by Core.Acquire
	Units  float64   // the units it asked for
	Status Status    // Waiting, Granted or Rejected
	At     time.Time // when it was granted or rejected; zero while Waiting
	Reason Reason    // why it was rejected; empty unless Rejected
}

// measureWindow is the span of CUBIC's measured send rate.
const measureWindow = 10 * time.Second

// unitEps absorbs floating-point noise when tokens are compared with a
// request's units: a bucket within unitEps of the need holds it.
const unitEps = 1e-9

// Core is the deterministic limiter: the bucket, the FIFO queue, pauses, cuts
// and raises, and the instance share, exactly as docs/limiter.md ("The
// rules") states them. It reads no clock and holds no goroutine, timer
// or lock: every method takes the current time as an argument, and a Core
// must not be used by two goroutines at once. Limiter wraps a Core for
// concurrent use on the real clock; the trace replay and the simulator drive
// one in virtual time.
//
// Time. Every method that takes now first brings the Core up to now: all
// that falls due at or before now happens at its exact instant, in time
// order, and at one instant grants come first, then max_wait rejections,
// then the end of a pause. Then the method applies its own event, and
// finally whatever that event made due at now (a cut that lets an oversized
// head through, a cancel that unblocks the next waiter) happens at now.
// Times never go back: a now earlier than the latest one seen counts as the
// latest.
//
// Requests. Acquire gives every request an id. A request granted or
// rejected at once gets its Decision from Acquire; a queued one gets it
// later, from Drain, with the exact virtual time of its grant or rejection.
// NextDue tells an event loop when to come back: nothing changes by itself
// before that instant.
//
// The Core keeps no record of granted requests: Observe takes the grant
// time (sent_at) and units of the request the outcome is for.
type Core struct {
	cfg   Config
	start time.Time

	measure bool // keep granted units for CUBIC's measured rate

	rules control.Rules // the rate rules for this instance's part of the budget
	adapt control.Adapt // the rate and the rules' memory

	// A Core that follows a fleet (Follow) takes its rate from the fleet's
	// state and neither cuts nor raises by itself until Lead.
	following bool
	fleet     control.Adapt // the fleet's state for the whole budget, while following

	// A request granted at once writes only tokens, last and nextID: they
	// share a cache line with what it reads there.
	perNs  float64       // rate in units per nanosecond
	cap    float64       // bucket capacity in units
	tokens float64       // bucket level at last
	last   time.Duration // latest time seen, since start
	nextID uint64
	// costBound is CostBound, kept by setRate: it changes only with the
	// part of the budget, and every change of part sets the rate.
	costBound float64

	paused      bool
	pausedUntil time.Duration
	fleetPause  bool // the pause is the fleet's alone: its end keeps the tokens

	waited     bool          // a request was queued since the last change
	queuedOnce bool          // a request was ever queued
	lastQueued time.Duration // when a request was last queued

	q  []waiter // FIFO queue; q[qh:] are waiting, in id order
	qh int

	grants []grantRec // granted units for the measured rate (CUBIC only)
	gh     int

	pending []Decision

	quota quotaState // the quota hints (quota.go)
	acc   acceptLog  // accepted units, for a fleet's heartbeats (fleet_core.go)

	restart restartState // the restart after a pause (restart.go)

	// A Retry-After beyond max_pause pauses again only from overcapNext
	// on, once one has (overcapSeen); see pauseEnd.
	overcapSeen bool
	overcapNext time.Duration

	law *control.Law // the adaptive law (package control); nil for the classic rules
}

type waiter struct {
	id       uint64
	units    float64
	queuedAt time.Duration
}

type grantRec struct {
	at    time.Duration
	units float64
}

// NewCore returns a Core that starts at start with its bucket filled to
// Config.InitialFill. It rejects an invalid Config.
func NewCore(cfg Config, start time.Time) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Core{cfg: cfg, start: start, measure: cfg.Controller == ControllerCUBIC}
	c.rules = control.NewRules(cfg, control.Part{Share: 1 / float64(cfg.Instances), Instances: cfg.Instances})
	c.adapt = c.rules.Start(start)
	if cfg.SlowStart && !cfg.Disabled {
		c.law = control.NewLaw(cfg, c.adapt.Rate, c.rules.Min(), c.rules.Max())
		c.adapt.SlowStart = true
	}
	c.setRate(c.adapt.Rate)
	c.tokens = c.cap * cfg.InitialFill
	return c, nil
}

// pacerBurst is the bucket a Core paces the adaptive law's rate with, as
// time at the rate.
const pacerBurst = 10 * time.Millisecond

func (c *Core) capacity(rate float64) float64 {
	if c.law != nil {
		return math.Max(1, rate/60*min(c.cfg.Burst, pacerBurst).Seconds())
	}
	return math.Max(1, rate/60*c.cfg.Burst.Seconds())
}

// Start returns the Core's start time.
func (c *Core) Start() time.Time { return c.start }

// Adapt returns the state of the rate rules: the rate, the last cut and
// the increase clock, CUBIC's w_max, epoch and K.
func (c *Core) Adapt() control.Adapt { return c.adapt }

func (c *Core) offset(now time.Time) time.Duration {
	t := now.Sub(c.start)
	if t < c.last {
		return c.last
	}
	return t
}

func (c *Core) at(t time.Duration) time.Time { return c.start.Add(t) }

// Acquire asks for units at now and returns the request's Decision. Its
// Status is Granted or Rejected (ReasonQueueFull) when decided at once, with
// At = now; Waiting when the request was queued, and then its decision comes
// later from Drain. Requests of zero units are granted at once whatever the
// state; in disabled mode every request is. units must be finite and ≥ 0; a
// negative or NaN value counts as 0.
func (c *Core) Acquire(now time.Time, units float64) Decision {
	t := now.Sub(c.start)
	if t < c.last {
		t, now = c.last, c.at(c.last)
	}
	id, st := c.acquire(t, units)
	d := Decision{ID: id, Units: units, Status: st}
	switch st {
	case Granted:
		d.At = now
	case Rejected:
		d.At, d.Reason = now, ReasonQueueFull
	}
	return d
}

// acquire is Acquire at offset t, not before the latest time seen: it
// returns the request's id and its Status (Rejected means the queue is
// full).
func (c *Core) acquire(t time.Duration, units float64) (uint64, Status) {
	// calm: nothing but the bucket can hold a request back, so that
	// advance only accrues and the checks after it all pass.
	calm := c.calm()
	if calm {
		c.accrueCalm(t)
	} else {
		c.advance(t)
	}
	c.nextID++
	if !(units > 0) || c.cfg.Disabled {
		return c.nextID, Granted
	}
	if (calm || c.qh == len(c.q) && !c.paused && !c.budgetShort(units) && !c.restartHolds(t, units)) &&
		(c.tokens >= c.grantLevel(units)-unitEps || (units > c.cap && c.tokens >= c.cap-unitEps)) {
		c.take(t, units)
		return c.nextID, Granted
	}
	if len(c.q)-c.qh >= c.cfg.QueueLimit {
		return c.nextID, Rejected
	}
	c.q = append(c.q, waiter{id: c.nextID, units: units, queuedAt: t})
	c.waited, c.queuedOnce, c.lastQueued = true, true, t
	return c.nextID, Waiting
}

// calm reports whether none of the states that hold requests back or
// bound the bucket's filling, other than the bucket itself, is on at the
// latest time seen: no request waits, no pause, no restart after one, no
// running quota budget. Then bringing the Core up to a later
// time only fills the bucket (accrueCalm), and a request is granted as
// soon as the bucket holds it. A state that holds requests back or bounds
// the bucket must be tested here too.
func (c *Core) calm() bool {
	return c.qh == len(c.q) && !c.paused && !c.restart.on && c.quota.until <= c.last
}

// accrueCalm is advance(t) for a calm Core.
func (c *Core) accrueCalm(t time.Duration) {
	if t > c.last {
		c.fill(t, c.cap)
		c.last = t
	}
}

// fill adds to the bucket, up to lim, what the rate accrues from the
// latest time seen to t.
func (c *Core) fill(t time.Duration, lim float64) {
	c.tokens = min(lim, c.tokens+float64(t-c.last)*c.perNs)
}

// take removes u units, bounded by CostBound, from a bucket that holds
// them (or is full, for an oversized request), so the level never goes
// below minus one request's bounded cost. A grant at a time rounded to the
// nanosecond may find the bucket a hair short of u; the shortfall is kept,
// so that the level stays exact for the continuous model at every later
// instant.
func (c *Core) take(t time.Duration, u float64) {
	c.restartGrant(t, u)
	u = min(u, c.costBound)
	if c.law != nil {
		c.law.Sent(t, u, c.tokens >= c.cap-unitEps && c.qh == len(c.q))
	}
	c.tokens -= u
	if c.measure {
		c.recordGrant(t, u)
	}
	if c.quota.on {
		c.spend(t, u)
	}
}

// Cancel removes a waiting request at now. It returns its Decision
// (Rejected, ReasonCanceled, At = now) and true, or false if the request is
// not waiting (already granted or rejected, or unknown), which changes
// nothing. The canceled decision is returned here, not by Drain; grants that
// the removal makes due at now are.
func (c *Core) Cancel(now time.Time, id uint64) (Decision, bool) {
	t := c.offset(now)
	c.advance(t)
	i := c.find(id)
	if i < 0 {
		return Decision{}, false
	}
	w := c.q[i]
	copy(c.q[i:], c.q[i+1:])
	c.q = c.q[:len(c.q)-1]
	c.compactQueue()
	c.advance(t)
	return Decision{ID: id, Units: w.units, Status: Rejected, At: c.at(t), Reason: ReasonCanceled}, true
}

// find returns the index in c.q of waiting request id, or -1. Waiting ids
// are increasing, so it searches by bisection.
func (c *Core) find(id uint64) int {
	lo, hi := c.qh, len(c.q)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c.q[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(c.q) && c.q[lo].id == id {
		return lo
	}
	return -1
}

// Observe applies the outcome, at now, of a request of units granted at
// sentAt. A throttle restarts the increase clock, clears the waited flag,
// cuts the rate if this is the first throttle or if decrease_cooldown has
// passed since the last cut and sentAt is after it, and pauses for the
// Retry-After (capped at max_pause). A success or client error outside a
// pause lets the controller raise the rate. Server and network errors and
// the outcomes of zero-unit requests change nothing of that. Then the
// outcome's quota hint, if any, sets the budget and the rate ceiling
// (docs/limiter.md, "Quota hint"). With slow_start, an outcome of a
// request granted after a pause also moves the restart after it
// (restart.go). In disabled mode nothing changes.
func (c *Core) Observe(now, sentAt time.Time, units float64, o call.Outcome) {
	o = believed(o)
	t := c.offset(now)
	c.advance(t)
	if c.cfg.Disabled {
		return
	}
	c.restartAnswer(t, sentAt.Sub(c.start), units, o.Kind == call.Success || o.Kind == call.ClientError, o.Kind == call.Throttle)
	if units > 0 && c.law != nil && (o.Kind == call.Success || o.Kind == call.ClientError) {
		c.law.Accepted(sentAt.Sub(c.start), units)
	}
	if units > 0 {
		switch o.Kind {
		case call.Throttle:
			c.throttle(t, sentAt.Sub(c.start), o.RetryAfter)
		case call.Success, call.ClientError:
			c.success(t, units)
		}
	}
	if o.Kind != call.NetworkError {
		c.hint(t, sentAt.Sub(c.start), math.Max(units, 0), o)
	}
	c.advance(t)
}

// setRate changes the rate; the bucket keeps its tokens up to the new
// capacity.
func (c *Core) setRate(r float64) {
	c.adapt.Rate = r
	c.perNs = r / 60e9
	c.cap = c.capacity(r)
	c.costBound = c.CostBound()
	c.tokens = math.Min(c.tokens, c.cap)
}

// SetInstanceCount makes this instance's share 1/n of the budget, at now.
// It is SetShare(now, 1/n), with the rate scaled by exactly old N / n.
func (c *Core) SetInstanceCount(now time.Time, n int) error {
	if n < 1 {
		return fmt.Errorf("limiter: instance count must be >= 1, got %d", n)
	}
	c.rescale(c.offset(now), 1/float64(n), n)
	return nil
}

// SetShare sets this instance's fraction of the budget (0 < share ≤ 1), at
// now: the limits become min·share and max·share, the current rate r
// becomes r·share/old share clamped to them, CUBIC's w_max scales the same
// way (unclamped), the bucket keeps its tokens up to the new capacity, and
// the queue is kept. SetInstanceCount(n) is SetShare(1/n).
func (c *Core) SetShare(now time.Time, share float64) error {
	if !(share > 0 && share <= 1) {
		return fmt.Errorf("limiter: share must be in (0, 1], got %v", share)
	}
	c.rescale(c.offset(now), share, 0)
	return nil
}

func (c *Core) rescale(t time.Duration, share float64, n int) {
	c.advance(t)
	from, to := c.rules.Part(), control.Part{Share: share, Instances: n}
	c.rules.SetPart(&c.adapt, to)
	if c.law != nil {
		c.law.Rescale(from.Factor(to), c.rules.Min(), c.rules.Max())
		c.adapt.Rate = c.law.Rate()
	} else if c.following {
		c.adapt = c.rules.Scale(c.fleet)
	}
	c.setRate(c.adapt.Rate)
	c.advance(t)
}

// Advance brings the Core up to now: every grant, max_wait rejection and
// pause end due at or before now happens, at its own instant. Their
// decisions are kept for Drain.
func (c *Core) Advance(now time.Time) { c.advance(c.offset(now)) }

// Drain appends the decisions made since the last Drain to dst, in the
// order they happened, and returns it. Decisions returned directly by
// Acquire and Cancel are not repeated here.
func (c *Core) Drain(dst []Decision) []Decision {
	dst = append(dst, c.pending...)
	clear(c.pending)
	c.pending = c.pending[:0]
	return dst
}

// Pending reports how many decisions wait for Drain.
func (c *Core) Pending() int { return len(c.pending) }

// NextDue returns the next instant at which something happens by itself (a
// grant, a max_wait rejection, the end of a pause), or false if nothing will
// until the next call. It is never before the latest time seen.
func (c *Core) NextDue() (time.Time, bool) {
	due, kind := c.nextDue()
	if kind == dueNone {
		return time.Time{}, false
	}
	return c.at(max(due, c.last)), true
}

const (
	dueNone = iota
	dueGrant
	dueReject
	duePauseEnd
)

// nextDue returns the earliest pending instant and what happens then. At a
// tie, a grant comes before a max_wait rejection, which comes before the end
// of a pause. Max_wait deadlines follow queue order, so only the head's
// matters.
func (c *Core) nextDue() (time.Duration, int) {
	best, kind := time.Duration(math.MaxInt64), dueNone
	if c.qh < len(c.q) {
		h := &c.q[c.qh]
		if !c.paused {
			best, kind = c.grantDue(h.units), dueGrant
		}
		if d := h.queuedAt + c.cfg.MaxWait; d < best {
			best, kind = d, dueReject
		}
	}
	if c.paused && c.pausedUntil < best {
		best, kind = c.pausedUntil, duePauseEnd
	}
	return best, kind
}

// grantDue returns when the bucket will hold u (or be full, if u is over
// the capacity), at the current rate and with no pause, and a running
// quota budget holds it (or has ended).
func (c *Core) grantDue(u float64) time.Duration {
	d := c.bucketDue(u)
	if c.budgetShort(u) {
		d = max(d, c.quota.until)
	}
	if c.restartHolds(c.last, u) {
		d = max(d, c.restart.until)
	}
	return d
}

// bucketDue returns when the bucket will hold u (or be full, if u is over
// the capacity), at the current rate.
func (c *Core) bucketDue(u float64) time.Duration {
	need := math.Min(c.grantLevel(u), c.cap)
	if c.tokens >= need-unitEps {
		return c.last
	}
	ns := math.Round((need - c.tokens) * 60 / c.adapt.Rate * 1e9)
	if ns >= float64(math.MaxInt64-c.last) {
		return math.MaxInt64
	}
	return c.last + time.Duration(ns)
}

func (c *Core) advance(t time.Duration) {
	for c.qh < len(c.q) || c.paused {
		due, kind := c.nextDue()
		if kind == dueNone || due > t {
			break
		}
		due = max(due, c.last)
		c.accrue(due)
		switch kind {
		case dueGrant:
			w := c.q[c.qh]
			c.pop(due)
			c.take(due, w.units)
			c.pending = append(c.pending, Decision{ID: w.id, Units: w.units, Status: Granted, At: c.at(due)})
		case dueReject:
			w := c.q[c.qh]
			c.pop(due)
			c.pending = append(c.pending, Decision{ID: w.id, Units: w.units, Status: Rejected, At: c.at(due), Reason: ReasonMaxWait})
		case duePauseEnd:
			c.paused = false
			if !c.fleetPause {
				c.tokens = math.Min(c.tokens, 0)
				c.startRestart(due)
			}
			c.fleetPause = false
		}
	}
	c.accrue(t)
}

// accrue fills the bucket up to t; nothing accrues during a pause or
// while the restart after one holds the head, and
// while a quota budget runs the bucket fills only up to budgetCap.
func (c *Core) accrue(t time.Duration) {
	if c.headHeld(c.last) {
		c.last = max(c.last, min(t, c.restart.until)) // nothing accrues while the restart holds the head
	}
	if t <= c.last {
		return
	}
	if c.quota.until > c.last {
		c.accrueBudget(t)
	} else {
		if !c.paused {
			c.fill(t, c.cap)
		}
		c.last = t
	}
}

// pop removes the head of the queue at t.
func (c *Core) pop(t time.Duration) {
	c.q[c.qh] = waiter{}
	c.qh++
	c.compactQueue()
}

func (c *Core) compactQueue() { c.q, c.qh = compact(c.q, c.qh) }

// compact returns s and its head h (the index of its first live element)
// with the consumed elements before h dropped once they are all of s, or
// more than half of a long s; else s and h as they are.
func compact[T any](s []T, h int) ([]T, int) {
	switch {
	case h == len(s):
		return s[:0], 0
	case h > 64 && h*2 > len(s):
		n := copy(s, s[h:])
		return s[:n], 0
	}
	return s, h
}
