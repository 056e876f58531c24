package cluster

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records the cluster view of one worker: a prometheus.Collector
// that the caller registers (Register or MustRegister). A nil *Metrics
// records nothing.
//
//	sluice_cluster_instances  gauge  live members seen in the bucket, this one included
//	sluice_cluster_leases     gauge  capacity partitions this worker holds (leases mode)
//	sluice_cluster_fleet_rate        gauge    the fleet's rate for the whole budget, units per minute
//	sluice_cluster_fleet_cuts_total  counter  fleet cuts this worker wrote
//	sluice_cluster_fleet_online      gauge    1 while following the fleet state, 0 while on the local rules
//	sluice_cluster_invalid_state_total{kind,field}  counter  values of shared state read from the bucket that broke their rule
//	                                                         (kind "fleet" or "member"; field "state" for no readable state)
type Metrics struct {
	instances   prometheus.Gauge
	leases      prometheus.Gauge
	fleetRate   prometheus.Gauge
	fleetCuts   prometheus.Counter
	fleetOnline prometheus.Gauge
	invalid     *prometheus.CounterVec
}

var _ prometheus.Collector = (*Metrics)(nil)

// NewMetrics returns the cluster metrics, registered nowhere.
func NewMetrics() *Metrics {
	return &Metrics{
		instances: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_cluster_instances",
			Help: "Live workers seen in the coordination bucket, this one included.",
		}),
		leases: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_cluster_leases",
			Help: "Capacity partitions this worker holds a lease on.",
		}),
		fleetRate: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_cluster_fleet_rate",
			Help: "The fleet's rate for the whole budget, units per minute, as this worker last saw it.",
		}),
		fleetCuts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_cluster_fleet_cuts_total",
			Help: "Cuts of the fleet's rate that this worker wrote.",
		}),
		fleetOnline: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_cluster_fleet_online",
			Help: "1 while this worker follows the fleet state, 0 while it runs on its local rules.",
		}),
		invalid: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_cluster_invalid_state_total",
			Help: "Values of shared state read from the bucket that broke their rule and were not used, by kind (fleet, member) and field.",
		}, []string{"kind", "field"}),
	}
}

func (m *Metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.instances, m.leases, m.fleetRate, m.fleetCuts, m.fleetOnline, m.invalid}
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

func (m *Metrics) setInstances(n int) {
	if m != nil {
		m.instances.Set(float64(n))
	}
}

func (m *Metrics) setLeases(n int) {
	if m != nil {
		m.leases.Set(float64(n))
	}
}

func (m *Metrics) setFleet(rate float64, online bool) {
	if m != nil {
		m.fleetRate.Set(rate)
		if online {
			m.fleetOnline.Set(1)
		} else {
			m.fleetOnline.Set(0)
		}
	}
}

func (m *Metrics) fleetCut() {
	if m != nil {
		m.fleetCuts.Inc()
	}
}

func (m *Metrics) invalidState(kind, field string) {
	if m != nil {
		m.invalid.WithLabelValues(kind, field).Inc()
	}
}
