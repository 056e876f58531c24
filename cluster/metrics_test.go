package cluster

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sluicehq/sluice/internal/testkit"
)

func TestMetrics(t *testing.T) {
	srv := startServer(t)
	reg := prometheus.NewRegistry()
	met := NewMetrics()
	if err := reg.Register(met); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(NewMetrics()); err == nil {
		t.Error("second registration accepted")
	}
	cfg := Config{Bucket: uniqueBucket(t), TTL: 2 * time.Second, Partitions: 4}
	a, err := Join(t.Context(), connect(t, srv.ClientURL()), cfg, WithMetrics(met))
	if err != nil {
		t.Fatal(err)
	}
	var shares []float64
	l, err := NewLeases(t.Context(), a, WithMetrics(met), WithShare(func(s float64) { shares = append(shares, s) }))
	if err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(met.instances); got != 1 {
		t.Errorf("sluice_cluster_instances = %v, want 1", got)
	}
	if got := testutil.ToFloat64(met.leases); got != 4 {
		t.Errorf("sluice_cluster_leases = %v, want 4", got)
	}
	// The limiter never ran on a lease before it was held: idle first.
	if len(shares) != 2 || shares[0] != IdleShare || shares[1] != 1 {
		t.Errorf("shares reported: %v, want [IdleShare 1]", shares)
	}
	stopA := runUntilCleanup(t, a.Run)
	stopL := runUntilCleanup(t, l.Run)

	// A second member (no metrics) joins: a sees 2 and gives up half.
	b, err := Join(t.Context(), connect(t, srv.ClientURL()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := NewLeases(t.Context(), b)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, b.Run)
	runUntilCleanup(t, lb.Run)
	testkit.Eventually(t, "2 instances and 2 leases", func() bool {
		return testutil.ToFloat64(met.instances) == 2 && testutil.ToFloat64(met.leases) == 2 && len(lb.Held()) == 2
	})
	stopL()
	stopA()
	if got := testutil.ToFloat64(met.leases); got != 0 {
		t.Errorf("sluice_cluster_leases after shutdown = %v, want 0", got)
	}
	if shares[len(shares)-1] != IdleShare {
		t.Errorf("share after shutdown %v, want IdleShare", shares[len(shares)-1])
	}
	// a released its leases and left: b takes them all.
	testkit.Eventually(t, "b holding all 4", func() bool { return len(lb.Held()) == 4 && b.Count() == 1 })
	if n, err := testutil.GatherAndCount(reg, "sluice_cluster_instances", "sluice_cluster_leases"); err != nil || n != 2 {
		t.Errorf("gathered %d metrics, %v", n, err)
	}
}
