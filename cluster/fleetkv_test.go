package cluster

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// coreLimiter is a worker's limiter for the fleet tests: a limiter.Core
// on a clock the test sets.
type coreLimiter struct {
	mu       sync.Mutex
	core     *limiter.Core
	now      time.Time
	lastWait time.Time
	leads    int
}

func newCoreLimiter(t *testing.T, cfg limiter.Config, now time.Time) *coreLimiter {
	t.Helper()
	c, err := limiter.NewCore(cfg, now)
	if err != nil {
		t.Fatal(err)
	}
	return &coreLimiter{core: c, now: now}
}

func (l *coreLimiter) Follow(s fleet.State, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.core.Follow(l.now, s, until)
}

func (l *coreLimiter) Sent() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Sent(l.now)
}

func (l *coreLimiter) Lead() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leads++
	l.core.Lead(l.now)
}

func (l *coreLimiter) LastWait() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastWait
}

func (l *coreLimiter) AcceptedUnits() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.AcceptedUnits(l.now)
}

func (l *coreLimiter) Part() control.Part {
	l.mu.Lock()
	defer l.mu.Unlock()
	return control.Part{Share: l.core.Share(), Instances: l.core.Instances()}
}

func (l *coreLimiter) rate() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.core.Rate()
}

func openFleet(t *testing.T, url string, cfg FleetConfig, m *Membership, opts ...Option) *Fleet {
	t.Helper()
	f, err := OpenFleet(t.Context(), connect(t, url), cfg, m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func wholeReport(now time.Time, ra time.Duration) fleet.Report {
	return fleet.Report{At: now, Sent: now.Add(-50 * time.Millisecond), RetryAfter: ra, Measured: -1, Accepted: -1,
		Part: control.Part{Share: 0.05, Instances: 20}}
}

// Twenty workers, each with its own connection, observe one burst of 429s
// at the same instant and write their decisions at once: exactly one cut.
func TestFleetOneCutPerBurst(t *testing.T) {
	srv := startServer(t)
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: limiter.DefaultConfig()}
	const n = 20
	now := time.Now()
	fleets := make([]*Fleet, n)
	mets := make([]*Metrics, n)
	for i := range fleets {
		mets[i] = NewMetrics()
		fleets[i] = openFleet(t, srv.ClientURL(), cfg, nil, WithMetrics(mets[i]))
		lc := limiter.DefaultConfig()
		lc.Instances = n
		fleets[i].attach(newCoreLimiter(t, lc, now))
	}
	burst := wholeReport(now.Add(time.Second), time.Second)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, f := range fleets {
		wg.Go(func() {
			<-start
			f.Report(burst)
			f.step(t.Context(), burst.At, false)
		})
	}
	close(start)
	wg.Wait()
	cuts := 0.0
	for i, f := range fleets {
		cuts += testutil.ToFloat64(mets[i].fleetCuts)
		if err := f.reload(t.Context()); err != nil {
			t.Fatal(err)
		}
		if got := f.State().Rate; got != 294 {
			t.Errorf("worker %d: fleet rate %v, want 600 cut once to 294 (0.98 of half: startup's first refusal)", i, got)
		}
	}
	if cuts != 1 {
		t.Errorf("%v cuts written, want 1", cuts)
	}
}

// Five workers look for a raise at the same instant: one raise per
// interval for the fleet, and one worker's wait (in its heartbeat) is
// enough for another worker to raise.
func TestFleetRaiseOncePerInterval(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	bucket := uniqueBucket(t)
	lcfg := limiter.DefaultConfig()
	lcfg.SlowStart = false // the AIMD raise, not slow start's doubling
	cfg := FleetConfig{Bucket: bucket, Limiter: lcfg}
	var waited atomic.Int64 // the waiting worker's last wait, Unix ns
	waited.Store(time.Now().Add(5 * time.Second).UnixNano())
	// The waiting worker joins first; the others read its heartbeat.
	ccfg := Config{Bucket: bucket, TTL: 3 * time.Second}
	w, err := Join(t.Context(), connect(t, url), ccfg)
	if err != nil {
		t.Fatal(err)
	}
	wl, err := limiter.New(lcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Drive(t.Context(), waitedAt{wl, &waited}, false); err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, w.Run)
	var fleets []*Fleet
	for range 5 {
		f := openFleet(t, url, cfg, joinRunning(t, url, ccfg, ""))
		f.attach(newCoreLimiter(t, lcfg, time.Now())) // its own requests never waited
		fleets = append(fleets, f)
	}
	now := fleets[0].State().IncClock // the fleet's start
	var clock atomic.Int64            // the workers' clock, Unix ns
	for _, f := range fleets {
		f.clock = func() time.Time { return time.Unix(0, clock.Load()) }
	}
	at := func(d time.Duration) {
		clock.Store(now.Add(d).UnixNano())
		var wg sync.WaitGroup
		for _, f := range fleets {
			wg.Go(func() { f.step(t.Context(), now.Add(d), true) })
		}
		wg.Wait()
		for _, f := range fleets {
			if err := f.reload(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
	}
	rateAt := func(d time.Duration, want float64) {
		t.Helper()
		at(d)
		for i, f := range fleets {
			if got := f.State().Rate; math.Abs(got-want) > 1e-9 {
				t.Fatalf("at +%v worker %d: fleet rate %v, want %v", d, i, got, want)
			}
		}
	}
	rateAt(10*time.Second, 720) // one raise of 120 for the five
	rateAt(15*time.Second, 720) // within the interval
	rateAt(20*time.Second, 720) // nobody waited since the raise at +10s
	// The waiting worker waits again; its next heartbeat says so.
	waited.Store(now.Add(21 * time.Second).UnixNano())
	for _, f := range fleets {
		testkit.Eventually(t, "the new heartbeat", func() bool { return f.lastWait(f.lim).After(now.Add(20 * time.Second)) })
	}
	rateAt(30*time.Second, 840)
}

// The fleet's rate is remembered in the bucket: a worker that starts
// later begins where the fleet was, unless the state is older than
// remember.
func TestFleetRemember(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: limiter.DefaultConfig()}
	a := openFleet(t, url, cfg, nil)
	a.attach(newCoreLimiter(t, limiter.DefaultConfig(), time.Now()))
	a.Report(wholeReport(time.Now(), 0))
	a.step(t.Context(), time.Now(), false)
	if got := a.State().Rate; got != 294 {
		t.Fatalf("rate after a cut %v, want 294 (0.98 of half of 600)", got)
	}
	if got := openFleet(t, url, cfg, nil).State().Rate; got != 294 {
		t.Fatalf("a new worker starts at %v, want the remembered 294", got)
	}
	kv, err := connect(t, url).KeyValue(t.Context(), FleetBucket(cfg.Bucket))
	if err != nil {
		t.Fatal(err)
	}
	store := func(age time.Duration) {
		t.Helper()
		s := fleet.State{Adapt: control.Adapt{Rate: 5000, Throttled: true}, Seen: time.Now().Add(-age)}
		data, _ := json.Marshal(s)
		if _, err := kv.Put(t.Context(), fleetKey, data); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		age, remember time.Duration
		want          float64
	}{
		{30 * time.Minute, 0, 5000},
		{2 * time.Hour, 0, 600},
		{30 * time.Minute, 20 * time.Minute, 600},
		{19 * time.Minute, 20 * time.Minute, 5000},
	} {
		store(c.age)
		cc := cfg
		cc.Remember = c.remember
		f := openFleet(t, url, cc, nil)
		if got := f.State().Rate; got != c.want {
			t.Errorf("state %v old, remember %v: starts at %v, want %v", c.age, c.remember, got, c.want)
		}
		if c.want == 600 {
			// The stale state was replaced in the bucket.
			e, err := kv.Get(t.Context(), fleetKey)
			if err != nil {
				t.Fatal(err)
			}
			var s fleet.State
			_ = json.Unmarshal(e.Value(), &s)
			if s.Rate != 600 || time.Since(s.Seen) > time.Minute {
				t.Errorf("stored after a stale start: %+v, want a new state at 600", s)
			}
		}
	}
}

// When the bucket is unreachable the worker runs its own rules, never
// above the last fleet rate times its share; when it is back, the
// throttles seen meanwhile cut the fleet and the worker follows it again.
func TestFleetOutage(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: dir, Host: "127.0.0.1", Port: natsjs.RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.ClientURL()
	t.Cleanup(func() { srv.Shutdown() })
	lcfg := limiter.DefaultConfig()
	lcfg.InitialUnitsPerMinute = 1200
	// Without slow start the throttle seen during the outage is a plain
	// cut (× 0.7) for the fleet; in slow start it would be the fallback to
	// the few units this test's worker had accepted.
	lcfg.SlowStart = false
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: lcfg}
	f := openFleet(t, url, cfg, nil)
	now := time.Now()
	wcfg := lcfg
	wcfg.Instances, wcfg.Burst = 2, time.Second
	lim := newCoreLimiter(t, wcfg, now)
	f.attach(lim)
	if got := lim.rate(); got != 600 {
		t.Fatalf("worker rate %v, want 1200 × 1/2", got)
	}
	srv.Shutdown()
	f.step(t.Context(), now.Add(6*time.Second), true) // the confirmation is due, and fails
	if f.Online() || lim.leads != 1 {
		t.Fatalf("online %v after a failed write, leads %d; want offline, one Lead", f.Online(), lim.leads)
	}
	// The local rules run: a cut, then raises while requests wait, never
	// above 600.
	lim.mu.Lock()
	c, clock := lim.core, now.Add(7*time.Second)
	d := c.Acquire(clock, 1)
	c.Observe(clock, d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429})
	if got := c.Rate(); math.Abs(got-420) > 1e-9 {
		t.Fatalf("local cut to %v, want 600·0.7", got)
	}
	top := 0.0
	for range 30 {
		clock = clock.Add(11 * time.Second)
		c.Acquire(clock, 100) // more than the bucket: it empties it,
		c.Acquire(clock, 1)   // and this one waits
		c.Advance(clock.Add(10 * time.Second))
		clock = clock.Add(10 * time.Second)
		c.Observe(clock, clock, 1, call.Outcome{Kind: call.Success, Status: 200})
		top = max(top, c.Rate())
	}
	lim.now = clock
	lim.mu.Unlock()
	if top != 600 {
		t.Fatalf("the local rules reached %v, want them back up to the ceiling 600 and never above", top)
	}
	f.Report(wholeReport(now.Add(7*time.Second), 0))
	port, _ := strconv.Atoi(url[strings.LastIndexByte(url, ':')+1:])
	srv2, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: dir, Host: "127.0.0.1", Port: port}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Shutdown)
	testkit.Eventually(t, "rejoining the fleet", func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		f.step(ctx, time.Now(), true)
		return f.Online() && f.State().Rate != 1200
	})
	if got := f.State().Rate; got != 840 {
		t.Fatalf("fleet rate after the outage %v, want 1200 cut once by the throttle seen during it", got)
	}
	if got := lim.rate(); got != 420 {
		t.Fatalf("worker rate after rejoining %v, want 840 × 1/2", got)
	}
}

// Run carries a cut written by one worker to another worker's limiter
// through the watch.
func TestFleetRunPropagates(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: limiter.DefaultConfig()}
	a, b := openFleet(t, url, cfg, nil), openFleet(t, url, cfg, nil)
	wcfg := limiter.DefaultConfig()
	wcfg.Instances = 2
	la, lb := newCoreLimiter(t, wcfg, time.Now()), newCoreLimiter(t, wcfg, time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 2)
	go func() { done <- a.Run(ctx, la) }()
	go func() { done <- b.Run(ctx, lb) }()
	testkit.Eventually(t, "both following", func() bool { return la.rate() == 300 && lb.rate() == 300 })
	a.Report(wholeReport(time.Now(), 0))
	testkit.Eventually(t, "b at the cut rate", func() bool { return lb.rate() == 147 }) // half of 0.98 × 300
	cancel()
	for range 2 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// A worker alone remembers its rate in the fleet bucket: the next run
// starts there, unless it is older than remember.
func TestMemory(t *testing.T) {
	srv := startServer(t)
	cfg := FleetConfig{Bucket: uniqueBucket(t)}
	js := connect(t, srv.ClientURL())
	m, err := OpenMemory(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Remembered(time.Now()); ok {
		t.Fatal("remembered a rate in a new bucket")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // Run writes once when it stops
	if err := m.Run(ctx, func() control.Adapt { return control.Adapt{Rate: 4321} }); err != nil {
		t.Fatal(err)
	}
	m, err = OpenMemory(t.Context(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := m.Remembered(time.Now()); !ok || r != 4321 {
		t.Fatalf("remembered %v %v, want 4321", r, ok)
	}
	if _, ok := m.Remembered(time.Now().Add(time.Hour)); ok {
		t.Fatal("remembered a rate an hour old")
	}
	// A fleet on the same bucket goes on from it.
	cfg.Limiter = limiter.DefaultConfig()
	if got := openFleet(t, srv.ClientURL(), cfg, nil).State().Rate; got != 4321 {
		t.Fatalf("a fleet starts at %v, want the remembered 4321", got)
	}
}

// acceptedLimiter is a worker's limiter whose count of accepted units the
// test sets.
type acceptedLimiter struct {
	*coreLimiter
	units float64
}

func (l *acceptedLimiter) AcceptedUnits() float64     { return l.units }
func (l *acceptedLimiter) Rate() float64              { return l.rate() }
func (l *acceptedLimiter) SetInstanceCount(int) error { return nil }
func (l *acceptedLimiter) SetShare(float64) error     { return nil }

// The fleet's accepted units are this worker's count now and the others'
// from their heartbeats, each counted once.
func TestFleetAcceptedFromHeartbeats(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	bucket := uniqueBucket(t)
	lcfg := limiter.DefaultConfig()
	ccfg := Config{Bucket: bucket, TTL: 3 * time.Second}
	var members []*Membership
	for _, units := range []float64{1000, 400} {
		m, err := Join(t.Context(), connect(t, url), ccfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Drive(t.Context(), &acceptedLimiter{newCoreLimiter(t, lcfg, time.Now()), units}, false); err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, m.Run)
		members = append(members, m)
	}
	f := openFleet(t, url, FleetConfig{Bucket: bucket, Limiter: lcfg}, members[1])
	own := &acceptedLimiter{newCoreLimiter(t, lcfg, time.Now()), 250} // this worker's count now
	f.attach(own)
	testkit.Eventually(t, "the other worker's count", func() bool { return f.accepted(own) == 1250 })
	if got := f.accepted(nil); got != 0 {
		t.Fatalf("accepted with no limiter: %v, want 0", got)
	}
}

// waitedAt is a limiter whose requests last waited at the Unix time in ns
// that at holds.
type waitedAt struct {
	*limiter.Limiter
	at *atomic.Int64
}

func (w waitedAt) LastWait() time.Time { return time.Unix(0, w.at.Load()) }
