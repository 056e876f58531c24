// Package demo is `sluice demo`: in one process, an embedded JetStream
// server, the model API with a hidden quota, and workers that drain a
// backlog into it as `sluice run` would, with live progress, a summary and
// a chart.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// The demo's model API counts its quota over a short window, so that one
// minute shows the climb, the first throttle, the cut and the steady
// state; the limiter runs its defaults but for the pause's cap.
const (
	demoWindow      = 10 * time.Second
	demoMaxPause    = 10 * time.Second
	demoMaxInFlight = 16
	demoSeed        = 1
	// demoPlainEvery is how often a progress line is printed when the
	// output is not a terminal.
	demoPlainEvery = 5 * time.Second
)

// demoJobTypes are the job types of the demo: their cost is the worker's
// estimate (jobs.types) and the model API's hidden price alike.
var demoJobTypes = []struct {
	name, method, path string
	cost               float64
}{
	{"read", http.MethodGet, "/v1/items", 1},
	{"write", http.MethodPost, "/v1/items", 2},
	{"search", http.MethodPost, "/v1/search", 5},
}

// Options are the knobs of `sluice demo`.
type Options struct {
	Workers  int
	Jobs     int
	Quota    float64 // units per minute, the whole API
	Rate     float64 // initial rate of the whole budget, units per minute
	SVG      string  // chart path; "" writes none
	NATSPort int     // 0 or -1: a free port
	APIPort  int     // the model API's port on 127.0.0.1; 0 or -1: a free port
	// Sample is the interval between two samples of the chart and two
	// refreshes of the progress on a terminal. Default 1s.
	Sample time.Duration
	// TempDir is where the demo's temporary directory is made; "" is the
	// system's.
	TempDir string
	// Version is the version of sluice, for the workers' sluice_build_info
	// and their spans.
	Version string
}

// DefaultOptions are the options of `sluice demo` without flags.
func DefaultOptions() Options {
	return Options{Workers: 2, Jobs: 400, Quota: 1200, Rate: 600, SVG: "demo.svg", Sample: time.Second}
}

// Validate reports every option out of its range, each naming its flag.
func (o Options) Validate() error {
	lim := limiter.DefaultConfig()
	largest := demoJobTypes[len(demoJobTypes)-1].cost
	minQuota := largest * time.Minute.Seconds() / demoWindow.Seconds()
	var errs []error
	if o.Workers < 1 || o.Workers > 64 {
		errs = append(errs, fmt.Errorf("--workers: must be from 1 to 64, got %d", o.Workers))
	}
	if o.Jobs < 1 || o.Jobs > 1_000_000 {
		errs = append(errs, fmt.Errorf("--jobs: must be from 1 to 1000000, got %d", o.Jobs))
	}
	if !(o.Quota >= minQuota) || math.IsInf(o.Quota, 0) {
		errs = append(errs, fmt.Errorf("--quota: must be >= %v units per minute (the largest job, %v units, must fit in the API's %v window), got %v",
			minQuota, largest, demoWindow, o.Quota))
	}
	if !(o.Rate >= lim.MinUnitsPerMinute && o.Rate <= lim.MaxUnitsPerMinute) {
		errs = append(errs, fmt.Errorf("--rate: must be from %.0f to %.0f units per minute, got %v", lim.MinUnitsPerMinute, lim.MaxUnitsPerMinute, o.Rate))
	}
	if o.NATSPort < -1 || o.NATSPort > 65535 {
		errs = append(errs, fmt.Errorf("--nats-port: must be from 1 to 65535, or 0 or -1 for a free port, got %d", o.NATSPort))
	}
	if o.APIPort < -1 || o.APIPort > 65535 {
		errs = append(errs, fmt.Errorf("--api-port: must be from 1 to 65535, or 0 or -1 for a free port, got %d", o.APIPort))
	}
	return errors.Join(errs...)
}

// Report is what a demo measured.
type Report struct {
	workers     int
	jobs        int
	totalUnits  float64
	quota       float64
	done        int64 // distinct jobs the API accepted
	duplicates  int64 // calls for a job the API had already accepted
	deadLetters int64
	api         sim.Stats
	drain       time.Duration
	interrupted bool
	svg         string // written chart, "" when none
}

// Interrupted reports whether ctx ended before the backlog was drained.
func (r Report) Interrupted() bool { return r.interrupted }

// requests is every call that reached the model API.
func (r Report) requests() int64 {
	return r.api.AcceptedRequests + r.api.Throttled + r.api.TooLarge + r.api.BadRequests
}

// ideal is the drain time at exactly the quota.
func (r Report) ideal() time.Duration {
	return time.Duration(r.totalUnits / r.quota * float64(time.Minute))
}

// utilization is the units accepted over the quota's rate times the drain
// time. It is not known for a drain shorter than the API's window, where a
// whole window's quota may be taken at once.
func (r Report) utilization() (float64, bool) {
	if r.drain < demoWindow {
		return 0, false
	}
	return r.api.AcceptedUnits / (r.quota * r.drain.Minutes()), true
}

func (r Report) utilizationText() string {
	u, ok := r.utilization()
	if !ok {
		return fmt.Sprintf("not measured: the drain was shorter than the API's %v window", demoWindow)
	}
	return fmt.Sprintf("%.2f of the quota during the drain", u)
}

// Run runs the demo and reports its figures; it prints its progress and
// summary on out. With a width (the terminal's columns) the progress is
// redrawn in place; with 0 it is a plain line every demoPlainEvery.
// Everything it started is stopped, and its temporary directory removed,
// before it returns. When ctx ends first, the report is marked
// interrupted.
func Run(ctx context.Context, o Options, out io.Writer, width int) (Report, error) {
	if err := o.Validate(); err != nil {
		return Report{}, err
	}
	if o.Sample <= 0 {
		o.Sample = time.Second
	}
	rep := Report{workers: o.Workers, jobs: o.Jobs, quota: o.Quota}
	chart, err := openChart(o.SVG)
	if err != nil {
		return rep, err
	}
	defer chart.discard()
	dir, err := os.MkdirTemp(o.TempDir, "sluice-demo-")
	if err != nil {
		return rep, fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	ns, err := startQueue(dir, o.NATSPort)
	if err != nil {
		return rep, err
	}
	defer ns.Shutdown()
	api, apiURL, stopAPI, err := startAPI(o.Quota, o.APIPort)
	if err != nil {
		return rep, err
	}
	defer stopAPI()
	cfg, err := demoConfig(o, ns.ClientURL(), apiURL)
	if err != nil {
		return rep, err
	}
	fmt.Fprint(out, Header(o, ns.ClientURL(), apiURL))

	src, err := run.OpenJetStream(ctx, cfg.Source.JetStream, slog.New(slog.DiscardHandler))
	if err != nil {
		return rep, err
	}
	defer src.Close()
	if ok, err := fillBacklog(ctx, src, o, &rep, out); !ok {
		return rep, err
	}
	mon := &demoMonitor{o: o, rep: &rep, probes: make([]atomic.Pointer[run.Probe], o.Workers), api: api, src: src, out: out, width: width}
	if err := drain(ctx, cfg, mon); err != nil {
		return rep, err
	}
	fmt.Fprintln(out)
	if st, err := src.Stats(context.WithoutCancel(ctx)); err == nil && st.DeadLetters >= 0 {
		rep.deadLetters = st.DeadLetters
	}
	rep.api = api.Stats()
	rep.done = rep.api.Jobs.Distinct
	rep.duplicates = rep.api.Jobs.Duplicates
	if chart.f != nil {
		if err := chart.write(mon.chart()); err != nil {
			return rep, fmt.Errorf("--svg: %w", err)
		}
		rep.svg = o.SVG
	}
	printDemoSummary(out, rep)
	return rep, nil
}

// fillBacklog enqueues the demo's jobs and prints the backlog line; false
// when it was interrupted (rep says so, and the error is nil) or failed.
func fillBacklog(ctx context.Context, src sources.Source, o Options, rep *Report, out io.Writer) (bool, error) {
	jobs, units := demoJobs(o.Jobs)
	rep.totalUnits = units
	res, err := queue.Enqueue(ctx, src, bytes.NewReader(jobs), "demo jobs", io.Discard)
	switch {
	case err != nil && ctx.Err() != nil:
		rep.interrupted = true
		fmt.Fprintln(out, "interrupted while enqueueing")
		return false, nil
	case err != nil:
		return false, err
	}
	fmt.Fprint(out, backlogLine(res.Published, units, rep.ideal()))
	return true, nil
}

// Header is what the demo prints first, with the URLs of its queue and
// its model API: what runs, and with which limiter options.
func Header(o Options, natsURL, apiURL string) string {
	return fmt.Sprintf("sluice demo: %d jobs → %d workers → a model API with a hidden quota of %s units/min\n", o.Jobs, o.Workers, fnum(o.Quota)) +
		fmt.Sprintf("  queue      embedded NATS JetStream at %s (a temporary store, removed at the end)\n", natsURL) +
		fmt.Sprintf("  model API  %s (GET /stats); its quota is counted over a sliding %v window\n", apiURL, demoWindow) +
		fmt.Sprintf("  limiter    limiter.instances %d, initial %s units/min for the whole budget, the adaptive law (aimd probes); max_pause %v\n",
			o.Workers, fnum(o.Rate), demoMaxPause)
}

// Backlog is the line the demo prints once its jobs are enqueued: they
// are drawn from a fixed seed, so it depends on the options alone.
func Backlog(o Options) string {
	_, units := demoJobs(o.Jobs)
	r := Report{totalUnits: units, quota: o.Quota}
	return backlogLine(o.Jobs, units, r.ideal())
}

func backlogLine(published int, units float64, ideal time.Duration) string {
	return fmt.Sprintf("  backlog    %d jobs enqueued, %s units (cost 1, 2 or 5); ideal drain at the quota %s\n\n",
		published, fnum(units), queue.FormatDuration(ideal))
}

// drain runs the workers, each as `sluice run` would run it, while mon
// samples them, until the backlog is drained or ctx ends.
func drain(ctx context.Context, cfg config.Config, mon *demoMonitor) error {
	wctx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	g, gctx := errgroup.WithContext(wctx)
	mon.start = time.Now()
	for i := range mon.probes {
		wc := cfg
		wc.Worker.ID = fmt.Sprintf("demo-worker-%d", i+1)
		o := run.Options{Log: slog.New(slog.DiscardHandler), Version: mon.o.Version,
			Started: func(p run.Probe) { mon.probes[i].Store(&p) }}
		g.Go(func() error {
			if err := run.Worker(gctx, wc, o); err != nil {
				return fmt.Errorf("demo: worker %d: %w", i+1, err)
			}
			return nil
		})
	}
	runErr := mon.run(ctx, gctx)
	stopWorkers()
	werr := g.Wait()
	if runErr == nil && werr != nil && !mon.rep.interrupted && !mon.finished {
		runErr = werr
	}
	return runErr
}

// startQueue starts the embedded JetStream server in dir.
func startQueue(dir string, port int) (*natsjs.Server, error) {
	if port == 0 {
		port = natsjs.RandomPort
	}
	ns, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: filepath.Join(dir, "nats"), Host: natsjs.DefaultHost, Port: port}, slog.New(slog.DiscardHandler))
	if err != nil {
		var inUse *natsjs.PortInUseError
		if errors.As(err, &inUse) {
			return nil, fmt.Errorf("--nats-port: %s is in use; leave --nats-port out for a free port", inUse.Addr)
		}
		return nil, fmt.Errorf("demo: %w", err)
	}
	return ns, nil
}

// startAPI serves the model API with its hidden quota on port of
// 127.0.0.1 (0 or -1: a free one); the returned function stops it.
func startAPI(quota float64, port int) (*sim.Server, string, func(), error) {
	costs := map[string]float64{}
	for _, t := range demoJobTypes {
		costs[t.name] = t.cost
	}
	api, err := sim.NewServer(sim.ServerConfig{
		Quota: quota * demoWindow.Seconds() / time.Minute.Seconds(), Window: demoWindow, DefaultCost: 1, TypeCosts: costs,
	})
	if err != nil {
		return nil, "", nil, fmt.Errorf("demo: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(max(port, 0))))
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, "", nil, fmt.Errorf("--api-port: 127.0.0.1:%d is in use; leave --api-port out for a free port", port)
	case err != nil:
		return nil, "", nil, fmt.Errorf("demo: model API: %w", err)
	}
	hs := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		<-served
	}
	return api, "http://" + ln.Addr().String(), stop, nil
}

// chartFile is the chart's file, opened before the run so that a bad path
// fails before anything starts. It is truncated only when the chart is
// written; a file the demo created is removed if the chart never is.
type chartFile struct {
	f       *os.File // nil when no chart is asked for
	path    string
	created bool
	written bool
}

func openChart(path string) (*chartFile, error) {
	c := &chartFile{path: path}
	if path == "" {
		return c, nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--svg: %w", err)
	}
	c.f, c.created = f, os.IsNotExist(statErr)
	return c, nil
}

// write replaces the file's content with the chart and closes it.
func (c *chartFile) write(ch *sim.Chart) error {
	err := writeDemoChart(c.f, ch)
	c.written = err == nil
	return err
}

// discard closes a chart file that was never written, and removes it if
// the demo created it.
func (c *chartFile) discard() {
	if c.f == nil || c.written {
		return
	}
	c.f.Close()
	if c.created {
		os.Remove(c.path)
	}
}

// writeDemoChart replaces f's content with the chart and closes f.
func writeDemoChart(f *os.File, c *sim.Chart) error {
	err := f.Truncate(0)
	if err == nil {
		err = c.WriteSVG(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// demoConfig is the configuration every demo worker runs with.
func demoConfig(o Options, natsURL, apiURL string) (config.Config, error) {
	c := config.Default()
	c.Source.JetStream.URL = natsURL
	c.Target.BaseURL = apiURL
	c.Jobs.Types = map[string]config.JobType{}
	for _, t := range demoJobTypes {
		cost := t.cost
		c.Jobs.Types[t.name] = config.JobType{Method: t.method, Path: t.path, Cost: &cost}
	}
	c.Limiter.Instances = o.Workers
	c.Limiter.InitialUnitsPerMinute = o.Rate
	c.Limiter.MaxPause = time.Duration(demoMaxPause)
	c.Worker.MaxInFlight = demoMaxInFlight
	c.Metrics.Listen = config.OpsListenOff
	if err := c.Check(true); err != nil {
		return c, fmt.Errorf("demo: %w", err)
	}
	return c, nil
}

// demoJobs returns n job envelopes, one per line, and their total cost.
// The types (costs 1, 2, 5) are drawn with equal odds from a fixed seed.
// Each job names its id and type in headers, by which the model API
// prices it and counts duplicates.
func demoJobs(n int) ([]byte, float64) {
	rng := rand.New(rand.NewPCG(demoSeed, demoSeed))
	var b bytes.Buffer
	units := 0.0
	for i := 1; i <= n; i++ {
		t := demoJobTypes[rng.IntN(len(demoJobTypes))]
		units += t.cost
		id := fmt.Sprintf("demo-%06d", i)
		fmt.Fprintf(&b, `{"id":%q,"type":%q,"headers":{%q:%q,%q:%q}`, id, t.name, sim.JobIDHeader, id, sim.TypeHeader, t.name)
		switch t.name {
		case "read":
			fmt.Fprintf(&b, `,"path":"/v1/items/%d"}`+"\n", i)
		case "write":
			fmt.Fprintf(&b, `,"body":{"item":%d}}`+"\n", i)
		default:
			fmt.Fprintf(&b, `,"body":{"query":"item %d"}}`+"\n", i)
		}
	}
	return b.Bytes(), units
}
