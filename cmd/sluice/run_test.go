package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/dlq"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// These tests run the whole of `sluice run` in-process: an embedded
// JetStream server (random port, temporary store), the real HTTP sink
// against an httptest target, the real limiter and outputs. They wait on
// real network events, so they poll with generous deadlines.

// e2eConfig is a config for a worker on natsURL calling target, with short
// backoffs and no metrics endpoint.
func e2eConfig(t *testing.T, natsURL, target string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Source.JetStream.URL = natsURL
	cfg.Source.JetStream.FetchWait = 200 * time.Millisecond
	cfg.Target.BaseURL = target
	cfg.Target.Timeout = 5 * time.Second
	cfg.Metrics.Listen = config.OpsListenOff
	cfg.Limiter.Disabled = true
	cfg.Worker.Backoff = config.Backoff{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}
	cfg.Worker.RejectedDelay = 50 * time.Millisecond
	cfg.Worker.MaxRedeliveryDelay = 100 * time.Millisecond
	cfg.Worker.ShutdownTimeout = 2 * time.Second
	return cfg
}

func mustValid(t *testing.T, cfg config.Config) config.Config {
	t.Helper()
	if err := cfg.Check(true); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// running is a worker started with run.Worker.
type running struct {
	cancel context.CancelFunc
	done   chan error
}

func startRun(t *testing.T, cfg config.Config, log *slog.Logger) *running {
	return startRunReg(t, cfg, log, prometheus.NewRegistry())
}

func startRunReg(t *testing.T, cfg config.Config, log *slog.Logger, reg *prometheus.Registry) *running {
	return startRunWith(t, cfg, false, log, reg)
}

// startRunWith is startRunReg with `sluice run --ui` when ui is set.
func startRunWith(t *testing.T, cfg config.Config, ui bool, log *slog.Logger, reg *prometheus.Registry) *running {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1)}
	go func() {
		r.done <- run.Worker(ctx, cfg, run.Options{UI: ui, Registry: reg, Log: log, Version: currentVersion()})
	}()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("run.Worker: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("run.Worker did not return within 30s of cancel")
	}
}

// client opens a second connection to the queue, as `sluice enqueue` does.
func client(t *testing.T, cfg config.Config) *natsjs.Source {
	t.Helper()
	src, err := run.OpenJetStream(context.Background(), cfg.Source.JetStream, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

func enqueueJob(t *testing.T, src sources.Source, id string, env map[string]any) {
	t.Helper()
	if env == nil {
		env = map[string]any{}
	}
	if _, ok := env["id"]; !ok {
		env["id"] = id
	}
	data, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	enqueueRawJob(t, src, id, data)
}

func enqueueRawJob(t *testing.T, src sources.Source, id string, data []byte) {
	t.Helper()
	if err := src.Publish(context.Background(), sources.Outgoing{ID: id, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// drained reports whether the queue has nothing pending or in flight. The
// stream must be empty too: the consumer's pending count can lag a publish
// that the stream has already acked, so a job just enqueued may not show
// in it yet (work-queue retention removes a message once it is settled).
func drained(t *testing.T, src *natsjs.Source) bool {
	st, err := src.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Pending != 0 || st.AckPending != 0 {
		return false
	}
	info, err := src.JetStream().Stream(context.Background(), src.Config().Stream)
	if err != nil {
		t.Fatal(err)
	}
	return info.CachedInfo().State.Msgs == 0
}

// deadLetters reads every record of the dead-letter stream, as
// `sluice dlq replay` does.
func deadLetters(t *testing.T, cfg config.Config) map[string]worker.DeadLetter {
	t.Helper()
	r, err := dlq.Open(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	out := map[string]worker.DeadLetter{}
	err = r.Each(context.Background(), func(d worker.DeadLetter) error {
		out[d.ID] = d
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// apiLog is a target that records each request by job id (X-Job header)
// and answers as told for that id (200 by default).
type apiLog struct {
	mu      sync.Mutex
	hits    map[string]int
	done    map[string]int // requests answered 2xx, in full
	answers map[string]func(n int, w http.ResponseWriter, r *http.Request)
}

func newAPILog() *apiLog {
	return &apiLog{hits: map[string]int{}, done: map[string]int{}, answers: map[string]func(int, http.ResponseWriter, *http.Request){}}
}

func (a *apiLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	id := r.Header.Get("X-Job")
	a.mu.Lock()
	a.hits[id]++
	n := a.hits[id]
	answer := a.answers[id]
	a.mu.Unlock()
	if answer != nil {
		answer(n, w, r)
		return
	}
	w.WriteHeader(http.StatusOK)
	a.mu.Lock()
	a.done[id]++
	a.mu.Unlock()
}

func (a *apiLog) count(id string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[id]
}

func (a *apiLog) distinct() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.hits)
}

// The decision table through the real pieces: a success with its result
// record, a 404 dead-lettered with its status and body excerpt, a 503 that
// succeeds on a later attempt, a throttle that exhausts its deliveries, and
// invalid jobs dead-lettered at once.
func TestRunEndToEnd(t *testing.T) {
	natsURL := backends.StartNATS(t)
	api := newAPILog()
	api.answers["missing"] = func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such item", http.StatusNotFound)
	}
	api.answers["flaky"] = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("ETag", `"abc"`)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"created":true}`)
	}
	api.answers["throttled"] = func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}
	target := httptest.NewServer(api)
	defer target.Close()

	cfg := e2eConfig(t, natsURL, target.URL)
	resultsPath := filepath.Join(t.TempDir(), "results.jsonl")
	cfg.Results = config.Results{Kind: config.OutputJSONL, Path: resultsPath, Headers: []string{"ETag"}}
	cfg.Worker.MaxAttempts = 2
	cfg.Worker.MaxDeliveries = 3
	cfg.Jobs.Strict = true
	cfg.Jobs.Types = map[string]config.JobType{"default": {Path: "/items"}, "export": {Method: "PUT", Path: "/exports"}}
	mustValid(t, cfg)

	q := client(t, cfg)
	for i := range 50 {
		enqueueJob(t, q, fmt.Sprint("ok-", i), map[string]any{"headers": map[string]string{"X-Job": fmt.Sprint("ok-", i)}})
	}
	enqueueJob(t, q, "missing", map[string]any{"headers": map[string]string{"X-Job": "missing"}})
	enqueueJob(t, q, "flaky", map[string]any{"type": "export", "headers": map[string]string{"X-Job": "flaky"}})
	enqueueJob(t, q, "throttled", map[string]any{"headers": map[string]string{"X-Job": "throttled"}})
	enqueueRawJob(t, q, "garbage", []byte(`{"id": "garbage", `))
	enqueueJob(t, q, "unknown-type", map[string]any{"type": "nope"})
	enqueueJob(t, q, "neg-cost", map[string]any{"cost": -1})

	startRun(t, cfg, nil)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })

	for i := range 50 {
		if n := api.count(fmt.Sprint("ok-", i)); n != 1 {
			t.Errorf("ok-%d reached the target %d times, want 1", i, n)
		}
	}
	if n := api.count("missing"); n != 1 {
		t.Errorf("404 job was sent %d times, want 1", n)
	}
	if n := api.count("flaky"); n != 3 {
		t.Errorf("flaky job was sent %d times, want 3", n)
	}
	if n := api.count("throttled"); n != 6 {
		t.Errorf("throttled job was sent %d times, want 6 (2 attempts × 3 deliveries)", n)
	}

	dl := deadLetters(t, cfg)
	want := map[string]string{
		"missing": worker.ReasonClientError.String(), "throttled": worker.ReasonMaxDeliveries.String(),
		"garbage": worker.ReasonBadJSON.String(), "unknown-type": worker.ReasonUnknownType.String(), "neg-cost": worker.ReasonBadCost.String(),
	}
	if len(dl) != len(want) {
		t.Errorf("dead letters: %v", dl)
	}
	for id, reason := range want {
		if dl[id].Reason != reason {
			t.Errorf("dead letter %s: reason %q, want %q", id, dl[id].Reason, reason)
		}
	}
	if d := dl["missing"]; d.Status != 404 || !strings.Contains(d.BodyExcerpt, "no such item") || d.Attempts != 1 {
		t.Errorf("404 dead letter = %+v", d)
	}
	if d := dl["throttled"]; d.Status != 429 || d.Deliveries != 3 || d.Attempts != 2 {
		t.Errorf("throttled dead letter = %+v", d)
	}

	data, err := os.ReadFile(resultsPath)
	if err != nil {
		t.Fatal(err)
	}
	var results []worker.Result
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var r worker.Result
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("result %s: %v", line, err)
		}
		results = append(results, r)
	}
	if len(results) != 51 {
		t.Errorf("results = %d, want 51", len(results))
	}
	for _, r := range results {
		if r.ID == "flaky" && (r.Status != 201 || r.Body != `{"created":true}` || r.Headers["Etag"] != `"abc"`) {
			t.Errorf("flaky result = %+v", r)
		}
	}
}

// Paths that try to leave the target are dead-lettered and never sent: a
// second server on another port sees nothing.
func TestRunSSRF(t *testing.T) {
	natsURL := backends.StartNATS(t)
	api := newAPILog()
	target := httptest.NewServer(api)
	defer target.Close()
	var otherHits int
	var mu sync.Mutex
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		otherHits++
		mu.Unlock()
	}))
	defer other.Close()
	otherHost := strings.TrimPrefix(other.URL, "http://")

	cfg := mustValid(t, e2eConfig(t, natsURL, target.URL+"/api"))
	q := client(t, cfg)
	paths := map[string]string{
		"metadata":        "http://169.254.169.254/",
		"scheme-relative": "//evil.example/x",
		"other-scheme":    "https://other/",
		"at-host":         "@" + otherHost + "/x",
		"other-absolute":  other.URL + "/x",
		"other-relative":  "//" + otherHost + "/x",
		"dot-dot":         "/../x",
		"encoded-dot-dot": "/%2e%2e/%2e%2e/x",
		"backslash":       "/\\\\" + otherHost + "/x",
	}
	for id, p := range paths {
		enqueueJob(t, q, id, map[string]any{"path": p, "headers": map[string]string{"X-Job": id}})
	}
	enqueueJob(t, q, "fine", map[string]any{"path": "/items/1", "headers": map[string]string{"X-Job": "fine"}})

	startRun(t, cfg, nil)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })

	mu.Lock()
	if otherHits != 0 {
		t.Errorf("the other server saw %d requests", otherHits)
	}
	mu.Unlock()
	if api.distinct() != 1 || api.count("fine") != 1 {
		t.Errorf("target saw %v, want only the fine job", api.hits)
	}
	dl := deadLetters(t, cfg)
	for id := range paths {
		d, ok := dl[id]
		if !ok {
			t.Errorf("%s (%q) was not dead-lettered", id, paths[id])
			continue
		}
		if d.Reason != worker.ReasonBadPath.String() && d.Reason != worker.ReasonInvalidRequest.String() {
			t.Errorf("%s: reason %q, want bad_path or invalid_request", id, d.Reason)
		}
	}
}

// 200 jobs in flight or waiting when the worker is stopped: each is either
// acked exactly once or available for redelivery, and a restarted worker
// finishes them all.
func TestRunShutdownLosesNothing(t *testing.T) {
	natsURL := backends.StartNATS(t)
	api := newAPILog()
	release := make(chan struct{})
	var mu sync.Mutex
	completedRun1 := map[string]bool{}
	run := 1
	slow := func(_ int, w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Job")
		mu.Lock()
		cur := run
		mu.Unlock()
		if cur == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		w.WriteHeader(http.StatusOK)
		mu.Lock()
		if cur == 1 {
			completedRun1[id] = true
		}
		mu.Unlock()
	}
	for i := range 200 {
		api.answers[fmt.Sprint("j", i)] = slow
	}
	target := httptest.NewServer(api)
	defer target.Close()

	cfg := e2eConfig(t, natsURL, target.URL)
	cfg.Worker.MaxInFlight = 200
	cfg.Worker.ShutdownTimeout = time.Second
	// The target holds each request until the test releases it. A request
	// that timed out while held could still take a release: the target
	// would count it completed while the worker had already given it up,
	// and the wait for 10 settled jobs below would never end. No request
	// times out before the test's waits do.
	cfg.Target.Timeout = 5 * time.Minute
	// A limiter that lets 40 jobs through at once and then one per
	// second: most jobs wait in its queue when the worker stops.
	cfg.Limiter.Disabled = false
	cfg.Limiter.InitialUnitsPerMinute = 60
	cfg.Limiter.Burst = 40 * time.Second
	mustValid(t, cfg)

	q := client(t, cfg)
	for i := range 200 {
		enqueueJob(t, q, fmt.Sprint("j", i), map[string]any{"headers": map[string]string{"X-Job": fmt.Sprint("j", i)}})
	}
	reg1 := prometheus.NewRegistry()
	r1 := startRunReg(t, cfg, nil, reg1)
	testkit.Eventually(t, "40 requests in flight", func() bool { return api.distinct() >= 40 })
	// Let 10 requests finish, so some jobs are acked before the stop.
	for range 10 {
		release <- struct{}{}
	}
	testkit.Eventually(t, "10 jobs completed", func() bool { mu.Lock(); defer mu.Unlock(); return len(completedRun1) == 10 })
	// The target has answered them; the stop comes once the worker has
	// settled them too, not while an answer is still on its way to it.
	testkit.EventuallyState(t, "10 jobs settled", func() (bool, string) {
		o := jobOutcomes(t, reg1)
		return o[worker.OutcomeSucceeded.String()] == 10, fmt.Sprintf("outcomes %v", o)
	})
	r1.stop(t)

	// Every job the first worker held was settled: acked after its
	// request completed, or handed back (Nak with no delay) because it
	// was waiting for units or its request was cut at shutdown_timeout.
	outcomes := jobOutcomes(t, reg1)
	mu.Lock()
	acked := len(completedRun1)
	mu.Unlock()
	if outcomes[worker.OutcomeSucceeded.String()] != acked || outcomes[worker.OutcomeReleased.String()] != 200-acked || len(outcomes) != 2 {
		t.Errorf("first run settled %v; want %d succeeded and %d released, nothing else", outcomes, acked, 200-acked)
	}

	mu.Lock()
	run = 2
	mu.Unlock()
	cfg.Limiter.Disabled = true
	startRun(t, cfg, nil)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	for i := range 200 {
		id := fmt.Sprint("j", i)
		mu.Lock()
		doneBefore := completedRun1[id]
		mu.Unlock()
		n := api.count(id)
		switch {
		case n == 0:
			t.Errorf("%s never reached the target", id)
		case doneBefore && n != 1:
			t.Errorf("%s was acked in the first run but sent %d times", id, n)
		}
	}
}

// jobOutcomes sums sluice_jobs_total by outcome.
func jobOutcomes(t *testing.T, reg *prometheus.Registry) map[string]int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, mf := range mfs {
		if mf.GetName() != "sluice_jobs_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" {
					out[l.GetValue()] += int(m.GetCounter().GetValue())
				}
			}
		}
	}
	return out
}

// loadWithLogs writes src to file, loads it, and returns a logger built
// from its log section that writes into the returned buffer, so a test can
// search everything the run logged.
func loadWithLogs(t *testing.T, file, src string) (config.Config, *slog.Logger, *testkit.SyncBuffer) {
	t.Helper()
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(file, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testkit.SyncBuffer{}
	log, err := run.NewLogger(logs, cfg.Log.Format, cfg.Log.Level)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, log, logs
}

// cancelOn is a slog.Handler that cancels a context when a record with
// its message is logged.
type cancelOn struct {
	msg    string
	cancel context.CancelFunc
}

func (h cancelOn) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOn) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h cancelOn) WithGroup(string) slog.Handler            { return h }
func (h cancelOn) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.cancel()
	}
	return nil
}

// A worker stopped while it starts (its source connected, its streams and
// outputs not yet made) returns nil: a stop is not a failure, whenever it
// comes (TestRunShareRemembers failed under load with "dead_letters:
// natsout: stream SLUICE_DEAD: context canceled").
func TestRunStoppedWhileStarting(t *testing.T) {
	natsURL := backends.StartNATS(t)
	cfg := mustValid(t, e2eConfig(t, natsURL, "http://127.0.0.1:1/"))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	log := slog.New(cancelOn{msg: "nats connected", cancel: cancel})
	if err := run.Worker(ctx, cfg, run.Options{Log: log}); err != nil {
		t.Errorf("run.Worker stopped while it started: %v, want nil", err)
	}
	if ctx.Err() == nil {
		t.Fatal("the source never logged that it connected: the test stopped nothing")
	}
}
