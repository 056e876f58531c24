package sim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// epoch is the virtual instant a run starts at.
var epoch = time.Unix(0, 0).UTC()

// Run simulates cfg in virtual time and returns its measurements. The same
// Config (seed included) always gives the same Result.
func Run(cfg Config) (*Result, error) {
	return run(cfg, nil)
}

// coreOp records one call the simulator made on an instance's limiter core,
// or one decision the core made, for the trace test.
type coreOp struct {
	Inst    int
	Op      string // "new", "acquire", "grant", "reject", "observe", "instances"
	At      time.Duration
	ID      uint64
	Units   float64
	Status  limiter.Status // acquire: the decision at once
	Reason  limiter.Reason // reject
	SentAt  time.Duration  // observe
	Outcome call.Outcome
	Count   int     // new, instances
	Rate    float64 // the core's rate after the call
}

type evKind uint8

const (
	evArrival evKind = iota
	evWake
	evReach
	evResponse
	evRetry
	evScenario
	evQuotaBack
	evSample
	evFleet
)

type event struct {
	at     time.Duration
	seq    uint64
	kind   evKind
	inst   *instance
	job    *job
	gen    uint64
	sentAt time.Duration // evReach, evResponse
	back   time.Duration // evReach: the response's way back
	ok     bool          // evResponse: accepted
	slot   bool          // evResponse: the call holds one of Config.Concurrency's slots
	ra     int           // evResponse: Retry-After seconds of a 429; 0: none
	index  int           // evScenario: index into Config.Events
	units  float64       // evQuotaBack: the units returned
	fleet  *fleet.State  // evFleet: the state that reaches inst
	quota  call.Quota    // evResponse: what its quota headers announce
}

type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	// A sample sees everything else that happens at its instant.
	if si, sj := q[i].kind == evSample, q[j].kind == evSample; si != sj {
		return sj
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*q = old[:len(old)-1]
	return e
}

type job struct {
	inst     *instance
	cost     float64
	attempts int
	grant    uint64 // the limiter's id of the current attempt
}

type waiting struct {
	job      *job
	queuedAt time.Duration
}

type instance struct {
	idx     int
	core    *limiter.Core // nil in mode none
	active  bool
	arrGen  uint64 // generation of the scheduled arrival
	wakeGen uint64 // generation of the scheduled wake
	wakeAt  time.Duration
	waking  bool
	waiters map[uint64]waiting
	decs    []limiter.Decision
}

type runner struct {
	cfg   Config
	lcfg  limiter.Config
	rng   *rand.Rand
	q     eventQueue
	seq   uint64
	now   time.Duration
	api   quotaModel // the model API's quota
	hints stater     // what the API's quota headers announce; nil when it sends none
	acc   Window     // every accepted call, with no quota
	// minute holds the accepted calls of the last minute for the quota
	// meter: acc itself when the API's window is a minute.
	minute *Window
	sent   Window // every call that reached the API, with no quota
	busy   int    // calls in flight, with Config.Concurrency
	inst   []*instance
	count  int          // instances taking part
	fleet  *sharedFleet // the shared controller of ShareFleet; nil for ShareLocal

	demand   float64
	meanCost float64
	quota    float64 // the part of the quota left to the simulated clients
	taken    float64 // units per window taken by other clients
	quotaLog []quotaStep

	hook func(coreOp)
	hdr  http.Header // the quota headers of the latest response, reused

	// measurements
	requests      int
	throttled     int
	rejected      int
	gaveUp        int
	unitsAccepted float64
	unitsSteady   float64
	waits         []time.Duration
	accSec        []float64 // units accepted in each second
	thrSec        []int     // 429s in each second
	series        Series
}

type quotaStep struct {
	at    time.Duration
	quota float64
}

// newRunner returns a runner for a validated cfg with its instances
// started, keeping per-second tallies for secs seconds. Run and Live both
// start here.
func newRunner(cfg Config, secs int, hook func(coreOp)) (*runner, error) {
	cfg.Costs = slices.Clone(cfg.Costs)
	cfg.Events = slices.Clone(cfg.Events)
	r := &runner{
		cfg:    cfg,
		lcfg:   cfg.limiterConfig(),
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x5eed5107ce)),
		api:    cfg.apiSpec().model(epoch),
		acc:    Window{Span: cfg.Window, Quota: math.Inf(1)},
		sent:   Window{Span: cfg.Window, Quota: math.Inf(1)},
		demand: cfg.Demand,
		quota:  cfg.Quota,
		hook:   hook,
		accSec: make([]float64, secs),
		thrSec: make([]int, secs),
	}
	r.hints, _ = r.api.(stater)
	r.minute = &r.acc
	if cfg.Window != time.Minute {
		r.minute = &Window{Span: time.Minute, Quota: math.Inf(1)}
	}
	for _, c := range cfg.Costs {
		r.meanCost += c
	}
	r.meanCost /= float64(len(cfg.Costs))
	r.quotaLog = []quotaStep{{0, cfg.Quota}}
	r.series.Instances = cfg.Instances
	r.newFleet()
	for range cfg.Instances {
		if err := r.addInstance(cfg.Instances); err != nil {
			return nil, err
		}
	}
	r.count = cfg.Instances
	return r, nil
}

func run(cfg Config, hook func(coreOp)) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := newRunner(cfg, int(math.Ceil(cfg.Duration.Seconds())), hook)
	if err != nil {
		return nil, err
	}
	cfg = r.cfg
	for i, e := range cfg.Events {
		if e.At <= cfg.Duration {
			r.schedule(&event{at: e.At, kind: evScenario, index: i})
		}
	}
	for s := range len(r.accSec) + 1 {
		r.schedule(&event{at: time.Duration(s) * time.Second, kind: evSample})
	}
	for r.q.Len() > 0 {
		e := heap.Pop(&r.q).(*event)
		if e.at > cfg.Duration {
			break
		}
		r.now = e.at
		r.handle(e)
	}
	r.now = cfg.Duration
	return r.result(), nil
}

func (r *runner) schedule(e *event) {
	r.seq++
	e.seq = r.seq
	heap.Push(&r.q, e)
}

func (r *runner) vt(d time.Duration) time.Time { return epoch.Add(d) }

func (r *runner) record(op coreOp) {
	if r.hook != nil {
		op.Rate = r.inst[op.Inst].core.Rate()
		r.hook(op)
	}
}

// addInstance starts a new instance at r.now with its own limiter, whose
// share is 1/n of the budget (in mode static, always the starting share).
func (r *runner) addInstance(n int) error {
	in := &instance{idx: len(r.inst), active: true, waiters: map[uint64]waiting{}}
	r.inst = append(r.inst, in)
	if r.cfg.Mode != ModeNone {
		lc := r.lcfg
		if r.cfg.Mode != ModeStatic {
			lc.Instances = n
		}
		core, err := limiter.NewCore(lc, r.vt(r.now))
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		in.core = core
		r.record(coreOp{Inst: in.idx, Op: "new", At: r.now, Count: lc.Instances})
		r.follow(in)
	}
	r.scheduleArrival(in)
	return nil
}

// scheduleArrival draws the next job arrival of in: a Poisson process with
// demand/mean cost jobs per minute, from the end of Config.Idle on.
func (r *runner) scheduleArrival(in *instance) {
	in.arrGen++
	if !(r.demand > 0) {
		return
	}
	perSec := r.demand / r.meanCost / 60
	gap := time.Duration(r.rng.ExpFloat64() / perSec * 1e9)
	r.schedule(&event{at: max(r.now, r.cfg.Idle) + gap, kind: evArrival, inst: in, gen: in.arrGen})
}

func (r *runner) handle(e *event) {
	switch e.kind {
	case evArrival:
		in := e.inst
		if !in.active || e.gen != in.arrGen {
			return
		}
		cost := r.cfg.Costs[r.rng.IntN(len(r.cfg.Costs))]
		j := &job{inst: in, cost: cost}
		r.scheduleArrival(in)
		r.attempt(j)
	case evWake:
		in := e.inst
		if !in.active || !in.waking || e.gen != in.wakeGen {
			return
		}
		in.waking = false
		in.core.Advance(r.vt(r.now))
		r.settle(in)
	case evReach:
		r.reach(e)
	case evResponse:
		r.response(e)
	case evRetry:
		if e.job.inst.active {
			r.attempt(e.job)
		}
	case evScenario:
		r.scenario(r.cfg.Events[e.index])
	case evQuotaBack:
		r.taken -= e.units
		r.setQuota()
	case evSample:
		r.sample()
	case evFleet:
		r.fleetArrive(e)
	}
}

// attempt makes one attempt of j: it waits on the limiter, then is sent.
func (r *runner) attempt(j *job) {
	j.attempts++
	in := j.inst
	if in.core == nil {
		r.waits = append(r.waits, 0)
		r.send(j, r.now)
		return
	}
	d := in.core.Acquire(r.vt(r.now), j.cost)
	r.record(coreOp{Inst: in.idx, Op: "acquire", At: r.now, ID: d.ID, Units: j.cost, Status: d.Status})
	if d.Status == limiter.Waiting {
		in.waiters[d.ID] = waiting{job: j, queuedAt: r.now}
	}
	// Grants that fell due before this request come first.
	r.settle(in)
	switch d.Status {
	case limiter.Granted:
		r.waits = append(r.waits, 0)
		j.grant = d.ID
		r.send(j, r.now)
	case limiter.Rejected:
		r.rejected++
	}
}

// settle hands out the decisions the core made and sets the instance's
// next wake to the core's next due instant.
func (r *runner) settle(in *instance) {
	in.decs = in.core.Drain(in.decs[:0])
	for _, d := range in.decs {
		w, ok := in.waiters[d.ID]
		if !ok {
			continue
		}
		delete(in.waiters, d.ID)
		at := d.At.Sub(epoch)
		if d.Status == limiter.Granted {
			r.record(coreOp{Inst: in.idx, Op: "grant", At: at, ID: d.ID, Units: d.Units})
			r.waits = append(r.waits, at-w.queuedAt)
			w.job.grant = d.ID
			r.send(w.job, at)
		} else {
			r.record(coreOp{Inst: in.idx, Op: "reject", At: at, ID: d.ID, Units: d.Units, Reason: d.Reason})
			r.rejected++
		}
	}
	clear(in.decs)
	next, ok := in.core.NextDue()
	if !ok {
		in.waking = false
		return
	}
	at := next.Sub(epoch)
	if in.waking && at == in.wakeAt {
		return
	}
	in.wakeGen++
	in.waking, in.wakeAt = true, at
	r.schedule(&event{at: at, kind: evWake, inst: in, gen: in.wakeGen})
}

// send puts j on the network at sentAt: it reaches the API after half the
// round trip and its response comes back after the rest. With
// Config.Concurrency the round trip is the API's: the call reaches it at
// once and holds it until the response arrives.
func (r *runner) send(j *job, sentAt time.Duration) {
	r.requests++
	rt := r.cfg.Latency
	if r.cfg.Jitter > 0 {
		rt += time.Duration((r.rng.Float64()*2 - 1) * float64(r.cfg.Jitter))
	}
	there := rt / 2
	if r.cfg.Concurrency > 0 {
		there = 0
	}
	r.schedule(&event{at: sentAt + there, kind: evReach, job: j, sentAt: sentAt, back: rt - there})
}

// reach is the model API answering a call.
func (r *runner) reach(e *event) {
	r.sent.Take(r.vt(r.now), e.job.cost)
	sec := min(int(r.now/time.Second), len(r.accSec)-1)
	resp := &event{at: r.now + e.back, kind: evResponse, job: e.job, sentAt: e.sentAt}
	if r.cfg.Concurrency > 0 {
		if r.busy >= r.cfg.Concurrency { // refused at once, with no Retry-After
			r.throttled++
			r.thrSec[sec]++
			r.schedule(resp)
			return
		}
		r.busy++
		resp.slot = true
	}
	ok, wait := r.take(e.job.cost)
	resp.ok = ok
	if h, holds := r.api.(holder); ok && holds {
		resp.at += h.Held() // its turn comes, then the rest of the round trip
	}
	resp.quota = r.quotaHint(resp.at)
	if ok {
		r.unitsAccepted += e.job.cost
		if r.now >= r.cfg.Idle+r.cfg.SteadyFrom {
			r.unitsSteady += e.job.cost
		}
		r.accSec[sec] += e.job.cost
	} else {
		if wait < 0 { // larger than the quota left: come back after a window
			wait = r.cfg.Window
		}
		if !r.cfg.NoRetryAfter {
			resp.ra = RetryAfterSeconds(wait)
		}
		r.throttled++
		r.thrSec[sec]++
	}
	r.schedule(resp)
}

// quotaHint is what the client reads, at the response's arrival at, from
// the quota headers the model API sends with it (Config.Headers): the
// headers are written as the API's state is now and parsed as the limiter's
// classifier does.
func (r *runner) quotaHint(at time.Duration) call.Quota {
	if r.cfg.Headers.Format == call.RateLimitNone {
		return call.Quota{}
	}
	if r.hdr == nil {
		r.hdr = http.Header{}
	}
	clear(r.hdr)
	SetQuotaHeaders(r.hdr, r.cfg.Headers, r.hints.State(r.vt(r.now)), r.vt(r.now))
	return r.cfg.Headers.Parse(r.hdr, r.vt(at))
}

// take is the model API's quota deciding a call of units at r.now.
func (r *runner) take(units float64) (bool, time.Duration) {
	ok, wait := r.api.Take(r.vt(r.now), units)
	if ok {
		r.acc.Take(r.vt(r.now), units)
		if r.minute != &r.acc {
			r.minute.Take(r.vt(r.now), units)
		}
	}
	return ok, wait
}

// used returns the units accepted in the trailing window at r.now.
func (r *runner) used() float64 {
	return r.acc.Used(r.vt(r.now))
}

// response is the client reading the API's answer: the limiter observes it,
// and the retry handler retries a 429 after its Retry-After.
func (r *runner) response(e *event) {
	if e.slot {
		r.busy--
	}
	j := e.job
	in := j.inst
	if !in.active {
		return
	}
	if in.core != nil && r.cfg.Mode != ModeStatic {
		o := call.Outcome{Kind: call.Success, Status: 200}
		if !e.ok {
			o = call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Duration(e.ra) * time.Second}
		}
		o.Quota = e.quota
		in.core.Observe(r.vt(r.now), r.vt(e.sentAt), j.cost, o)
		r.record(coreOp{Inst: in.idx, Op: "observe", At: r.now, ID: j.grant, SentAt: e.sentAt, Units: j.cost, Outcome: o})
		if r.fleet != nil {
			r.fleetObserve(in, e.sentAt, o)
		}
		r.settle(in)
	}
	if e.ok {
		return
	}
	if j.attempts > r.cfg.MaxRetries {
		r.gaveUp++
		return
	}
	delay := time.Duration(e.ra) * time.Second
	if e.ra <= 0 {
		delay = r.cfg.Backoff << (j.attempts - 1)
	}
	r.schedule(&event{at: r.now + delay, kind: evRetry, job: j})
}

func (r *runner) scenario(ev Event) {
	switch ev.Kind {
	case QuotaDrop:
		units := r.cfg.Quota * ev.Fraction
		r.taken += units
		r.setQuota()
		r.schedule(&event{at: r.now + ev.For, kind: evQuotaBack, units: units})
	case DemandChange:
		r.demand = ev.Demand
		for _, in := range r.inst {
			if in.active {
				r.scheduleArrival(in)
			}
		}
	case InstanceCount:
		r.setInstances(ev.Count)
	}
}

func (r *runner) setQuota() {
	q := math.Max(r.cfg.Quota-r.taken, 0)
	if math.Abs(r.taken) < windowEps {
		r.taken, q = 0, r.cfg.Quota
	}
	r.quota = q
	r.api.setQuota(r.vt(r.now), q)
	r.quotaLog = append(r.quotaLog, quotaStep{r.now, q})
}

// setInstances makes n instances take part: the newest leave, or new ones
// join, and every limiter rescales to n (except in mode static, whose
// rates are fixed).
func (r *runner) setInstances(n int) {
	for r.count > n {
		in := r.activeInstances()[r.count-1]
		in.active = false
		in.waiters = nil
		r.count--
	}
	if r.cfg.Mode != ModeNone && r.cfg.Mode != ModeStatic {
		for _, in := range r.activeInstances() {
			if in.core.Instances() == n {
				continue
			}
			// n >= 1 is checked by Validate.
			_ = in.core.SetInstanceCount(r.vt(r.now), n)
			r.record(coreOp{Inst: in.idx, Op: "instances", At: r.now, Count: n})
			r.settle(in)
		}
	}
	for r.count < n {
		// Validate checked the options; NewCore cannot fail here.
		if err := r.addInstance(n); err != nil {
			panic(err)
		}
		r.count++
	}
	r.series.Instances = max(r.series.Instances, len(r.inst))
}

func (r *runner) activeInstances() []*instance {
	var out []*instance
	for _, in := range r.inst {
		if in.active {
			out = append(out, in)
		}
	}
	return out
}
