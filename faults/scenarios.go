package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"time"
)

// Scenario is one fault scenario.
type Scenario struct {
	Name string
	Desc string
	run  func(s *Suite, e *env, rng *rand.Rand) error
}

// The shared pace of the scenarios: 2 workers sharing 6,000 units per
// minute (100 jobs/s), so 2,000 jobs drain in about 20 s and every fault
// lands mid-drain.
const (
	paceUnitsPerMinute = 6000
	pairInFlight       = 2 * 64 // max_in_flight of both workers
	// onTheWire bounds the acks sent but not yet applied when a server
	// goes: one second of calls at the pace.
	onTheWire    = paceUnitsPerMinute / 60
	drainTimeout = 4 * time.Minute
)

// Scenarios are the fault scenarios of `make faults`, in order.
func Scenarios() []Scenario {
	return []Scenario{
		{"kill-worker", "one of 2 workers gets SIGKILL at a random point mid-drain, 3 times, and is restarted each time", killWorker},
		{"restart-nats", "the NATS server (its own process) is stopped for 10 s mid-drain, then started again", restartNATS},
		{"target-500", "the target answers 500 for 20 s, then recovers", target500},
		{"target-hang", "for 10 s the target accepts calls and never answers; timeouts fire and the jobs are retried", targetHang},
		{"poison", "2% of the messages are malformed; exactly those are dead-lettered with the right reason", poison},
		{"sigterm", "SIGTERM with 100 jobs in flight; the worker exits within shutdown_timeout and a second worker finishes", sigterm},
		{"cluster-node-loss", "a 3-node JetStream cluster, stream at 3 replicas; the consumer leader gets SIGKILL mid-drain and returns 15 s later", clusterNodeLoss},
		{"kill-embedded", "the default setup: the queue embedded in the first of 2 workers, the second joining it; the first gets SIGKILL mid-drain, 2 times, and is restarted", killEmbedded},
		{"fleet-kv-outage", "2 workers in limiter.share.mode members coordinate through a NATS server of their own; it is stopped for 10 s mid-drain and started again", fleetKVOutage},
		{"poisoned-fleet", "3 workers in limiter.share.mode members; mid-drain the fleet state is overwritten with a pause a day ahead, a rate of 1e308 and null, then its bucket is deleted; the drain takes at most 1.5 times a clean one", poisonedFleet},
		{"hostile-target", "a target answering huge and malformed Retry-After values, 3xx, slow bodies and resets, and jobs of absurd cost: every job succeeds or is dead-lettered with its reason, no slot waits longer than backoff.cap", hostileTargetScenario},
	}
}

// FloodScenario is the throughput and memory benchmark (not in CI).
func FloodScenario() Scenario {
	return Scenario{"flood", "FloodJobs jobs drained at an unlimited rate into a fast target; RSS and jobs/s", flood}
}

// Run runs one scenario and returns its result. An error means the
// scenario could not be run at all.
func (s *Suite) Run(sc Scenario) (Result, error) {
	e, err := s.newEnv(sc.Name)
	if err != nil {
		return Result{Name: sc.Name}, err
	}
	defer e.close()
	rng := rand.New(rand.NewPCG(s.Seed, uint64(len(sc.Name))))
	if err := sc.run(s, e, rng); err != nil {
		return *e.res, err
	}
	return *e.res, nil
}

// standard starts one NATS server (or a cluster of 3), the target and its
// proxy, and publishes the jobs.
func (e *env) standard(nodes int, jobs []job) error {
	if err := e.startNATS(nodes); err != nil {
		return err
	}
	if err := e.setupQueue(nodes); err != nil {
		return err
	}
	if err := e.startTarget(); err != nil {
		return err
	}
	if err := e.publish(jobs); err != nil {
		return err
	}
	e.logf("%d jobs published", len(jobs))
	return nil
}

func validJobs(n int) []job {
	jobs := make([]job, n)
	for i := range jobs {
		jobs[i] = validJob(jobID(i))
	}
	return jobs
}

// startPair starts two workers sharing the budget.
func (e *env) startPair(o workerOpts) ([]*worker, error) {
	o.Instances, o.UnitsPerMinute = 2, paceUnitsPerMinute
	var ws []*worker
	for _, id := range []string{"w1", "w2"} {
		w, err := e.startWorker(id, o)
		if err != nil {
			return nil, err
		}
		ws = append(ws, w)
	}
	e.start = time.Now()
	return ws, nil
}

// killAndRestart waits for each fraction of the drain in points, then
// kills the worker pick chooses with SIGKILL and restarts it. pick also
// names the worker for the log and the result's notes.
func (e *env) killAndRestart(points []float64, pick func() (*worker, string)) error {
	for i, at := range points {
		if err := e.waitProgress(at, drainTimeout); err != nil {
			return err
		}
		w, name := pick()
		w.proc.Kill()
		e.logf("kill %d: SIGKILL %s (pid %d) at %.0f%% settled; restarting it", i+1, name, w.proc.Pid(), at*100)
		e.res.notef("kill %d: %s at %.0f%% settled", i+1, name, at*100)
		if err := e.runWorker(w); err != nil {
			return err
		}
	}
	return nil
}

// drainedClean waits for the drain, then finishes clean (finishClean).
func (e *env) drainedClean(dups int, why string) error {
	if err := e.waitDrained(drainTimeout); err != nil {
		return err
	}
	return e.finishClean(dups, why)
}

// finishClean stops everything and audits it, and checks that no job was
// dead-lettered and that at most dups jobs reached the target more than
// once, for the reason why.
func (e *env) finishClean(dups int, why string) error {
	if err := e.finish(); err != nil {
		return err
	}
	e.wantNoDead()
	e.wantDuplicatesAtMost(dups, why)
	return nil
}

// randomPoints returns n sorted fractions in [lo, hi], at least gap apart.
func randomPoints(rng *rand.Rand, n int, lo, hi, gap float64) []float64 {
	for {
		p := make([]float64, n)
		for i := range p {
			p[i] = lo + rng.Float64()*(hi-lo)
		}
		slices.Sort(p)
		ok := true
		for i := 1; i < n; i++ {
			ok = ok && p[i]-p[i-1] >= gap
		}
		if ok {
			return p
		}
	}
}

func killWorker(s *Suite, e *env, rng *rand.Rand) error {
	const kills, maxInFlight = 3, 64
	if err := e.standard(1, validJobs(s.Jobs)); err != nil {
		return err
	}
	// A target that answers after 300 ms: a killed worker has calls the
	// target accepted and it never acked, which come back as duplicates.
	e.proxy.SetDelay(300 * time.Millisecond)
	ws, err := e.startPair(workerOpts{MaxInFlight: maxInFlight, Setup: true})
	if err != nil {
		return err
	}
	pick := func() (*worker, string) {
		w := ws[rng.IntN(len(ws))]
		return w, w.id
	}
	if err := e.killAndRestart(randomPoints(rng, kills, 0.1, 0.75, 0.12), pick); err != nil {
		return err
	}
	return e.drainedClean(kills*maxInFlight, fmt.Sprintf("%d kills of a worker holding at most %d jobs", kills, maxInFlight))
}

func restartNATS(s *Suite, e *env, rng *rand.Rand) error {
	if err := e.standard(1, validJobs(s.Jobs)); err != nil {
		return err
	}
	if _, err := e.startPair(workerOpts{Setup: true}); err != nil {
		return err
	}
	at := 0.2 + rng.Float64()*0.3
	if err := e.waitProgress(at, drainTimeout); err != nil {
		return err
	}
	nd := e.nodes[0]
	clean := nd.proc.Stop(10 * time.Second)
	e.logf("nats stopped at %.0f%% settled (clean exit: %v); down for 10s", at*100, clean)
	time.Sleep(10 * time.Second)
	if err := e.startNode(nd); err != nil {
		return err
	}
	e.logf("nats started again")
	e.res.notef("nats stopped at %.0f%% settled, for 10s", at*100)
	return e.drainedClean(pairInFlight+onTheWire, "the jobs 2 workers hold when the server goes, and the acks on the wire")
}

// targetFault switches the proxy to mode for d at a random point
// mid-drain.
func targetFault(s *Suite, e *env, rng *rand.Rand, mode Mode, d time.Duration, o workerOpts) error {
	if err := e.standard(1, validJobs(s.Jobs)); err != nil {
		return err
	}
	o.Setup = true
	if _, err := e.startPair(o); err != nil {
		return err
	}
	at := 0.15 + rng.Float64()*0.25
	if err := e.waitProgress(at, drainTimeout); err != nil {
		return err
	}
	e.proxy.SetMode(mode)
	e.logf("target fault on at %.0f%% settled, for %s", at*100, d)
	time.Sleep(d)
	e.proxy.SetMode(Pass)
	e.logf("target recovered")
	return e.waitDrained(drainTimeout)
}

func target500(s *Suite, e *env, rng *rand.Rand) error {
	if err := targetFault(s, e, rng, Fail, 20*time.Second, workerOpts{}); err != nil {
		return err
	}
	failed := e.proxy.Failed.Load()
	if err := e.finishClean(0, "a call answered 500 never reached the target"); err != nil {
		return err
	}
	e.res.notef("%d calls answered 500", failed)
	if failed == 0 {
		e.res.failf("no call was answered 500: the fault missed the drain")
	}
	return nil
}

func targetHang(s *Suite, e *env, rng *rand.Rand) error {
	if err := targetFault(s, e, rng, Hang, 10*time.Second, workerOpts{TargetTimeout: 2 * time.Second}); err != nil {
		return err
	}
	hung, gaveUp := e.proxy.Hung.Load(), e.proxy.GaveUp.Load()
	if err := e.finishClean(0, "a held call never reached the target"); err != nil {
		return err
	}
	e.res.notef("%d calls held without an answer; the worker timed out on %d of them (target.timeout 2s)", hung, gaveUp)
	if hung == 0 || gaveUp == 0 {
		e.res.failf("no call timed out: the fault missed the drain")
	}
	return nil
}

// poisonKinds are the malformed messages of the poison scenario, with the
// reason each must be dead-lettered with.
var poisonKinds = []struct {
	reason string
	data   func(id string) []byte
}{
	{"bad_json", func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"headers":{"Sluice-Job-Id":%q},"body":`, id, id)
	}},
	{"bad_cost", func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"headers":{"Sluice-Job-Id":%q},"cost":-3}`, id, id)
	}},
	{"unknown_type", func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"type":"mystery","headers":{"Sluice-Job-Id":%q}}`, id, id)
	}},
	{"bad_path", func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"path":"//evil.example/steal","headers":{"Sluice-Job-Id":%q}}`, id, id)
	}},
	{"bad_path", func(id string) []byte {
		return fmt.Appendf(nil, `{"id":%q,"path":"http://169.254.169.254/latest/meta-data/","headers":{"Sluice-Job-Id":%q}}`, id, id)
	}},
}

func poison(s *Suite, e *env, rng *rand.Rand) error {
	jobs := validJobs(s.Jobs)
	nPoison := max(len(poisonKinds), s.Jobs/50) // 2%
	want := map[string]string{}
	for i, idx := range rng.Perm(len(jobs))[:nPoison] {
		k := poisonKinds[i%len(poisonKinds)]
		id := jobs[idx].id
		jobs[idx] = job{id: id, data: k.data(id)}
		want[id] = k.reason
	}
	if err := e.standard(1, jobs); err != nil {
		return err
	}
	if _, err := e.startPair(workerOpts{Setup: true, Strict: true}); err != nil {
		return err
	}
	if err := e.waitDrained(drainTimeout); err != nil {
		return err
	}
	if err := e.finish(); err != nil {
		return err
	}
	a := e.res.Audit
	if len(a.Dead) != len(want) {
		e.res.failf("dead=%d, want the %d poison messages", len(a.Dead), len(want))
	}
	wrong := 0
	for id, reason := range want {
		got, ok := a.Dead[id]
		if !ok || got != reason {
			if wrong < 5 {
				e.res.failf("poison job %s: dead-lettered with %q, want %q", id, got, reason)
			}
			wrong++
		}
	}
	for id, reason := range a.Dead {
		if _, ok := want[id]; !ok && wrong < 5 {
			e.res.failf("valid job %s dead-lettered (%s)", id, reason)
			wrong++
		}
	}
	e.res.notef("%d poison messages of %d", len(want), len(jobs))
	e.wantDuplicatesAtMost(0, "nothing failed but the poison")
	return nil
}

func sigterm(s *Suite, e *env, rng *rand.Rand) error {
	const maxInFlight = 100
	shutdown := 5 * time.Second
	if err := e.standard(1, validJobs(s.Jobs)); err != nil {
		return err
	}
	// A slow target (500 ms a call) so that some of the 100 jobs are in
	// the middle of their call when the signal comes.
	e.proxy.SetDelay(500 * time.Millisecond)
	o := workerOpts{Setup: true, MaxInFlight: maxInFlight, UnitsPerMinute: paceUnitsPerMinute, ShutdownTimeout: shutdown, Metrics: true}
	a, err := e.startWorker("w1", o)
	if err != nil {
		return err
	}
	e.start = time.Now()
	at := 0.1 + rng.Float64()*0.4
	if err := e.waitProgress(at, drainTimeout); err != nil {
		return err
	}
	var held int
	if err := WaitFor(context.Background(), "100 jobs in flight", 60*time.Second, 20*time.Millisecond, func() bool {
		n, err := inFlight(a.metricsPort)
		held = n
		return err == nil && n >= maxInFlight
	}); err != nil {
		return err
	}
	sent := time.Now()
	if err := a.proc.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-a.proc.Done():
	case <-time.After(shutdown + 10*time.Second):
		a.proc.Kill()
	}
	took := a.proc.ExitedAt().Sub(sent)
	e.logf("SIGTERM with %d in flight at %.0f%% settled; exited after %.2fs (status: %v)", held, at*100, took.Seconds(), a.proc.Err())
	e.res.notef("SIGTERM with %d in flight at %.0f%% settled; exit after %.2fs, shutdown_timeout %s", held, at*100, took.Seconds(), shutdown)
	if took > shutdown {
		e.res.failf("the worker took %.2fs to exit after SIGTERM, more than shutdown_timeout %s", took.Seconds(), shutdown)
	}
	if !a.proc.StoppedCleanlyBy(syscall.SIGTERM) {
		e.res.failf("the worker's exit after SIGTERM: %v, want exit status 143", a.proc.Err())
	}
	e.proxy.SetDelay(0)
	if _, err := e.startWorker("w2", o); err != nil {
		return err
	}
	return e.drainedClean(maxInFlight, "jobs in flight at SIGTERM")
}

func clusterNodeLoss(s *Suite, e *env, rng *rand.Rand) error {
	if err := e.standard(3, validJobs(s.Jobs)); err != nil {
		return err
	}
	// The stream is at 3 replicas: the workers must not set it up again
	// (sluice's setup would make it a single replica).
	if _, err := e.startPair(workerOpts{Setup: false}); err != nil {
		return err
	}
	at := 0.2 + rng.Float64()*0.3
	if err := e.waitProgress(at, drainTimeout); err != nil {
		return err
	}
	// The consumer's leader serves the workers' fetches and acks: losing
	// it is the hardest case.
	victim := e.nodes[rng.IntN(len(e.nodes))]
	sl, cl := e.leaders()
	for _, nd := range e.nodes {
		if nd.cfg.Name == cl {
			victim = nd
		}
	}
	victim.proc.Kill()
	e.logf("SIGKILL node %s at %.0f%% settled (stream leader %s, consumer leader %s); restarting it in 15s", victim.cfg.Name, at*100, sl, cl)
	e.res.notef("node %s killed at %.0f%% settled (stream leader %s, consumer leader %s), back 15s later", victim.cfg.Name, at*100, sl, cl)
	time.Sleep(15 * time.Second)
	if err := e.startNode(victim); err != nil {
		return err
	}
	e.logf("node %s restarted", victim.cfg.Name)
	return e.drainedClean(pairInFlight+onTheWire, "the jobs 2 workers hold when the node goes, and the acks on the wire")
}

func killEmbedded(s *Suite, e *env, rng *rand.Rand) error {
	const kills, maxInFlight = 2, 64
	port, err := FreePort()
	if err != nil {
		return err
	}
	e.embeddedPort = port
	if err := e.startTarget(); err != nil {
		return err
	}
	e.proxy.SetDelay(300 * time.Millisecond)
	o := workerOpts{Embedded: true, Setup: true, Instances: 2, UnitsPerMinute: paceUnitsPerMinute, MaxInFlight: maxInFlight}
	host, err := e.startWorker("w1", o)
	if err != nil {
		return err
	}
	if err := WaitFor(context.Background(), "the embedded server listening", 30*time.Second, 50*time.Millisecond, func() bool {
		return host.proc.Exited() || Listening(port)
	}); err != nil {
		return err
	}
	if err := e.setupQueue(1); err != nil {
		return err
	}
	if err := e.publish(validJobs(s.Jobs)); err != nil {
		return err
	}
	e.logf("%d jobs published", s.Jobs)
	if _, err := e.startWorker("w2", o); err != nil {
		return err
	}
	e.start = time.Now()
	pick := func() (*worker, string) { return host, host.id + " (with the embedded server)" }
	if err := e.killAndRestart(randomPoints(rng, kills, 0.15, 0.6, 0.2), pick); err != nil {
		return err
	}
	return e.drainedClean(kills*(2*maxInFlight+onTheWire), "each kill takes the queue away from both workers, and the acks on the wire")
}
