package faults

import (
	"bufio"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The workers of a scenario: `sluice run` processes with a config of their
// own, started, stopped and watched through their metrics.

// workerOpts are the settings of one `sluice run` that vary by scenario.
type workerOpts struct {
	Instances       int     // processes sharing the budget
	UnitsPerMinute  float64 // the whole budget; 0 disables the limiter
	MaxInFlight     int
	Strict          bool
	Setup           bool
	Target          string // default: the proxy
	TargetTimeout   time.Duration
	ShutdownTimeout time.Duration
	Metrics         bool
	Pprof           bool // serve /debug/pprof beside /metrics (needs Metrics)
	LogLevel        string
	TrustJobCost    bool // jobs.trust_job_cost: an envelope's cost counts
	// Embedded runs the queue in the worker (url: embedded); every
	// worker shares the server of the first.
	Embedded bool
}

func (o workerOpts) withDefaults() workerOpts {
	if o.Instances == 0 {
		o.Instances = 1
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 64
	}
	if o.TargetTimeout == 0 {
		o.TargetTimeout = 2 * time.Second
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 5 * time.Second
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	return o
}

// worker is a running `sluice run`.
type worker struct {
	id          string
	proc        *Proc
	metricsPort int
	cfgPath     string
}

// writeConfig writes the worker's config file.
func (e *env) writeConfig(id string, o workerOpts, metricsPort int) (string, error) {
	o = o.withDefaults()
	target := o.Target
	if target == "" {
		target = e.proxy.URL()
	}
	rate := o.UnitsPerMinute
	if rate == 0 {
		rate = 600
	}
	url := e.urls()
	if o.Embedded {
		url = "embedded"
	}
	listen := "off"
	if metricsPort > 0 {
		listen = fmt.Sprintf("127.0.0.1:%d", metricsPort)
	}
	cfg := fmt.Sprintf(`# %s worker %s
source:
  kind: jetstream
  jetstream:
    url: %q
    embedded: {store_dir: %q, port: %d}
    setup: %v
    ack_wait: %s
    fetch_wait: 500ms
    connect_timeout: 5s
target:
  base_url: %q
  timeout: %s
jobs:
  strict: %v
  trust_job_cost: %v
  types:
    default: {method: POST, path: /jobs, cost: 1}
limiter:
  enabled: %v
  initial_units_per_minute: %v
  max_units_per_minute: %v
  burst: 1s
  instances: %d
worker:
  id: %s
  max_in_flight: %d
  backoff: {base: 200ms, cap: 2s}
  max_redelivery_delay: 5s
  rejected_delay: 500ms
  shutdown_timeout: %s
dead_letters: {kind: nats}
metrics: {listen: %q, pprof: %v}
log: {format: json, level: %s}
`, e.name, id, url, filepath.Join(e.dir, "embedded-store"), e.embeddedPort, o.Setup, ackWait, target, o.TargetTimeout, o.Strict, o.TrustJobCost,
		o.UnitsPerMinute > 0, rate, max(rate, 600), o.Instances,
		id, o.MaxInFlight, o.ShutdownTimeout, listen, o.Pprof, o.LogLevel)
	path := filepath.Join(e.dir, id+".yaml")
	return path, os.WriteFile(path, []byte(cfg), 0o644)
}

// startWorker starts `sluice run` as id (a restart keeps its config).
func (e *env) startWorker(id string, o workerOpts) (*worker, error) {
	w := &worker{id: id}
	if o.Metrics {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		w.metricsPort = p
	}
	path, err := e.writeConfig(id, o, w.metricsPort)
	if err != nil {
		return nil, err
	}
	w.cfgPath = path
	return w, e.runWorker(w)
}

func (e *env) runWorker(w *worker) error {
	p, err := Start(w.id, filepath.Join(e.dir, w.id+".log"), e.s.Sluice, "run", "-c", w.cfgPath)
	if err != nil {
		return err
	}
	w.proc = e.track(p)
	e.mu.Lock()
	e.workers[w.id] = p
	e.mu.Unlock()
	return nil
}

// inFlight scrapes a worker's sluice_jobs_in_flight gauge.
func inFlight(metricsPort int) (int, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "sluice_jobs_in_flight "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(f), err
		}
	}
	return 0, errors.New("faults: no sluice_jobs_in_flight in /metrics")
}
