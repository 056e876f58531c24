package cluster

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources/natsjs"
)

func uniqueBucket(t *testing.T) string {
	return BucketName(fmt.Sprintf("%s_%d", t.Name(), time.Now().UnixNano()))
}

// Three member processes join one at a time; each join is seen by all
// within one TTL. Then one is SIGKILLed and the others see N−1 within TTL
// plus one refresh; one leaves cleanly and the last sees it at once. The
// times are counted in each watcher's own heartbeats (one per refresh),
// not measured on the wall clock: a loaded machine that delays a process
// delays its heartbeats and what it sees alike.
func TestMembershipProcesses(t *testing.T) {
	srv := startServer(t)
	const ttl = 3 * time.Second
	refresh := ttl / 3
	spec := helperSpec{URL: srv.ClientURL(), Bucket: uniqueBucket(t), TTL: ttl, Mode: "members", Budget: 600, Writes: true}
	perTTL := int(ttl / refresh) // heartbeats a member writes in one TTL

	var procs []*proc
	for i, name := range []string{"a", "b", "c"} {
		n := i + 1
		p := startMember(t, name, spec)
		joined, _ := p.waitFor(t, 0, fmt.Sprintf("N=%d at join", n), func(e event) bool { return e.N > 0 })
		if joined.N != n {
			t.Fatalf("%s joined seeing N=%d, want %d", name, joined.N, n)
		}
		for _, q := range procs {
			_, i := q.waitFor(t, 0, fmt.Sprintf("N=%d", n), func(e event) bool { return e.N == n })
			if w := q.writesBetween(joined.T, i); w > perTTL {
				t.Errorf("%s saw %s's join after %d of its heartbeats, want at most %d (one ttl)", q.name, name, w, perTTL)
			}
		}
		procs = append(procs, p)
	}
	for _, p := range procs {
		if e := p.last(); e.N != 3 || math.Abs(e.Share-1.0/3) > 1e-12 || math.Abs(e.Rate-200) > 1e-9 {
			t.Errorf("%s after three joins: %+v, want N=3, share 1/3, rate 200", p.name, e)
		}
	}

	// sluice status lists the three with their rates.
	js := connect(t, srv.ClientURL())
	deadline := time.Now().Add(30 * time.Second)
	for {
		ms, err := List(t.Context(), js, spec.Bucket)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		rated := 0
		for _, m := range ms {
			ids = append(ids, m.ID)
			if math.Abs(m.Rate-200) < 1e-9 && math.Abs(m.Share-1.0/3) < 1e-12 {
				rated++
			}
		}
		if slices.Equal(ids, []string{"a", "b", "c"}) && rated == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("List: %+v, want a, b and c at rate 200", ms)
		}
		time.Sleep(100 * time.Millisecond) // real server: bounded polling
	}

	a, b, c := procs[0], procs[1], procs[2]
	fromA, fromC := a.len(), c.len()
	killed := b.kill(t)
	for _, q := range []struct {
		p    *proc
		from int
	}{{a, fromA}, {c, fromC}} {
		e, i := q.p.waitFor(t, q.from, "N=2 after the kill", func(e event) bool { return e.N == 2 })
		if w := q.p.writesBetween(killed.UnixNano(), i); w > perTTL+1 {
			t.Errorf("%s saw the kill after %d of its heartbeats, want at most %d (ttl + refresh)", q.p.name, w, perTTL+1)
		}
		if math.Abs(e.Rate-300) > 1e-9 {
			t.Errorf("%s at N=2: rate %v, want 300", q.p.name, e.Rate)
		}
	}

	fromA = a.len()
	c.stop(t)
	left := c.last()
	if !left.Exit {
		t.Fatalf("c's last event %+v, want exit", left)
	}
	_, i := a.waitFor(t, fromA, "N=1 after the clean leave", func(e event) bool { return e.N == 1 })
	if w := a.writesBetween(left.T, i); w > 1 {
		t.Errorf("a saw the clean leave after %d of its heartbeats, want at once (at most one, not the %d of an expiry)", w, perTTL)
	}
	a.stop(t)
}

// timelineEvent is a change of one member's leases.
type timelineEvent struct {
	event
	member string
}

// checkTimeline replays every member's lease changes in time order and
// checks, after each, that no partition has two holders and the shares add
// up to no more than the budget. It returns how many states it checked.
func checkTimeline(evs []timelineEvent, partitions int) (int, error) {
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].T != evs[j].T {
			return evs[i].T < evs[j].T
		}
		return len(evs[i].Held) < len(evs[j].Held) // at one instant, shrink first
	})
	held := map[string][]int{}
	share := map[string]float64{}
	for i, e := range evs {
		held[e.member] = e.Held
		share[e.member] = e.Share
		if e.Share != shareOf(len(e.Held), partitions) {
			return i, fmt.Errorf("%s at %d: limiter share %v with %d leases, want %v", e.member, e.T, e.Share, len(e.Held), shareOf(len(e.Held), partitions))
		}
		holder := map[int]string{}
		sumHeld, sumShare := 0, 0.0
		for m, ps := range held {
			for _, p := range ps {
				if o, dup := holder[p]; dup {
					return i, fmt.Errorf("at %d partition %d is held by %s and %s", e.T, p, o, m)
				}
				holder[p] = m
			}
			sumHeld += len(ps)
			sumShare += share[m]
		}
		if sumHeld > partitions {
			return i, fmt.Errorf("at %d: %d partitions held, more than %d", e.T, sumHeld, partitions)
		}
		if sumShare > 1+float64(len(held))*IdleShare+1e-9 {
			return i, fmt.Errorf("at %d: shares add up to %v, more than the budget", e.T, sumShare)
		}
	}
	return len(evs), nil
}

// Five member processes join and leave at random (clean stops and
// SIGKILLs) for a bounded run. At every change of any member's leases no
// partition is held twice and the budgets add up to no more than the
// whole; at the end the five converge to fair shares.
func TestLeasesChurnProcesses(t *testing.T) {
	srv := startServer(t)
	const ttl, partitions = 2 * time.Second, 16
	spec := helperSpec{URL: srv.ClientURL(), Bucket: uniqueBucket(t), TTL: ttl, Mode: "leases", Partitions: partitions, Budget: 1600}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	var all []*proc // every incarnation
	killedAt := map[*proc]time.Time{}
	slots := make([]*proc, 5)
	incarnation := 0
	start := func(i int) {
		incarnation++
		p := startMember(t, fmt.Sprintf("w%d-%d", i, incarnation), spec)
		slots[i] = p
		all = append(all, p)
	}
	start(0)
	start(1)
	kills, stops, starts := 0, 0, 2
	end := time.Now().Add(15 * time.Second)
	for time.Now().Before(end) {
		// The churn's own pace: a random pause between joins and leaves.
		time.Sleep(time.Duration(200+rng.IntN(1300)) * time.Millisecond)
		i := rng.IntN(len(slots))
		switch p := slots[i]; {
		case p == nil:
			start(i)
			starts++
		case rng.IntN(2) == 0:
			killedAt[p] = p.kill(t)
			slots[i] = nil
			kills++
		default:
			p.stop(t)
			slots[i] = nil
			stops++
		}
	}
	for i, p := range slots {
		if p == nil {
			start(i)
			starts++
		}
	}
	t.Logf("%d starts, %d clean stops, %d kills", starts, stops, kills)

	awaitFairShares(t, slots, partitions)
	for _, p := range slots {
		p.stop(t)
		if e := p.last(); !e.Exit {
			t.Errorf("%s: last event %+v, want exit", p.name, e)
		}
	}

	timeline := collectTimeline(t, all, killedAt)
	n, err := checkTimeline(timeline, partitions)
	if err != nil {
		t.Error(err)
	}
	t.Logf("%d observations over %d incarnations", n, len(all))
	// The checker can fail.
	bad := append(slices.Clone(timeline),
		timelineEvent{event: event{T: math.MaxInt64, Held: []int{0}, Share: 1.0 / partitions}, member: "x"},
		timelineEvent{event: event{T: math.MaxInt64, Held: []int{0}, Share: 1.0 / partitions}, member: "y"})
	if _, err := checkTimeline(bad, partitions); err == nil || !strings.Contains(err.Error(), "held by") {
		t.Errorf("checkTimeline of a partition held twice: %v", err)
	}
}

// awaitFairShares waits until the five members hold a fair share each
// (partitions/5 rounded down or up) and every partition is held.
func awaitFairShares(t *testing.T, slots []*proc, partitions int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		sum, fair := 0, true
		for _, p := range slots {
			n := len(p.last().Held)
			sum += n
			fair = fair && n >= partitions/5 && n <= (partitions+4)/5
		}
		if fair && sum == partitions {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range slots {
				t.Logf("%s holds %v", p.name, p.last().Held)
			}
			t.Fatal("the five members did not converge to fair shares")
		}
		time.Sleep(100 * time.Millisecond) // real processes: bounded polling
	}
}

// collectTimeline gathers every incarnation's lease events, reporting the
// errors they carry, and adds an idle share at each kill: a killed process
// uses nothing after it is dead.
func collectTimeline(t *testing.T, all []*proc, killedAt map[*proc]time.Time) []timelineEvent {
	t.Helper()
	var timeline []timelineEvent
	for _, p := range all {
		p.mu.Lock()
		for _, e := range p.events {
			if e.Error != "" {
				t.Errorf("%s: %s", p.name, e.Error)
			}
			if !e.Exit {
				timeline = append(timeline, timelineEvent{event: e, member: p.name})
			}
		}
		p.mu.Unlock()
		if at, ok := killedAt[p]; ok {
			// A killed process uses nothing after it is dead.
			timeline = append(timeline, timelineEvent{event: event{T: at.UnixNano(), Share: IdleShare}, member: p.name})
		}
	}
	return timeline
}

// runUntilCleanup runs run until the test ends, or until the returned
// function is called, and checks its result.
// joinRunning joins cfg's bucket as id (cfg.ID when id is empty) on a new
// connection to url and runs the membership until the test's cleanup.
func joinRunning(t *testing.T, url string, cfg Config, id string) *Membership {
	t.Helper()
	if id != "" {
		cfg.ID = id
	}
	m, err := Join(t.Context(), connect(t, url), cfg)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, m.Run)
	return m
}

func runUntilCleanup(t *testing.T, run func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// A limiter at rate r with N = 2 moves to N = 3: the two rescale to 2r/3,
// and the newcomer starts at the budget the others found (Budget), so the
// three still add up to 2r.
func TestRescaleKeepsTotal(t *testing.T) {
	srv := startServer(t)
	cfg := Config{Bucket: uniqueBucket(t), TTL: 3 * time.Second}
	lcfg := limiter.DefaultConfig()
	lcfg.InitialUnitsPerMinute = 1200

	newMember := func(id string, lc limiter.Config) (*Membership, *limiter.Limiter) {
		t.Helper()
		c := cfg
		c.ID = id
		m, err := Join(t.Context(), connect(t, srv.ClientURL()), c)
		if err != nil {
			t.Fatal(err)
		}
		// What `sluice run` does: start at the budget the others found,
		// then let the membership drive the limiter.
		if b, ok := m.Budget(); ok {
			lc.InitialUnitsPerMinute = b
		}
		lc.Instances = m.Count()
		lim, err := limiter.New(lc)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Drive(t.Context(), lim, true); err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, m.Run)
		return m, lim
	}
	ma, la := newMember("a", lcfg)
	_, lb := newMember("b", lcfg)
	testkit.Eventually(t, "N=2 at a", func() bool { return la.Stats().Instances == 2 })
	// Both find the budget: one throttle each cuts 600 to the same rate.
	for _, l := range []*limiter.Limiter{la, lb} {
		tk, err := l.Wait(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429})
	}
	r := la.Rate()
	if r >= 600 || math.Abs(lb.Rate()-r) > 1e-9 {
		t.Fatalf("rates after the cut: %v, %v; want the same, below 600", la.Rate(), lb.Rate())
	}
	testkit.Eventually(t, "heartbeats carrying the cut rate", func() bool {
		ms := ma.Members()
		return len(ms) == 2 && math.Abs(ms[0].Rate-r) < 1e-9 && math.Abs(ms[1].Rate-r) < 1e-9
	})

	_, lc := newMember("c", lcfg)
	testkit.Eventually(t, "N=3 at a and b", func() bool { return la.Stats().Instances == 3 && lb.Stats().Instances == 3 })
	sum := la.Rate() + lb.Rate() + lc.Rate()
	if math.Abs(sum-2*r) > 0.01*2*r {
		t.Errorf("rates %v + %v + %v = %v, want 2r = %v within 1%%", la.Rate(), lb.Rate(), lc.Rate(), sum, 2*r)
	}
	if s := lc.Stats(); s.Instances != 3 {
		t.Errorf("newcomer's limiter: %+v, want 3 instances", s)
	}
}

// An outageMember is a member of TestOutage with its membership, its
// leases and what it observed during the server's outage.
type outageMember struct {
	m *Membership
	l *Leases
	sync.Mutex
	minCount int
	maxHeld  int  // most partitions held during the outage
	outage   bool // the server is down
	watch    bool // the count is watched: from the outage on
	stops    []func()
}

// joinOutageMember joins the group of cfg as id on the server at url and
// runs its membership and leases until the test ends.
func joinOutageMember(t *testing.T, url string, cfg Config, id string) *outageMember {
	t.Helper()
	w := &outageMember{minCount: math.MaxInt}
	c := cfg
	c.ID = id
	m, err := Join(t.Context(), connect(t, url), c, WithInstanceCount(func(n int) {
		w.Lock()
		if w.watch {
			w.minCount = min(w.minCount, n)
		}
		w.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLeases(t.Context(), m, func(s *settings) {
		s.onHeld = func(ps []int) {
			w.Lock()
			if w.outage {
				w.maxHeld = max(w.maxHeld, len(ps))
			}
			w.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	w.m, w.l = m, l
	w.stops = append(w.stops, runUntilCleanup(t, m.Run), runUntilCleanup(t, l.Run))
	return w
}

// During a NATS outage the leases lapse on time and the share falls to
// IdleShare, never above what was held; the instance count keeps its value.
// When NATS is back the two members share the partitions again.
func TestOutage(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: dir, Host: "127.0.0.1", Port: natsjs.RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := srv.ClientURL()
	t.Cleanup(func() { srv.Shutdown() })
	const ttl = 2 * time.Second
	cfg := Config{Bucket: uniqueBucket(t), TTL: ttl, Partitions: 16}

	a, b := joinOutageMember(t, url, cfg, "a"), joinOutageMember(t, url, cfg, "b")
	testkit.Eventually(t, "8 partitions each", func() bool { return len(a.l.Held()) == 8 && len(b.l.Held()) == 8 })
	for _, w := range []*outageMember{a, b} {
		w.Lock()
		w.outage, w.watch = true, true
		w.Unlock()
	}
	srv.Shutdown()
	t.Logf("%v server down", time.Now().Format("05.000"))
	testkit.Eventually(t, "the leases to lapse", func() bool { return len(a.l.Held()) == 0 && len(b.l.Held()) == 0 })
	// The outage lasts longer than the TTL: the count must not fall.
	t.Logf("%v leases lapsed", time.Now().Format("05.000"))
	time.Sleep(ttl)
	for _, w := range []*outageMember{a, b} {
		if n := w.m.Count(); n != 2 {
			t.Errorf("%s: count %d during the outage, want 2", w.m.cfg.ID, n)
		}
	}
	// Restart on the same port and store.
	for _, w := range []*outageMember{a, b} {
		w.Lock()
		w.outage = false
		w.Unlock()
	}
	port := url[strings.LastIndexByte(url, ':')+1:]
	p, _ := strconv.Atoi(port)
	srv2, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: dir, Host: "127.0.0.1", Port: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv2.Shutdown)
	t.Logf("%v server up", time.Now().Format("05.000"))
	testkit.Eventually(t, "8 partitions each after the outage", func() bool { return len(a.l.Held()) == 8 && len(b.l.Held()) == 8 })
	t.Logf("%v rebalanced", time.Now().Format("05.000"))
	for _, w := range []*outageMember{a, b} {
		w.Lock()
		if w.minCount != math.MaxInt && w.minCount < 2 {
			t.Errorf("%s: count fell to %d", w.m.cfg.ID, w.minCount)
		}
		if w.maxHeld > 8 {
			t.Errorf("%s: held %d partitions during the outage, more than the 8 it had", w.m.cfg.ID, w.maxHeld)
		}
		w.Unlock()
	}
	if ha, hb := a.l.Held(), b.l.Held(); len(slices.Concat(ha, hb)) != 16 || hasCommon(ha, hb) {
		t.Errorf("after the outage: a holds %v, b holds %v", ha, hb)
	}
	for _, w := range []*outageMember{a, b} {
		for _, stop := range w.stops {
			stop() // while the server still runs
		}
	}
}

func hasCommon(a, b []int) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}
