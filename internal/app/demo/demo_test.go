package demo

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/worker"
)

// TestDemoJobsPriced: each demo job is a valid envelope, the worker
// estimates its cost as the model API prices it, and the mix holds every
// cost; the same jobs every time.
func TestDemoJobsPriced(t *testing.T) {
	const n = 300
	data, units := demoJobs(n)
	again, _ := demoJobs(n)
	if !bytes.Equal(data, again) {
		t.Fatal("two calls gave different jobs")
	}
	cfg, err := demoConfig(DefaultOptions(), "nats://127.0.0.1:4222", "http://127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	dec, err := worker.NewDecoder(cfg.WorkerConfig(time.Minute).Jobs)
	if err != nil {
		t.Fatal(err)
	}
	costs := map[string]float64{}
	for _, jt := range demoJobTypes {
		costs[jt.name] = jt.cost
	}
	api, err := sim.NewServer(sim.ServerConfig{Quota: 1e9, Window: time.Minute, DefaultCost: 1, TypeCosts: costs})
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(lines) != n {
		t.Fatalf("%d lines, want %d", len(lines), n)
	}
	seen := map[float64]int{}
	total := 0.0
	for i, line := range lines {
		id, err := queue.CheckEnvelope(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		job, err := dec.Decode(id, nil, line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		req := httptest.NewRequest(job.Method, job.Path, bytes.NewReader(job.Body))
		req.Header = job.Header.Clone()
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, req)
		var reply struct{ Units float64 }
		if err := json.Unmarshal(rec.Body.Bytes(), &reply); err != nil || rec.Code != 200 {
			t.Fatalf("line %d: the API answered %d %s", i+1, rec.Code, rec.Body)
		}
		if reply.Units != job.Cost {
			t.Fatalf("line %d (%s): the worker estimates %v units, the API charges %v", i+1, job.Type, job.Cost, reply.Units)
		}
		seen[job.Cost]++
		total += job.Cost
	}
	if total != units {
		t.Errorf("the jobs cost %v units, demoJobs says %v", total, units)
	}
	for _, c := range []float64{1, 2, 5} {
		if seen[c] < n/6 {
			t.Errorf("%d jobs of cost %v in %d: not a mix", seen[c], c, n)
		}
	}
	if st := api.Stats(); st.Jobs.Distinct != n || st.Jobs.WithoutID != 0 {
		t.Errorf("the API saw %d distinct ids and %d calls without one, want %d and 0", st.Jobs.Distinct, st.Jobs.WithoutID, n)
	}
}

// TestDemoLiveDraw: on a terminal the progress is redrawn in place, and
// no line is wider than the terminal (a wrapped line would break the
// redraw).
func TestDemoLiveDraw(t *testing.T) {
	var b bytes.Buffer
	o := DefaultOptions()
	o.Workers = 6
	m := &demoMonitor{o: o, rep: &Report{}, out: &b, width: 50}
	s := demoSample{at: 12 * time.Second, rates: []float64{100, 100, 100, 100, 100, 100}, accepted: 540, drained: 100, requests: 120, eta: 30 * time.Second}
	s.api.WindowUnits = 180
	s.api.Throttled = 2
	m.draw(s)
	first := b.String()
	if strings.Contains(first, "\033[5A") {
		t.Fatal("the first draw moves the cursor up")
	}
	b.Reset()
	m.draw(s)
	second := b.String()
	if !strings.HasPrefix(second, "\033[5A") {
		t.Fatalf("the redraw does not start by going back 5 lines: %q", second)
	}
	ansi := regexp.MustCompile(`\x1b\[[0-9]*[AK]|\r`)
	for _, l := range strings.Split(strings.TrimSuffix(first, "\n"), "\n") {
		if w := len([]rune(ansi.ReplaceAllString(l, ""))); w >= 50 {
			t.Errorf("line of %d columns on a 50-column terminal: %q", w, l)
		}
	}
	if !strings.Contains(first, "100/400 (25%)") || !strings.Contains(first, "ETA 0:30") {
		t.Errorf("the progress lacks the count or the ETA: %q", first)
	}
	// On a wide terminal and in plain lines: the rate the workers send
	// at beside the rate the API accepted.
	b.Reset()
	m = &demoMonitor{o: o, rep: &Report{}, out: &b, width: 200}
	m.draw(s)
	for _, want := range []string{"rates    sending at 600 units/min · API accepted 540 units/min · estimate none yet (hidden quota ", "workers  sending at w1 100 + w2 100 + "} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the display lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	m = &demoMonitor{o: o, rep: &Report{}, out: &b}
	m.draw(s)
	if want := "sending at 600 (100+100+100+100+100+100) · API accepted 540 units/min · estimate none yet  quota"; !strings.Contains(b.String(), want) {
		t.Errorf("the plain line lacks %q: %s", want, b.String())
	}
	// The workers' estimates of what the API accepts, summed, with how
	// many have one while not all do.
	s.estimate, s.estimated = 612.4, 6
	if got, want := s.estimateText(), "estimate 612 units/min"; got != want {
		t.Errorf("estimateText() = %q, want %q", got, want)
	}
	s.estimate, s.estimated = 204, 2
	if got, want := s.estimateText(), "estimate 204 units/min (2 of 6 workers)"; got != want {
		t.Errorf("estimateText() = %q, want %q", got, want)
	}
}
