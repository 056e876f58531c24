package demo

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// demoMonitor samples the workers (through their snapshots) and the model
// API, draws the progress, and records the series of the chart.
type demoMonitor struct {
	o   Options
	rep *Report
	// probes read each worker's snapshots; nil until it has started.
	probes []atomic.Pointer[run.Probe]
	api    *sim.Server
	src    *natsjs.Source
	out    io.Writer
	width  int // terminal columns; 0 when the output is not a terminal
	start  time.Time

	series    sim.Series
	accepted  []float64 // the API's accepted units at each sample
	throttled int64     // the API's 429s at the last sample
	drawn     int       // lines of the live display on screen
	finished  bool
}

// demoSample is one look at the workers and the API.
type demoSample struct {
	at       time.Duration
	rates    []float64 // each worker's rate: what it sends at
	accepted float64   // units the workers measured the API to accept in the last minute
	// estimate is the sum of the workers' estimates of what the API
	// accepts, units per minute, over the estimated of them that have one.
	estimate  float64
	estimated int
	settled   float64 // jobs settled by the workers (done or dead-lettered)
	api       sim.Stats
	eta       time.Duration // -1 when unknown
	drained   int64
	requests  int64
}

// run samples until every job is settled and the queue is empty, ctx ends
// (the report is then interrupted) or a worker fails (workers ends).
func (m *demoMonitor) run(ctx, workers context.Context) error {
	poll := min(m.o.Sample, 250*time.Millisecond)
	plainEvery := max(int(demoPlainEvery/m.o.Sample), 1)
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
			done := s.settled >= float64(m.o.Jobs) && m.queueEmpty(ctx)
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
				next = next.Add(m.o.Sample)
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
	s := demoSample{at: time.Since(m.start), rates: make([]float64, len(m.probes)), api: m.api.Stats(), eta: -1}
	for i := range m.probes {
		p := m.probes[i].Load()
		if p == nil {
			continue
		}
		pace := p.Pace()
		s.rates[i] = pace.Sending
		if !math.IsNaN(pace.Accepted) {
			s.accepted += pace.Accepted
		}
		if pace.Estimate > 0 {
			s.estimate += pace.Estimate
			s.estimated++
		}
		jobs := p.Worker().Jobs
		s.settled += float64(jobs[worker.OutcomeSucceeded] + jobs[worker.OutcomeDeadLettered])
	}
	s.drained = min(int64(s.settled), int64(m.o.Jobs))
	s.requests = s.api.AcceptedRequests + s.api.Throttled + s.api.TooLarge + s.api.BadRequests
	// The time left at the pace of the last 10 s (or since the start).
	back := int(10 * time.Second / m.o.Sample)
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
	sr.Quota = append(sr.Quota, m.o.Quota)
	sr.Used = append(sr.Used, s.api.WindowUnits*time.Minute.Seconds()/demoWindow.Seconds())
	sr.Throttles = append(sr.Throttles, int(s.api.Throttled-m.throttled))
	m.throttled = s.api.Throttled
	m.accepted = append(m.accepted, s.api.AcceptedUnits)
}

// chart is the recorded run as a chart.
func (m *demoMonitor) chart() *sim.Chart {
	r := m.rep
	state := fmt.Sprintf("%d of %d jobs done in %s", r.done, r.jobs, queue.FormatDuration(r.drain))
	if r.interrupted {
		state = fmt.Sprintf("interrupted at %s: %d of %d jobs done", queue.FormatDuration(r.drain), r.done, r.jobs)
	}
	return &sim.Chart{
		Title: fmt.Sprintf("sluice demo · %d workers · %d jobs of cost 1, 2, 5", r.workers, r.jobs),
		Notes: []string{
			fmt.Sprintf("hidden quota %s units/min (sliding %v window) · initial rate %s units/min · limiter.instances %d",
				fnum(r.quota), demoWindow, fnum(m.o.Rate), r.workers),
			fmt.Sprintf("%s (ideal %s) · %d requests · %d throttled · utilization %s",
				state, queue.FormatDuration(r.ideal()), r.requests(), r.api.Throttled, utilizationShort(*r)),
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
		fmt.Fprintf(m.out, "%s  drained %d/%d  sending at %.0f (%s) · API accepted %.0f units/min · %s  quota %s  429s %d/%d  ETA %s\n",
			fmtClock(s.at), s.drained, m.o.Jobs, sum, strings.Join(parts, "+"), s.accepted, s.estimateText(), fnum(m.o.Quota), s.api.Throttled, s.requests, eta)
		return
	}
	frac := float64(s.drained) / float64(m.o.Jobs)
	bar := min(40, m.width-6)
	filled := int(frac * float64(bar))
	lines := []string{
		fmt.Sprintf("  drained  %d/%d (%.0f%%)  %s elapsed  ETA %s", s.drained, m.o.Jobs, frac*100, fmtClock(s.at), eta),
		fmt.Sprintf("  [%s%s]", strings.Repeat("#", filled), strings.Repeat(".", bar-filled)),
		fmt.Sprintf("  rates    sending at %.0f units/min · API accepted %.0f units/min · %s (hidden quota %s)", sum, s.accepted, s.estimateText(), fnum(m.o.Quota)),
		fmt.Sprintf("  workers  sending at %s units/min", workerRates(parts)),
		fmt.Sprintf("  API      %.0f units/min used (its last %v) · %d requests · %d throttled (429)", used, demoWindow, s.requests, s.api.Throttled),
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

// estimateText says what the workers' limiters estimate the API accepts,
// summed: "estimate 1176 units/min", with how many of the workers have one
// when not all do, or "estimate none yet" before the first 429 or quota
// header.
func (s demoSample) estimateText() string {
	switch {
	case s.estimated == 0:
		return "estimate none yet"
	case s.estimated < len(s.rates):
		return fmt.Sprintf("estimate %.0f units/min (%d of %d workers)", s.estimate, s.estimated, len(s.rates))
	}
	return fmt.Sprintf("estimate %.0f units/min", s.estimate)
}

func workerRates(parts []string) string {
	named := make([]string, len(parts))
	for i, p := range parts {
		named[i] = fmt.Sprintf("w%d %s", i+1, p)
	}
	return strings.Join(named, " + ")
}

// printDemoSummary prints the figures of a finished (or interrupted) demo.
func printDemoSummary(w io.Writer, r Report) {
	if r.interrupted {
		fmt.Fprintf(w, "Interrupted after %s: %d of %d jobs done; the others went with the demo's temporary queue.\n", queue.FormatDuration(r.drain), r.done, r.jobs)
	} else {
		fmt.Fprintf(w, "Drained %d jobs in %s.\n", r.jobs, queue.FormatDuration(r.drain))
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
			queue.FormatDuration(r.drain), queue.FormatDuration(r.ideal()), fnum(r.totalUnits), fnum(r.quota))
	} else {
		fmt.Fprintf(w, "  drain time    %s; ideal %s (%s units ÷ %s units/min); ratio %.2f\n",
			queue.FormatDuration(r.drain), queue.FormatDuration(r.ideal()), fnum(r.totalUnits), fnum(r.quota), r.drain.Seconds()/r.ideal().Seconds())
	}
	if r.svg != "" {
		fmt.Fprintf(w, "  chart         %s\n", r.svg)
	}
}

func fnum(v float64) string { return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") }

func utilizationShort(r Report) string {
	if u, ok := r.utilization(); ok {
		return fmt.Sprintf("%.2f", u)
	}
	return "n/a"
}

// fmtClock prints a duration as m:ss.
func fmtClock(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	return fmt.Sprintf("%d:%02d", s/60, s%60)
}
