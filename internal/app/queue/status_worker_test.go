package queue

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sources"
)

// While the worker is paused by the API's 429 with jobs in flight, the
// queue shows no progress: status says the worker is paused, until when,
// and what it holds, not "not draining".
func TestStatusShowsAPausedWorker(t *testing.T) {
	until := time.Date(2026, 1, 2, 3, 4, 30, 0, time.Local)
	accepted, estimate, burst := 1150.0, 1224.6, 0.0
	ws := &run.WorkerState{ID: "w1", InFlight: 64, Paused: true, PausedUntil: until, Rate: 1200, Accepted: &accepted,
		Estimate: &estimate, Burst: &burst}
	if got, want := workerLine(ws, until.Add(-12*time.Second)), "paused by the API until 03:04:30 (12.0 s left), 64 in flight"; got != want {
		t.Errorf("workerLine = %q, want %q", got, want)
	}
	st := sources.Stats{Pending: 100, AckPending: 64, Done: 10, DeadLetters: 0}
	stalled := drainProgress{measured: true, eta: -1}
	var out bytes.Buffer
	if err := printStatus(&out, st, stalled, false, nil, ws); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"worker w1", "paused by the API until 03:04:30", "64 in flight", "unknown (paused)",
		"\n  sending at 1200 units/min · API accepted 1150 units/min (last minute)\n  estimate: the API accepts 1225 units/min\n",
		"\n  burst available 0 units (= 0.0 s at the current rate)\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status:\n%s\nwant %q", out.String(), want)
		}
	}
	// No worker answered: the queue's own view, which names what it
	// holds.
	out.Reset()
	if err := printStatus(&out, st, stalled, false, nil, nil); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "unknown (64 unsettled, none done)") || strings.Contains(s, "worker") {
		t.Errorf("status without a worker:\n%s", s)
	}
	ws.Paused = false
	if got := workerLine(ws, until); got != "running, 64 in flight" {
		t.Errorf("a running worker: %q", got)
	}
}

// The rates status shows: the one the limiter sends at beside the one the
// API accepted and the limiter's estimate of what the API accepts, and
// the burst in units and in seconds of that rate; an accepted rate that
// is not measured, or an estimate the limiter does not have, says so, not
// 0.
func TestStatusPace(t *testing.T) {
	accepted, estimate, burst := 2950.0, 3061.2, 500.0
	ws := run.WorkerState{Rate: 3000, Accepted: &accepted, Estimate: &estimate, Burst: &burst}
	want := "  sending at 3000 units/min · API accepted 2950 units/min (last minute)\n" +
		"  estimate: the API accepts 3061 units/min\n" +
		"  burst available 500 units (= 10.0 s at the current rate)\n"
	if got := paceLines(ws.Pace()); got != want {
		t.Errorf("pace:\n%s\nwant\n%s", got, want)
	}
	for why, text := range map[run.NoEstimate]string{
		run.EstimateNotYet:  "\n  estimate: none yet (no 429 or quota header so far)\n",
		run.EstimateClassic: "\n  estimate: none (limiter.slow_start is off)\n",
	} {
		none := run.WorkerState{Rate: 3000, Accepted: &accepted, NoEstimate: why, Burst: &burst}
		if got := paceLines(none.Pace()); !strings.Contains(got, text) {
			t.Errorf("no estimate (%s):\n%s\nwant %q", why, got, text)
		}
	}
	ws.Estimate = nil // an older worker: no estimate reported, none shown
	if got := paceLines(ws.Pace()); strings.Contains(got, "estimate") {
		t.Errorf("no estimate reported:\n%s", got)
	}
	ws.Accepted = nil
	if got := paceLines(ws.Pace()); !strings.Contains(got, "API accepted: not measured") {
		t.Errorf("no accepted rate reported:\n%s", got)
	}
	ws.Burst = nil // an older worker: no burst reported, none shown
	if got := paceLines(ws.Pace()); strings.Contains(got, "burst") || strings.Contains(got, "disabled") {
		t.Errorf("no burst reported:\n%s", got)
	}
	ws.Disabled = true // a disabled limiter: no bound
	if got := paceLines(ws.Pace()); !strings.Contains(got, "limiter disabled: sending without a limit") ||
		!strings.Contains(got, "no burst limit") || strings.Contains(got, "slow_start") {
		t.Errorf("disabled:\n%s", got)
	}
}
