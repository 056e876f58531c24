// Package backends starts the backends that tests run against in process:
// an embedded JetStream server and the Pub/Sub fake; and reads a
// Prometheus registry's gauges. It is apart from
// testkit so that the tests that only poll or share a buffer do not link a
// NATS server and a gRPC fake.
package backends

import (
	"testing"

	"cloud.google.com/go/pubsub/v2/pstest"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/sources/natsjs"
)

// StartNATS starts an embedded JetStream server on a free port with a
// temporary store for one test, and returns its client URL.
func StartNATS(t testing.TB) string {
	t.Helper()
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: t.TempDir(), Port: natsjs.RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv.ClientURL()
}

// FakePubSub starts an in-process Pub/Sub server (pstest) for one test and
// points PUBSUB_EMULATOR_HOST at it, as a user of the emulator would.
func FakePubSub(t *testing.T) *pstest.Server {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	return srv
}

// Gauge returns the value of reg's one sample of the gauge name, and
// whether reg has exactly one.
func Gauge(t testing.TB, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}
