package worker

import (
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sources/memory"
)

// linesWith returns the logged lines whose msg starts with prefix.
func linesWith(t *testing.T, logs *testkit.SyncBuffer, prefix string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, m := range logLines(t, logs, "") {
		if s, _ := m["msg"].(string); strings.HasPrefix(s, prefix) {
			out = append(out, m)
		}
	}
	return out
}

// The first time the queue is seen empty after a drain, one line says how
// many jobs it drained and how long it took; Run logs a summary when it
// returns (#15).
func TestDrainedAndSummaryLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, memory.Config{})
		logs := &testkit.SyncBuffer{}
		h.w.log = slog.New(slog.NewJSONHandler(logs, nil))
		h.lim.open()
		for _, id := range []string{"j1", "j2", "j3"} {
			h.job(id, nil)
		}
		h.target.on("j2", status(503, ""), status(200, "ok"))
		t0 := time.Now()
		h.start()
		h.until("jobs done", func() bool { return h.settled("j1") && h.settled("j2") && h.settled("j3") })
		time.Sleep(time.Minute) // many empty receives
		synctest.Wait()
		d := linesWith(t, logs, "drained ")
		if len(d) != 1 || d[0]["msg"] != "drained 3 jobs in "+time.Duration(d[0]["took"].(float64)).Round(time.Millisecond).String() || d[0]["jobs"] != 3.0 {
			t.Fatalf("drained lines %v, want one for 3 jobs", d)
		}
		// The drain took from the first receipt to the last job's ack, not
		// to the empty receive that noticed it.
		var last time.Time
		for _, e := range h.q.Events() {
			if e.Kind == memory.EventAck && e.At.After(last) {
				last = e.At
			}
		}
		if took, want := time.Duration(d[0]["took"].(float64)), last.Sub(t0); took != want || want <= 0 {
			t.Errorf("drained in %v, want %v: from the first receipt to the last ack", took, want)
		}
		h.job("j4", nil)
		h.until("j4 done", func() bool { return h.settled("j4") })
		time.Sleep(time.Minute)
		synctest.Wait()
		if d := linesWith(t, logs, "drained "); len(d) != 2 || d[1]["jobs"] != 1.0 {
			t.Fatalf("drained lines %v, want a second one for 1 job", d)
		}
		h.stop()
		s := logLines(t, logs, "worker summary")
		if len(s) != 1 || s[0]["succeeded"] != 4.0 || s[0]["received"] != 4.0 {
			t.Fatalf("summary lines %v, want one with 4 succeeded", s)
		}
	})
}

// With ExitWhenEmpty, Run returns by itself once the queue is empty and
// nothing is in flight, not before: a job handed back with a delay keeps
// it running until the job is done (#15).
func TestExitWhenEmpty(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{ExitWhenEmpty: true, MaxAttempts: 1, MaxRedeliveryDelay: 30 * time.Second}, memory.Config{})
		h.lim.open()
		h.job("j1", nil)
		h.job("j2", nil)
		h.target.on("j2", status(503, ""), status(200, "ok"))
		h.start()
		select {
		case err := <-h.done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Hour):
			t.Fatal("Run still running an hour after the queue emptied")
		}
		if !h.settled("j1") || !h.settled("j2") {
			t.Fatalf("Run returned with jobs not done: %+v", h.q.Events())
		}
		if evs := h.events("j2"); len(evs) != 2 || evs[0].Kind != memory.EventNak || evs[1].Kind != memory.EventAck {
			t.Fatalf("j2: %+v, want a nak, then an ack", evs)
		}
	})
}
