package cluster

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics records the cluster view of one worker. A nil *Metrics records
// nothing.
//
//	sluice_cluster_instances  gauge  live members seen in the bucket, this one included
//	sluice_cluster_leases     gauge  capacity partitions this worker holds (leases mode)
type Metrics struct {
	instances prometheus.Gauge
	leases    prometheus.Gauge
}

// NewMetrics creates the metrics and registers them with reg (none if reg
// is nil).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		instances: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_cluster_instances",
			Help: "Live workers seen in the coordination bucket, this one included.",
		}),
		leases: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sluice_cluster_leases",
			Help: "Capacity partitions this worker holds a lease on.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.instances, m.leases} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("cluster: metrics: %w", err)
			}
		}
	}
	return m, nil
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
