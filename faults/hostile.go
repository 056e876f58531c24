package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// hostileKind is how the hostile target treats one job, and what must
// become of the job.
type hostileKind struct {
	name string
	// dead is the dead-letter reason the job must end with; "" means it
	// must succeed (reach the target exactly once).
	dead string
	// first answers the job's first call instead of the target; nil
	// forwards every call. Later calls are forwarded.
	first func(w http.ResponseWriter, r *http.Request, h *hostileTarget)
	// always answers every call (the job never reaches the target).
	always func(w http.ResponseWriter, r *http.Request, h *hostileTarget)
	// cost is the job envelope's cost (0: none).
	cost float64
}

// malformedRetryAfter are Retry-After values no parser should trust.
var malformedRetryAfter = []string{
	"soon", "-5", "1e400", "99999999999999999999999", "Wed, 99 Foo 2026 25:61:61 GMT", "0x10",
	strings.Repeat("9", 4096), "1.5.5", " ", "NaN",
}

// hostileKinds are the job kinds of the hostile-target scenario with
// their share of the jobs, in percent; the rest are plain jobs.
var hostileKinds = []struct {
	kind    hostileKind
	percent int
}{
	{hostileKind{name: "huge-retry-after", first: func(w http.ResponseWriter, _ *http.Request, _ *hostileTarget) {
		w.Header().Set("Retry-After", "999999999")
		w.WriteHeader(http.StatusTooManyRequests)
	}}, 4},
	{hostileKind{name: "far-retry-after-date", first: func(w http.ResponseWriter, _ *http.Request, _ *hostileTarget) {
		w.Header().Set("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT")
		w.WriteHeader(http.StatusServiceUnavailable)
	}}, 3},
	{hostileKind{name: "malformed-retry-after", first: func(w http.ResponseWriter, _ *http.Request, h *hostileTarget) {
		w.Header().Set("Retry-After", malformedRetryAfter[h.seq.Add(1)%int64(len(malformedRetryAfter))])
		w.WriteHeader([]int{http.StatusTooManyRequests, http.StatusServiceUnavailable}[h.seq.Load()%2])
	}}, 5},
	{hostileKind{name: "redirect", dead: "redirect", always: func(w http.ResponseWriter, r *http.Request, h *hostileTarget) {
		w.Header().Set("Location", "http://169.254.169.254/latest/meta-data/")
		w.WriteHeader([]int{http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusFound}[h.seq.Add(1)%3])
	}}, 3},
	{hostileKind{name: "slow-body", first: func(w http.ResponseWriter, r *http.Request, h *hostileTarget) {
		// A 200 whose body trickles, a byte a second, past the timeout.
		w.WriteHeader(http.StatusOK)
		for range 60 {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-h.closing:
				return
			case <-time.After(time.Second):
			}
		}
	}}, 3},
	{hostileKind{name: "reset", first: func(w http.ResponseWriter, _ *http.Request, _ *hostileTarget) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // RST, not FIN
		}
		_ = conn.Close()
	}}, 3},
	{hostileKind{name: "absurd-cost", dead: "bad_cost", cost: 1e308}, 2},
	{hostileKind{name: "huge-cost", dead: "bad_cost", cost: 1e7}, 2},
}

// hostileTarget answers each job as its kind says and forwards the rest
// to the target (`sluice testserver`, whose log records accepted calls).
type hostileTarget struct {
	rp      *httputil.ReverseProxy
	srv     *http.Server
	ln      net.Listener
	closing chan struct{}
	kinds   map[string]*hostileKind // by job id
	seq     atomic.Int64

	mu    sync.Mutex
	calls map[string]int // calls per job id
}

func newHostileTarget(target string, kinds map[string]*hostileKind) (*hostileTarget, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &hostileTarget{ln: ln, closing: make(chan struct{}), kinds: kinds, calls: map[string]int{}}
	h.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() != nil {
				return // the worker gave up on the call: no one to answer
			}
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = h.srv.Serve(ln) }()
	return h, nil
}

func (h *hostileTarget) URL() string { return "http://" + h.ln.Addr().String() }

func (h *hostileTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Sluice-Job-Id")
	h.mu.Lock()
	h.calls[id]++
	n := h.calls[id]
	h.mu.Unlock()
	if k := h.kinds[id]; k != nil {
		switch {
		case k.always != nil:
			k.always(w, r, h)
			return
		case k.first != nil && n == 1:
			k.first(w, r, h)
			return
		}
	}
	h.rp.ServeHTTP(w, r)
}

func (h *hostileTarget) Close() {
	close(h.closing)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.srv.Shutdown(ctx)
}

// hostileJobs returns the jobs of the scenario and each special job's kind.
func hostileJobs(n int, rng *rand.Rand) ([]job, map[string]*hostileKind) {
	jobs := validJobs(n)
	kinds := map[string]*hostileKind{}
	perm := rng.Perm(n)
	next := 0
	for i := range hostileKinds {
		k := &hostileKinds[i].kind
		for range max(2, n*hostileKinds[i].percent/100) {
			id := jobs[perm[next]].id
			kinds[id] = k
			if k.cost > 0 {
				jobs[perm[next]].data = fmt.Appendf(nil, `{"id":%q,"headers":{"Sluice-Job-Id":%q},"cost":%g}`, id, id, k.cost)
			}
			next++
		}
	}
	return jobs, kinds
}

// hostileTargetScenario: a target that answers huge and malformed
// Retry-After values, redirects, slow bodies and connection resets, and a
// job mix with absurd costs. Every job must succeed or be dead-lettered
// with its reason, and no wait between two attempts may hold a slot for
// longer than backoff.cap (so no slot is held longer than backoff.cap plus
// one request timeout without a call in flight).
func hostileTargetScenario(s *Suite, e *env, rng *rand.Rand) error {
	jobs, kinds := hostileJobs(s.Jobs, rng)
	if err := e.standard(1, jobs); err != nil {
		return err
	}
	h, err := newHostileTarget(e.targetURL, kinds)
	if err != nil {
		return err
	}
	defer h.Close()
	o := workerOpts{Setup: true, Target: h.URL(), TrustJobCost: true, LogLevel: "debug", Metrics: true}
	ws, err := e.startPair(o)
	if err != nil {
		return err
	}
	if err := e.waitDrained(hostileDrainTimeout); err != nil {
		return err
	}
	var peak int64
	for _, w := range ws {
		peak = max(peak, PeakRSS(w.proc.Pid()))
	}
	if err := e.finish(); err != nil {
		return err
	}
	e.res.notef("worker peak RSS (VmHWM) %.1f MB", float64(peak)/(1<<20))
	e.wantKinds(kinds)
	workers := []string{"w1", "w2"}
	if err := e.wantDuplicatesOnlyAfterTimeouts(workers); err != nil {
		return err
	}
	longest, n, err := longestBackoff(e.dir, workers)
	if err != nil {
		return err
	}
	e.res.notef("longest wait between two attempts holding a slot: %s (%d waits; backoff.cap %s, target.timeout %s)",
		longest, n, hostileBackoffCap, workerOpts{}.withDefaults().TargetTimeout)
	if longest > hostileBackoffCap {
		e.res.failf("a slot was held %s between two attempts, more than backoff.cap %s", longest, hostileBackoffCap)
	}
	return nil
}

// hostileBackoffCap is worker.backoff.cap in the workers' config.
const hostileBackoffCap = 2 * time.Second

// hostileDrainTimeout is this scenario's time budget. Its checks are the
// suite's (lost=0, every job as its kind says, no slot held past
// backoff.cap); only its pace differs: the target's 429s with a malformed
// Retry-After (2.5% of the first calls) are believed, as any 429 without a
// usable wait is, so the limiter slows down as the target asks, and the
// drain took from 132 s to more than the suite's 4 minutes in the runs
// measured.
const hostileDrainTimeout = 6 * time.Minute

// wantKinds checks that each special job ended as its kind says and that
// every other job succeeded.
func (e *env) wantKinds(kinds map[string]*hostileKind) {
	a := e.res.Audit
	byKind := map[string][2]int{}
	wrong := 0
	for _, id := range e.published {
		k := kinds[id]
		want, name := "", "plain"
		if k != nil {
			want, name = k.dead, k.name
		}
		got, dead := a.Dead[id]
		c := byKind[name]
		c[0]++
		if (want == "" && dead) || (want != "" && got != want) {
			if wrong < 5 {
				e.res.failf("%s job %s: dead-lettered %v with %q, want %q", name, id, dead, got, want)
			}
			wrong++
		} else {
			c[1]++
		}
		byKind[name] = c
	}
	var parts []string
	for _, k := range append([]string{"plain"}, hostileNames()...) {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, byKind[k][1], byKind[k][0]))
	}
	e.res.notef("jobs as expected, by kind: %s", strings.Join(parts, ", "))
}

func hostileNames() []string {
	var out []string
	for _, k := range hostileKinds {
		out = append(out, k.kind.name)
	}
	return out
}

// wantDuplicatesOnlyAfterTimeouts fails the scenario for each job that
// reached the target more often than one call plus the calls a worker gave
// up on after the whole target.timeout with no answer at all (its "target
// call failed" debug line: a deadline, a latency of at least the timeout).
// Such a call may have reached the target before the worker stopped
// waiting (a machine that stalls for longer than the timeout makes a few),
// and sending the job again is the at-least-once contract; a call that was
// answered, by the hostile target or by the real one, must never be
// repeated.
func (e *env) wantDuplicatesOnlyAfterTimeouts(workers []string) error {
	timeout := workerOpts{}.withDefaults().TargetTimeout
	unanswered := map[string]int{}
	err := scanLogs(e.dir, workers, func(w string, line []byte) error {
		var l struct {
			Msg     string          `json:"msg"`
			Job     string          `json:"job"`
			Err     string          `json:"err"`
			Latency json.RawMessage `json:"latency"`
		}
		if json.Unmarshal(line, &l) != nil || l.Msg != "target call failed" || !strings.Contains(l.Err, "deadline exceeded") {
			return nil
		}
		// Only a call that waited the whole timeout: one that gave up
		// sooner is a worker's fault, not the machine's.
		d, err := logDuration(l.Latency)
		if err != nil {
			return fmt.Errorf("faults: %s.log: latency %s: %w", w, l.Latency, err)
		}
		if d >= timeout {
			unanswered[l.Job]++
		}
		return nil
	})
	if err != nil {
		return err
	}
	a := e.res.Audit
	var wrong []string
	timedOut := 0
	for _, id := range a.Duplicates {
		if extra := a.Accepted[id] - 1; extra > unanswered[id] {
			wrong = append(wrong, fmt.Sprintf("%s (%d calls, %d unanswered)", id, a.Accepted[id], unanswered[id]))
		} else {
			timedOut++
		}
	}
	if timedOut > 0 {
		e.res.notef("%d of the duplicates follow a call that got no answer within target.timeout", timedOut)
	}
	if len(wrong) > 0 {
		e.res.failf("%d jobs reached the target again after an answered call, want 0 (no hostile answer reaches the target): %s",
			len(wrong), strings.Join(wrong[:min(5, len(wrong))], ", "))
	}
	return nil
}

// longestBackoff reads the workers' JSON logs and returns the longest wait
// between two attempts of one delivery (the "backing off" lines) and how
// many there were.
func longestBackoff(dir string, workers []string) (time.Duration, int, error) {
	var longest time.Duration
	n := 0
	err := scanLogs(dir, workers, func(w string, line []byte) error {
		var l struct {
			Msg  string          `json:"msg"`
			Wait json.RawMessage `json:"wait"`
		}
		if json.Unmarshal(line, &l) != nil || l.Msg != "backing off" {
			return nil
		}
		d, err := logDuration(l.Wait)
		if err != nil {
			return fmt.Errorf("faults: %s.log: wait %s: %w", w, l.Wait, err)
		}
		longest = max(longest, d)
		n++
		return nil
	})
	return longest, n, err
}

// scanLogs calls fn with each line of the workers' logs, in dir as
// <worker>.log, and stops at the first error.
func scanLogs(dir string, workers []string, fn func(worker string, line []byte) error) error {
	for _, w := range workers {
		f, err := os.Open(filepath.Join(dir, w+".log"))
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if err := fn(w, sc.Bytes()); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return err
		}
	}
	return nil
}

// logDuration reads a duration from a JSON log: seconds as a number, or a
// Go duration string.
func logDuration(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if err := json.Unmarshal(raw, &secs); err == nil {
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, err
	}
	return time.ParseDuration(s)
}
