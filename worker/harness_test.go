package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/memory"
)

// handlerTarget sends requests straight to an http.Handler (no network, so
// it runs inside a synctest bubble) and classifies the answers with the
// default classifier. A handler that panics with errDrop makes Send fail as
// a network error; one that blocks past timeout is a timeout.
type handlerTarget struct {
	h       http.Handler
	timeout time.Duration
}

var errDrop = errors.New("connection reset")

func (t handlerTarget) Send(ctx context.Context, req call.Request) (resp call.Response, err error) {
	if t.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	r := httptest.NewRequestWithContext(ctx, req.Method, "http://target.test"+req.Path, bytes.NewReader(req.Body))
	for k, vs := range req.Header {
		r.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		t.h.ServeHTTP(rec, r)
	}()
	select {
	case p := <-done:
		if p == errDrop {
			return call.Response{}, errDrop
		} else if p != nil {
			panic(p)
		}
	case <-ctx.Done():
		<-done
		return call.Response{}, ctx.Err()
	}
	res := rec.Result()
	body, _ := io.ReadAll(res.Body)
	return call.Response{
		Status:  res.StatusCode,
		Header:  res.Header,
		Body:    body,
		Outcome: call.Classifier{}.Classify(res.StatusCode, res.Header, time.Now()),
	}, nil
}

// hit is one request the scripted target saw.
type hit struct {
	Method, Path, Body string
	Header             http.Header
	At                 time.Time
}

// script is a target whose answers are scripted per job id (the X-Job
// header each test job carries): the n-th request of a job gets
// answers[n] (the last answer repeats).
type script struct {
	mu      sync.Mutex
	answers map[string][]func(w http.ResponseWriter, r *http.Request)
	hits    map[string][]hit
	total   int
}

func newScript() *script {
	return &script{answers: map[string][]func(http.ResponseWriter, *http.Request){}, hits: map[string][]hit{}}
}

func (s *script) on(job string, answers ...func(w http.ResponseWriter, r *http.Request)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[job] = answers
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	job := r.Header.Get("X-Job")
	s.mu.Lock()
	n := len(s.hits[job])
	s.hits[job] = append(s.hits[job], hit{r.Method, r.URL.RequestURI(), string(body), r.Header.Clone(), time.Now()})
	s.total++
	answers := s.answers[job]
	s.mu.Unlock()
	if len(answers) == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	answers[min(n, len(answers)-1)](w, r)
}

func (s *script) requests(job string) []hit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]hit(nil), s.hits[job]...)
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func status(code int, body string, header ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

func drop(http.ResponseWriter, *http.Request) { panic(errDrop) }

// hang blocks until the request's context ends.
func hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// recordOutput keeps published records and, when q is set, the queue events
// that existed at the moment of each publish (to check ordering).
type recordOutput struct {
	mu      sync.Mutex
	records [][]byte
	keys    []string
	q       *memory.Queue
	before  [][]memory.Event
	fail    error
}

func (o *recordOutput) Publish(ctx context.Context, key string, data []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fail != nil {
		return o.fail
	}
	o.records = append(o.records, append([]byte(nil), data...))
	o.keys = append(o.keys, key)
	if o.q != nil {
		o.before = append(o.before, o.q.Events())
	}
	return nil
}

func (o *recordOutput) deadLetters(t *testing.T) []DeadLetter {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []DeadLetter
	for _, r := range o.records {
		var d DeadLetter
		if err := json.Unmarshal(r, &d); err != nil {
			t.Fatalf("dead letter %s: %v", r, err)
		}
		out = append(out, d)
	}
	return out
}

func (o *recordOutput) results(t *testing.T) []Result {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Result
	for _, r := range o.records {
		var d Result
		if err := json.Unmarshal(r, &d); err != nil {
			t.Fatalf("result %s: %v", r, err)
		}
		out = append(out, d)
	}
	return out
}

// gate is a fake limiter: Wait blocks until a unit is let through with
// open, or fails at once with reject when that is set.
type gate struct {
	mu       sync.Mutex
	reject   error
	block    bool
	ch       chan struct{}
	waits    int
	observed []call.Outcome
}

func (g *gate) Wait(ctx context.Context, units float64) (limiter.Ticket, error) {
	g.mu.Lock()
	g.waits++
	reject, block := g.reject, g.block
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	ch := g.ch
	g.mu.Unlock()
	if reject != nil {
		return limiter.Ticket{}, reject
	}
	if block {
		select {
		case <-ch:
		case <-ctx.Done():
			return limiter.Ticket{}, ctx.Err()
		}
	}
	return limiter.Ticket{Granted: time.Now(), Units: units}, nil
}

func (g *gate) Observe(_ limiter.Ticket, o call.Outcome) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.observed = append(g.observed, o)
}

// open lets every waiter through, now and later.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = make(chan struct{})
	}
	close(g.ch)
}

func (g *gate) waitCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waits
}

func (o *recordOutput) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.records)
}

// harness runs a worker on a memory queue inside a synctest bubble.
type harness struct {
	t      *testing.T
	q      *memory.Queue
	target *script
	res    *recordOutput
	dlq    *recordOutput
	lim    *gate
	w      *Worker
	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, cfg Config, qcfg memory.Config) *harness {
	t.Helper()
	q, err := memory.NewQueue(qcfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, q: q, target: newScript(), lim: &gate{}}
	h.res = &recordOutput{q: q}
	h.dlq = &recordOutput{q: q}
	if cfg.Jobs.Types == nil {
		cfg.Jobs = testJobs()
	}
	if cfg.ID == "" {
		cfg.ID = "w1"
	}
	if cfg.AckWait == 0 {
		cfg.AckWait = q.Config().AckWait
	}
	h.w, err = New(cfg, Deps{
		Source:      q.Source(),
		Target:      handlerTarget{h: h.target, timeout: 10 * time.Second},
		Limiter:     h.lim,
		Results:     h.res,
		DeadLetters: h.dlq,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.w.jitter = func() float64 { return 1 } // the ceiling, so waits are exact
	return h
}

// job publishes a JSON job whose requests carry X-Job: id.
func (h *harness) job(id string, fields map[string]any) {
	h.t.Helper()
	env := map[string]any{"id": id, "headers": map[string]string{"X-Job": id}}
	for k, v := range fields {
		env[k] = v
	}
	data, err := json.Marshal(env)
	if err != nil {
		h.t.Fatal(err)
	}
	h.publish(sources.Outgoing{ID: id, Data: data})
}

func (h *harness) publish(m sources.Outgoing) {
	h.t.Helper()
	if err := h.q.Publish(context.Background(), m); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- h.w.Run(ctx) }()
}

// stop cancels the worker and waits for Run to return.
func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Fatalf("Run: %v", err)
	}
}

// until advances the bubble's fake clock until cond holds (at most a fake
// day).
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(24 * time.Hour)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("timed out (fake clock) waiting for %s; events: %+v", what, h.q.Events())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// settled reports whether id has been acked or terminated.
func (h *harness) settled(id string) bool {
	for _, e := range h.q.Events() {
		if e.ID == id && (e.Kind == memory.EventAck || e.Kind == memory.EventTerm) {
			return true
		}
	}
	return false
}

// events returns the settlements of id, without InProgress.
func (h *harness) events(id string) []memory.Event {
	var out []memory.Event
	for _, e := range h.q.Events() {
		if e.ID == id && e.Kind != memory.EventInProgress {
			out = append(out, e)
		}
	}
	return out
}

func kinds(evs []memory.Event) []memory.EventKind {
	out := make([]memory.EventKind, len(evs))
	for i, e := range evs {
		out[i] = e.Kind
	}
	return out
}
