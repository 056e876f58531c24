package sim

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// Live is a run that advances step by step, for a page that shows the
// simulation as it goes: Advance moves virtual time forward by any amount,
// State reads every instance's rate, bucket and queue and the model API's
// window at the current instant, and the Set and Drop methods change the
// run while it goes, as a person at the controls would.
//
// Live drives the same runner as Run: the same events, the same limiter
// cores, the same model API. Without changes between steps, stepping a
// Config to an instant gives the same counts as Run to that instant,
// whatever the steps. A Live has no end (Config.Duration is ignored) and
// keeps bounded memory: what it holds grows with the rate of the run and
// the window, not with its length.
//
// A Live is not safe for concurrent use.
type Live struct {
	r *runner

	dropEnd time.Duration // end of the current quota drop; 0 when none
	byCost  []costWindow  // units accepted in the trailing window, by cost
	recent  []Request     // calls that reached the API since the last Requests
	waits   []timedWait   // grants in the trailing window, oldest first
	maxCost float64
}

type costWindow struct {
	cost float64
	win  Window
}

type timedWait struct {
	at, wait time.Duration
}

// MaxLiveInstances is the most instances a Live runs at once.
const MaxLiveInstances = 16

// maxRecent bounds the calls a Live keeps for Requests.
const maxRecent = 4096

// liveDuration stands for "no end" in a Live's Config.
const liveDuration = time.Duration(math.MaxInt64 / 2)

// ErrQuotaDropped is returned by DropQuota while a drop is in progress.
var ErrQuotaDropped = errors.New("sim: the quota is already dropped")

// Request is one call that reached the model API.
type Request struct {
	At       time.Duration // virtual time from the start
	Instance int           // InstanceState.Index of the caller
	Cost     float64       // units
	OK       bool          // accepted; false: answered 429
}

// InstanceState is one instance at an instant.
type InstanceState struct {
	// Index names the instance for the whole run: 0, 1, … in the order
	// they joined. An instance that leaves never comes back; a new one gets
	// the next index.
	Index int
	// Rate is the limiter's rate in units per minute; NaN in mode none.
	Rate float64
	// Tokens and Capacity are the bucket's level and size in units; NaN in
	// mode none. Tokens is below zero after an oversized grant.
	Tokens, Capacity float64
	// Paused is true during a Retry-After pause, which ends at PausedUntil.
	Paused      bool
	PausedUntil time.Duration
	// Queue holds the costs of the waiting requests, first in line first.
	Queue []float64
}

// CostUnits is the units of one cost in the model API's window.
type CostUnits struct {
	Cost  float64
	Units float64
}

// LiveState is a Live at an instant.
type LiveState struct {
	T    time.Duration // virtual time from the start
	Mode Mode

	Window    time.Duration // the model API's sliding window
	BaseQuota float64       // the hidden quota, units per window
	Quota     float64       // the part of it left to the simulated clients
	DropEnds  time.Duration // end of the current quota drop; 0 when none
	Demand    float64       // units per minute offered to each instance

	Used       float64     // units accepted in the trailing window
	UsedByCost []CostUnits // Used split by job cost, in the order of Config.Costs
	Sent       float64     // units of every call that reached the API in the trailing window

	Instances []InstanceState // the instances taking part, by Index
	SumRate   float64         // the sum of their rates; NaN in mode none
	Queue     int             // requests waiting in all limiters

	Requests  int // calls sent to the API (as Summary.Requests counts them)
	Throttled int // 429 responses
	Rejected  int // attempts the limiter turned away (queue full, max_wait)
	GaveUp    int // jobs dropped after their last retry was throttled
	// P95Wait is the 95th percentile of the time the attempts granted in
	// the trailing window waited for their units (0 when there are none).
	P95Wait time.Duration
}

// NewLive starts a Live of cfg at virtual time 0. cfg.Duration is ignored;
// cfg.Events happen at their times as in Run.
func NewLive(cfg Config) (*Live, error) {
	cfg.Duration = liveDuration
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Instances > MaxLiveInstances {
		return nil, fmt.Errorf("sim: instances: must be at most %d, got %d", MaxLiveInstances, cfg.Instances)
	}
	// The same runner as Run, with room for one second of the per-second
	// tallies (Live reads none of them) and no samples.
	r, err := newRunner(cfg, 1, nil)
	if err != nil {
		return nil, err
	}
	cfg = r.cfg
	for i, e := range cfg.Events {
		r.schedule(&event{at: e.At, kind: evScenario, index: i})
	}
	l := &Live{r: r, maxCost: slices.Max(cfg.Costs)}
	for _, c := range cfg.Costs {
		if !slices.ContainsFunc(l.byCost, func(w costWindow) bool { return w.cost == c }) {
			l.byCost = append(l.byCost, costWindow{cost: c, win: Window{Span: cfg.Window, Quota: math.Inf(1)}})
		}
	}
	return l, nil
}

// Config returns the Config the Live started from, with the quota and the
// demand as they are now.
func (l *Live) Config() Config {
	c := l.r.cfg
	c.Costs = slices.Clone(c.Costs)
	c.Events = slices.Clone(c.Events)
	c.Demand = l.r.demand
	c.Instances = l.r.count
	return c
}

// Now returns the virtual time from the start.
func (l *Live) Now() time.Duration { return l.r.now }

// Advance runs the simulation for d of virtual time: everything due up to
// and including Now()+d happens. d < 0 is taken as 0.
func (l *Live) Advance(d time.Duration) {
	r := l.r
	target := r.now + max(d, 0)
	for r.q.Len() > 0 && r.q[0].at <= target {
		e := heap.Pop(&r.q).(*event)
		r.now = e.at
		thr := r.throttled
		r.handle(e)
		switch e.kind {
		case evReach:
			l.reached(e, r.throttled == thr)
		case evScenario:
			if ev := r.cfg.Events[e.index]; ev.Kind == QuotaDrop {
				l.dropEnd = max(l.dropEnd, e.at+ev.For)
			}
		case evQuotaBack:
			if r.taken == 0 {
				l.dropEnd = 0
			}
		}
		l.harvestWaits()
	}
	r.now = target
}

// reached records a call that reached the API at the current instant.
func (l *Live) reached(e *event, ok bool) {
	now := l.r.vt(l.r.now)
	if ok {
		for i := range l.byCost {
			if l.byCost[i].cost == e.job.cost {
				l.byCost[i].win.Take(now, e.job.cost)
			}
		}
	}
	if len(l.recent) == maxRecent {
		n := copy(l.recent, l.recent[maxRecent/2:])
		l.recent = l.recent[:n]
	}
	l.recent = append(l.recent, Request{At: l.r.now, Instance: e.job.inst.idx, Cost: e.job.cost, OK: ok})
}

// harvestWaits moves the runner's new waits into the trailing window of
// waits, and keeps the runner's list short.
func (l *Live) harvestWaits() {
	r := l.r
	for _, w := range r.waits {
		l.waits = append(l.waits, timedWait{at: r.now, wait: w})
	}
	r.waits = r.waits[:0]
	cut := r.now - r.cfg.Window
	i := 0
	for i < len(l.waits) && l.waits[i].at <= cut {
		i++
	}
	if i > 0 {
		l.waits = append(l.waits[:0], l.waits[i:]...)
	}
}

// Requests appends to dst the calls that reached the API since the last
// call of Requests, oldest first, and forgets them. It keeps the latest
// few thousand when it is not called for long.
func (l *Live) Requests(dst []Request) []Request {
	dst = append(dst, l.recent...)
	l.recent = l.recent[:0]
	return dst
}

// State returns the run at Now().
func (l *Live) State() LiveState {
	r := l.r
	now := r.vt(r.now)
	s := LiveState{
		T:         r.now,
		Mode:      r.cfg.Mode,
		Window:    r.cfg.Window,
		BaseQuota: r.cfg.Quota,
		Quota:     r.quota,
		DropEnds:  l.dropEnd,
		Demand:    r.demand,
		Used:      r.used(),
		Sent:      r.sent.Used(now),
		Requests:  r.requests,
		Throttled: r.throttled,
		Rejected:  r.rejected,
		GaveUp:    r.gaveUp,
	}
	for i := range l.byCost {
		s.UsedByCost = append(s.UsedByCost, CostUnits{Cost: l.byCost[i].cost, Units: l.byCost[i].win.Used(now)})
	}
	if r.cfg.Mode == ModeNone {
		s.SumRate = math.NaN()
	}
	for _, in := range r.inst {
		if !in.active {
			continue
		}
		is := InstanceState{Index: in.idx, Rate: math.NaN(), Tokens: math.NaN(), Capacity: math.NaN()}
		if in.core != nil {
			is.Tokens = in.core.Tokens(now)
			if in.core.Pending() > 0 {
				// Bringing the bucket up to now can make nothing due that
				// Advance has not handled, but hand out what it did.
				r.settle(in)
			}
			is.Rate = in.core.Rate()
			is.Capacity = in.core.Capacity()
			if until, ok := in.core.PausedUntil(); ok && until.After(now) {
				is.Paused, is.PausedUntil = true, until.Sub(epoch)
			}
			s.SumRate += is.Rate
		}
		is.Queue = queueCosts(in)
		s.Queue += len(is.Queue)
		s.Instances = append(s.Instances, is)
	}
	if len(l.waits) > 0 {
		ws := make([]time.Duration, len(l.waits))
		for i, w := range l.waits {
			ws[i] = w.wait
		}
		slices.Sort(ws)
		s.P95Wait = ws[max(int(math.Ceil(0.95*float64(len(ws))))-1, 0)]
	}
	return s
}

// queueCosts lists the costs of in's waiting requests in the order the
// limiter will grant them (its ids grow with each request).
func queueCosts(in *instance) []float64 {
	if len(in.waiters) == 0 {
		return nil
	}
	type w struct {
		id   uint64
		cost float64
	}
	ws := make([]w, 0, len(in.waiters))
	for id, x := range in.waiters {
		ws = append(ws, w{id, x.job.cost})
	}
	slices.SortFunc(ws, func(a, b w) int { return cmp.Compare(a.id, b.id) })
	out := make([]float64, len(ws))
	for i, x := range ws {
		out[i] = x.cost
	}
	return out
}

// SetQuota makes the hidden quota q units per window from now on. A drop
// in progress keeps the units the other client takes, so the part left to
// the simulated clients changes by as much as q does (down to nothing).
func (l *Live) SetQuota(q float64) error {
	if !(q > 0) || math.IsInf(q, 0) {
		return fmt.Errorf("sim: quota: must be > 0, got %v", q)
	}
	if q < l.maxCost {
		return fmt.Errorf("sim: quota: must be at least the largest cost (%v), got %v", l.maxCost, q)
	}
	l.r.cfg.Quota = q
	l.r.setQuota()
	l.r.quotaLog = l.r.quotaLog[len(l.r.quotaLog)-1:]
	return nil
}

// SetDemand makes each instance's demand d units per minute from now on.
func (l *Live) SetDemand(d float64) error {
	if !(d >= 0) || math.IsInf(d, 0) {
		return fmt.Errorf("sim: demand: must be >= 0, got %v", d)
	}
	l.r.scenario(Event{At: l.r.now, Kind: DemandChange, Demand: d})
	l.harvestWaits()
	return nil
}

// SetInstances makes n instances take part from now on, as an
// InstanceCount event does: the newest leave, or new ones join, and every
// limiter rescales to n.
func (l *Live) SetInstances(n int) error {
	if n < 1 || n > MaxLiveInstances {
		return fmt.Errorf("sim: instances: must be in [1, %d], got %d", MaxLiveInstances, n)
	}
	l.r.scenario(Event{At: l.r.now, Kind: InstanceCount, Count: n})
	l.harvestWaits()
	return nil
}

// Instances returns the number of instances taking part.
func (l *Live) Instances() int { return l.r.count }

// DropQuota makes another client take fraction of the hidden quota from now
// for d, as a QuotaDrop event does. It fails with ErrQuotaDropped while a
// drop is in progress.
func (l *Live) DropQuota(fraction float64, d time.Duration) error {
	if l.dropEnd > 0 || l.r.taken != 0 {
		return ErrQuotaDropped
	}
	if !(fraction > 0 && fraction < 1) {
		return fmt.Errorf("sim: fraction: must be in (0, 1), got %v", fraction)
	}
	if d <= 0 {
		return fmt.Errorf("sim: for: must be > 0, got %v", d)
	}
	l.r.scenario(Event{At: l.r.now, Kind: QuotaDrop, Fraction: fraction, For: d})
	l.dropEnd = l.r.now + d
	return nil
}
