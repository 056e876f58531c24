package main

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
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// The demo's model API counts its quota over a short window, and the
// limiter is tuned for such an API as docs/tuning.md advises (a short
// burst, frequent raises), so that one minute shows the climb, the first
// throttle, the cut and the steady state.
const (
	demoWindow           = 10 * time.Second
	demoBurst            = time.Second
	demoIncreaseInterval = 2 * time.Second
	demoMaxPause         = 10 * time.Second
	demoMaxInFlight      = 16
	demoSeed             = 1
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

// demoOptions are the knobs of `sluice demo`.
type demoOptions struct {
	workers  int
	jobs     int
	quota    float64 // units per minute, the whole API
	rate     float64 // initial rate of the whole budget, units per minute
	svg      string  // chart path; "" writes none
	natsPort int     // 0 or -1: a free port
	// sample is the interval between two samples of the chart and two
	// refreshes of the progress on a terminal. Default 1s.
	sample time.Duration
	// tempDir is where the demo's temporary directory is made; "" is the
	// system's.
	tempDir string
}

func defaultDemoOptions() demoOptions {
	return demoOptions{workers: 2, jobs: 400, quota: 1200, rate: 600, svg: "demo.svg", sample: time.Second}
}

func (o demoOptions) validate() error {
	lim := limiter.DefaultConfig()
	largest := demoJobTypes[len(demoJobTypes)-1].cost
	minQuota := largest * time.Minute.Seconds() / demoWindow.Seconds()
	var errs []error
	if o.workers < 1 || o.workers > 64 {
		errs = append(errs, fmt.Errorf("--workers: must be from 1 to 64, got %d", o.workers))
	}
	if o.jobs < 1 || o.jobs > 1_000_000 {
		errs = append(errs, fmt.Errorf("--jobs: must be from 1 to 1000000, got %d", o.jobs))
	}
	if !(o.quota >= minQuota) || math.IsInf(o.quota, 0) {
		errs = append(errs, fmt.Errorf("--quota: must be >= %v units per minute (the largest job, %v units, must fit in the API's %v window), got %v",
			minQuota, largest, demoWindow, o.quota))
	}
	if !(o.rate >= lim.MinUnitsPerMinute && o.rate <= lim.MaxUnitsPerMinute) {
		errs = append(errs, fmt.Errorf("--rate: must be from %.0f to %.0f units per minute, got %v", lim.MinUnitsPerMinute, lim.MaxUnitsPerMinute, o.rate))
	}
	if o.natsPort < -1 || o.natsPort > 65535 {
		errs = append(errs, fmt.Errorf("--nats-port: must be from 1 to 65535, or 0 or -1 for a free port, got %d", o.natsPort))
	}
	return errors.Join(errs...)
}

func newDemoCmd() *cobra.Command {
	o := defaultDemoOptions()
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Drain a backlog into a model API with a hidden quota, all in one process",
		Long: `demo needs no infrastructure: in one process it starts an embedded NATS
JetStream server (a free port, a temporary store removed at the end), the
model API of 'sluice testserver' with a hidden quota, and --workers workers
sharing the budget (limiter.instances = --workers, each with its own limiter,
as separate 'sluice run' processes would). It enqueues --jobs jobs of cost 1,
2 and 5 and drains them, showing the progress live: jobs drained, each
worker's rate and their sum, 429s and an estimate of the time left.

At the end it prints a summary (jobs done and dead-lettered, requests and
throttles, utilization of the quota, drain time against the ideal of total
units ÷ quota) and writes a chart to --svg.

The model API counts its quota over a 10 s sliding window, and the limiter
is tuned for such an API (burst 1s, aimd.increase_interval 2s, max_pause
10s; the other options are the defaults), so that the defaults show the
climb, the first throttle, the cut and the steady state in about a minute.
Ctrl-C stops the demo cleanly; a second Ctrl-C exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.validate(); err != nil {
				return usageError(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // a second signal ends the process at once
			}()
			out := cmd.OutOrStdout()
			width := 0 // not a terminal: progress as plain lines
			if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				width = 80
				if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
					width = w
				}
			}
			rep, err := runDemo(ctx, o, out, width)
			if err != nil {
				return err
			}
			if rep.interrupted {
				// 130; after SIGTERM exitStatus makes it 143.
				return &exitError{code: 130}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.workers, "workers", o.workers, "workers sharing the budget, each with its own limiter (limiter.instances)")
	fl.IntVar(&o.jobs, "jobs", o.jobs, "jobs to enqueue, of cost 1, 2 and 5 units")
	fl.Float64Var(&o.quota, "quota", o.quota, "the model API's hidden quota, units per minute (counted over a 10 s window)")
	fl.Float64Var(&o.rate, "rate", o.rate, "initial rate of the whole budget, units per minute (limiter.initial_units_per_minute)")
	fl.StringVar(&o.svg, "svg", o.svg, `chart of the run; "" writes none`)
	fl.IntVar(&o.natsPort, "nats-port", -1, "embedded NATS server's port on 127.0.0.1; 0 or -1 for a free one")
	return cmd
}

// demoReport is what a demo measured.
type demoReport struct {
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

// requests is every call that reached the model API.
func (r demoReport) requests() int64 {
	return r.api.AcceptedRequests + r.api.Throttled + r.api.TooLarge + r.api.BadRequests
}

// ideal is the drain time at exactly the quota.
func (r demoReport) ideal() time.Duration {
	return time.Duration(r.totalUnits / r.quota * float64(time.Minute))
}

// utilization is the units accepted over the quota's rate times the drain
// time. It is not known for a drain shorter than the API's window, where a
// whole window's quota may be taken at once.
func (r demoReport) utilization() (float64, bool) {
	if r.drain < demoWindow {
		return 0, false
	}
	return r.api.AcceptedUnits / (r.quota * r.drain.Minutes()), true
}

func (r demoReport) utilizationText() string {
	u, ok := r.utilization()
	if !ok {
		return fmt.Sprintf("not measured: the drain was shorter than the API's %v window", demoWindow)
	}
	return fmt.Sprintf("%.2f of the quota during the drain", u)
}

// runDemo runs the demo and reports its figures; it prints its progress
// and summary on out. With a width (the terminal's columns) the progress is
// redrawn in place; with 0 it is a plain line every demoPlainEvery.
// Everything it started is stopped, and its temporary directory removed,
// before it returns. When ctx ends first, the report is marked
// interrupted.
func runDemo(ctx context.Context, o demoOptions, out io.Writer, width int) (demoReport, error) {
	if err := o.validate(); err != nil {
		return demoReport{}, err
	}
	if o.sample <= 0 {
		o.sample = time.Second
	}
	rep := demoReport{workers: o.workers, jobs: o.jobs, quota: o.quota}
	// The chart's file is opened now, so that a bad path fails before the
	// run; it is truncated only when the chart is written, and a file the
	// demo created is removed if the chart never is.
	var chartFile *os.File
	if o.svg != "" {
		_, statErr := os.Stat(o.svg)
		f, err := os.OpenFile(o.svg, os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			return rep, fmt.Errorf("--svg: %w", err)
		}
		chartFile = f
		defer func() {
			if rep.svg == "" {
				chartFile.Close()
				if os.IsNotExist(statErr) {
					os.Remove(o.svg)
				}
			}
		}()
	}
	dir, err := os.MkdirTemp(o.tempDir, "sluice-demo-")
	if err != nil {
		return rep, fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	log := slog.New(slog.DiscardHandler)

	// The queue: an embedded JetStream server.
	port := o.natsPort
	if port == 0 {
		port = natsjs.RandomPort
	}
	ns, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: filepath.Join(dir, "nats"), Host: natsjs.DefaultHost, Port: port}, log)
	if err != nil {
		var inUse *natsjs.PortInUseError
		if errors.As(err, &inUse) {
			return rep, fmt.Errorf("--nats-port: %s is in use; leave --nats-port out for a free port", inUse.Addr)
		}
		return rep, fmt.Errorf("demo: %w", err)
	}
	defer ns.Shutdown()

	// The target: the model API with its hidden quota.
	costs := map[string]float64{}
	for _, t := range demoJobTypes {
		costs[t.name] = t.cost
	}
	api, err := sim.NewServer(sim.ServerConfig{
		Quota: o.quota * demoWindow.Seconds() / time.Minute.Seconds(), Window: demoWindow, DefaultCost: 1, TypeCosts: costs,
	})
	if err != nil {
		return rep, fmt.Errorf("demo: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return rep, fmt.Errorf("demo: model API: %w", err)
	}
	hs := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		<-served
	}()
	apiURL := "http://" + ln.Addr().String()

	cfg, err := demoConfig(o, ns.ClientURL(), apiURL)
	if err != nil {
		return rep, err
	}
	fmt.Fprintf(out, "sluice demo: %d jobs → %d workers → a model API with a hidden quota of %s units/min\n", o.jobs, o.workers, fnum(o.quota))
	fmt.Fprintf(out, "  queue      embedded NATS JetStream at %s (a temporary store, removed at the end)\n", ns.ClientURL())
	fmt.Fprintf(out, "  model API  %s (GET /stats); its quota is counted over a sliding %v window\n", apiURL, demoWindow)
	fmt.Fprintf(out, "  limiter    limiter.instances %d, initial %s units/min for the whole budget, aimd; burst %v, increase every %v\n",
		o.workers, fnum(o.rate), demoBurst, demoIncreaseInterval)

	// The backlog.
	src, err := openNATSJS(ctx, cfg.Source.JetStream, log)
	if err != nil {
		return rep, err
	}
	defer src.Close()
	jobs, units := demoJobs(o.jobs)
	rep.totalUnits = units
	res, err := enqueue(ctx, src, bytes.NewReader(jobs), "demo jobs", nil, io.Discard)
	if err != nil {
		if ctx.Err() != nil {
			rep.interrupted = true
			fmt.Fprintln(out, "interrupted while enqueueing")
			return rep, nil
		}
		return rep, err
	}
	fmt.Fprintf(out, "  backlog    %d jobs enqueued, %s units (cost 1, 2 or 5); ideal drain at the quota %s\n\n",
		res.published, fnum(units), fmtDuration(rep.ideal()))

	// The workers, each as `sluice run` would run it.
	wctx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	g, gctx := errgroup.WithContext(wctx)
	regs := make([]*prometheus.Registry, o.workers)
	start := time.Now()
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
		wc := cfg
		wc.Worker.ID = fmt.Sprintf("demo-worker-%d", i+1)
		g.Go(func() error {
			if err := runWorker(gctx, wc, false, regs[i], log); err != nil {
				return fmt.Errorf("demo: worker %d: %w", i+1, err)
			}
			return nil
		})
	}

	mon := &demoMonitor{o: o, rep: &rep, regs: regs, api: api, src: src, out: out, width: width, start: start}
	runErr := mon.run(ctx, gctx)
	stopWorkers()
	werr := g.Wait()
	if runErr == nil && werr != nil && !rep.interrupted && !mon.finished {
		runErr = werr
	}
	if runErr != nil {
		return rep, runErr
	}
	fmt.Fprintln(out)

	if st, err := src.Stats(context.WithoutCancel(ctx)); err == nil && st.DeadLetters >= 0 {
		rep.deadLetters = st.DeadLetters
	}
	rep.api = api.Stats()
	rep.done = rep.api.Jobs.Distinct
	rep.duplicates = rep.api.Jobs.Duplicates
	if chartFile != nil {
		if err := writeDemoChart(chartFile, mon.chart()); err != nil {
			return rep, fmt.Errorf("--svg: %w", err)
		}
		rep.svg = o.svg
	}
	printDemoSummary(out, rep)
	return rep, nil
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
func demoConfig(o demoOptions, natsURL, apiURL string) (config.Config, error) {
	c := config.Default()
	c.Source.JetStream.URL = natsURL
	c.Target.BaseURL = apiURL
	c.Jobs.Types = map[string]config.JobType{}
	for _, t := range demoJobTypes {
		cost := t.cost
		c.Jobs.Types[t.name] = config.JobType{Method: t.method, Path: t.path, Cost: &cost}
	}
	c.Limiter.Instances = o.workers
	c.Limiter.InitialUnitsPerMinute = o.rate
	c.Limiter.Burst = time.Duration(demoBurst)
	c.Limiter.AIMD.IncreaseInterval = time.Duration(demoIncreaseInterval)
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

// demoMonitor samples the workers (through their metrics, as a scrape of
// separate processes would) and the model API, draws the progress, and
// records the series of the chart.
type demoMonitor struct {
	o     demoOptions
	rep   *demoReport
	regs  []*prometheus.Registry
	api   *sim.Server
	src   *natsjs.Source
	out   io.Writer
	width int // terminal columns; 0 when the output is not a terminal
	start time.Time

	series    sim.Series
	accepted  []float64 // the API's accepted units at each sample
	throttled int64     // the API's 429s at the last sample
	drawn     int       // lines of the live display on screen
	finished  bool
}

// demoSample is one look at the workers and the API.
type demoSample struct {
	at       time.Duration
	rates    []float64 // each worker's rate
	settled  float64   // jobs settled by the workers (done or dead-lettered)
	api      sim.Stats
	eta      time.Duration // -1 when unknown
	drained  int64
	requests int64
}

// run samples until every job is settled and the queue is empty, ctx ends
// (the report is then interrupted) or a worker fails (workers ends).
func (m *demoMonitor) run(ctx, workers context.Context) error {
	poll := min(m.o.sample, 250*time.Millisecond)
	plainEvery := max(int(demoPlainEvery/m.o.sample), 1)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	next := time.Now()
	for {
		select {
		case <-ctx.Done():
			m.rep.interrupted = true
			m.rep.drain = time.Since(m.start)
			m.last(m.sample())
			return nil
		case <-workers.Done():
			return nil // the worker's error is the caller's
		case now := <-tick.C:
			s := m.sample()
			done := s.settled >= float64(m.o.jobs) && m.queueEmpty(ctx)
			if done {
				m.rep.drain = s.at
				m.finished = true
				m.last(s)
				return nil
			}
			if !now.Before(next) {
				m.record(s)
				if m.width > 0 || (len(m.series.T)-1)%plainEvery == 0 {
					m.draw(s)
				}
				next = next.Add(m.o.sample)
			}
		}
	}
}

// queueEmpty reports whether the queue holds no job, waiting or in flight.
func (m *demoMonitor) queueEmpty(ctx context.Context) bool {
	st, err := m.src.Stats(ctx)
	return err == nil && st.Pending == 0 && st.AckPending == 0
}

func (m *demoMonitor) sample() demoSample {
	s := demoSample{at: time.Since(m.start), rates: make([]float64, len(m.regs)), api: m.api.Stats(), eta: -1}
	for i, reg := range m.regs {
		mfs, err := reg.Gather()
		if err != nil {
			continue
		}
		s.rates[i] = metricSum(mfs, "sluice_limiter_rate_units_per_minute", nil)
		s.settled += metricSum(mfs, "sluice_jobs_total", map[string]string{"outcome": worker.OutcomeSucceeded.String()})
		s.settled += metricSum(mfs, "sluice_jobs_total", map[string]string{"outcome": worker.OutcomeDeadLettered.String()})
	}
	s.drained = min(int64(s.settled), int64(m.o.jobs))
	s.requests = s.api.AcceptedRequests + s.api.Throttled + s.api.TooLarge + s.api.BadRequests
	// The time left at the pace of the last 10 s (or since the start).
	back := int(10 * time.Second / m.o.sample)
	if n := len(m.accepted); n > 0 {
		i := max(n-back, 0)
		span := s.at.Seconds() - m.series.T[i]
		if done := s.api.AcceptedUnits - m.accepted[i]; span > 0 && done > 0 {
			left := math.Max(m.rep.totalUnits-s.api.AcceptedUnits, 0)
			s.eta = time.Duration(left / (done / span) * float64(time.Second))
		}
	}
	return s
}

// last records and draws the final sample.
func (m *demoMonitor) last(s demoSample) {
	m.record(s)
	m.draw(s)
}

// record adds a sample to the chart's series.
func (m *demoMonitor) record(s demoSample) {
	sr := &m.series
	sum := 0.0
	for _, r := range s.rates {
		sum += r
	}
	sr.Instances = len(s.rates)
	sr.T = append(sr.T, math.Round(s.at.Seconds()*10)/10)
	sr.Rates = append(sr.Rates, s.rates)
	sr.SumRate = append(sr.SumRate, sum)
	sr.Quota = append(sr.Quota, m.o.quota)
	sr.Used = append(sr.Used, s.api.WindowUnits*time.Minute.Seconds()/demoWindow.Seconds())
	sr.Throttles = append(sr.Throttles, int(s.api.Throttled-m.throttled))
	m.throttled = s.api.Throttled
	m.accepted = append(m.accepted, s.api.AcceptedUnits)
}

// chart is the recorded run as a chart.
func (m *demoMonitor) chart() *sim.Chart {
	r := m.rep
	state := fmt.Sprintf("%d of %d jobs done in %s", r.done, r.jobs, fmtDuration(r.drain))
	if r.interrupted {
		state = fmt.Sprintf("interrupted at %s: %d of %d jobs done", fmtDuration(r.drain), r.done, r.jobs)
	}
	return &sim.Chart{
		Title: fmt.Sprintf("sluice demo · %d workers · %d jobs of cost 1, 2, 5", r.workers, r.jobs),
		Notes: []string{
			fmt.Sprintf("hidden quota %s units/min (sliding %v window) · initial rate %s units/min · limiter.instances %d",
				fnum(r.quota), demoWindow, fnum(m.o.rate), r.workers),
			fmt.Sprintf("%s (ideal %s) · %d requests · %d throttled · utilization %s",
				state, fmtDuration(r.ideal()), r.requests(), r.api.Throttled, utilizationShort(*r)),
		},
		Series: m.series,
	}
}

// draw shows the progress: redrawn in place on a terminal, as a plain line
// otherwise.
func (m *demoMonitor) draw(s demoSample) {
	sum := 0.0
	parts := make([]string, len(s.rates))
	for i, r := range s.rates {
		sum += r
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	eta := "--"
	if s.eta >= 0 {
		eta = fmtClock(s.eta)
	}
	used := s.api.WindowUnits * time.Minute.Seconds() / demoWindow.Seconds()
	if m.width <= 0 {
		fmt.Fprintf(m.out, "%s  drained %d/%d  rates %s = %.0f units/min  API used %.0f/%s  429s %d/%d  ETA %s\n",
			fmtClock(s.at), s.drained, m.o.jobs, strings.Join(parts, "+"), sum, used, fnum(m.o.quota), s.api.Throttled, s.requests, eta)
		return
	}
	frac := float64(s.drained) / float64(m.o.jobs)
	bar := min(40, m.width-6)
	filled := int(frac * float64(bar))
	lines := []string{
		fmt.Sprintf("  drained  %d/%d (%.0f%%)  %s elapsed  ETA %s", s.drained, m.o.jobs, frac*100, fmtClock(s.at), eta),
		fmt.Sprintf("  [%s%s]", strings.Repeat("#", filled), strings.Repeat(".", bar-filled)),
		fmt.Sprintf("  rates    %.0f units/min = %s (hidden quota %s)", sum, workerRates(parts), fnum(m.o.quota)),
		fmt.Sprintf("  API      %.0f units/min used · %d requests · %d throttled (429)", used, s.requests, s.api.Throttled),
	}
	if m.drawn > 0 {
		fmt.Fprintf(m.out, "\033[%dA", m.drawn) // back to the first line of the display
	}
	for _, l := range lines {
		if r := []rune(l); len(r) >= m.width {
			l = string(r[:m.width-1]) // a wrapped line would break the redraw
		}
		fmt.Fprintf(m.out, "\r%s\033[K\n", l)
	}
	m.drawn = len(lines)
}

func workerRates(parts []string) string {
	named := make([]string, len(parts))
	for i, p := range parts {
		named[i] = fmt.Sprintf("w%d %s", i+1, p)
	}
	return strings.Join(named, " + ")
}

// printDemoSummary prints the figures of a finished (or interrupted) demo.
func printDemoSummary(w io.Writer, r demoReport) {
	if r.interrupted {
		fmt.Fprintf(w, "Interrupted after %s: %d of %d jobs done; the others went with the demo's temporary queue.\n", fmtDuration(r.drain), r.done, r.jobs)
	} else {
		fmt.Fprintf(w, "Drained %d jobs in %s.\n", r.jobs, fmtDuration(r.drain))
	}
	req := r.requests()
	pct := 0.0
	if req > 0 {
		pct = float64(r.api.Throttled) / float64(req) * 100
	}
	fmt.Fprintf(w, "  jobs          %d done, %d dead-lettered, %d calls repeated for a job already done\n", r.done, r.deadLetters, r.duplicates)
	fmt.Fprintf(w, "  requests      %d to the API, %d throttled (%.1f%%)\n", req, r.api.Throttled, pct)
	fmt.Fprintf(w, "  units         %s accepted of %s enqueued\n", fnum(r.api.AcceptedUnits), fnum(r.totalUnits))
	fmt.Fprintf(w, "  utilization   %s\n", r.utilizationText())
	if r.interrupted {
		fmt.Fprintf(w, "  drain time    stopped after %s; the whole backlog would take %s at the quota (%s units ÷ %s units/min)\n",
			fmtDuration(r.drain), fmtDuration(r.ideal()), fnum(r.totalUnits), fnum(r.quota))
	} else {
		fmt.Fprintf(w, "  drain time    %s; ideal %s (%s units ÷ %s units/min); ratio %.2f\n",
			fmtDuration(r.drain), fmtDuration(r.ideal()), fnum(r.totalUnits), fnum(r.quota), r.drain.Seconds()/r.ideal().Seconds())
	}
	if r.svg != "" {
		fmt.Fprintf(w, "  chart         %s\n", r.svg)
	}
}

// metricSum adds the values of the samples of the family name whose labels
// include want.
func metricSum(mfs []*dto.MetricFamily, name string, want map[string]string) float64 {
	total := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, mt := range mf.GetMetric() {
			for k, v := range want {
				found := false
				for _, lp := range mt.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
						break
					}
				}
				if !found {
					continue metrics
				}
			}
			switch {
			case mt.Gauge != nil:
				total += mt.Gauge.GetValue()
			case mt.Counter != nil:
				total += mt.Counter.GetValue()
			}
		}
	}
	return total
}

// fnum prints a number without trailing zeros.
func fnum(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") }

func utilizationShort(r demoReport) string {
	if u, ok := r.utilization(); ok {
		return fmt.Sprintf("%.2f", u)
	}
	return "n/a"
}

// fmtDuration prints a duration in seconds with one decimal, or in whole
// seconds as 1h2m3s from 100 s on.
func fmtDuration(d time.Duration) string {
	if d < 100*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// fmtClock prints a duration as m:ss.
func fmtClock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
