package faults

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Queue names: sluice's defaults.
const (
	stream     = "SLUICE"
	subject    = "sluice.jobs"
	deadStream = "SLUICE_DEAD"
	deadSubj   = "sluice.dead"
	consumer   = "sluice-worker"
	ackWait    = 5 * time.Second
)

// Suite runs fault scenarios against real processes.
type Suite struct {
	Sluice string // path to the sluice binary
	Self   string // path to this program's binary, for `natsd`
	Dir    string // work directory; one subdirectory per scenario
	Jobs   int    // jobs per scenario (at least 2,000 for the record)
	// FloodJobs is the flood benchmark's job count.
	FloodJobs int
	// FloodProfile, when set, is a directory where the flood writes the
	// worker's CPU profile (cpu.pprof, FloodCPUSeconds of the drain) and
	// its allocations since start (allocs.pprof, at the end of the drain).
	FloodProfile    string
	FloodCPUSeconds int
	Seed            uint64
	// Out receives the scenario lines, Log the progress.
	Out, Log io.Writer
}

// Result is a scenario's outcome.
type Result struct {
	Name      string
	Audit     Audit
	DrainedIn time.Duration
	// Notes are figures worth reporting (kills, faults injected).
	Notes []string
	// Failures are the pass criteria that did not hold.
	Failures []string
}

// Line is the scenario's summary line.
func (r Result) Line() string {
	return fmt.Sprintf("%s lost=%d duplicates=%d dead=%d drained_in=%.1f",
		r.Name, len(r.Audit.Lost), len(r.Audit.Duplicates), len(r.Audit.Dead), r.DrainedIn.Seconds())
}

// Passed reports whether every pass criterion held.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

func (r *Result) failf(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

func (r *Result) notef(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// node is one NATS server process.
type node struct {
	cfg  NodeConfig
	proc *Proc
}

// env is the running world of one scenario: NATS nodes, the target, the
// proxy in front of it, the workers, and this program's own connection.
type env struct {
	s     *Suite
	name  string
	dir   string
	res   *Result
	nodes []*node

	target    *Proc
	targetLog string
	proxy     *Proxy
	targetURL string // the testserver itself

	nc *nats.Conn
	js jetstream.JetStream

	mu      sync.Mutex
	workers map[string]*Proc
	all     []*Proc

	published []string
	start     time.Time

	// embeddedPort is the port of the NATS server embedded in the first
	// worker (0: the servers are nodes of their own).
	embeddedPort int
}

func (s *Suite) newEnv(name string) (*env, error) {
	dir := filepath.Join(s.Dir, name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &env{s: s, name: name, dir: dir, res: &Result{Name: name}, workers: map[string]*Proc{}}, nil
}

func (e *env) logf(format string, args ...any) {
	fmt.Fprintf(e.s.Log, "%s %s: %s\n", time.Now().Format("15:04:05.0"), e.name, fmt.Sprintf(format, args...))
}

// track remembers a process for the final cleanup.
func (e *env) track(p *Proc) *Proc {
	e.mu.Lock()
	e.all = append(e.all, p)
	e.mu.Unlock()
	return p
}

// close stops everything still running, by pid.
func (e *env) close() {
	if e.nc != nil {
		e.nc.Close()
	}
	if e.proxy != nil {
		e.proxy.Close()
	}
	e.mu.Lock()
	procs := append([]*Proc(nil), e.all...)
	e.mu.Unlock()
	for _, p := range procs {
		p.Stop(5 * time.Second)
	}
}

// startNATS starts n nodes: one server, or a cluster of n.
func (e *env) startNATS(n int) error {
	ports, err := FreePorts(2 * n)
	if err != nil {
		return err
	}
	for i := range n {
		c := NodeConfig{
			Name:     fmt.Sprintf("n%d", i+1),
			Port:     ports[2*i],
			StoreDir: filepath.Join(e.dir, fmt.Sprintf("nats-n%d", i+1)),
		}
		if n > 1 {
			c.Cluster = "faults"
			c.ClusterPort = ports[2*i+1]
			for j := range n {
				if j != i {
					c.Routes = append(c.Routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[2*j+1]))
				}
			}
		}
		e.nodes = append(e.nodes, &node{cfg: c})
	}
	for _, nd := range e.nodes {
		if err := e.startNode(nd); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) startNode(nd *node) error {
	p, err := Start(nd.cfg.Name, filepath.Join(e.dir, nd.cfg.Name+".log"), append([]string{e.s.Self}, nd.cfg.Args()...)...)
	if err != nil {
		return err
	}
	nd.proc = e.track(p)
	return WaitFor(context.Background(), "nats node "+nd.cfg.Name+" listening", 30*time.Second, 50*time.Millisecond, func() bool {
		return p.Exited() || Listening(nd.cfg.Port)
	})
}

// urls is the comma-separated client URLs of every node, or the embedded
// server's.
func (e *env) urls() string {
	if e.embeddedPort > 0 {
		return fmt.Sprintf("nats://127.0.0.1:%d", e.embeddedPort)
	}
	var u []string
	for _, nd := range e.nodes {
		u = append(u, fmt.Sprintf("nats://127.0.0.1:%d", nd.cfg.Port))
	}
	return strings.Join(u, ",")
}

// setupQueue connects and creates the job stream, the dead-letter stream
// and the consumer as sluice's setup does, with replicas copies each.
func (e *env) setupQueue(replicas int) error {
	nc, err := nats.Connect(e.urls(), nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond), nats.Name("faults"))
	if err != nil {
		return fmt.Errorf("faults: connect: %w", err)
	}
	e.nc = nc
	e.js, err = jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return err
	}
	// A fresh cluster takes a few seconds to elect its meta leader.
	return e.retry("set up the queue", 60*time.Second, func(ctx context.Context) error {
		if _, err := e.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: stream, Subjects: []string{subject}, Retention: jetstream.WorkQueuePolicy,
			Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute, Replicas: replicas,
		}); err != nil {
			return err
		}
		if _, err := e.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: deadStream, Subjects: []string{deadSubj}, Storage: jetstream.FileStorage, Replicas: replicas,
		}); err != nil {
			return err
		}
		_, err := e.js.CreateOrUpdateConsumer(ctx, stream, jetstream.ConsumerConfig{
			Durable: consumer, AckPolicy: jetstream.AckExplicitPolicy, AckWait: ackWait, MaxDeliver: -1,
		})
		return err
	})
}

// retry calls fn with a short deadline until it succeeds or timeout passes.
func (e *env) retry(what string, timeout time.Duration, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faults: %s: %w", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// job is one message to publish.
type job struct {
	id   string
	data []byte
}

// validJob is a well-formed envelope whose id reaches the target in the
// Sluice-Job-Id header, which the testserver logs.
func validJob(id string) job {
	return job{id: id, data: fmt.Appendf(nil, `{"id":%q,"headers":{"Sluice-Job-Id":%q},"body":{"n":%q}}`, id, id, id)}
}

func jobID(i int) string { return fmt.Sprintf("job-%07d", i) }

// publish publishes the jobs with their ids as Nats-Msg-Id, waits for
// every ack, and checks that the stream holds them all.
func (e *env) publish(jobs []job) error {
	if err := e.publishMore(jobs); err != nil {
		return err
	}
	return e.checkStored()
}

// publishMore publishes jobs without checking the stream afterwards.
func (e *env) publishMore(jobs []job) error {
	const chunk = 4096
	for lo := 0; lo < len(jobs); lo += chunk {
		part := jobs[lo:min(lo+chunk, len(jobs))]
		if err := e.retry("publish", 60*time.Second, func(ctx context.Context) error { return e.publishChunk(part) }); err != nil {
			return err
		}
		for _, j := range part {
			e.published = append(e.published, j.id)
		}
	}
	return nil
}

// checkStored checks that the stream holds every published job.
func (e *env) checkStored() error {
	var msgs uint64
	err := e.retry("stream info", 30*time.Second, func(ctx context.Context) error {
		st, err := e.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		msgs = st.CachedInfo().State.Msgs
		return nil
	})
	if err != nil {
		return err
	}
	if msgs != uint64(len(e.published)) {
		return fmt.Errorf("faults: the stream holds %d messages after publishing %d", msgs, len(e.published))
	}
	return nil
}

// publishChunk publishes jobs asynchronously and waits for every ack.
func (e *env) publishChunk(jobs []job) error {
	futs := make([]jetstream.PubAckFuture, 0, len(jobs))
	for _, j := range jobs {
		f, err := e.js.PublishMsgAsync(&nats.Msg{Subject: subject, Data: j.data, Header: nats.Header{jetstream.MsgIDHeader: {j.id}}})
		if err != nil {
			return err
		}
		futs = append(futs, f)
	}
	select {
	case <-e.js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		return errors.New("publish acks did not arrive within 30s")
	}
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		}
	}
	return nil
}

// leaders are the server names of the job stream's leader and of the
// consumer's leader ("" when unknown).
func (e *env) leaders() (streamLeader, consumerLeader string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if st, err := e.js.Stream(ctx, stream); err == nil && st.CachedInfo().Cluster != nil {
		streamLeader = st.CachedInfo().Cluster.Leader
	}
	if c, err := e.js.Consumer(ctx, stream, consumer); err == nil && c.CachedInfo().Cluster != nil {
		consumerLeader = c.CachedInfo().Cluster.Leader
	}
	return streamLeader, consumerLeader
}

// startTarget starts `sluice testserver` with a quota it never reaches,
// logging accepted ids, and the fault proxy in front of it.
func (e *env) startTarget() error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	e.targetLog = filepath.Join(e.dir, "accepted.log")
	p, err := Start("testserver", filepath.Join(e.dir, "testserver.log"), e.s.Sluice, "testserver",
		"--listen", fmt.Sprintf("127.0.0.1:%d", port), "--quota", "1e12", "--window", "1s", "--log", e.targetLog)
	if err != nil {
		return err
	}
	e.target = e.track(p)
	e.targetURL = fmt.Sprintf("http://127.0.0.1:%d", port)
	if err := WaitFor(context.Background(), "testserver listening", 20*time.Second, 50*time.Millisecond, func() bool {
		return p.Exited() || Listening(port)
	}); err != nil {
		return err
	}
	if p.Exited() {
		return fmt.Errorf("faults: testserver exited: %v (see %s)", p.Err(), p.LogPath)
	}
	e.proxy, err = NewProxy(e.targetURL)
	return err
}

// remaining is the number of jobs not yet settled: pending in the stream
// or delivered and not acked.
func (e *env) remaining() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := e.js.Consumer(ctx, stream, consumer)
	if err != nil {
		return 0, err
	}
	info := c.CachedInfo()
	// The stream keeps a job until it is acked or terminated (work-queue
	// retention), so its count is the ground truth. The consumer's count
	// alone once ended a cluster-node-loss drain with 273 jobs that had
	// not reached the target.
	st, err := e.js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	return max(int(info.NumPending)+info.NumAckPending, int(st.CachedInfo().State.Msgs)), nil
}

// waitProgress waits until at least frac of the jobs are settled.
func (e *env) waitProgress(frac float64, timeout time.Duration) error {
	total := len(e.published)
	return WaitFor(context.Background(), fmt.Sprintf("%.0f%% settled", frac*100), timeout, 100*time.Millisecond, func() bool {
		n, err := e.remaining()
		return err == nil && float64(total-n) >= frac*float64(total)
	})
}

// waitDrained waits until no job is pending or unacked, and records the
// drain time from e.start.
func (e *env) waitDrained(timeout time.Duration) error {
	err := WaitFor(context.Background(), "the queue to drain", timeout, 100*time.Millisecond, func() bool {
		n, err := e.remaining()
		return err == nil && n == 0
	})
	e.res.DrainedIn = time.Since(e.start)
	if err != nil {
		n, _ := e.remaining()
		e.res.failf("the queue did not drain within %s: %d jobs remain", timeout, n)
	}
	return nil
}

// deadLetters reads every record in the dead-letter stream.
func (e *env) deadLetters() ([]DeadLetter, error) {
	var out []DeadLetter
	err := e.retry("read the dead letters", 30*time.Second, func(ctx context.Context) error {
		out = out[:0]
		st, err := e.js.Stream(ctx, deadStream)
		if err != nil {
			return err
		}
		state := st.CachedInfo().State
		if state.Msgs == 0 {
			return nil
		}
		for seq := state.FirstSeq; seq <= state.LastSeq; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			d, err := ParseDeadLetter(m.Data)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// finish reads the dead letters, stops the workers and the target, and
// audits. (The dead letters are read first: with the queue embedded in a
// worker, it goes with the worker.)
func (e *env) finish() error {
	dead, err := e.deadLetters()
	if err != nil {
		return err
	}
	e.mu.Lock()
	workers := make(map[string]*Proc, len(e.workers))
	for k, v := range e.workers {
		workers[k] = v
	}
	e.mu.Unlock()
	for id, p := range workers {
		if !p.Stop(20 * time.Second) {
			e.res.failf("worker %s did not exit within 20s of SIGTERM", id)
		}
	}
	e.proxy.Close()
	e.proxy = nil
	e.target.Stop(10 * time.Second)
	f, err := os.Open(e.targetLog)
	if err != nil {
		return fmt.Errorf("faults: the target log: %w", err)
	}
	defer f.Close()
	accepted, err := Accepted(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return err
	}
	e.res.Audit = Check(e.published, accepted, dead)
	a := e.res.Audit
	if len(a.Lost) > 0 {
		e.res.failf("%d jobs lost (first: %s)", len(a.Lost), strings.Join(a.Lost[:min(5, len(a.Lost))], ", "))
	}
	for _, an := range a.Anomalies[:min(10, len(a.Anomalies))] {
		e.res.failf("%s", an)
	}
	if len(a.Duplicates) > 0 {
		e.res.notef("duplicates: %d jobs reached the target twice or more (%d extra calls)", len(a.Duplicates), a.ExtraCalls)
	}
	if len(a.Dead) > 0 {
		e.res.notef("dead letters by reason: %s", a.ReasonsText())
	}
	return nil
}

// wantNoDead fails the scenario if any job was dead-lettered.
func (e *env) wantNoDead() {
	if n := len(e.res.Audit.Dead); n > 0 {
		e.res.failf("dead=%d, want 0 (no poison in this scenario): %s", n, e.res.Audit.ReasonsText())
	}
}

// wantDuplicatesAtMost fails the scenario if more jobs than bound reached
// the target twice.
func (e *env) wantDuplicatesAtMost(bound int, why string) {
	if n := len(e.res.Audit.Duplicates); n > bound {
		e.res.failf("duplicates=%d, want <= %d (%s)", n, bound, why)
	}
}
