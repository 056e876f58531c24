package worker

import (
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/call"
)

// Metrics are the worker's Prometheus metrics, a prometheus.Collector that
// the caller registers (Register or MustRegister) and passes in
// Deps.Metrics. A nil *Metrics records nothing. Give each Worker its own.
//
//   - sluice_jobs_total{outcome,type}: jobs settled, by outcome and job type
//     (types that are not configured count as "other", so a queue cannot
//     grow the label set), hand-backs to the queue included;
//   - sluice_jobs_finished_total{outcome,type}: jobs finished for good,
//     succeeded or dead-lettered: the throughput, without the jobs handed
//     back (redelivered, rejected, released, unsettled) that come again;
//   - sluice_job_age_seconds: from a finished job's publish time (where the
//     source gives it, sources.PublishedAt) to its settlement;
//   - sluice_attempts_total{result}: calls to the target, by the class of
//     the result (success, throttle, server_error, client_error,
//     network_error);
//   - sluice_target_latency_seconds{status_class}: the target's latency, by
//     1xx…5xx or "error";
//   - sluice_jobs_in_flight: jobs held by the worker.
type Metrics struct {
	jobs     *prometheus.CounterVec   // outcome, type
	finished *prometheus.CounterVec   // outcome (succeeded, dead_lettered), type
	age      prometheus.Histogram     // publish to finish
	attempts *prometheus.CounterVec   // result
	latency  *prometheus.HistogramVec // status_class
	inFlight prometheus.Gauge
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the worker's metrics, registered nowhere.
func NewMetrics() *Metrics {
	return &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_jobs_total",
			Help: "Jobs settled by the worker, by outcome and job type.",
		}, []string{"outcome", "type"}),
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_jobs_finished_total",
			Help: "Jobs finished for good (succeeded or dead_lettered), by outcome and job type; hand-backs to the queue are not counted.",
		}, []string{"outcome", "type"}),
		age: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_job_age_seconds",
			Help:    "Time from a job's publish to its finish (succeeded or dead-lettered), where the source gives the publish time.",
			Buckets: []float64{.1, .5, 1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 21600, 86400},
		}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_attempts_total",
			Help: "Calls to the target API, by result class.",
		}, []string{"result"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_target_latency_seconds",
			Help:    "Latency of calls to the target API, by status class.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"status_class"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_jobs_in_flight",
			Help: "Jobs held by the worker: received and not yet settled.",
		}),
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.jobs, m.finished, m.age, m.attempts, m.latency, m.inFlight}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

var statusClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// statusClass is the status_class label of a status: 1xx…5xx, or "error"
// for none (0) or one out of range.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "error"
	}
	return statusClasses[status/100-1]
}

// statusIndex is the index of statusClass(status): 0…4 for 1xx…5xx, 5 for
// "error".
func statusIndex(status int) int {
	if status < 100 || status > 599 {
		return len(statusClasses)
	}
	return status/100 - 1
}

// Stats is a snapshot of a Worker's counts since New. The counts are
// read one by one, so a snapshot taken while jobs settle may be off by
// the jobs settled meanwhile.
type Stats struct {
	// Received counts the messages taken from the source.
	Received int64
	// InFlight is the jobs held now: received and not yet settled.
	InFlight int64
	// Jobs counts settled jobs by outcome (the outcome label of
	// sluice_jobs_total); every outcome has a key.
	Jobs map[Outcome]int64
	// Attempts counts calls to the target by the class of their result
	// (the result label of sluice_attempts_total); every class has a key.
	Attempts map[call.Kind]int64
	// Target says whether the target has failed every call lately (for
	// a readiness check: TargetHealth.Down).
	Target TargetHealth
}

// counters are the Worker's own counts behind Stats.
type counters struct {
	received atomic.Int64
	inFlight atomic.Int64
	jobs     [numOutcomes]atomic.Int64
	attempts [call.NetworkError + 1]atomic.Int64
	// lastFinished is when the last job finished (succeeded or
	// dead-lettered), in Unix nanoseconds; 0: none yet. A drain ends then.
	lastFinished atomic.Int64
}

// Stats returns a snapshot of the worker's counts. It is safe to call at
// any time, from any goroutine, with or without Metrics.
func (w *Worker) Stats() Stats {
	s := Stats{
		Received: w.stats.received.Load(),
		InFlight: w.stats.inFlight.Load(),
		Jobs:     make(map[Outcome]int64, numOutcomes),
		Attempts: make(map[call.Kind]int64, len(w.stats.attempts)),
		Target:   w.health.snapshot(),
	}
	for o := range numOutcomes {
		s.Jobs[o] = w.stats.jobs[o].Load()
	}
	for k := range w.stats.attempts {
		s.Attempts[call.Kind(k)] = w.stats.attempts[k].Load()
	}
	return s
}

// children are the metrics' children that a job's path counts with, each
// looked up by its label values on first use only: WithLabelValues hashes
// the values and takes the vector's lock on every call. Children are not
// created before they are used, so /metrics shows the same series either
// way.
type children struct {
	jobs, finished [][numOutcomes]lazyCounter // by type index (typeIndex)
	attempts       [call.NetworkError + 1]lazyCounter
	latency        [len(statusClasses) + 1]lazyObserver // by statusIndex
}

// lazyCounter is a child counter, looked up on first use.
type lazyCounter struct {
	p atomic.Pointer[prometheus.Counter]
}

func (l *lazyCounter) get(v *prometheus.CounterVec, a, b string) prometheus.Counter {
	if p := l.p.Load(); p != nil {
		return *p
	}
	var c prometheus.Counter
	if b == "" {
		c = v.WithLabelValues(a)
	} else {
		c = v.WithLabelValues(a, b)
	}
	l.p.Store(&c) // two first uses store the same child
	return c
}

// lazyObserver is a child histogram, looked up on first use.
type lazyObserver struct {
	p atomic.Pointer[prometheus.Observer]
}

func (l *lazyObserver) get(v *prometheus.HistogramVec, a string) prometheus.Observer {
	if p := l.p.Load(); p != nil {
		return *p
	}
	o := v.WithLabelValues(a)
	l.p.Store(&o)
	return o
}

// typeLabels lists the values of the type label a worker can use: the
// configured types, the default type and "other"; index is the inverse.
type typeLabels struct {
	names []string
	index map[string]int
}

func newTypeLabels(cfg JobsConfig) typeLabels {
	t := typeLabels{index: map[string]int{}}
	add := func(name string) {
		if _, ok := t.index[name]; !ok {
			t.index[name] = len(t.names)
			t.names = append(t.names, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Types)) {
		add(name)
	}
	add(cfg.DefaultType)
	add(otherType)
	return t
}

// otherType is the type label of the jobs whose type is not configured.
const otherType = "other"

// settled counts a job settled with outcome at now; typ is its type label
// (typeLabel).
func (w *Worker) settled(o Outcome, typ string, now time.Time) {
	if o < 0 || o >= numOutcomes {
		return
	}
	w.stats.jobs[o].Add(1)
	if o.Finished() {
		w.stats.lastFinished.Store(now.UnixNano())
	}
	if m := w.metrics; m != nil {
		i := w.types.index[typ]
		w.children.jobs[i][o].get(m.jobs, o.String(), typ).Inc()
		if o.Finished() {
			w.children.finished[i][o].get(m.finished, o.String(), typ).Inc()
		}
	}
}

// aged records the age of a job finished at now, published at published
// (zero: unknown, nothing recorded).
func (w *Worker) aged(published, now time.Time) {
	if m := w.metrics; m != nil && !published.IsZero() {
		m.age.Observe(max(now.Sub(published), 0).Seconds())
	}
}

// attempted counts a call to the target.
func (w *Worker) attempted(k call.Kind, status int, seconds float64) {
	if k < 0 || int(k) >= len(w.stats.attempts) {
		return
	}
	w.stats.attempts[k].Add(1)
	if m := w.metrics; m != nil {
		w.children.attempts[k].get(m.attempts, k.String(), "").Inc()
		class := statusClass(status)
		w.children.latency[statusIndex(status)].get(m.latency, class).Observe(seconds)
	}
}

// held adds d to the jobs held.
func (w *Worker) held(d int64) {
	w.stats.inFlight.Add(d)
	if m := w.metrics; m != nil {
		m.inFlight.Add(float64(d))
	}
}

// typeLabel bounds the type label to the configured types.
func (w *Worker) typeLabel(t string) string {
	if _, ok := w.cfg.Jobs.Types[t]; ok || t == w.cfg.Jobs.DefaultType {
		return t
	}
	return otherType
}
