package worker

import (
	"context"
	"reflect"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/memory"
)

func TestStatusClass(t *testing.T) {
	for status, want := range map[int]string{
		0: "error", 99: "error", 100: "1xx", 200: "2xx", 204: "2xx", 302: "3xx",
		404: "4xx", 429: "4xx", 500: "5xx", 599: "5xx", 600: "error", -1: "error",
	} {
		if got := statusClass(status); got != want {
			t.Errorf("statusClass(%d) = %q, want %q", status, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = statusClass(503) }); n != 0 {
		t.Errorf("statusClass allocates %v times", n)
	}
}

// Attempts are counted by result and timed by status class; the type label
// of an unconfigured type is "other".
func TestMetricsLabels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := memory.NewQueue(memory.Config{})
		target := newScript()
		target.on("a", status(503, ""), status(200, ""))
		m := NewMetrics()
		if err := prometheus.NewRegistry().Register(m); err != nil {
			t.Fatal(err)
		}
		w, err := New(Config{Jobs: testJobs()}, Deps{Source: q.Source(), Target: handlerTarget{h: target}, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		w.jitter = func() float64 { return 0 }
		q.Publish(context.Background(), sources.Outgoing{ID: "1", Data: []byte(`{"type":"made-up-1","headers":{"X-Job":"a"}}`)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		for target.count() < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		cancel()
		<-done
		checks := []struct {
			name string
			got  float64
			want float64
		}{
			{"attempts{server_error}", testutil.ToFloat64(m.attempts.WithLabelValues("server_error")), 1},
			{"attempts{success}", testutil.ToFloat64(m.attempts.WithLabelValues("success")), 1},
			{"jobs{succeeded,other}", testutil.ToFloat64(m.jobs.WithLabelValues(OutcomeSucceeded.String(), "other")), 1},
			{"latency series (2xx, 5xx)", float64(testutil.CollectAndCount(m.latency)), 2},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		// Stats holds the same counts as the metrics.
		st := w.Stats()
		want := Stats{Received: 1, InFlight: 0,
			Jobs: map[Outcome]int64{OutcomeSucceeded: 1, OutcomeDeadLettered: 0, OutcomeRedelivered: 0,
				OutcomeRejected: 0, OutcomeReleased: 0, OutcomeUnsettled: 0},
			Attempts: map[call.Kind]int64{call.Success: 1, call.Throttle: 0, call.ServerError: 1,
				call.ClientError: 0, call.NetworkError: 0}}
		if !reflect.DeepEqual(st, want) {
			t.Errorf("Stats = %+v\nwant %+v", st, want)
		}
	})
}

// Only jobs finished for good count in sluice_jobs_finished_total and in
// the age histogram; a job handed back to the queue counts in
// sluice_jobs_total alone. Its age runs from its publish.
func TestFinishedJobsAndAge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := memory.NewQueue(memory.Config{})
		target := newScript()
		target.on("ok", status(200, ""))
		target.on("bad", status(400, ""))
		target.on("flaky", status(503, ""), status(503, ""))
		m := NewMetrics()
		prometheus.NewRegistry().MustRegister(m)
		w, err := New(Config{Jobs: testJobs(), MaxAttempts: 1, MaxDeliveries: 2}, Deps{Source: q.Source(), Target: handlerTarget{h: target}, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"ok", "bad", "flaky"} {
			q.Publish(context.Background(), sources.Outgoing{ID: id, Data: []byte(`{"headers":{"X-Job":"` + id + `"}}`)})
		}
		time.Sleep(10 * time.Second) // the jobs wait in the queue
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		finished := func() int64 { s := w.Stats(); return s.Jobs[OutcomeSucceeded] + s.Jobs[OutcomeDeadLettered] }
		for deadline := time.Now().Add(time.Hour); finished() < 3 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done
		for _, c := range []struct {
			name      string
			got, want float64
		}{
			{"jobs{redelivered}", testutil.ToFloat64(m.jobs.WithLabelValues("redelivered", "default")), 1},
			{"jobs{succeeded}", testutil.ToFloat64(m.jobs.WithLabelValues("succeeded", "default")), 1},
			{"jobs{dead_lettered}", testutil.ToFloat64(m.jobs.WithLabelValues("dead_lettered", "default")), 2},
			{"finished{succeeded}", testutil.ToFloat64(m.finished.WithLabelValues("succeeded", "default")), 1},
			{"finished{dead_lettered}", testutil.ToFloat64(m.finished.WithLabelValues("dead_lettered", "default")), 2},
			{"finished series (no hand-back)", float64(testutil.CollectAndCount(m.finished)), 2},
		} {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
		var h dto.Metric
		if err := m.age.Write(&h); err != nil {
			t.Fatal(err)
		}
		// Three finished jobs, each at least the 10 s it waited.
		if n, sum := h.GetHistogram().GetSampleCount(), h.GetHistogram().GetSampleSum(); n != 3 || sum < 30 {
			t.Errorf("job age: %d samples, sum %vs; want 3 of at least 10 s each", n, sum)
		}
	})
}

func TestOutcomeFinished(t *testing.T) {
	for o := range numOutcomes {
		want := o == OutcomeSucceeded || o == OutcomeDeadLettered
		if o.Finished() != want {
			t.Errorf("%v.Finished() = %v", o, !want)
		}
	}
}
