package run

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// /readyz turns not ready once every call to the target has failed for
// ops.target_unready_after, and ready again at the first answer (#15).
func TestTargetAnswersReadiness(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var h worker.TargetHealth
	now := t0
	check := targetAnswers(func() worker.TargetHealth { return h }, time.Minute, func() time.Time { return now })
	for _, st := range []struct {
		at      time.Duration
		health  worker.TargetHealth
		wantErr string
	}{
		{0, worker.TargetHealth{}, ""},
		{30 * time.Second, worker.TargetHealth{FailingSince: t0, Failures: 12}, ""},
		{time.Minute, worker.TargetHealth{FailingSince: t0, Failures: 25}, "target failing: every call for 1m0s (25 calls: no answer or a 5xx)"},
		{2 * time.Minute, worker.TargetHealth{}, ""},
	} {
		now, h = t0.Add(st.at), st.health
		err := check(t.Context())
		if (err == nil) != (st.wantErr == "") || (err != nil && err.Error() != st.wantErr) {
			t.Errorf("t0+%v: %v, want %q", st.at, err, st.wantErr)
		}
	}
	// 0 turns the check off.
	h = worker.TargetHealth{FailingSince: t0, Failures: 1}
	if err := targetAnswers(func() worker.TargetHealth { return h }, 0, func() time.Time { return t0.Add(time.Hour) })(t.Context()); err != nil {
		t.Errorf("target_unready_after 0: %v", err)
	}
	if d := config.Default().Ops.TargetUnreadyAfter; d != time.Minute {
		t.Errorf("default ops.target_unready_after %v, want 1m", d)
	}
}

// healthSource is a source that says whether it is healthy.
type healthSource struct {
	connSource
	err error
}

func (h *healthSource) Healthy(context.Context) error { return h.err }

// A source that can tell its health is asked before its connection.
func TestSourceReadyAsksHealth(t *testing.T) {
	hs := &healthSource{err: errors.New("jetstream: stream JOBS is gone")}
	hs.up.Store(true)
	if err := sourceReady(hs)(t.Context()); err == nil || err.Error() != "source not ready: jetstream: stream JOBS is gone" {
		t.Errorf("unhealthy, connected: %v", err)
	}
	hs.err = nil
	if err := sourceReady(hs)(t.Context()); err != nil {
		t.Errorf("healthy: %v", err)
	}
}

// With the embedded store directory removed, /readyz is not ready and
// sluice_source_up is 0 (#15).
func TestRemovedStoreNotReady(t *testing.T) {
	dir := t.TempDir()
	src, err := natsjs.Open(t.Context(), natsjs.Config{URL: natsjs.Embedded, Setup: true,
		Embedded: natsjs.EmbeddedConfig{StoreDir: dir, Port: natsjs.RandomPort}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	reg := prometheus.NewRegistry()
	if err := RegisterOpsMetrics(reg, limiter.NewSaturation(0), src, "test", nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(opsHandler(opsConfig{Metrics: config.Default().Metrics}, reg, sourceReady(src), nil))
	defer srv.Close()
	up := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "sluice_source_up" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no sluice_source_up")
		return -1
	}
	if code, body := testkit.Get(t, srv.URL+"/readyz"); code != 200 || up() != 1 {
		t.Fatalf("before: /readyz %d %q, sluice_source_up %v", code, body, up())
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	code, body := testkit.Get(t, srv.URL+"/readyz")
	if code != 503 || !strings.Contains(body, "embedded store") {
		t.Errorf("with the store removed: /readyz %d %q, want 503 naming the store", code, body)
	}
	if v := up(); v != 0 {
		t.Errorf("with the store removed: sluice_source_up %v, want 0", v)
	}
}
