package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// TestScrapeRunningSluice starts `sluice run` in-process on the embedded
// JetStream default (random port, temporary store), feeds it jobs that
// succeed, get throttled, fail and are dead-lettered, and scrapes it as
// Prometheus would: /readyz goes ready, and /metrics carries every metric
// docs/operations.md documents, and nothing undocumented. It waits on a real
// server and a real network, so it polls with generous deadlines.
func TestScrapeRunningSluice(t *testing.T) {
	const token = "scrape-test-secret-7f3a"
	t.Setenv("SCRAPE_TEST_TOKEN", token)
	target := newScrapeTarget(token)
	defer target.Close()

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "sluice.yaml")
	cfgText := fmt.Sprintf(`
source:
  jetstream:
    url: embedded
    embedded: {store_dir: %q, port: -1}
    fetch_wait: 200ms
target:
  base_url: %s
  headers:
    Authorization: "Bearer ${SCRAPE_TEST_TOKEN}"
worker:
  max_attempts: 2
  max_deliveries: 2
  backoff: {base: 10ms, cap: 50ms}
  max_redelivery_delay: 100ms
  shutdown_timeout: 5s
metrics:
  listen: 127.0.0.1:0
log:
  format: json
  level: info
`, filepath.Join(dir, "data"), target.URL)
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startLoggedRun(t, "run", "-c", cfgPath)
	nurl := r.await("embedded nats server started", "url")
	addr := r.await("ops endpoints listening", "addr")
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Errorf("ops endpoints on %s, want loopback", addr)
	}
	base := "http://" + addr

	// /healthz answers at once; /readyz goes ready once the queue is
	// connected and the target resolves.
	if code, _ := testkit.Get(t, base+"/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	testkit.EventuallyState(t, "/readyz to answer 200", func() (bool, string) {
		code, body := testkit.Get(t, base+"/readyz")
		return code == 200, fmt.Sprintf("%d %s", code, body)
	})
	enqueueScrapeJobs(t, nurl)

	// Wait until every job is settled for good: 4 succeeded, 2 dead-lettered
	// (a 400 at once, the 503 at its second delivery), nothing pending.
	var fams map[string]*dto.MetricFamily
	testkit.EventuallyState(t, "every job to be settled", func() (bool, string) {
		fams = scrape(t, base)
		ok := sumOf(fams, "sluice_jobs_total", "outcome", "succeeded")
		dead := sumOf(fams, "sluice_jobs_total", "outcome", "dead_lettered")
		pending := sumOf(fams, "sluice_source_pending", "", "")
		inFlight := sumOf(fams, "sluice_jobs_in_flight", "", "")
		deadHeld := sumOf(fams, "sluice_source_dead_letters", "", "")
		return ok == 4 && dead == 2 && pending == 0 && inFlight == 0 && deadHeld == 2,
			fmt.Sprintf("succeeded %v, dead-lettered %v, pending %v, in flight %v, dead letters held %v", ok, dead, pending, inFlight, deadHeld)
	})
	checkDocumentedMetrics(t, fams)
	checkPromisedMetrics(t, fams)
	if n := target.badAuth.Load(); n > 0 {
		t.Errorf("%d requests without the configured Authorization header", n)
	}
	_, raw := testkit.Get(t, base+"/metrics")
	if strings.Contains(raw, token) {
		t.Error("the token appears in /metrics")
	}
	lintMetrics(t, raw)

	r.stop()
	if strings.Contains(r.logs(), token) {
		t.Error("the token appears in the log")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after sluice run returned", addr)
	}
}

// scrapeTarget is the target of TestScrapeRunningSluice: /ok answers 200,
// /flaky 429 once then 200, /bad 400, /boom 503 (no Retry-After: a server
// error, not a throttle). It counts the requests without the token.
type scrapeTarget struct {
	*httptest.Server
	badAuth atomic.Int64
}

func newScrapeTarget(token string) *scrapeTarget {
	var mu sync.Mutex
	calls := map[string]int{}
	st := &scrapeTarget{}
	st.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		n := calls[r.URL.Path]
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+token {
			st.badAuth.Add(1)
		}
		switch {
		case r.URL.Path == "/ok", r.URL.Path == "/flaky" && n > 1:
			io.WriteString(w, `{"ok":true}`)
		case r.URL.Path == "/flaky":
			w.WriteHeader(http.StatusTooManyRequests)
		case r.URL.Path == "/bad":
			http.Error(w, "no such record", http.StatusBadRequest)
		default:
			http.Error(w, "down", http.StatusServiceUnavailable)
		}
	}))
	return st
}

// enqueueScrapeJobs publishes the jobs of TestScrapeRunningSluice through
// a second connection, as `sluice enqueue` would.
func enqueueScrapeJobs(t *testing.T, natsURL string) {
	t.Helper()
	client, err := natsjs.Open(t.Context(), natsjs.Config{URL: natsURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	jobs := map[string]string{"ok-1": "/ok", "ok-2": "/ok", "ok-3": "/ok", "flaky-1": "/flaky", "bad-1": "/bad", "boom-1": "/boom"}
	for id, path := range jobs {
		data, _ := json.Marshal(map[string]any{"id": id, "type": "default", "path": path})
		if err := client.Publish(t.Context(), sources.Outgoing{ID: id, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkDocumentedMetrics: every metric docs/operations.md documents is
// scraped, and every sluice_ metric scraped is documented.
func checkDocumentedMetrics(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	documented := testkit.DocumentedMetrics(t, "../../docs/operations.md")
	var missing, undocumented []string
	for name, required := range documented {
		if required && fams[name] == nil {
			missing = append(missing, name)
		}
	}
	for name := range fams {
		if _, ok := documented[name]; strings.HasPrefix(name, "sluice_") && !ok {
			undocumented = append(undocumented, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(undocumented)
	if len(missing) > 0 {
		t.Errorf("documented in docs/operations.md but not scraped: %v", missing)
	}
	if len(undocumented) > 0 {
		t.Errorf("scraped but not documented in docs/operations.md: %v", undocumented)
	}
}

// checkPromisedMetrics: the names the design lists under observability
// (rate, tokens, queue, units, throttles by status, wait histogram,
// rejections by reason, pause, instances; jobs by outcome and type;
// attempts by result; latency by status class; in flight) are there with
// the labels it promises, and the counts of TestScrapeRunningSluice's jobs.
func checkPromisedMetrics(t *testing.T, fams map[string]*dto.MetricFamily) {
	t.Helper()
	for name, labels := range map[string][]string{
		"sluice_limiter_rate_units_per_minute": nil, "sluice_limiter_tokens": nil,
		"sluice_limiter_queue_length": nil, "sluice_limiter_units_total": nil,
		"sluice_limiter_throttles_total": {"status"}, "sluice_limiter_wait_seconds": nil,
		"sluice_limiter_rejections_total": {"reason"}, "sluice_limiter_paused": nil,
		"sluice_limiter_instances": nil, "sluice_jobs_total": {"outcome", "type"},
		"sluice_attempts_total": {"result"}, "sluice_target_latency_seconds": {"status_class"},
		"sluice_jobs_in_flight": nil, "sluice_budget_saturation": nil,
	} {
		f := fams[name]
		if f == nil {
			t.Errorf("%s not scraped", name)
			continue
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help text", name)
		}
		for _, l := range labels {
			if !hasLabel(f, l) {
				t.Errorf("%s has no label %q", name, l)
			}
		}
	}
	if v := sumOf(fams, "sluice_limiter_throttles_total", "status", "429"); v != 1 {
		t.Errorf("throttles with status 429: %v, want 1", v)
	}
	if v := sumOf(fams, "sluice_attempts_total", "result", "server_error"); v != 4 {
		t.Errorf("server_error attempts: %v, want 4 (2 attempts × 2 deliveries)", v)
	}
	if v := sumOf(fams, "sluice_source_up", "", ""); v != 1 {
		t.Errorf("sluice_source_up = %v", v)
	}
	if v := sumOf(fams, "sluice_budget_saturation", "", ""); v < 0 || v > 1 {
		t.Errorf("sluice_budget_saturation = %v, want within [0, 1]", v)
	}
}

// loggedRun is a command run in-process, as main runs it, with its JSON
// log read line by line.
type loggedRun struct {
	t      *testing.T
	cancel context.CancelFunc
	done   chan error
	logged chan struct{}

	mu    sync.Mutex
	text  strings.Builder
	lines []map[string]any
	more  chan struct{} // closed and replaced on each new line
}

// startLoggedRun runs the command line args in-process; stop (or the end
// of the test) ends it.
func startLoggedRun(t *testing.T, args ...string) *loggedRun {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	r := &loggedRun{t: t, cancel: cancel, done: make(chan error, 1), logged: make(chan struct{}), more: make(chan struct{})}
	go r.read(pr)
	root := newRootCmd()
	root.SetArgs(args)
	root.SetErr(pw)
	root.SetOut(io.Discard)
	go func() { r.done <- root.ExecuteContext(ctx); pw.Close() }()
	t.Cleanup(func() {
		if r.cancel != nil {
			r.stop()
		}
	})
	return r
}

// read keeps the log, never blocking the command.
func (r *loggedRun) read(pr *io.PipeReader) {
	defer close(r.logged)
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var rec map[string]any
		_ = json.Unmarshal([]byte(line), &rec)
		r.mu.Lock()
		r.text.WriteString(line + "\n")
		r.lines = append(r.lines, rec)
		close(r.more)
		r.more = make(chan struct{})
		r.mu.Unlock()
	}
	io.Copy(io.Discard, pr)
}

func (r *loggedRun) logs() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text.String()
}

// await waits for the first log record whose msg is msg and returns its
// attribute key.
func (r *loggedRun) await(msg, key string) string {
	r.t.Helper()
	deadline := time.After(time.Minute)
	for seen := 0; ; {
		r.mu.Lock()
		for ; seen < len(r.lines); seen++ {
			if rec := r.lines[seen]; rec != nil && rec["msg"] == msg {
				r.mu.Unlock()
				return fmt.Sprint(rec[key])
			}
		}
		more := r.more
		r.mu.Unlock()
		select {
		case <-more:
		case err := <-r.done:
			r.t.Fatalf("sluice exited before logging %q: %v\n%s", msg, err, r.logs())
		case <-deadline:
			r.t.Fatalf("no %q logged within a minute\n%s", msg, r.logs())
		}
	}
}

// stop cancels the command and waits for it to return cleanly.
func (r *loggedRun) stop() {
	r.t.Helper()
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("sluice: %v", err)
		}
	case <-time.After(time.Minute):
		r.t.Fatal("sluice did not stop within a minute of cancel")
	}
	<-r.logged
}

func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := testkit.Get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sumOf adds the values of a family's series whose label has value (all
// series when label is ""). Histograms count their observations.
func sumOf(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	var sum float64
	for _, m := range fams[name].GetMetric() {
		if label != "" {
			match := false
			for _, lp := range m.GetLabel() {
				match = match || (lp.GetName() == label && lp.GetValue() == value)
			}
			if !match {
				continue
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func hasLabel(f *dto.MetricFamily, label string) bool {
	for _, m := range f.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				return true
			}
		}
	}
	return false
}

// lintMetrics fails t for every promlint problem (what `promtool check
// metrics` runs: names, units, help texts, counter suffixes) of a /metrics
// body.
func lintMetrics(t *testing.T, raw string) {
	t.Helper()
	problems, err := promlint.New(strings.NewReader(raw)).Lint()
	if err != nil {
		t.Fatalf("promlint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}
