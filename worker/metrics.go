package worker

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Job outcomes, the values of the outcome label of sluice_jobs_total.
const (
	OutcomeSucceeded    = "succeeded"     // acked after a response below 400
	OutcomeDeadLettered = "dead_lettered" // dead-lettered, then terminated
	OutcomeRedelivered  = "redelivered"   // naked with a delay after its attempts failed
	OutcomeRejected     = "rejected"      // naked because the limiter rejected it
	OutcomeReleased     = "released"      // naked with no delay at shutdown
	OutcomeUnsettled    = "unsettled"     // an output or the queue failed; the queue redelivers it
)

// Metrics are the worker's Prometheus metrics. Build them with NewMetrics;
// a nil *Metrics records nothing.
type Metrics struct {
	jobs     *prometheus.CounterVec   // outcome, type
	attempts *prometheus.CounterVec   // result
	latency  *prometheus.HistogramVec // status_class
	inFlight prometheus.Gauge
}

// NewMetrics registers the worker's metrics with reg:
//
//   - sluice_jobs_total{outcome,type}: jobs settled, by outcome and job type
//     (types that are not configured count as "other", so a queue cannot
//     grow the label set);
//   - sluice_attempts_total{result}: calls to the target, by the class of
//     the result (success, throttle, server_error, client_error,
//     network_error);
//   - sluice_target_latency_seconds{status_class}: the target's latency, by
//     1xx…5xx or "error";
//   - sluice_jobs_in_flight: jobs held by the worker.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_jobs_total",
			Help: "Jobs settled by the worker, by outcome and job type.",
		}, []string{"outcome", "type"}),
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
	for _, c := range []prometheus.Collector{m.jobs, m.attempts, m.latency, m.inFlight} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) job(outcome, typ string) {
	if m != nil {
		m.jobs.WithLabelValues(outcome, typ).Inc()
	}
}

func (m *Metrics) attempt(result string, status int, seconds float64) {
	if m == nil {
		return
	}
	m.attempts.WithLabelValues(result).Inc()
	m.latency.WithLabelValues(statusClass(status)).Observe(seconds)
}

func (m *Metrics) addInFlight(d float64) {
	if m != nil {
		m.inFlight.Add(d)
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
