package limiter

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records a Limiter's state for Prometheus: a prometheus.Collector
// that the caller registers (Register or MustRegister). Build one per
// Limiter with NewMetrics and pass it with WithMetrics. A nil *Metrics
// records nothing; Limiter.Stats counts either way.
//
// The names are stable (dashboards and alerts use them):
//
//	sluice_limiter_rate_units_per_minute  gauge    this instance's rate
//	sluice_limiter_rate_units_per_second  gauge    the same rate in Prometheus's base unit
//	sluice_limiter_tokens                 gauge    bucket level (negative after an oversized grant)
//	sluice_limiter_queue_length           gauge    waiting requests
//	sluice_limiter_instances              gauge    instance count (1/share for a fractional share)
//	sluice_limiter_paused                 gauge    1 during a Retry-After pause, else 0
//	sluice_limiter_units_total            counter  units granted
//	sluice_limiter_throttles_total        counter  throttled responses, by status
//	sluice_limiter_rejections_total       counter  rejected requests, by reason (queue_full, max_wait, canceled)
//	sluice_limiter_wait_seconds           histogram time from request to grant
//
// In disabled mode units and throttles are still counted.
type Metrics struct {
	rate       prometheus.Gauge
	ratePerSec prometheus.Gauge
	tokens     prometheus.Gauge
	queue      prometheus.Gauge
	instances  prometheus.Gauge
	paused     prometheus.Gauge
	units      prometheus.Counter
	throttles  *prometheus.CounterVec
	rejections *prometheus.CounterVec
	rejectedBy map[Reason]prometheus.Counter
	wait       prometheus.Histogram
}

// WaitBuckets are the bounds of sluice_limiter_wait_seconds, up to the
// default max_wait.
var WaitBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 100}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the limiter's metrics, registered nowhere.
func NewMetrics() *Metrics {
	m := &Metrics{
		rate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_limiter_rate_units_per_minute",
			Help: "Current rate of this instance's limiter, in units per minute.",
		}),
		ratePerSec: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_limiter_rate_units_per_second",
			Help: "Current rate of this instance's limiter, in units per second (sluice_limiter_rate_units_per_minute / 60).",
		}),
		tokens: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_limiter_tokens",
			Help: "Units in the limiter's bucket; negative after an oversized request.",
		}),
		queue: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_limiter_queue_length",
			Help: "Requests waiting in the limiter's queue.",
		}),
		instances: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_limiter_instances",
			Help: "Number of instances sharing the budget (1/share for a fractional share).",
		}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_limiter_paused",
			Help: "1 while the limiter is paused by a Retry-After, else 0.",
		}),
		units: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_limiter_units_total",
			Help: "Units granted by the limiter.",
		}),
		throttles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_limiter_throttles_total",
			Help: "Responses classified as throttles, by HTTP status.",
		}, []string{"status"}),
		rejections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_limiter_rejections_total",
			Help: "Requests the limiter rejected, by reason (queue_full, max_wait, canceled).",
		}, []string{"reason"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sluice_limiter_wait_seconds",
			Help:    "Time from a request to its grant.",
			Buckets: WaitBuckets,
		}),
	}
	m.rejectedBy = map[Reason]prometheus.Counter{}
	for _, r := range []Reason{ReasonQueueFull, ReasonMaxWait, ReasonCanceled} {
		m.rejectedBy[r] = m.rejections.WithLabelValues(string(r))
	}
	return m
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.rate, m.ratePerSec, m.tokens, m.queue, m.instances, m.paused,
		m.units, m.throttles, m.rejections, m.wait}
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

// setState copies the Core's gauges.
func (m *Metrics) setState(c *Core) {
	if m == nil {
		return
	}
	m.rate.Set(c.adapt.Rate)
	m.ratePerSec.Set(c.adapt.Rate / 60)
	m.setBucket(c)
	m.instances.Set(1 / c.rules.Part().Share)
	if c.paused {
		m.paused.Set(1)
	} else {
		m.paused.Set(0)
	}
}

// granted counts a grant after a wait.
func (m *Metrics) granted(units float64, wait time.Duration) {
	if m == nil {
		return
	}
	m.units.Add(units)
	m.wait.Observe(wait.Seconds())
}

// setBucket copies the Core's bucket and queue gauges.
func (m *Metrics) setBucket(c *Core) {
	if m == nil {
		return
	}
	m.tokens.Set(c.tokens)
	m.queue.Set(float64(c.QueueLen()))
}

func (m *Metrics) rejected(r Reason) {
	if m == nil {
		return
	}
	if c, ok := m.rejectedBy[r]; ok {
		c.Inc()
		return
	}
	m.rejections.WithLabelValues(string(r)).Inc()
}

func (m *Metrics) throttled(status int) {
	if m == nil {
		return
	}
	m.throttles.WithLabelValues(strconv.Itoa(status)).Inc()
}
