package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
)

// The default binds loopback only; anything reachable from other hosts has
// to be written in the config.
func TestOpsDefaultIsLoopback(t *testing.T) {
	def := config.Default().Metrics
	if def.Listen != "127.0.0.1:9464" || def.Pprof {
		t.Fatalf("config.Default().Metrics = %+v, want listen 127.0.0.1:9464 without pprof", def)
	}
	if err := def.Check(); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte("target:\n  base_url: http://127.0.0.1:8080/\n"), config.Options{Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	if !LoopbackListen(cfg.Metrics.Listen) {
		t.Errorf("a config without a metrics section listens on %q", cfg.Metrics.Listen)
	}
	for addr, want := range map[string]bool{
		"127.0.0.1:9464":   true,
		"127.9.9.9:9464":   true,
		"[::1]:9464":       true,
		"localhost:9464":   true,
		":9464":            false,
		"0.0.0.0:9464":     false,
		"[::]:9464":        false,
		"10.1.2.3:9464":    false,
		"sluice.svc:9464":  false,
		"not an address":   false,
		"192.168.1.1:9464": false,
	} {
		if got := LoopbackListen(addr); got != want {
			t.Errorf("LoopbackListen(%q) = %v, want %v", addr, got, want)
		}
	}
}

// fakeStats is a sources.StatsSource with settable answers.
type fakeStats struct {
	mu  sync.Mutex
	st  sources.Stats
	err error
}

func (f *fakeStats) Stats(ctx context.Context) (sources.Stats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st, f.err
}

func (f *fakeStats) set(st sources.Stats, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st, f.err = st, err
}

func TestSourceStatsCollector(t *testing.T) {
	f := &fakeStats{}
	c := newSourceStatsCollector(f, time.Second, nil)
	names := []string{"sluice_source_up", "sluice_source_pending", "sluice_source_ack_pending",
		"sluice_source_redelivered", "sluice_source_dead_letters"}

	f.set(sources.Stats{Pending: 10000, AckPending: 7, Redelivered: 2, DeadLetters: 3}, nil)
	want := `
# HELP sluice_source_ack_pending Jobs delivered and not yet settled: held by a worker, or handed back and not yet received again.
# TYPE sluice_source_ack_pending gauge
sluice_source_ack_pending 7
# HELP sluice_source_dead_letters Dead-letter records held by the source's dead-letter store (absent when the source cannot tell).
# TYPE sluice_source_dead_letters gauge
sluice_source_dead_letters 3
# HELP sluice_source_pending Jobs waiting in the queue to be delivered (the backlog).
# TYPE sluice_source_pending gauge
sluice_source_pending 10000
# HELP sluice_source_redelivered Jobs delivered more than once and not yet settled.
# TYPE sluice_source_redelivered gauge
sluice_source_redelivered 2
# HELP sluice_source_up 1 when the last scrape could read the queue's state from the source, else 0.
# TYPE sluice_source_up gauge
sluice_source_up 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}

	// A source that cannot count its dead letters leaves that gauge out.
	f.set(sources.Stats{Pending: 5, DeadLetters: -1}, nil)
	if n := testutil.CollectAndCount(c, "sluice_source_dead_letters"); n != 0 {
		t.Errorf("dead letters unknown: %d series, want none", n)
	}
	if n := testutil.CollectAndCount(c, "sluice_source_pending"); n != 1 {
		t.Errorf("pending: %d series, want 1", n)
	}

	// The oldest job's age, from its publish time; 0 with nothing held; left
	// out when the source cannot tell (Done -1, no Oldest).
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return now }
	for _, tc := range []struct {
		st     sources.Stats
		series int
		age    float64
	}{
		{sources.Stats{Pending: 5, Done: 10, Oldest: now.Add(-90 * time.Second)}, 1, 90},
		{sources.Stats{Done: 15}, 1, 0},
		{sources.Stats{Pending: 5, Done: -1}, 0, 0},
	} {
		f.set(tc.st, nil)
		if n := testutil.CollectAndCount(c, "sluice_oldest_pending_age_seconds"); n != tc.series {
			t.Errorf("%+v: %d oldest-age series, want %d", tc.st, n, tc.series)
		} else if n == 1 {
			want := fmt.Sprintf(`
# HELP sluice_oldest_pending_age_seconds Age of the oldest job not yet finished (waiting or in flight), from its publish time; 0 when there is none, absent when the source cannot tell.
# TYPE sluice_oldest_pending_age_seconds gauge
sluice_oldest_pending_age_seconds %v
`, tc.age)
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), "sluice_oldest_pending_age_seconds"); err != nil {
				t.Errorf("%+v: %v", tc.st, err)
			}
		}
	}

	// A failing source reports only that it is down.
	f.set(sources.Stats{Pending: 5}, errors.New("jetstream: connection closed"))
	want = `
# HELP sluice_source_up 1 when the last scrape could read the queue's state from the source, else 0.
# TYPE sluice_source_up gauge
sluice_source_up 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestRegisterOpsMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	sat := limiter.NewSaturation(time.Minute)
	now := time.Now()
	sat.SetAt(now.Add(-30*time.Second), true)
	f := &fakeStats{st: sources.Stats{Pending: 42, DeadLetters: -1}}
	if err := RegisterOpsMetrics(reg, sat, statsOnlySource{f}, "test", nil); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if m := mf.GetMetric(); len(m) > 0 && m[0].GetGauge() != nil {
			got[mf.GetName()] = m[0].GetGauge().GetValue()
		} else {
			got[mf.GetName()] = -1
		}
	}
	// The requests have been waiting for the whole 30 s seen so far.
	if v := got["sluice_budget_saturation"]; v != 1 {
		t.Errorf("sluice_budget_saturation = %v, want 1", v)
	}
	if v := got["sluice_source_pending"]; v != 42 {
		t.Errorf("sluice_source_pending = %v, want 42", v)
	}
	for _, name := range []string{"sluice_build_info", "sluice_source_up", "go_goroutines", "process_start_time_seconds"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s not registered", name)
		}
	}

	// No saturation and a source without stats: only the always-present ones.
	reg = prometheus.NewPedanticRegistry()
	if err := RegisterOpsMetrics(reg, nil, nil, "test", nil); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "sluice_budget_saturation", "sluice_source_up", "sluice_build_info"); err != nil || n != 1 {
		t.Errorf("without saturation and stats: %d series (%v), want only sluice_build_info", n, err)
	}
}

// statsOnlySource is a sources.Source that also reports stats.
type statsOnlySource struct{ *fakeStats }

func (statsOnlySource) Receive(ctx context.Context, max int) ([]sources.Message, error) {
	return nil, errors.New("not used")
}
func (statsOnlySource) Publish(ctx context.Context, m sources.Outgoing) error {
	return errors.New("not used")
}
func (statsOnlySource) Close() error { return nil }

func TestOpsHandler(t *testing.T) {
	reg := prometheus.NewRegistry()
	probe := prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_test_probe_total", Help: "Test."})
	reg.MustRegister(probe)
	probe.Add(3)

	var notReady atomic.Pointer[error]
	srcErr := errors.New("source not connected")
	notReady.Store(&srcErr)
	ready := func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("readiness check got no deadline")
		}
		if e := notReady.Load(); e != nil {
			return *e
		}
		return nil
	}

	for _, pprofOn := range []bool{false, true} {
		srv := httptest.NewServer(opsHandler(opsConfig{Metrics: config.Metrics{Listen: "127.0.0.1:0", Pprof: pprofOn}}, reg, ready, nil))
		notReady.Store(&srcErr)

		code, body := testkit.Get(t, srv.URL+"/metrics")
		if code != 200 || !strings.Contains(body, "sluice_test_probe_total 3") {
			t.Errorf("/metrics: %d %q", code, body)
		}
		if code, body = testkit.Get(t, srv.URL+"/healthz"); code != 200 || body != "ok\n" {
			t.Errorf("/healthz: %d %q", code, body)
		}
		if code, body = testkit.Get(t, srv.URL+"/readyz"); code != 503 || body != "not ready: source not connected\n" {
			t.Errorf("/readyz before ready: %d %q", code, body)
		}
		notReady.Store(nil)
		if code, body = testkit.Get(t, srv.URL+"/readyz"); code != 200 || body != "ok\n" {
			t.Errorf("/readyz when ready: %d %q", code, body)
		}
		code, body = testkit.Get(t, srv.URL+"/debug/pprof/")
		if pprofOn && (code != 200 || !strings.Contains(body, "goroutine")) {
			t.Errorf("pprof on: /debug/pprof/: %d", code)
		}
		if !pprofOn && code != 404 {
			t.Errorf("pprof off: /debug/pprof/: %d, want 404", code)
		}
		if code, _ = testkit.Get(t, srv.URL+"/debug/pprof/cmdline"); pprofOn != (code == 200) {
			t.Errorf("pprof %v: /debug/pprof/cmdline: %d", pprofOn, code)
		}
		if code, body = testkit.Get(t, srv.URL+"/"); code != 200 || !strings.Contains(body, "/readyz") {
			t.Errorf("/: %d %q", code, body)
		}
		if code, _ = testkit.Get(t, srv.URL+"/nope"); code != 404 {
			t.Errorf("/nope: %d, want 404", code)
		}
		srv.Close()
	}

	// Without a readiness check, ready means alive.
	srv := httptest.NewServer(opsHandler(opsConfig{Metrics: config.Default().Metrics}, reg, nil, nil))
	defer srv.Close()
	if code, _ := testkit.Get(t, srv.URL+"/readyz"); code != 200 {
		t.Errorf("/readyz with no check: %d", code)
	}
}

// addrHandler is a slog.Handler that hands over the addr attribute of the
// "ops endpoints listening" record and counts warnings.
type addrHandler struct {
	addr  chan string
	warns *atomic.Int32
}

func (h addrHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h addrHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h addrHandler) WithGroup(string) slog.Handler            { return h }
func (h addrHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.warns.Add(1)
	}
	if r.Message == "ops endpoints listening" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "addr" {
				select {
				case h.addr <- a.Value.String():
				default:
				}
			}
			return true
		})
	}
	return nil
}

func TestServeOpsLifecycle(t *testing.T) {
	h := addrHandler{addr: make(chan string, 1), warns: new(atomic.Int32)}
	ctx, cancel := context.WithCancel(t.Context())
	cfg := opsConfig{Metrics: config.Metrics{Listen: "127.0.0.1:0"}}
	lns, err := bindOps(ctx, cfg, slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	// Bound, and said so, before it serves.
	var addr string
	select {
	case addr = <-h.addr:
	default:
		t.Fatal("bindOps did not log the address it bound")
	}
	done := make(chan error, 1)
	go func() { done <- serveOps(ctx, lns.ops, cfg, prometheus.NewRegistry(), nil, slog.New(h)) }()
	if host, _, _ := net.SplitHostPort(addr); host != "127.0.0.1" {
		t.Errorf("bound %s, want 127.0.0.1", addr)
	}
	if code, _ := testkit.Get(t, "http://"+addr+"/healthz"); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	if n := h.warns.Load(); n != 0 {
		t.Errorf("%d warnings for a loopback address", n)
	}

	// A second bind of the same address fails, naming the field.
	_, err = bindOps(t.Context(), opsConfig{Metrics: config.Metrics{Listen: addr}}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "metrics.listen: ") {
		t.Errorf("second bind: %v, want a metrics.listen error", err)
	}
	// And so does the live page's own address, naming its flag, with
	// nothing left bound.
	_, err = bindOps(t.Context(), opsConfig{Metrics: config.Metrics{Listen: "127.0.0.1:0"}, ui: true, uiListen: addr}, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "--ui-listen: ") {
		t.Errorf("--ui-listen on a port in use: %v, want a --ui-listen error", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("serveOps after cancel: %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after shutdown", addr)
	}
}

// The live page's URL is logged where it is bound, on metrics.listen or
// on its own address; an address of every interface is opened on
// localhost.
func TestBindOpsLogsThePageURL(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  opsConfig
		want string // the URL's prefix
	}{
		{"metrics.listen", opsConfig{Metrics: config.Metrics{Listen: "127.0.0.1:0"}, ui: true}, "http://127.0.0.1:"},
		{"--ui-listen", opsConfig{Metrics: config.Metrics{Listen: "off"}, ui: true, uiListen: "127.0.0.1:0"}, "http://127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			lns, err := bindOps(t.Context(), tc.cfg, slog.New(slog.NewTextHandler(&buf, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer lns.close()
			out := buf.String()
			if !strings.Contains(out, `msg="live page listening"`) || !strings.Contains(out, "url="+tc.want) || !strings.Contains(out, "/ui/\n") {
				t.Errorf("log:\n%s\nwant the live page's URL, %s…/ui/", out, tc.want)
			}
		})
	}
	if got := pageURL(&net.TCPAddr{IP: net.IPv6unspecified, Port: 9464}, "/ui/"); got != "http://localhost:9464/ui/" {
		t.Errorf("pageURL of [::]:9464 = %s", got)
	}
}

func TestBindOpsCanceledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	lns, err := bindOps(ctx, opsConfig{Metrics: config.Metrics{Listen: "127.0.0.1:0"}}, nil)
	if err != nil || lns.ops != nil {
		t.Fatalf("bindOps on a done context: %v, %v, want nothing bound and no error", lns.ops, err)
	}
}

func TestServeOpsOff(t *testing.T) {
	// "off" binds nothing, and serving nothing returns at once, even
	// though ctx is never cancelled.
	lns, err := bindOps(t.Context(), opsConfig{Metrics: config.Metrics{Listen: "off"}}, nil)
	if err != nil || lns.ops != nil {
		t.Fatalf("off: %v, %v", lns.ops, err)
	}
	if err := serveOps(t.Context(), lns.ops, opsConfig{Metrics: config.Metrics{Listen: "off"}}, prometheus.NewRegistry(), nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestTargetResolves(t *testing.T) {
	var looked []string
	lookup := func(ctx context.Context, host string) ([]string, error) {
		looked = append(looked, host)
		switch host {
		case "api.example.test":
			return []string{"192.0.2.10"}, nil
		case "empty.example.test":
			return nil, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	cases := []struct {
		target, wantErr string
	}{
		{"http://127.0.0.1:8080/v1", ""},
		{"https://[::1]/", ""},
		{"https://api.example.test/v1", ""},
		{"https://user:s3cret@missing.example.test/path?token=s3cret", `target host "missing.example.test" does not resolve: no such host`},
		{"https://empty.example.test", `target host "empty.example.test" does not resolve: no addresses`},
		{"/relative/only", "target has no host"},
		{"::not a url", "target has no host"},
	}
	for _, c := range cases {
		err := targetResolves(c.target, lookup)(t.Context())
		switch {
		case c.wantErr == "" && err != nil:
			t.Errorf("%s: %v", c.target, err)
		case c.wantErr != "" && (err == nil || err.Error() != c.wantErr):
			t.Errorf("%s: error %v, want %q", c.target, err, c.wantErr)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: error leaks a secret: %v", c.target, err)
		}
	}
	for _, h := range looked {
		if net.ParseIP(h) != nil {
			t.Errorf("looked up IP literal %s", h)
		}
	}
}

func TestAllReady(t *testing.T) {
	calls := 0
	ok := func(context.Context) error { calls++; return nil }
	bad := func(context.Context) error { calls++; return errors.New("source not connected") }
	if err := allReady()(t.Context()); err != nil {
		t.Errorf("no checks: %v", err)
	}
	if err := allReady(ok, ok)(t.Context()); err != nil || calls != 2 {
		t.Errorf("all ok: %v after %d calls", err, calls)
	}
	calls = 0
	if err := allReady(ok, bad, ok)(t.Context()); err == nil || err.Error() != "source not connected" || calls != 2 {
		t.Errorf("one failing: %v after %d calls, want the failure after 2", err, calls)
	}
}

// connSource is a sources.Source that says whether it is connected.
type connSource struct {
	statsOnlySource
	up atomic.Bool
}

func (c *connSource) Connected() bool { return c.up.Load() }

func TestSourceReady(t *testing.T) {
	// A source that knows whether it is connected is asked, not its stats.
	cs := &connSource{statsOnlySource: statsOnlySource{&fakeStats{err: errors.New("stats not asked")}}}
	if err := sourceReady(cs)(t.Context()); err == nil || err.Error() != "source not connected" {
		t.Errorf("disconnected: %v", err)
	}
	cs.up.Store(true)
	if err := sourceReady(cs)(t.Context()); err != nil {
		t.Errorf("connected: %v", err)
	}

	// A source with stats is ready while it can read them.
	f := &fakeStats{err: errors.New("nats: no servers available for connection")}
	check := sourceReady(statsOnlySource{f})
	if err := check(t.Context()); err == nil || err.Error() != "source not ready: nats: no servers available for connection" {
		t.Errorf("stats failing: %v", err)
	}
	f.set(sources.Stats{}, nil)
	if err := check(t.Context()); err != nil {
		t.Errorf("stats readable: %v", err)
	}

	// Any other source is ready once opened.
	if err := sourceReady(plainSource{})(t.Context()); err != nil {
		t.Errorf("plain source: %v", err)
	}
}

type plainSource struct{}

func (plainSource) Receive(ctx context.Context, max int) ([]sources.Message, error) {
	return nil, errors.New("not used")
}
func (plainSource) Publish(ctx context.Context, m sources.Outgoing) error {
	return errors.New("not used")
}
func (plainSource) Close() error { return nil }

// GET /state answers the worker's own state, and ReadWorkerState reads
// it from metrics.listen; nothing to ask gives nil.
func TestWorkerState(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	accepted, estimate, burst := 590.0, 612.5, 0.0
	want := WorkerState{ID: "w1", InFlight: 64, Paused: true, PausedUntil: until, Rate: 600, Accepted: &accepted,
		Estimate: &estimate, Burst: &burst}
	srv := httptest.NewServer(opsHandler(opsConfig{state: func() WorkerState { return want }}, prometheus.NewRegistry(), nil, nil))
	defer srv.Close()
	got, err := ReadWorkerState(t.Context(), config.Metrics{Listen: strings.TrimPrefix(srv.URL, "http://")})
	if err != nil || got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("ReadWorkerState = %+v, %v, want %+v", got, err, want)
	}
	// No estimate: null, and why.
	b, err := json.Marshal(WorkerState{ID: "w1", Rate: 600, NoEstimate: EstimateNotYet})
	if err != nil || !strings.Contains(string(b), `"estimate_units_per_minute":null,"estimate_none":"not_yet"`) {
		t.Errorf("state without an estimate: %s, %v", b, err)
	}
	for _, listen := range []string{"off", "127.0.0.1:0"} {
		if got, err := ReadWorkerState(t.Context(), config.Metrics{Listen: listen}); got != nil || err != nil {
			t.Errorf("metrics.listen %s: %+v, %v, want nothing asked", listen, got, err)
		}
	}
	// A server that is not a sluice worker (no /state): nothing.
	other := httptest.NewServer(http.NotFoundHandler())
	defer other.Close()
	if got, err := ReadWorkerState(t.Context(), config.Metrics{Listen: strings.TrimPrefix(other.URL, "http://")}); got != nil || err != nil {
		t.Errorf("not a worker: %+v, %v", got, err)
	}
}
