package worker

import (
	"bufio"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sources/memory"
)

// The run of failures and the lines due, step by step (#15).
func TestTargetHealthObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	refused := errors.New("connection refused")
	var h targetHealth
	for i, st := range []struct {
		at       float64
		kind     call.Kind
		status   int
		err      error
		line     bool
		recover  bool
		count    int64
		failures int64   // the run after the call
		since    float64 // FailingSince, -1: zero
	}{
		{0, call.NetworkError, 0, refused, true, false, 1, 1, 0},
		{1, call.NetworkError, 0, refused, false, false, 0, 2, 0},
		{2, call.ServerError, 502, nil, true, false, 1, 3, 0},
		{29, call.NetworkError, 0, refused, false, false, 0, 4, 0},
		// 30 s after the first line of its kind: the count of the three
		// since then (1 s, 29 s, 30 s).
		{30, call.NetworkError, 0, refused, true, false, 3, 5, 0},
		{31, call.ServerError, 503, nil, false, false, 0, 6, 0},
		// An answer after 45 s of failures: one recovery line.
		{45, call.Success, 200, nil, true, true, 6, 0, -1},
		// A throttle or a 4xx is an answer too; nothing to say after it.
		{46, call.Throttle, 429, nil, false, false, 0, 0, -1},
		// A short run of failures ends with no recovery line; the
		// kind's last line was at 30 s, so this one waits until 60 s.
		{50, call.NetworkError, 0, refused, false, false, 0, 1, 50},
		{51, call.ClientError, 404, nil, false, false, 0, 0, -1},
		{61, call.NetworkError, 0, refused, true, false, 2, 1, 61},
	} {
		n, ok := h.observe(at(st.at), st.kind, st.status, st.err)
		if ok != st.line || (ok && (n.recovered != st.recover || n.count != st.count)) {
			t.Fatalf("step %d (t=%v %s): line %v %+v, want line %v recovered %v count %d", i, st.at, st.kind, ok, n, st.line, st.recover, st.count)
		}
		s := h.snapshot()
		wantSince := time.Time{}
		if st.since >= 0 {
			wantSince = at(st.since)
		}
		if s.Failures != st.failures || !s.FailingSince.Equal(wantSince) {
			t.Fatalf("step %d: state %+v, want %d failures since %v", i, s, st.failures, wantSince)
		}
	}
}

func TestTargetHealthDown(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := TargetHealth{FailingSince: t0, Failures: 3}
	for _, c := range []struct {
		now   time.Duration
		after time.Duration
		want  bool
	}{
		{59 * time.Second, time.Minute, false},
		{time.Minute, time.Minute, true},
		{time.Hour, 0, false}, // 0 turns the check off
	} {
		if got := h.Down(t0.Add(c.now), c.after); got != c.want {
			t.Errorf("Down(t0+%v, %v) = %v, want %v", c.now, c.after, got, c.want)
		}
	}
	if (TargetHealth{}).Down(t0, time.Second) {
		t.Error("a target with no failure is down")
	}
}

// logLines returns the JSON lines of logs whose msg is msg ("": every
// line).
func logLines(t *testing.T, logs *testkit.SyncBuffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %s: %v", sc.Bytes(), err)
		}
		if msg == "" || m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// An unreachable target is logged at warn level, one line per interval
// with the count, and reported down; an answer ends it (#15).
func TestUnreachableTargetWarnsAndIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxDeliveries: MaxMaxDeliveries, MaxRedeliveryDelay: 2 * time.Second,
			BackoffBase: 100 * time.Millisecond, BackoffCap: time.Second}, memory.Config{})
		logs := &testkit.SyncBuffer{}
		h.w.log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		h.lim.open()
		for _, id := range []string{"j1", "j2", "j3"} {
			h.target.on(id, drop)
			h.job(id, nil)
		}
		start := time.Now()
		h.start()
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		st := h.w.Stats()
		calls := st.Attempts[call.NetworkError]
		if !st.Target.Down(time.Now(), time.Minute) || st.Target.Failures != calls || !st.Target.FailingSince.Equal(start) {
			t.Fatalf("after 5 min of refused calls: %+v (%d network errors), want down since the start", st.Target, calls)
		}
		warns := logLines(t, logs, "target failing")
		// One line at the first failure, then at most one per interval.
		if limit := int(5*time.Minute/FailureLogInterval) + 1; len(warns) < 2 || len(warns) > limit {
			t.Fatalf("%d warn lines for %d failures in 5 min, want 2 to %d", len(warns), calls, limit)
		}
		var counted int64
		for _, l := range warns {
			if l["level"] != "WARN" || l["result"] != "network_error" {
				t.Fatalf("line %v, want a warn line about network errors", l)
			}
			counted += int64(l["count"].(float64))
		}
		if counted > calls || counted < calls/2 {
			t.Errorf("lines count %d failures of %d", counted, calls)
		}
		for _, id := range []string{"j1", "j2", "j3"} {
			h.target.on(id, status(200, "ok"))
		}
		h.until("jobs done", func() bool { return h.settled("j1") && h.settled("j2") && h.settled("j3") })
		if st := h.w.Stats().Target; st.Down(time.Now(), time.Minute) || !st.FailingSince.IsZero() {
			t.Errorf("after an answer: %+v, want up", st)
		}
		if n := len(logLines(t, logs, "target answering again")); n != 1 {
			t.Errorf("%d recovery lines, want 1", n)
		}
		h.stop()
	})
}
