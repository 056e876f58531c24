package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/web"
)

// TestUISource: the live page reads the limiter's state and the counters
// of the worker's metrics, summed over the labels it does not show.
func TestUISource(t *testing.T) {
	reg := prometheus.NewRegistry()
	lm := limiter.NewMetrics()
	reg.MustRegister(lm)
	cfg := limiter.DefaultConfig()
	cfg.InitialFill = 1 // full at start: the wait below takes no time
	lim, err := limiter.New(cfg, limiter.WithMetrics(lm))
	if err != nil {
		t.Fatal(err)
	}
	jobs := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sluice_jobs_total", Help: "h"}, []string{"outcome", "type"})
	jobs.WithLabelValues("succeeded", "a").Add(3)
	jobs.WithLabelValues("succeeded", "b").Add(4)
	jobs.WithLabelValues("dead_lettered", "a").Add(1)
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_jobs_in_flight", Help: "h"})
	inFlight.Set(2)
	pending := prometheus.NewGauge(prometheus.GaugeOpts{Name: "sluice_source_pending", Help: "h"})
	pending.Set(17)
	reg.MustRegister(jobs, inFlight, pending)
	if _, err := lim.Wait(context.Background(), 5); err != nil {
		t.Fatal(err)
	}

	s, err := uiSource(lim, reg, nil, "")(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Rate != 600 || s.Capacity != 100 || s.Tokens < 95 || s.Tokens > 100 || s.Units != 5 || s.Instances != 1 {
		t.Errorf("limiter: %+v", s)
	}
	if s.Jobs["succeeded"] != 7 || s.Jobs["dead_lettered"] != 1 || s.InFlight != 2 || s.Backlog != 17 || s.Members != nil {
		t.Errorf("jobs %v, in flight %v, backlog %v, members %v", s.Jobs, s.InFlight, s.Backlog, s.Members)
	}

	// With membership, every member's rate, this worker's marked.
	members := func() []cluster.Member {
		return []cluster.Member{{Key: "m.a-1", ID: "a", Rate: 300, Share: 0.5}, {Key: "m.b-2", ID: "b", Rate: 290, Share: 0.5}}
	}
	s, err = uiSource(lim, reg, members, "m.b-2")(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []web.Member{{ID: "a", Rate: 300, Share: 0.5}, {ID: "b", Rate: 290, Share: 0.5, Self: true}}
	if !slices.Equal(s.Members, want) {
		t.Errorf("members %+v, want %+v", s.Members, want)
	}

	// Without the source's gauge the backlog is unknown.
	bare, err := uiSource(lim, prometheus.NewRegistry(), nil, "")(context.Background())
	if err != nil || bare.Backlog == bare.Backlog {
		t.Errorf("backlog with no source stats: %v (%v), want NaN", bare.Backlog, err)
	}
}

// TestOpsHandlerUI: the live page is on the ops mux at /ui/ only with
// --ui, and --ui needs the endpoints on.
func TestOpsHandlerUI(t *testing.T) {
	reg := prometheus.NewRegistry()
	lim, err := limiter.New(limiter.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	off := opsHandler(opsConfig{Metrics: config.Default().Metrics}, reg, nil, nil)
	rec := httptest.NewRecorder()
	off.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/ui/", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("/ui/ without --ui: %d, want 404", rec.Code)
	}

	cfg := opsConfig{Metrics: config.Default().Metrics}
	cfg.ui = true
	cfg = withUI(cfg, lim, reg, nil, "w1")
	srv := httptest.NewServer(opsHandler(cfg, reg, nil, nil))
	defer srv.Close()
	for path, want := range map[string]string{"/ui/": "live worker", "/ui/static/chart.js": "TimeChart", "/": "/ui/"} {
		code, body := get(t, srv.URL+path)
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, want 200 with %q", path, code, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/ui/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	line, data := bufio.NewReader(res.Body), ""
	for !strings.HasPrefix(data, "data: ") {
		if data, err = line.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	var f struct {
		Title string  `json:"title"`
		Rate  float64 `json:"rate"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &f); err != nil || f.Title != "w1" || f.Rate != 600 {
		t.Errorf("first frame %s (%v)", data, err)
	}

	if err := checkUI(true, "", config.Metrics{Listen: config.OpsListenOff}); err == nil || !strings.Contains(err.Error(), "--ui") {
		t.Errorf("--ui with metrics.listen off: %v", err)
	}
	if err := checkUI(false, "", config.Metrics{Listen: config.OpsListenOff}); err != nil {
		t.Error(err)
	}
}

// TestSimulateServe: `sluice simulate --serve` serves the page and its
// stream, and returns once its context ends even with a stream open.
func TestSimulateServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out strings.Builder
	go func() { done <- serveSimulatorOn(ctx, ln, web.DefaultSimConfig(), &out) }()
	base := "http://" + ln.Addr().String()
	code, body := get(t, base+"/")
	if code != 200 || !strings.Contains(body, "see it run") {
		t.Fatalf("GET /: %d", code)
	}
	res, err := http.Get(base + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	r := bufio.NewReader(res.Body)
	for frames := 0; frames < 3; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "event: frame\n" {
			frames++
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveSimulatorOn: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serveSimulatorOn did not return within 30s of cancel with a stream open")
	}
	io.Copy(io.Discard, r) // the stream ended with the server
	if !strings.Contains(out.String(), "http://"+ln.Addr().String()) {
		t.Errorf("output %q does not give the address", out.String())
	}

	for _, args := range [][]string{
		{"simulate", "--serve", "127.0.0.1:0", "--json"},
		{"simulate", "--serve", "127.0.0.1:0", "--compare"},
		{"simulate", "--serve", "127.0.0.1:0", "--speed", "0"},
		{"simulate", "--serve", "127.0.0.1:0", "--instances", "40"},
		{"simulate", "--serve", "127.0.0.1:99999"},
	} {
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}
