package run

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/web"
	"github.com/sluicehq/sluice/worker"
)

// fixedStats are a worker's snapshots, fixed.
type fixedStats struct {
	lim *limiter.Limiter
	ws  worker.Stats
}

func (f fixedStats) Limiter() limiter.Stats { return f.lim.Stats() }
func (f fixedStats) Pace() Pace             { return limiterPace(f.lim, f.lim.Stats()) }
func (f fixedStats) Worker() worker.Stats   { return f.ws }

// statsSource is a source whose only capability is its stats.
type statsSource struct {
	sources.Source
	st sources.Stats
}

func (s statsSource) Stats(context.Context) (sources.Stats, error) { return s.st, nil }

// TestUISource: the live page reads the limiter's and the worker's
// snapshots and the source's backlog.
func TestUISource(t *testing.T) {
	cfg := limiter.DefaultConfig()
	cfg.InitialFill = 1 // full at start (one unit, paced): the wait below takes no time
	lim, err := limiter.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Wait(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	ws := worker.Stats{InFlight: 2, Jobs: map[worker.Outcome]int64{worker.OutcomeSucceeded: 7, worker.OutcomeDeadLettered: 1}}
	st := fixedStats{lim: lim, ws: ws}
	src := statsSource{st: sources.Stats{Pending: 17}}

	s, err := uiSource(st, src, nil, "")(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s.Rate != 600 || s.Capacity != 1 || s.Tokens > 1 || s.Units != 5 || s.Instances != 1 {
		t.Errorf("limiter: %+v", s)
	}
	// The burst is what goes at once (the bucket here); nothing was
	// observed, so the API accepted 0 (slow start counts it).
	if math.Abs(s.Burst-math.Max(s.Tokens, 0)) > 0.5 || s.Accepted != 0 { // two readings, a moment apart; a bucket below zero sends nothing
		t.Errorf("burst %v (tokens %v), accepted %v; want the tokens and 0", s.Burst, s.Tokens, s.Accepted)
	}
	// No 429 or quota header yet: no estimate, and why.
	if !math.IsNaN(s.Estimate) || s.NoEstimate != string(EstimateNotYet) {
		t.Errorf("estimate %v (%q), want none yet", s.Estimate, s.NoEstimate)
	}
	if len(s.Jobs) != 2 || s.Jobs["succeeded"] != 7 || s.Jobs["dead_lettered"] != 1 || s.InFlight != 2 || s.Backlog != 17 || s.Members != nil {
		t.Errorf("jobs %v, in flight %v, backlog %v, members %v", s.Jobs, s.InFlight, s.Backlog, s.Members)
	}
	if s.Rejections["max_wait"] != 0 || len(s.Rejections) != len(lim.Stats().Rejections) {
		t.Errorf("rejections %v, want every reason at 0", s.Rejections)
	}

	// With membership, every member's rate, this worker's marked.
	members := func() []cluster.Member {
		up := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
		return []cluster.Member{
			{Key: "m.a-1", ID: "a", Rate: 300, Accepted: 280, Share: 0.5, Started: up, Refreshed: up.Add(2 * time.Minute)},
			{Key: "m.b-2", ID: "b", Rate: 290, Accepted: 250, Share: 0.5, Started: up, Refreshed: up.Add(2 * time.Minute)},
		}
	}
	s, err = uiSource(st, src, members, "m.b-2")(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// This worker's own figures are read now, not from its heartbeat.
	want := []web.Member{{ID: "a", Rate: 300, Accepted: 280, Share: 0.5}, {ID: "b", Rate: 600, Accepted: 0, Share: 0.5, Self: true}}
	if !slices.Equal(s.Members, want) {
		t.Errorf("members %+v, want %+v", s.Members, want)
	}

	// A source without stats: the backlog is unknown.
	bare, err := uiSource(st, statsSource{}.Source, nil, "")(context.Background())
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
	cfg = withUI(cfg, fixedStats{lim: lim}, nil, nil, "w1")
	srv := httptest.NewServer(opsHandler(cfg, reg, nil, nil))
	defer srv.Close()
	for path, want := range map[string]string{"/ui/": "live worker", "/ui/static/chart.js": "TimeChart", "/": "/ui/"} {
		code, body := testkit.Get(t, srv.URL+path)
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

	if err := CheckUI(true, "", config.Metrics{Listen: config.OpsListenOff}); err == nil || !strings.Contains(err.Error(), "--ui") {
		t.Errorf("--ui with metrics.listen off: %v", err)
	}
	if err := CheckUI(false, "", config.Metrics{Listen: config.OpsListenOff}); err != nil {
		t.Error(err)
	}
}
